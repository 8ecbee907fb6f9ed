// Tiled ("flash") causal grouped-query attention for prefill over the f16
// KV cache (two halves per u32, attention.wgsl's KC/VC layout): for head h
// of token t (at position p = pos + t) softmax(q . K[j] * scale) over the
// keys p sees, j in [first_key(p), p] (first_key as in attention.wgsl:
// max(0, p + 1 - P.window), 0 without a window), then the weighted sum of
// V[j]; kv head = h / (heads / kv_heads). The query is rounded to f16 as
// attention.wgsl's entries round it; scores, the online softmax (running
// max and sum) and the weighted sum are f32, so the result is not
// llama.cpp's f16-accumulated order bit for bit: the host uses this for
// prefills past SPLIT_KEYS keys only, where it is close, and `chunked`
// (exact) below that.
// A workgroup serves one kv head and R query rows: TQ consecutive tokens
// x GS query heads of that kv head (row r: token t0 + r / GS, head h0 +
// r % GS). It walks the keys its tokens see in chunks of CK, staging each
// chunk's K and V rows in workgroup memory once for all R rows: thread
// (row, key) computes a score, then each (row, key) its weight against the
// row's new running max, then thread (row group g, word w) adds the
// weighted V words of its 4 rows to f32 accumulators in registers.
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 2 head_dim (= HD),
//   3 ctx, 4 scale (f32), 7 window (0: none); the others unused.
// The host prepends `const HD` (64, 128 or 256), `R` (= 2048 / HD: every
//   thread owns one word of 4 rows), `CK`, `GS` (query heads per
//   workgroup, <= R) and appends attn_step.wgsl (P, S, first_key) and
//   f16.wgsl.
// Bindings (attention.wgsl's numbers): 8 Q (f32, [tokens][heads *
//   head_dim]), 2 KC, 3 VC (u32, [ctx][kv_heads * head_dim / 2], read
//   as vec4<u32>), 4 P, 5 S, 6 Out (f32, like Q).
// Dispatch: (kv_heads * ceil(heads / kv_heads / GS), ceil(tokens / TQ), 1)
//   workgroups of 256 threads.

// The cache as 16-byte words: rows are head_dim / 2 >= 32 words long and
// start at multiples of that, so 4 u32 words of a row load at once.
@group(0) @binding(2) var<storage, read> KC: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> VC: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;

const WG: u32 = 256u;
// Words (f16 pairs) per head row, and 16-byte words.
const HW: u32 = HD / 2u;
const HV: u32 = HW / 4u;
// Q and K rows as 16-byte words, padded to HV + 1 of them: the score
// threads of a warp read the same 16 bytes of up to 16 different key rows
// at once (8 per shared-memory pass), and rows HW words apart (a multiple
// of 32) would all sit in the same four banks; 4 words more put 8
// consecutive rows in 32 different banks.
const QW: u32 = HV + 1u;
// The weighted sum: thread (g, w) = (lid / HW, lid % HW) owns word w of
// rows 4 g .. 4 g + 3 (R = 4 * WG / HW: every thread busy).
const_assert R * HW == 4u * WG;
const TQ: u32 = R / GS;
// (row, key) pairs per thread, and K (or V) words staged per thread.
const SPT: u32 = (R * CK + WG - 1u) / WG;
const KW: u32 = (CK * HV + WG - 1u) / WG;
// Every tile the host builds stages one K and one V word per thread (so
// that they are plain values: see the staging).
const_assert KW == 1u;
// A score no key has: its weight exp(MASKED - max) underflows to 0 for
// any running max, which starts at NO_MAX (finite, so that no inf - inf
// ever makes a NaN).
const MASKED: f32 = -3.4e38;
const NO_MAX: f32 = -3.0e38;

var<workgroup> qsh: array<vec4<u32>, R * QW>;
var<workgroup> ksh: array<vec4<u32>, CK * QW>;
// V rows unpadded, as u32: a warp reads 32 consecutive words of one row.
var<workgroup> vsh: array<u32, CK * HW>;
var<workgroup> ssh: array<f32, R * CK>;
// The weights, the 4 rows of a row group side by side: the weighted
// sum reads a key's 4 weights in one load.
var<workgroup> psh: array<vec4<f32>, R / 4u * CK>;
// Each row's running max before this chunk (msh), after it (mnew: written
// while msh is still being read, copied over at the next chunk's staging),
// and this chunk's rescale of what came before (ash).
var<workgroup> msh: array<f32, R>;
var<workgroup> mnew: array<f32, R>;
var<workgroup> ash: array<f32, R>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    // This workgroup's kv head, query heads [h0, h0 + nh) and tokens
    // [t0, t0 + nt); with more query heads per kv head than GS, several
    // workgroups split them, the last one ragged.
    let grp = P.heads / P.kv_heads;
    let per = (grp + GS - 1u) / GS;
    let kvi = wid.x / per;
    let h0 = kvi * grp + (wid.x % per) * GS;
    let nh = min(GS, kvi * grp + grp - h0);
    let t0 = wid.y * TQ;
    if t0 >= S.n {
        return;
    }
    let nt = min(TQ, S.n - t0);
    let qd = P.heads * HD;
    let kvw = P.kv_heads * HV;
    let kvo = kvi * HV;

    // The queries, rounded to f16 (exact in the packing); rows past the
    // tokens or heads are zeros and are masked below.
    for (var f = lid; f < R * HV; f += WG) {
        let r = f / HV;
        let e = f % HV;
        var word = vec4<u32>(0u);
        if r / GS < nt && r % GS < nh {
            let i = (t0 + r / GS) * qd + (h0 + r % GS) * HD + 8u * e;
            word = vec4<u32>(qpair(i), qpair(i + 2u), qpair(i + 4u), qpair(i + 6u));
        }
        qsh[r * QW + e] = word;
    }
    if lid < R {
        msh[lid] = NO_MAX;
        mnew[lid] = NO_MAX;
    }

    // Keys from the first that the tile's first token sees (later tokens'
    // windows start no earlier) to the last token's own.
    let lo = first_key(S.pos + t0);
    let hi = S.pos + t0 + nt;
    let w = lid % HW;
    let g = lid / HW;
    // Rows 4 g .. 4 g + 3's sums of word w, as named values: a per-thread
    // array indexed by a loop may live in memory on some drivers
    // (BENCHMARKS.md, 2026-11-26d and 2026-11-26e).
    var acc0 = vec2<f32>(0.0);
    var acc1 = vec2<f32>(0.0);
    var acc2 = vec2<f32>(0.0);
    var acc3 = vec2<f32>(0.0);
    var total = vec4<f32>(0.0);
    for (var j0 = lo; j0 < hi; j0 += CK) {
        // Stage the chunk's K and V rows, both loads in flight before the
        // stores; keys past the last are clamped to it (written rows,
        // finite) and masked below.
        let fk = min(lid, CK * HV - 1u);
        let jk = min(j0 + fk / HV, hi - 1u);
        let ik = jk * kvw + kvo + fk % HV;
        let kw = KC[ik];
        let vw = VC[ik];
        if lid < CK * HV {
            ksh[(lid / HV) * QW + lid % HV] = kw;
            vsh[4u * lid] = vw.x;
            vsh[4u * lid + 1u] = vw.y;
            vsh[4u * lid + 2u] = vw.z;
            vsh[4u * lid + 3u] = vw.w;
        }
        if lid < R {
            msh[lid] = mnew[lid];
        }
        workgroupBarrier();

        // Scores of the keys each row sees, MASKED for the others.
        for (var k = 0u; k < SPT; k++) {
            let i = lid + k * WG;
            if i < R * CK {
                let r = i / CK;
                let c = i % CK;
                let p = S.pos + t0 + r / GS;
                let j = j0 + c;
                var s = MASKED;
                if r / GS < nt && r % GS < nh && j <= p && j >= first_key(p) {
                    // Two partial sums: half the dependent chain.
                    var dv = vec2<f32>(0.0);
                    for (var e = 0u; e < HV; e++) {
                        let qa = qsh[r * QW + e];
                        let kb = ksh[c * QW + e];
                        dv += unpack2x16float(qa.x) * unpack2x16float(kb.x);
                        dv += unpack2x16float(qa.y) * unpack2x16float(kb.y);
                        dv += unpack2x16float(qa.z) * unpack2x16float(kb.z);
                        dv += unpack2x16float(qa.w) * unpack2x16float(kb.w);
                    }
                    s = (dv.x + dv.y) * P.scale;
                }
                ssh[i] = s;
            }
        }
        workgroupBarrier();

        // Weights against the row's max so far (every thread of a row
        // finds the same max: broadcast reads), and the row's rescale.
        for (var k = 0u; k < SPT; k++) {
            let i = lid + k * WG;
            if i < R * CK {
                let r = i / CK;
                let m0 = msh[r];
                var mx = m0;
                for (var c = 0u; c < CK; c++) {
                    mx = max(mx, ssh[r * CK + c]);
                }
                psh[(r / 4u) * CK + i % CK][r % 4u] = exp(ssh[i] - mx);
                if i % CK == 0u {
                    ash[r] = exp(m0 - mx);
                    mnew[r] = mx;
                }
            }
        }
        workgroupBarrier();

        // The weighted V rows; every thread of a row group keeps the same
        // totals (free: it reads every weight of its rows anyway).
        let a = vec4<f32>(ash[g * 4u], ash[g * 4u + 1u], ash[g * 4u + 2u], ash[g * 4u + 3u]);
        acc0 *= a.x;
        acc1 *= a.y;
        acc2 *= a.z;
        acc3 *= a.w;
        total *= a;
        for (var c = 0u; c < CK; c++) {
            let v = unpack2x16float(vsh[c * HW + w]);
            let pw = psh[g * CK + c];
            acc0 += pw.x * v;
            acc1 += pw.y * v;
            acc2 += pw.z * v;
            acc3 += pw.w * v;
            total += pw;
        }
        workgroupBarrier();
    }

    let oc = Rows(t0, nt, h0, nh, qd);
    write_row(oc, g * 4u, w, acc0, total.x);
    write_row(oc, g * 4u + 1u, w, acc1, total.y);
    write_row(oc, g * 4u + 2u, w, acc2, total.z);
    write_row(oc, g * 4u + 3u, w, acc3, total.w);
}

// Where a workgroup's rows go: tokens [t0, t0 + nt), heads [h0, h0 + nh),
// qd floats a token.
struct Rows {
    t0: u32,
    nt: u32,
    h0: u32,
    nh: u32,
    qd: u32,
}

// Row r's word w: its sums over its total (total >= 1: the row's largest
// score weighs exp(0)); nothing for rows past the tokens or heads.
fn write_row(oc: Rows, r: u32, w: u32, a: vec2<f32>, total: f32) {
    if r / GS < oc.nt && r % GS < oc.nh {
        let o = (oc.t0 + r / GS) * oc.qd + (oc.h0 + r % GS) * HD + 2u * w;
        let inv = 1.0 / total;
        Out[o] = a.x * inv;
        Out[o + 1u] = a.y * inv;
    }
}

// Q[i], Q[i + 1] rounded to f16 and packed (exact in the packing).
fn qpair(i: u32) -> u32 {
    return pack2x16float(vec2<f32>(round_f16(Q[i]), round_f16(Q[i + 1u])));
}
