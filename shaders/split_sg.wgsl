// Decode attention over one split of the keys, as split.wgsl computes it
// (the same splits of LEN keys, the same partials for attention.wgsl's
// `merge`): for one token at position p = S.pos and each query head h of
// this workgroup, over the keys [lo, hi) of split s = workgroup_id.y (lo =
// first_key(p) + LEN * s, hi = min(p + 1, lo + LEN)), with m the split's
// max score, acc = sum_j e^(score_j - m) V[j], total = sum_j e^(score_j -
// m), score_j = (f16(q) . K[j]) * scale, all in f32. Splits past the last
// key exit without writing.
// Why another kernel: split.wgsl walks its keys in steps that each wait
// on four workgroup barriers (the partial dots meet, then the maxima,
// weights and sums), so a workgroup has one round of K loads and one of V
// loads in flight at a time; at 8192 keys it reads an 8B's cache at ~1.6
// TB/s in the stream (BENCHMARKS.md, 2026-12-03), about half of what the
// memory gives. Here a key's row belongs to KL lanes of one subgroup (a
// "cluster"), which sum their partial dots by subgroupShuffleXor, so
// every lane knows the key's scores at once and keeps its own online
// softmax and V sums in registers: no barrier until the split's clusters
// meet at the end, and each round issues the K and V loads of U keys a
// cluster together.
// Lanes: cluster c = (subgroup index) * (subgroup size / KL) + lane / KL
// takes keys lo + c, lo + c + NCL, ..; lane l = lane % KL of it holds the
// row's 16-byte words l, l + KL, .., NW of them (8 dims each), and so the
// queries and V sums of those dims, for GQ heads four a vec4 (GV vec4s).
// The subgroup index comes from a workgroup counter, not from the local
// index, whose mapping onto subgroups WebGPU leaves open.
// Meeting: the clusters of a subgroup by shuffles (rescaled to the larger
// max, log2(subgroup size / KL) rounds), then the subgroups in workgroup
// memory: their maxima, then their V sums rescaled to the workgroup's max,
// SL subgroups a round in SL slots (one round where subgroups are wide).
// The host prepends the subgroups directive (for a browser; not named
// here, as tests/tint/check.mjs looks for it), `const HD` (head_dim, a
// multiple of 8 * KL), `GQ` (query heads per workgroup, as split.wgsl's), `LEN`
// (keys per split), `KL`, `NW` (HD / (8 KL)), `WG` (threads, a multiple
// of every subgroup size), `U` (keys a cluster per round), `NIT`
// (rounds: ceil(LEN / (NCL U))) and `SL`, and appends attn_step.wgsl and
// f16.wgsl; it replaces the lines Q_LOADS, A_DECLS, ROUND, MEET, RESCALE
// and SLOT with the values and sums written out as named values (`q0_0`,
// `a0_0`, `k0_0`, ..), not arrays, which the driver may keep in memory
// (`kernels::split_sg_src`). It needs every subgroup to have at least KL
// lanes.
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 4 scale, 6 splits,
//   7 window.
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * head_dim]), 2
//   KC, 3 VC (16-byte words, [ctx][kv_heads * head_dim / 8]), 4 P, 5 S,
//   9 Part (f32, [heads][P.splits][head_dim + 2]: acc, then total, then m).
// Dispatch: (kv_heads * ceil(group / GQ), P.splits, 1) workgroups of WG
//   threads.

@group(0) @binding(2) var<storage, read> KC: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> VC: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(9) var<storage, read_write> Part: array<f32>;

// 16-byte words of a head row; clusters a workgroup; vec4s of heads.
const HW4: u32 = HD / 8u;
const NCL: u32 = WG / KL;
const GV: u32 = (GQ + 3u) / 4u;
const_assert HW4 == NW * KL;
const_assert WG % KL == 0u;
// A score no key has, and the start of a max.
const MASKED: f32 = -3.4e38;

// The subgroups' count so far (zero-initialized, as all workgroup memory).
var<workgroup> nsg: atomic<u32>;
// Each subgroup's maxima and totals, GV vec4s each (at most NCL
// subgroups: every subgroup has at least KL lanes).
var<workgroup> mx: array<vec4<f32>, NCL * GV>;
var<workgroup> tx: array<vec4<f32>, NCL * GV>;
// SL slots of V sums, [SL][HD][GV].
var<workgroup> sacc: array<vec4<f32>, SL * HD * GV>;

// Query head g's element `dim`, f16-rounded (0 past the heads in use).
fn qh(h0: u32, nh: u32, g: u32, dim: u32) -> f32 {
    if g >= nh {
        return 0.0;
    }
    return round_f16(Q[(h0 + g) * HD + dim]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) sgl: u32, @builtin(subgroup_size) sgs: u32) {
    let len = S.pos + 1u;
    let lo = first_key(S.pos) + wid.y * LEN;
    if lo >= len {
        return;
    }
    let hi = min(len, lo + LEN);
    let last = len - 1u;
    let grp = P.heads / P.kv_heads;
    let per = (grp + GQ - 1u) / GQ;
    let kvi = wid.x / per;
    let h0 = kvi * grp + (wid.x % per) * GQ;
    let nh = min(GQ, kvi * grp + grp - h0);
    let kvw4 = P.kv_heads * HW4;

    var si = 0u;
    if sgl == 0u {
        si = atomicAdd(&nsg, 1u);
    }
    si = subgroupBroadcast(si, 0u);
    let ln = sgl % KL;
    let cl = si * (sgs / KL) + sgl / KL;
    // This lane's first word of a row (its words: base, base + KL, ..).
    let base = kvi * HW4 + ln;

Q_LOADS
    // Running maxima and totals (heads 0-3 in m0 / t0, 4-7 in m1 / t1)
    // and the V sums a{d}_{v}, against the running max.
    var m0 = vec4<f32>(MASKED);
    var m1 = vec4<f32>(MASKED);
    var t0 = vec4<f32>();
    var t1 = vec4<f32>();
A_DECLS
    for (var it = 0u; it < NIT; it++) {
        // Key u of this round: k0 + u * NCL (past hi: masked, its loads
        // from a key that exists).
        let k0 = lo + cl + it * U * NCL;
ROUND
    }

    // The clusters of this subgroup meet: each pair's sums rescaled to
    // the larger max (two masked ones: e^0 times sums of 0).
    for (var mk = KL; mk < sgs; mk <<= 1u) {
MEET
    }
    // The subgroups meet: their maxima first.
    let nsub = WG / sgs;
    if sgl == 0u {
        mx[si * GV] = m0;
        if GV > 1u {
            mx[si * GV + GV - 1u] = m1;
        }
    }
    workgroupBarrier();
    var w0 = vec4<f32>(MASKED);
    var w1 = vec4<f32>(MASKED);
    for (var s = 0u; s < nsub; s++) {
        w0 = max(w0, mx[s * GV]);
        w1 = max(w1, mx[s * GV + GV - 1u]);
    }
    let f0 = exp(m0 - w0);
    let f1 = exp(m1 - w1);
    t0 *= f0;
    t1 *= f1;
RESCALE
    if sgl == 0u {
        tx[si * GV] = t0;
        if GV > 1u {
            tx[si * GV + GV - 1u] = t1;
        }
    }
    // Then their V sums, SL subgroups a round (the first cluster of each
    // holds the subgroup's), the first round writing its slots.
    for (var r = 0u; r < nsub; r += SL) {
        if sgl < KL && si >= r && si - r < SL {
            let o = (si - r) * HD * GV;
            let first = r == 0u;
SLOT
        }
        workgroupBarrier();
    }
    let slots = min(nsub, SL);
    for (var i = lid; i < GQ * HD; i += WG) {
        let g = i / HD;
        let d = i % HD;
        if g < nh {
            var a = 0.0;
            for (var s = 0u; s < slots; s++) {
                a += sacc[(s * HD + d) * GV + g / 4u][g % 4u];
            }
            Part[((h0 + g) * P.splits + wid.y) * (HD + 2u) + d] = a;
        }
    }
    if lid < nh {
        let o = ((h0 + lid) * P.splits + wid.y) * (HD + 2u);
        var t = 0.0;
        var m = MASKED;
        for (var s = 0u; s < nsub; s++) {
            t += tx[s * GV + lid / 4u][lid % 4u];
            m = max(m, mx[s * GV + lid / 4u][lid % 4u]);
        }
        Part[o + HD] = t;
        Part[o + HD + 1u] = m;
    }
}
