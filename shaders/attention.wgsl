// Causal grouped-query attention over an f16 KV cache (two halves per u32),
// optionally over a sliding window: a query at position p sees keys
// [first_key(p), p], first_key(p) = max(0, p + 1 - P.window) (P.window = 0:
// 0), in ascending order as llama.cpp's CPU loop does; every entry below
// honours it, and with P.window = 0 computes exactly what it did without.
// Params: 0 heads, 1 kv_heads, 2 head_dim, 3 ctx, 4 scale (f32), 5 zero
//   (read as an f32 that the compiler cannot see is 0), 6 splits, 7 window.
// The host prepends `const C`, `QS`, `LS` (below) and appends
// attn_step.wgsl (Params and Step, bindings 4 P and 5 S, first_key),
// f16.wgsl and int8_block.wgsl.
// Entry `store`: KC/VC[(pos + t) * kvd + i] = f16(K/V[t][i]).
//   Bindings: 0 K, 1 V (f32, [tokens][kvd]), 2 KC, 3 VC (u32, [ctx][kvd/2]),
//   4 P, 5 S. Dispatch: (ceil(kvd / 2 / 64), tokens, 1) workgroups of 64.
// Entry `main`: for head h of token t (at position p = pos + t), with the
//   query rounded to f16, softmax(q . K[j] * scale) over the keys p sees,
//   then the weighted sum of V[j] in llama.cpp's flash-attention order with
//   an f16 accumulator; kv head = h / (heads / kv_heads).
//   Bindings: 8 Q (f32, [tokens][heads * head_dim]), 2 KC, 3 VC, 4 P, 5 S,
//   6 Out (f32, like Q), 7 Scores (f32, [tokens][heads][ctx] scratch).
//   Dispatch: (heads, tokens, 1) workgroups of 64 threads.
// Entry `chunked`: `main`'s result for head_dim <= 256 (the same operations
//   on the same values in the same order), faster:
//   a workgroup serves QS query heads that share a kv head (slots), in
//   chunks of C keys from the first key the query sees. Per chunk the keys
//   and V rows go to shared memory in one round trip (for all slots),
//   thread (slot, key) computes the score in `main`'s order (with its guard
//   against fused multiply-adds), a max-scan over the chunk gives each
//   key's running max before it and so its rescale and weight (what `main`
//   computes one key at a time), and thread (slot, d) replays only the
//   f16-rounded accumulation. The host prepends `const C` (a power of two,
//   C * head_dim / 2 <= 1024) and `const QS` (QS * head_dim <= 256, QS * C
//   <= 256).
//   Bindings: 8 Q, 2 KC, 3 VC, 4 P, 5 S, 6 Out (no scratch).
//   Dispatch: (kv_heads * ceil(heads / kv_heads / QS), tokens, 1)
//   workgroups of 256 threads.
// Entry `split` (decode, one token, long contexts): attention over keys
//   [lo + L * s, lo + L * (s + 1)) only (lo = first_key(pos): splits
//   count from the window's first key, so none lies wholly outside it;
//   L = split_len(keys) for the pos + 1 - lo keys the query sees),
//   summed as an f32 online softmax (`split_keys`; not `chunked`'s f16
//   replay, whose exact order only matters below SPLIT_KEYS keys), for
//   split s = workgroup_id.y, leaving each head's weighted sum, its total
//   weight and its running max in Part ([heads][P.splits][head_dim +
//   2]); splits past the last key exit without writing. The host prepends
//   `const LS` (the longest split, a multiple of C), `LS0` (the shortest:
//   C, or LS for splits of LS keys always) and `SPLIT_WGS` (see
//   split_len). Bindings: 8 Q, 2 KC, 3 VC, 4 P, 5 S, 9 Part. Dispatch:
//   (as `chunked`, splits, 1) workgroups of 256 threads (the host's
//   `kernels::SplitRule::slots`, at most P.splits: enough for any
//   position and window).
//   split.wgsl does the same job with fewer, larger workgroups; which one
//   runs is `kernels::deep_keys`'s choice (measured on the H100).
// Entry `merge`: Out = sum_s acc_s e^(m_s - M) / sum_s total_s e^(m_s - M)
//   over the splits in use, s < ceil(keys / split_len(keys)), which are those
//   `split` (or split.wgsl) wrote (M their largest max): flash-decoding's
//   merge, in f32, each dimension's splits summed in 256 DPT / md
//   interleaved lanes (DPT dimensions a thread: see MT; md the dimensions
//   of a workgroup), each lane as an online softmax over its splits
//   (rescaled to its running max), and the lanes added in order at their
//   largest max. With one split it is that split's acc / total. Bindings:
//   9 Part, 4 P, 5 S, 6 Out. Dispatch: (heads, parts, 1) workgroups of 256
//   threads, each part md = head_dim / parts dimensions of its head (parts
//   divides head_dim; with several, md is a multiple of 32: see
//   `merge_out`). The host prepends `const MD` (md), so a merge pipeline
//   serves one head size and one number of parts.
// Entries `chunked_q` and `merge_q` (head_dim a multiple of 32): `chunked`
//   and `merge`, and their outputs also as the int8 blocks the Wo product's
//   integer path reads (13 XQ, 14 XD: exactly what quantize_x.wgsl makes
//   of Out, without its own dispatch; see `store_q`).

@group(0) @binding(0) var<storage, read> K: array<f32>;
@group(0) @binding(1) var<storage, read> V: array<f32>;
@group(0) @binding(2) var<storage, read_write> KC: array<u32>;
@group(0) @binding(3) var<storage, read_write> VC: array<u32>;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(7) var<storage, read_write> Scores: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(9) var<storage, read_write> Part: array<f32>;
@group(0) @binding(13) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(14) var<storage, read_write> XD: array<f32>;

@compute @workgroup_size(64)
fn store(@builtin(global_invocation_id) gid: vec3<u32>) {
    let kvd = P.kv_heads * P.head_dim;
    let i = gid.x;
    let t = gid.y;
    if i >= kvd / 2u || t >= S.n {
        return;
    }
    let src = t * kvd + 2u * i;
    let dst = (S.pos + t) * (kvd / 2u) + i;
    KC[dst] = pack2x16float(vec2<f32>(round_f16(K[src]), round_f16(K[src + 1u])));
    VC[dst] = pack2x16float(vec2<f32>(round_f16(V[src]), round_f16(V[src + 1u])));
}

const WG: u32 = 64u;
var<workgroup> qs: array<f32, 512>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = P.head_dim;
    let qd = P.heads * hd;
    let kvw = P.kv_heads * hd / 2u;
    let kvh = (h / (P.heads / P.kv_heads)) * hd / 2u;
    let len = S.pos + t + 1u;
    let lo = first_key(S.pos + t);
    let sb = (t * P.heads + h) * P.ctx;
    for (var d = lid; d < hd; d += WG) {
        qs[d] = round_f16(Q[t * qd + h * hd + d]);
    }
    workgroupBarrier();

    // A zero the compiler cannot see: `a * b + Z` may become fma(a, b, Z),
    // which still rounds the product, so `acc + (a * b + Z)` is never fused
    // into one fma(a, b, acc) (SwiftShader fuses; the CPU and llama.cpp do not).
    let Z = bitcast<f32>(P._p0);
    for (var j = lo + lid; j < len; j += WG) {
        let kb = j * kvw + kvh;
        var dot = 0.0;
        for (var d = 0u; d < hd; d += 2u) {
            let kk = unpack2x16float(KC[kb + d / 2u]);
            dot += qs[d] * kk.x + Z;
            dot += qs[d + 1u] * kk.y + Z;
        }
        Scores[sb + j] = dot * P.scale;
    }
    storageBarrier();

    // Each thread owns one output dimension and replays the online softmax
    // over the scores in order, rounding its accumulator to f16 at every
    // step as llama.cpp's flash attention does (the references carry it).
    for (var d = lid; d < hd; d += WG) {
        var acc = 0.0;
        var mx = -3.0e38;
        var total = 0.0;
        for (var j = lo; j < len; j++) {
            let s = Scores[sb + j];
            var rescale = 1.0;
            var weight = 1.0;
            if s > mx {
                rescale = exp(mx - s);
                mx = s;
                acc = round_f16(acc * rescale);
            } else {
                weight = exp(s - mx);
            }
            let vv = unpack2x16float(VC[j * kvw + kvh + d / 2u]);
            acc = round_f16(acc + (select(vv.x, vv.y, (d & 1u) == 1u) * weight + Z));
            total = total * rescale + weight;
        }
        Out[t * qd + h * hd + d] = acc * (1.0 / total);
    }
}

const AWG: u32 = 256u;
// Key rows padded to hw + 1 words: the score threads of a warp read one
// word of each of their keys at once, and rows hw words apart would put
// them all in one shared-memory bank (hw = 32 for 64-dim heads).
var<workgroup> kch: array<u32, 1088>;
var<workgroup> vch: array<u32, 1024>;
var<workgroup> qsl: array<f32, 256>;
var<workgroup> sc: array<f32, 256>;
var<workgroup> pm: array<f32, 256>;
var<workgroup> rs: array<f32, 256>;
var<workgroup> wt: array<f32, 256>;
var<workgroup> run_max: array<f32, 256>;

// Word f of the chunk's rows starting at key j0 (clamped into the cache).
// acc * r rounded to f16, skipping the rounding where r is 1 (every key
// but a new running max): acc is already an f16 value, so that is exact,
// and it takes a dozen integer operations off most steps of the replay.
fn rescaled(acc: f32, r: f32) -> f32 {
    if r == 1.0 {
        return acc;
    }
    return round_f16(acc * r);
}

// Word f of the chunk's key rows in the padded layout of kch.
fn kpad(f: u32, hw: u32) -> u32 {
    return f + f / hw;
}

fn kvload(buf: u32, j0: u32, f: u32, len: u32, kvw: u32, kvh: u32, hw: u32) -> u32 {
    let j = min(j0 + f / hw, len - 1u);
    let i = j * kvw + kvh + f % hw;
    if buf == 0u {
        return KC[i];
    }
    return VC[i];
}

// This workgroup's query heads: the first, how many, and the kv head.
struct Slots {
    h0: u32,
    n: u32,
    kvh: u32,
}

fn slots(wx: u32) -> Slots {
    let grp = P.heads / P.kv_heads;
    let per = (grp + QS - 1u) / QS;
    let kvi = wx / per;
    let h0 = kvi * grp + (wx % per) * QS;
    return Slots(h0, min(QS, kvi * grp + grp - h0), kvi * (P.head_dim / 2u));
}

// What a replay thread holds after keys [lo, hi): its f16-rounded sum and
// the total weight, both relative to run_max[its slot].
struct Acc {
    acc: f32,
    total: f32,
}

// The chunk of C keys from j0 (clamped below len) for kv head offset kvh:
// K rows into kch (padded rows), V rows into vch, 4 words of each per
// thread in one round trip; then the workgroup waits.
fn stage_chunk(j0: u32, lid: u32, len: u32, kvw: u32, kvh: u32, hw: u32) {
    let kw0 = kvload(0u, j0, lid, len, kvw, kvh, hw);
    let kw1 = kvload(0u, j0, lid + AWG, len, kvw, kvh, hw);
    let kw2 = kvload(0u, j0, lid + 2u * AWG, len, kvw, kvh, hw);
    let kw3 = kvload(0u, j0, lid + 3u * AWG, len, kvw, kvh, hw);
    let vw0 = kvload(1u, j0, lid, len, kvw, kvh, hw);
    let vw1 = kvload(1u, j0, lid + AWG, len, kvw, kvh, hw);
    let vw2 = kvload(1u, j0, lid + 2u * AWG, len, kvw, kvh, hw);
    let vw3 = kvload(1u, j0, lid + 3u * AWG, len, kvw, kvh, hw);
    let n = C * hw;
    if lid < n {
        kch[kpad(lid, hw)] = kw0;
        vch[lid] = vw0;
    }
    if lid + AWG < n {
        kch[kpad(lid + AWG, hw)] = kw1;
        vch[lid + AWG] = vw1;
    }
    if lid + 2u * AWG < n {
        kch[kpad(lid + 2u * AWG, hw)] = kw2;
        vch[lid + 2u * AWG] = vw2;
    }
    if lid + 3u * AWG < n {
        kch[kpad(lid + 3u * AWG, hw)] = kw3;
        vch[lid + 3u * AWG] = vw3;
    }
    workgroupBarrier();
}

// Token t's queries of this workgroup's slots into qsl, rounded to f16
// (thread lid: slot lid / head_dim, dim lid % head_dim), and their running
// maxima reset.
fn load_queries(lid: u32, t: u32, sl: Slots) {
    let hd = P.head_dim;
    if lid / hd < sl.n {
        qsl[lid] = round_f16(Q[t * P.heads * hd + (sl.h0 + lid / hd) * hd + lid % hd]);
    }
    if lid < QS {
        run_max[lid] = -3.0e38;
    }
}

// The query in qsl[qb ..] times staged key `key`, summed over the head in
// `main`'s order, with its guard against fused multiply-adds (Z = 0).
fn chunk_score(qb: u32, key: u32, hw: u32, Z: f32) -> f32 {
    var dot = 0.0;
    for (var e = 0u; e < 2u * hw; e += 2u) {
        let kk = unpack2x16float(kch[key * (hw + 1u) + e / 2u]);
        dot += qsl[qb + e] * kk.x + Z;
        dot += qsl[qb + e + 1u] * kk.y + Z;
    }
    return dot;
}

// `chunked` for token t over keys [lo, hi) (hi <= its length).
fn chunked_keys(wx: u32, lid: u32, t: u32, lo: u32, hi: u32) -> Acc {
    let hd = P.head_dim;
    let hw = hd / 2u;
    let kvw = P.kv_heads * hw;
    let sl = slots(wx);
    let nslot = sl.n;
    let kvh = sl.kvh;
    let len = hi;
    // The zero that keeps products out of fused multiply-adds, as in `main`.
    let Z = bitcast<f32>(P._p0);
    // Replay role: slot lid / hd, dim lid % hd.
    let rslot = lid / hd;
    let d = lid % hd;
    let replays = rslot < nslot;
    load_queries(lid, t, sl);
    // Score role: slot lid / C, key lid % C.
    let sslot = lid / C;
    let key = lid % C;
    var acc = 0.0;
    var total = 0.0;
    for (var j0 = lo; j0 < len; j0 += C) {
        stage_chunk(j0, lid, len, kvw, kvh, hw);
        let cn = min(C, len - j0);
        // Scores, summed over d in `main`'s order; keys past the end -inf.
        var s = -3.4e38;
        if sslot < nslot && key < cn {
            s = chunk_score(sslot * hd, key, hw, Z) * P.scale;
        }
        sc[lid] = s;
        pm[lid] = s;
        workgroupBarrier();
        // Inclusive max-scan of each slot's scores.
        for (var o = 1u; o < C; o <<= 1u) {
            var m = -3.4e38;
            if key >= o {
                m = pm[lid - o];
            }
            workgroupBarrier();
            pm[lid] = max(pm[lid], m);
            workgroupBarrier();
        }
        // Key `key`'s rescale and weight, as `main` computes them with the
        // running max before it.
        if sslot < nslot {
            var prev = run_max[sslot];
            if key > 0u {
                prev = max(prev, pm[lid - 1u]);
            }
            if s > prev {
                rs[lid] = exp(prev - s);
                wt[lid] = 1.0;
            } else {
                rs[lid] = 1.0;
                wt[lid] = exp(s - prev);
            }
        }
        workgroupBarrier();
        if replays {
            let b = rslot * C;
            let hi = (d & 1u) == 1u;
            var c = 0u;
            for (; c + 4u <= cn; c += 4u) {
                let r0 = rs[b + c];
                let r1 = rs[b + c + 1u];
                let r2 = rs[b + c + 2u];
                let r3 = rs[b + c + 3u];
                let w0 = wt[b + c];
                let w1 = wt[b + c + 1u];
                let w2 = wt[b + c + 2u];
                let w3 = wt[b + c + 3u];
                let v0 = unpack2x16float(vch[c * hw + d / 2u]);
                let v1 = unpack2x16float(vch[(c + 1u) * hw + d / 2u]);
                let v2 = unpack2x16float(vch[(c + 2u) * hw + d / 2u]);
                let v3 = unpack2x16float(vch[(c + 3u) * hw + d / 2u]);
                acc = round_f16(rescaled(acc, r0) + (select(v0.x, v0.y, hi) * w0 + Z));
                total = total * r0 + w0;
                acc = round_f16(rescaled(acc, r1) + (select(v1.x, v1.y, hi) * w1 + Z));
                total = total * r1 + w1;
                acc = round_f16(rescaled(acc, r2) + (select(v2.x, v2.y, hi) * w2 + Z));
                total = total * r2 + w2;
                acc = round_f16(rescaled(acc, r3) + (select(v3.x, v3.y, hi) * w3 + Z));
                total = total * r3 + w3;
            }
            for (; c < cn; c++) {
                let vv = unpack2x16float(vch[c * hw + d / 2u]);
                acc = round_f16(rescaled(acc, rs[b + c]) + (select(vv.x, vv.y, hi) * wt[b + c] + Z));
                total = total * rs[b + c] + wt[b + c];
            }
        }
        workgroupBarrier();
        if lid < nslot {
            run_max[lid] = max(run_max[lid], pm[lid * C + C - 1u]);
        }
        workgroupBarrier();
    }
    return Acc(acc, total);
}

// `split`'s keys [lo, hi) of the one token: the chunks staged and scored
// as in `chunked_keys`, but summed as an f32 online softmax: per chunk each
// slot's running max rises to the chunk's, the sums so far are rescaled
// once, and every key's weight against that max is added in f32. Why:
// `chunked_keys` replays llama.cpp's CPU order key by key with an f16
// accumulator, a serial chain per key that made an 8192-key decode step of
// an 8B model spend ~170 us a layer here against llama.cpp's ~17; below
// SPLIT_KEYS keys (where `chunked` keeps that order exactly) splits never
// run. The result leaves acc and total relative to run_max[slot], as
// `chunked_keys` does, for the merge.
fn split_keys(wx: u32, lid: u32, lo: u32, hi: u32) -> Acc {
    let hd = P.head_dim;
    let hw = hd / 2u;
    let kvw = P.kv_heads * hw;
    let sl = slots(wx);
    let nslot = sl.n;
    let Z = bitcast<f32>(P._p0);
    // Sum role: slot lid / hd, dim lid % hd.
    let rslot = lid / hd;
    let d = lid % hd;
    let sums = rslot < nslot;
    load_queries(lid, 0u, sl);
    // Score role: slot lid / C, key lid % C.
    let sslot = lid / C;
    let key = lid % C;
    var acc = 0.0;
    var total = 0.0;
    for (var j0 = lo; j0 < hi; j0 += C) {
        stage_chunk(j0, lid, hi, kvw, sl.kvh, hw);
        let cn = min(C, hi - j0);
        var s = -3.4e38;
        if sslot < nslot && key < cn {
            s = chunk_score(sslot * hd, key, hw, Z) * P.scale;
        }
        sc[lid] = s;
        workgroupBarrier();
        // The slot's new max; each key's weight against it (0 past the
        // chunk's end), and the slot's rescale of what came before.
        if sslot < nslot {
            var m = run_max[sslot];
            for (var i = 0u; i < C; i++) {
                m = max(m, sc[sslot * C + i]);
            }
            wt[lid] = exp(s - m);
            if key == 0u {
                rs[sslot] = exp(run_max[sslot] - m);
                pm[sslot] = m;
            }
        }
        workgroupBarrier();
        if sums {
            let b = rslot * C;
            let odd = (d & 1u) == 1u;
            var a = 0.0;
            var t = 0.0;
            for (var c = 0u; c < cn; c++) {
                let vv = unpack2x16float(vch[c * hw + d / 2u]);
                let w = wt[b + c];
                a += w * select(vv.x, vv.y, odd);
                t += w;
            }
            let r = rs[rslot];
            acc = acc * r + a;
            total = total * r + t;
        }
        workgroupBarrier();
        if lid < nslot {
            run_max[lid] = pm[lid];
        }
        workgroupBarrier();
    }
    return Acc(acc, total);
}

// `chunked` for its workgroup: the outputs, and each thread's (0 past
// the slots in use).
fn chunked_out(wid: vec3<u32>, lid: u32) -> f32 {
    let t = wid.y;
    let r = chunked_keys(wid.x, lid, t, first_key(S.pos + t), S.pos + t + 1u);
    let hd = P.head_dim;
    let sl = slots(wid.x);
    let v = r.acc * (1.0 / r.total);
    if lid / hd < sl.n {
        Out[t * P.heads * hd + (sl.h0 + lid / hd) * hd + lid % hd] = v;
        return v;
    }
    return 0.0;
}

@compute @workgroup_size(256)
fn chunked(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    chunked_out(wid, lid);
}

// Scratch for `store_q`.
var<workgroup> qa: array<f32, 256>;

// The values v of threads 0 .. n - 1 (n a multiple of 32), elements e0 ..
// e0 + n - 1 of token t's row of P.heads * P.head_dim, as quantize_x.wgsl
// stores them: per block of 32 (here 32 consecutive threads, e0 a multiple
// of 32) the scale and the int8 values of int8_block.wgsl, four to a word:
// the same functions on the same values, so the same bits.
// Call in uniform control flow.
fn store_q(lid: u32, v: f32, n: u32, t: u32, e0: u32) {
    qa[lid] = v;
    workgroupBarrier();
    if lid < n {
        let g = lid & ~31u;
        var amax = 0.0;
        for (var i = 0u; i < 32u; i++) {
            amax = max(amax, abs(qa[g + i]));
        }
        let nb = P.heads * P.head_dim / 32u;
        let e = e0 + lid;
        if (lid & 3u) == 0u {
            let q = vec4<f32>(qa[lid], qa[lid + 1u], qa[lid + 2u], qa[lid + 3u]);
            XQ[t * nb * 8u + e / 4u] = q8_pack(q, q8_inv(amax));
        }
        if (lid & 31u) == 0u {
            XD[t * nb + e / 32u] = q8_scale(amax);
        }
    }
}

@compute @workgroup_size(256)
fn chunked_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = chunked_out(wid, lid);
    let sl = slots(wid.x);
    store_q(lid, v, sl.n * P.head_dim, wid.y, sl.h0 * P.head_dim);
}

// Keys per split for a query that sees `keys` keys, which `split` and
// `merge` both derive from the step: the shortest of LS0, 2 LS0, .. LS
// whose splits keep the dispatch's busy workgroups (splits x the kernel's
// workgroups per split) within SPLIT_WGS. Why: each split's workgroup walks
// its chunks one after another, so a short context in splits of LS keys
// (64: 2-4 chunks) left most of the GPU idle and the step waiting on those
// walks; shorter splits lost again once they passed ~300 workgroups
// (BENCHMARKS.md, 2026-11-26b).
fn split_len(keys: u32) -> u32 {
    let grp = P.heads / P.kv_heads;
    let wgs = P.kv_heads * ((grp + QS - 1u) / QS);
    var ls = LS0;
    while ls < LS && (keys + ls - 1u) / ls * wgs > SPLIT_WGS {
        ls *= 2u;
    }
    return ls;
}

@compute @workgroup_size(256)
fn split(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let len = S.pos + 1u;
    let first = first_key(S.pos);
    let ls = split_len(len - first);
    let lo = first + wid.y * ls;
    if lo >= len {
        return;
    }
    let r = split_keys(wid.x, lid, lo, min(len, lo + ls));
    let hd = P.head_dim;
    let sl = slots(wid.x);
    let rslot = lid / hd;
    let d = lid % hd;
    if rslot < sl.n {
        let o = ((sl.h0 + rslot) * P.splits + wid.y) * (hd + 2u);
        Part[o + d] = r.acc;
        if d == 0u {
            Part[o + hd] = r.total;
            Part[o + hd + 1u] = run_max[rslot];
        }
    }
}

// The merge's threads: each takes DPT = 4 dimensions (2 where head_dim is
// not a multiple of 4) of one split per round, so head_dim / DPT threads
// cover a split and the 256 form 256 DPT / head_dim lanes: lane l handles
// splits l, l + lanes, ...; all threads load at once. One thread per
// dimension looping over the splits (the first version) waited for a
// memory round trip per split: at 8192 keys (128 splits) TinyLlama's
// decode on the H100 went 264 -> 378 tok/s with 256 / head_dim lanes
// (BENCHMARKS.md, decode at depth), and the splits of 2026-11-26b's
// shorter split lengths made the merge the larger part of a layer's
// attention at a few hundred keys; 4 dimensions a thread take half or a
// quarter of those rounds. Loading 4 or 16 splits per lane and round into
// per-thread arrays instead was slower (2026-11-26: the 8B's 8192-key
// merge 26 us a layer with one, 30 with 4, 47 with 16).
const MT: u32 = 256u;
// The lanes' maxima and totals.
var<workgroup> mred: array<f32, 256>;
var<workgroup> mtot: array<f32, 256>;
// The lanes' sums, [lane][head_dim] (lanes x head_dim = 256 DPT).
var<workgroup> macc: array<f32, 1024>;

// One split's share of a merge thread: its dimensions d0 .. d0 + dpt - 1
// (dpt 2: the last two 0), its total and its max; past the n splits in
// use, split n - 1's values with the max -3.4e38 (so they weigh 0).
struct MergePart {
    v: vec4<f32>,
    t: f32,
    m: f32,
}

fn merge_part(base: u32, s: u32, n: u32, hd: u32, d0: u32, dpt: u32) -> MergePart {
    let o = (base + min(s, n - 1u)) * (hd + 2u);
    // Dimensions d0 + 2, d0 + 3 only where dpt is 4 (the index is clamped
    // into the row; the value is dropped otherwise).
    let hi = vec2<f32>(Part[o + min(d0 + 2u, hd - 1u)], Part[o + min(d0 + 3u, hd - 1u)]);
    let v = vec4<f32>(Part[o + d0], Part[o + d0 + 1u], select(vec2<f32>(0.0), hi, dpt == 4u));
    return MergePart(v, Part[o + hd], select(-3.4e38, Part[o + hd + 1u], s < n));
}

// e^(a - m), exactly 1 where a is the max m (exp(0) need not be): so one
// split alone gives its acc / total exactly.
fn rel(a: f32, m: f32) -> f32 {
    return select(exp(a - m), 1.0, a == m);
}

// The dimensions of a head one merge workgroup takes (`merge_out`'s md):
// the host's MD, head_dim / the workgroups a head (num_workgroups.y). A
// constant of the pipeline, so that the loops over the lanes below have
// a constant trip count, which the driver can unroll and whose loads it
// can issue together.
fn merge_dims() -> u32 {
    return MD;
}

// `merge` for head wid.x, its dimensions e0 .. e0 + md - 1 (md = head_dim
// / num_workgroups.y, e0 = md * wid.y): those outputs, and each thread's
// (0 past md). One pass over the splits: each thread keeps its own
// running max and rescales its sums when a round raises it (an online
// softmax over the splits), so no pass for the largest max comes first;
// the lanes then meet at their largest max. Measured on the H100 (8B,
// 8192 keys): 13.0 -> 12.7 us a layer against a separate max pass and
// its barrier tree first (BENCHMARKS.md, 2026-11-26e). Why several
// workgroups a head (`kernels::merge_parts`): one a head leaves most SMs
// idle (32 workgroups on an 8B), each walking 4 rounds of loads at 128
// splits; a quarter of a head each, 4 times the workgroups take one
// round. Every part reads the splits' totals and maxima again (2 floats
// a split). Measured on the H200 (BENCHMARKS.md, 2026-11-29b): the 8B's
// merge at 8192 keys 354 -> 343 us a step timed alone, decode +0.4-1%
// there and even elsewhere: the merge's time is its chain of dependent
// steps, not its workgroup count.
fn merge_out(wid: vec3<u32>, lid: u32) -> f32 {
    let h = wid.x;
    let hd = P.head_dim;
    let md = merge_dims();
    let e0 = wid.y * md;
    // Splits in use: ceil(keys / ls) for the pos + 1 - first_key(pos) keys.
    let keys = S.pos + 1u - first_key(S.pos);
    let ls = split_len(keys);
    let n = (keys + ls - 1u) / ls;
    let base = h * P.splits;
    let dpt = select(2u, 4u, (md & 3u) == 0u);
    let tps = md / dpt;
    let lanes = MT / tps;
    let lane = lid / tps;
    let dl = (lid % tps) * dpt;
    let d0 = e0 + dl;
    var m = -3.4e38;
    var acc = vec4<f32>(0.0);
    var total = 0.0;
    if lane < lanes {
        // Four splits a round, their loads in flight together (named
        // values, not a per-thread array: indexed arrays measured slower,
        // BENCHMARKS.md 2026-11-26 and 2026-11-26d).
        for (var s = lane; s < n; s += 4u * lanes) {
            let p0 = merge_part(base, s, n, hd, d0, dpt);
            let p1 = merge_part(base, s + lanes, n, hd, d0, dpt);
            let p2 = merge_part(base, s + 2u * lanes, n, hd, d0, dpt);
            let p3 = merge_part(base, s + 3u * lanes, n, hd, d0, dpt);
            let mr = max(max(m, max(p0.m, p1.m)), max(p2.m, p3.m));
            let k = rel(m, mr);
            let w0 = rel(p0.m, mr);
            let w1 = rel(p1.m, mr);
            let w2 = rel(p2.m, mr);
            let w3 = rel(p3.m, mr);
            acc = acc * k + ((p0.v * w0 + p1.v * w1) + (p2.v * w2 + p3.v * w3));
            total = total * k + ((p0.t * w0 + p1.t * w1) + (p2.t * w2 + p3.t * w3));
            m = mr;
        }
        macc[lane * md + dl] = acc.x;
        macc[lane * md + dl + 1u] = acc.y;
        if dpt == 4u {
            macc[lane * md + dl + 2u] = acc.z;
            macc[lane * md + dl + 3u] = acc.w;
        }
        if dl == 0u {
            mtot[lane] = total;
            mred[lane] = m;
        }
    }
    workgroupBarrier();
    if lid < md {
        var mm = -3.4e38;
        for (var l = 0u; l < lanes; l++) {
            mm = max(mm, mred[l]);
        }
        var a = 0.0;
        var t = 0.0;
        for (var l = 0u; l < lanes; l++) {
            let k = rel(mred[l], mm);
            a += macc[l * md + lid] * k;
            t += mtot[l] * k;
        }
        let v = a * (1.0 / t);
        Out[h * hd + e0 + lid] = v;
        return v;
    }
    return 0.0;
}

@compute @workgroup_size(256)
fn merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    merge_out(wid, lid);
}

@compute @workgroup_size(256)
fn merge_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = merge_out(wid, lid);
    // md is a multiple of 32 wherever there are several parts
    // (kernels::merge_parts), so each part quantizes whole blocks.
    let md = merge_dims();
    store_q(lid, v, md, 0u, wid.x * P.head_dim + wid.y * md);
}
