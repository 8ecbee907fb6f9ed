// Decode attention over a middling number of keys, in one dispatch: for
// the one token at position p = S.pos and query head h = workgroup_id.x,
// softmax(f16(q) . K[j] * scale) over the keys [first_key(p), p] (at most
// MK of them: the host runs this from SPLIT_KEYS keys up to MK), then the
// weighted sum of V[j], all in f32: the exact softmax, against the max of
// all the scores.
// Why: past SPLIT_KEYS keys llama.cpp's f16 order no longer binds us (as
// attention.wgsl's `split` says), and that kernel's splits then need a
// merge, two dispatches a layer, each staging its keys in chunks with a
// global round trip and several barriers a chunk. Here every K word a
// thread needs is loaded at the start (named values, all rounds at once:
// one round trip), and every V word too, before the scores are known,
// so that the V sums wait on no load.
// Threads (WG = 256):
// - scores: thread (key lid / 4 + 64 r, part lid % 4) for each round r <
//   MK / 64 sums its quarter of the key's row (PW words) in d order
//   (K_DOTS); the four parts are added in order, times the scale;
// - the max by a tree over the threads, then each key's weight e^(s - M)
//   (0 past the last key);
// - V: thread (lane lid / G, group lid % G) for 16-byte word group g
//   (dims 8g .. 8g + 7) and lanes < L (L = WG / G) sums the weighted
//   words of keys lane, lane + L, .. (V_SUMS), and the lanes' sums and
//   weights meet in order in shared memory.
// Keys past the last (the rounds' and lanes' loads are fixed in number)
// read the last key's row, and weigh nothing.
// The host prepends `const HD` (head_dim, a multiple of 8, <= 256), `MK`
// (a multiple of 64, MK * HD <= 32768), `PW` (K words of a part, ceil(HD
// / 8)), `G` and `L`, and `SCR` (shared scratch, max(4 MK, L HD)), and
// appends attn_step.wgsl (P, S, first_key), f16.wgsl, int8_block.wgsl
// and head_q.wgsl; it replaces the
// lines K_LOADS (through KC4 where a part is whole 16-byte words,
// `kernels::few_vec`, else KC), K_DOTS, V_LOADS and V_SUMS
// (`kernels::mid_src`).
// Entry `main`: Out[h * HD + d]. Entry `main_q`: the same, and the row
// also as the int8 blocks the Wo product's integer path reads (13 XQ, 14
// XD; head_q.wgsl, HD a multiple of 32).
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * HD]), 2 KC or
//   10 KC4 (the key cache as u32 or vec4<u32>), 11 VC4 (the value cache
//   as vec4<u32>, [ctx][kv_heads * HD / 8]), 4 P, 5 S, 6 Out (f32, like
//   Q), 13 XQ, 14 XD (`main_q`).
// Dispatch: (heads, 1, 1) workgroups of 256 threads.

@group(0) @binding(2) var<storage, read> KC: array<u32>;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(10) var<storage, read> KC4: array<vec4<u32>>;
@group(0) @binding(11) var<storage, read> VC4: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(14) var<storage, read_write> XD: array<f32>;

const WG: u32 = 256u;
const HW: u32 = HD / 2u;
const_assert HD % 8u == 0u && HD <= 256u && MK % 64u == 0u && MK <= WG;
const_assert G * L <= WG && 4u * MK <= SCR && L * HD <= SCR;

// The query, f16-rounded; the partial dots, then the lanes' V sums; the
// scores, then the weights; the max tree; the lanes' total weights; the
// output row.
var<workgroup> qs: array<f32, HD>;
var<workgroup> scr: array<f32, SCR>;
var<workgroup> sc: array<f32, MK>;
var<workgroup> red: array<f32, WG>;
var<workgroup> tl: array<f32, L>;
var<workgroup> ob: array<f32, HD>;

// Head h's output row to ob (dims d < HD, thread d).
fn attend(h: u32, lid: u32) {
    let lo = first_key(S.pos);
    let n = min(S.pos + 1u - lo, MK);
    let last = lo + n - 1u;
    let grp = P.heads / P.kv_heads;
    let kvw = P.kv_heads * HW;
    let kvh = (h / grp) * HW;
    // The zero that keeps products out of fused multiply-adds, as in
    // attention.wgsl.
    let Z = bitcast<f32>(P._p0);
    // Score role: part lid % 4 of key lid / 4 of each round.
    let part = lid % 4u;
    // V role: group g of lane `lane` (threads past G * L idle).
    let g = lid % G;
    let lane = lid / G;
    let vb = kvh / 4u + g;
    let kvw4 = kvw / 4u;
K_LOADS
V_LOADS
    for (var i = lid; i < HD; i += WG) {
        qs[i] = round_f16(Q[h * HD + i]);
    }
    workgroupBarrier();
K_DOTS
    workgroupBarrier();
    // Key lid's score (lid < MK), and the max tree's leaf.
    var s = -3.0e38;
    if lid < n {
        let b = 4u * lid;
        s = (((scr[b] + scr[b + 1u]) + scr[b + 2u]) + scr[b + 3u]) * P.scale;
    }
    red[lid] = s;
    for (var w = WG / 2u; w > 0u; w /= 2u) {
        workgroupBarrier();
        if lid < w {
            red[lid] = max(red[lid], red[lid + w]);
        }
    }
    workgroupBarrier();
    let m = red[0];
    if lid < MK {
        sc[lid] = select(0.0, exp(s - m), lid < n);
    }
    workgroupBarrier();
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var total = 0.0;
    if lane < L {
V_SUMS
        for (var c = 0u; c < 4u; c++) {
            scr[lane * HD + 8u * g + c] = a0[c];
            scr[lane * HD + 8u * g + 4u + c] = a1[c];
        }
        if g == 0u {
            tl[lane] = total;
        }
    }
    workgroupBarrier();
    if lid < HD {
        var o = 0.0;
        var t = 0.0;
        for (var i = 0u; i < L; i++) {
            o += scr[i * HD + lid];
            t += tl[i];
        }
        ob[lid] = o / t;
        Out[h * HD + lid] = ob[lid];
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    attend(wid.x, lid);
}

@compute @workgroup_size(WG)
fn main_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    attend(h, lid);
    workgroupBarrier();
    put_head_q(h, lid);
}
