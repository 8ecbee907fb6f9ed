// Causal grouped-query attention over an f16 KV cache (two halves per u32).
// Entry `store`: KC/VC[(pos + t) * kvd + i] = f16(K/V[t][i]).
//   Bindings: 0 K, 1 V (f32, [tokens][kvd]), 2 KC, 3 VC (u32, [ctx][kvd/2]),
//   4 P, 5 S. Dispatch: (ceil(kvd / 2 / 64), tokens, 1) workgroups of 64.
// Entry `main`: for head h of token t (at position pos + t), with the query
//   rounded to f16, softmax(q . K[j] * scale) over j <= pos + t, then the
//   weighted sum of V[j] in llama.cpp's flash-attention order with an f16
//   accumulator; kv head = h / (heads / kv_heads).
//   Bindings: 8 Q (f32, [tokens][heads * head_dim]), 2 KC, 3 VC, 4 P, 5 S,
//   6 Out (f32, like Q), 7 Scores (f32, [tokens][heads][ctx] scratch).
//   Dispatch: (heads, tokens, 1) workgroups of 64 threads.
// Entry `chunked`: the same result as `main` for head_dim <= 256, in chunks
//   of C keys (C = min(64, 2048 / (head_dim / 2)), a power of two; the host
//   prepends `const C` and `const TPK` = 256 / C): the chunk's keys (TPK
//   threads per key) and its V rows go to shared memory in one round trip,
//   then thread d replays the same online softmax for dim d over the chunk.
//   The per-key dot is summed in TPK slices (f32 order differs from `main`).
//   Bindings: 8 Q, 2 KC, 3 VC, 4 P, 5 S, 6 Out (no scratch).
//   Dispatch: (heads, tokens, 1) workgroups of 256 threads.

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ctx: u32,
    scale: f32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read> K: array<f32>;
@group(0) @binding(1) var<storage, read> V: array<f32>;
@group(0) @binding(2) var<storage, read_write> KC: array<u32>;
@group(0) @binding(3) var<storage, read_write> VC: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(7) var<storage, read_write> Scores: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;

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
    KC[dst] = pack2x16float(vec2<f32>(K[src], K[src + 1u]));
    VC[dst] = pack2x16float(vec2<f32>(V[src], V[src + 1u]));
}

const WG: u32 = 64u;
var<workgroup> qs: array<f32, 512>;

fn round_f16(x: f32) -> f32 {
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0))).x;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = P.head_dim;
    let qd = P.heads * hd;
    let kvw = P.kv_heads * hd / 2u;
    let kvh = (h / (P.heads / P.kv_heads)) * hd / 2u;
    let len = S.pos + t + 1u;
    let sb = (t * P.heads + h) * P.ctx;
    for (var d = lid; d < hd; d += WG) {
        qs[d] = unpack2x16float(pack2x16float(vec2<f32>(Q[t * qd + h * hd + d], 0.0))).x;
    }
    workgroupBarrier();

    for (var j = lid; j < len; j += WG) {
        let kb = j * kvw + kvh;
        var dot = 0.0;
        for (var d = 0u; d < hd; d += 2u) {
            let kk = unpack2x16float(KC[kb + d / 2u]);
            dot += qs[d] * kk.x;
            dot += qs[d + 1u] * kk.y;
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
        for (var j = 0u; j < len; j++) {
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
            acc = round_f16(acc + select(vv.x, vv.y, (d & 1u) == 1u) * weight);
            total = total * rescale + weight;
        }
        Out[t * qd + h * hd + d] = acc * (1.0 / total);
    }
}

const AWG: u32 = 256u;

// Word f of the chunk's V rows (key j0 + f / hw), clamped into the cache.
fn vload(j0: u32, f: u32, len: u32, kvw: u32, kvh: u32, hw: u32) -> u32 {
    let j = min(j0 + f / hw, len - 1u);
    return VC[j * kvw + kvh + f % hw];
}
var<workgroup> sc: array<f32, 64>;
var<workgroup> part: array<f32, 256>;
var<workgroup> vs: array<u32, 2048>;

@compute @workgroup_size(256)
fn chunked(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = P.head_dim;
    let hw = hd / 2u;
    let qd = P.heads * hd;
    let kvw = P.kv_heads * hw;
    let kvh = (h / (P.heads / P.kv_heads)) * hw;
    let len = S.pos + t + 1u;
    for (var d = lid; d < hd; d += AWG) {
        qs[d] = round_f16(Q[t * qd + h * hd + d]);
    }
    workgroupBarrier();
    var acc = 0.0;
    var mx = -3.0e38;
    var total = 0.0;
    let key = lid / TPK;
    let w0 = lid % TPK;
    for (var j0 = 0u; j0 < len; j0 += C) {
        // This thread's slice of key j0 + key: words w0, w0 + TPK, ... (at
        // most 8 for the C chosen), and 8 words of the chunk's V rows; all
        // 16 loads are issued before any is used.
        let kb = min(j0 + key, len - 1u) * kvw + kvh;
        let v0 = vload(j0, lid, len, kvw, kvh, hw);
        let v1 = vload(j0, lid + AWG, len, kvw, kvh, hw);
        let v2 = vload(j0, lid + 2u * AWG, len, kvw, kvh, hw);
        let v3 = vload(j0, lid + 3u * AWG, len, kvw, kvh, hw);
        let v4 = vload(j0, lid + 4u * AWG, len, kvw, kvh, hw);
        let v5 = vload(j0, lid + 5u * AWG, len, kvw, kvh, hw);
        let v6 = vload(j0, lid + 6u * AWG, len, kvw, kvh, hw);
        let v7 = vload(j0, lid + 7u * AWG, len, kvw, kvh, hw);
        let k0 = KC[kb + min(w0, hw - 1u)];
        let k1 = KC[kb + min(w0 + TPK, hw - 1u)];
        let k2 = KC[kb + min(w0 + 2u * TPK, hw - 1u)];
        let k3 = KC[kb + min(w0 + 3u * TPK, hw - 1u)];
        let k4 = KC[kb + min(w0 + 4u * TPK, hw - 1u)];
        let k5 = KC[kb + min(w0 + 5u * TPK, hw - 1u)];
        let k6 = KC[kb + min(w0 + 6u * TPK, hw - 1u)];
        let k7 = KC[kb + min(w0 + 7u * TPK, hw - 1u)];
        let kw = array<u32, 8>(k0, k1, k2, k3, k4, k5, k6, k7);
        let vw = array<u32, 8>(v0, v1, v2, v3, v4, v5, v6, v7);
        var dot = 0.0;
        for (var i = 0u; i < 8u; i++) {
            let w = w0 + i * TPK;
            if w < hw {
                let kk = unpack2x16float(kw[i]);
                dot += qs[2u * w] * kk.x;
                dot += qs[2u * w + 1u] * kk.y;
            }
            let f = lid + i * AWG;
            if f < C * hw {
                vs[f] = vw[i];
            }
        }
        part[lid] = dot;
        workgroupBarrier();
        if lid < C {
            var sum = 0.0;
            for (var i = 0u; i < TPK; i++) {
                sum += part[lid * TPK + i];
            }
            sc[lid] = sum * P.scale;
        }
        workgroupBarrier();
        if lid < hd {
            let cn = min(C, len - j0);
            for (var c = 0u; c < cn; c++) {
                let s = sc[c];
                var rescale = 1.0;
                var weight = 1.0;
                if s > mx {
                    rescale = exp(mx - s);
                    mx = s;
                    acc = round_f16(acc * rescale);
                } else {
                    weight = exp(s - mx);
                }
                let vv = unpack2x16float(vs[c * hw + lid / 2u]);
                acc = round_f16(acc + select(vv.x, vv.y, (lid & 1u) == 1u) * weight);
                total = total * rescale + weight;
            }
        }
        workgroupBarrier();
    }
    if lid < hd {
        Out[t * qd + h * hd + lid] = acc * (1.0 / total);
    }
}
