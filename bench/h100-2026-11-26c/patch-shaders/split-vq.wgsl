// Decode attention over one split of the keys (flash-decoding's first
// half): for one token at position p = S.pos and each query head h of this
// workgroup, over the keys [lo, hi) of split s = workgroup_id.y (lo =
// first_key(p) + LS * s, hi = min(p + 1, lo + LS); first_key as in
// attention.wgsl), the softmax's pieces relative to the split's own max m:
// acc = sum_j e^(score_j - m) V[j], total = sum_j e^(score_j - m), and m,
// score_j = (f16(q) . K[j]) * scale, all in f32. attention.wgsl's `merge`
// (or `merge_q`) then combines the splits. Splits past the last key exit
// without writing.
// Why this shape: attention.wgsl's `split` stages 16 or 32 keys at a
// time and walks each chunk as an online softmax, with four barriers a
// chunk, a serial dot product per (head, key) thread and 1 or 2 of a
// group's query heads per workgroup (so the KV rows are read twice). On
// the H100 it read an 8B's cache at ~0.23 TB/s at 8192 keys. When this
// runs instead: at head size >= 128 from GpuTuning::deep_split_keys keys
// (2048), the only place it measured faster (BENCHMARKS.md, 2026-11-26:
// with few splits its few workgroups leave the GPU idle, and at head size
// 64 it lost at every depth). Here a workgroup takes all
// GQ query heads of its kv head that it serves and the split's LS keys at
// once: every thread loads its share of the K rows in one round trip, the
// scores and the split's max come from short shared-memory reductions,
// and each V word is loaded once for all GQ heads. Nothing runs per key
// serially but the V sum (LS / lanes keys a thread).
// Threads: scores: thread (key lid / 4, part lid % 4) takes a quarter of
// the head's words (PW of them) of its key for every head, the four
// partial dots meet in `buf`; V: thread (lane lid / HW, word lid % HW)
// sums keys lane, lane + LANES, .. of word w for every head, the lanes
// meet in `buf` one head at a time.
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 2 head_dim (= HD), 4
//   scale, 6 splits, 7 window.
// The host prepends `const HD` (head_dim, <= 512), `GQ` (query heads per
//   workgroup: GQ * HD <= 1024, GQ <= 8) and `LS` (keys per split: 64,
//   one key per 4 threads) and appends f16.wgsl.
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * head_dim]), 2
//   KC, 3 VC (u32, [ctx][kv_heads * head_dim / 2]), 4 P, 5 S, 9 Part (f32,
//   [heads][P.splits][head_dim + 2]: acc, then total, then m), 10 KC4 (KC
//   again as vec4<u32>: the K rows' loads where a thread's share of a row
//   is whole 16-byte words, head sizes that are multiples of 32).
// Dispatch: (kv_heads * ceil(group / GQ), P.splits, 1) workgroups of 256.

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ctx: u32,
    scale: f32,
    _p0: u32,
    splits: u32,
    window: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(2) var<storage, read> KC: array<u32>;
@group(0) @binding(3) var<storage, read> VC: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(9) var<storage, read_write> Part: array<f32>;
// KC and VC again, as 16-byte words (the host binds the same buffers).
@group(0) @binding(10) var<storage, read> KC4: array<vec4<u32>>;
@group(0) @binding(11) var<storage, read> VC4: array<vec4<u32>>;

const WG: u32 = 256u;
const_assert LS * 4u == WG;
// Words (f16 pairs) of a head row; a score thread's share of them.
const HW: u32 = HD / 2u;
const PW: u32 = (HW + 3u) / 4u;
// V lanes: threads per word of the row.
const LANES: u32 = min(WG / HW, LS);
// Where a row is whole 16-byte words (head sizes that are multiples of
// 8), V is read 16 bytes a thread instead: HQ threads a row, QLANES rows
// at once, each thread KPT keys, all loaded in one round trip.
const VQ: bool = HW % 4u == 0u && WG / (HW / 4u) <= LS;
const HQ: u32 = max(HW / 4u, 1u);
const QLANES: u32 = WG / HQ;
const KPT: u32 = max(LS / QLANES, 1u);
// A score no key has, and the start of a max.
const MASKED: f32 = -3.4e38;

// The queries (f16-rounded) by part: qsh[(p * GQ + g) * QP + e] is
// element 2 PW p + e of head g. One pad element per row: the four parts'
// rows, read at once by a warp, then start in different banks.
const QP: u32 = 2u * PW + 1u;
var<workgroup> qsh: array<f32, 4u * GQ * QP>;
// Partial dots [GQ][LS][4], then the lanes' V sums of one head [LANES][HD]
// (LANES * HD <= 2 WG; with VQ [QLANES][HD], QLANES * HD = 8 WG).
var<workgroup> buf: array<f32, max(GQ, 8u) * WG>;
// Scores, then weights, [GQ][LS]; per head eighths' max and sum.
var<workgroup> sc: array<f32, GQ * LS>;
var<workgroup> m8: array<f32, GQ * 8u>;
var<workgroup> t8: array<f32, GQ * 8u>;

fn first_key(p: u32) -> u32 {
    if P.window == 0u || p < P.window {
        return 0u;
    }
    return p + 1u - P.window;
}

fn eighth_max(g: u32) -> f32 {
    var m = MASKED;
    for (var i = 0u; i < 8u; i++) {
        m = max(m, m8[g * 8u + i]);
    }
    return m;
}

// The V half with 16-byte loads (VQ): thread (lane lid / HQ, quad lid %
// HQ) loads words 4q .. 4q + 3 of keys lane, lane + QLANES, .. (KPT of
// them) in one round, sums them for every head under the weights in sc,
// and the lanes meet in `buf` one head at a time; then Part as below.
fn v_quads(lid: u32, lo: u32, cn: u32, kvi: u32, kvw: u32, nh: u32, h0: u32, sp: u32) {
    let lane = lid / HQ;
    let q = lid % HQ;
    let vb = (kvi * HW) / 4u + q;
    var vv: array<vec4<u32>, KPT>;
    for (var r = 0u; r < KPT; r++) {
        let j = min(lane + r * QLANES, cn - 1u);
        vv[r] = VC4[((lo + j) * kvw) / 4u + vb];
    }
    var acc: array<mat2x4<f32>, GQ>;
    for (var r = 0u; r < KPT; r++) {
        let j = lane + r * QLANES;
        let jc = min(j, cn - 1u);
        let a = vec4<f32>(unpack2x16float(vv[r].x), unpack2x16float(vv[r].y));
        let b = vec4<f32>(unpack2x16float(vv[r].z), unpack2x16float(vv[r].w));
        for (var g = 0u; g < GQ; g++) {
            let wt = select(0.0, sc[g * LS + jc], j < cn);
            acc[g] += mat2x4<f32>(wt * a, wt * b);
        }
    }
    for (var g = 0u; g < GQ; g++) {
        workgroupBarrier();
        let o8 = lane * HD + 8u * q;
        for (var e = 0u; e < 4u; e++) {
            buf[o8 + e] = acc[g][0][e];
            buf[o8 + 4u + e] = acc[g][1][e];
        }
        workgroupBarrier();
        if g < nh && lid < HD {
            var a = 0.0;
            for (var l = 0u; l < QLANES; l++) {
                a += buf[l * HD + lid];
            }
            let o = ((h0 + g) * P.splits + sp) * (HD + 2u);
            Part[o + lid] = a;
            if lid == 0u {
                var t = 0.0;
                for (var i = 0u; i < 8u; i++) {
                    t += t8[g * 8u + i];
                }
                Part[o + HD] = t;
                Part[o + HD + 1u] = eighth_max(g);
            }
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let len = S.pos + 1u;
    let lo = first_key(S.pos) + wid.y * LS;
    if lo >= len {
        return;
    }
    let cn = min(LS, len - lo);
    let grp = P.heads / P.kv_heads;
    let per = (grp + GQ - 1u) / GQ;
    let kvi = wid.x / per;
    let h0 = kvi * grp + (wid.x % per) * GQ;
    let nh = min(GQ, kvi * grp + grp - h0);
    let kvw = P.kv_heads * HW;

    // This thread's K words, loaded before anything waits (keys past the
    // split's end read its last key and are masked below).
    let key = lid / 4u;
    let part = lid % 4u;
    let krow = min(lo + key, len - 1u) * kvw + kvi * HW;
    var kw: array<u32, PW>;
    if PW % 4u == 0u {
        // A part is whole 16-byte words (the row starts on one: kvw and
        // HW are multiples of 4 with it): a quarter of the loads.
        let b4 = (krow + part * PW) / 4u;
        for (var i = 0u; i < PW / 4u; i++) {
            let v = KC4[b4 + i];
            kw[4u * i] = v.x;
            kw[4u * i + 1u] = v.y;
            kw[4u * i + 2u] = v.z;
            kw[4u * i + 3u] = v.w;
        }
    } else {
        for (var i = 0u; i < PW; i++) {
            let w = part * PW + i;
            kw[i] = KC[krow + min(w, HW - 1u)];
        }
    }
    // The queries, f16-rounded, into qsh (0 past the heads in use).
    for (var i = lid; i < 4u * GQ * QP; i += WG) {
        let p = i / (GQ * QP);
        let g = (i / QP) % GQ;
        let e = 2u * PW * p + i % QP;
        var v = 0.0;
        if g < nh && i % QP < 2u * PW && e < HD {
            v = round_f16(Q[(h0 + g) * HD + e]);
        }
        qsh[i] = v;
    }
    workgroupBarrier();

    // Partial dots: this thread's words of its key, for every head.
    for (var g = 0u; g < GQ; g++) {
        let qb = (part * GQ + g) * QP;
        var d = 0.0;
        for (var i = 0u; i < PW; i++) {
            let kk = unpack2x16float(kw[i]);
            d += qsh[qb + 2u * i] * kk.x + qsh[qb + 2u * i + 1u] * kk.y;
        }
        buf[(g * LS + key) * 4u + part] = d;
    }
    workgroupBarrier();
    // Scores (thread i: head i / LS, key i % LS), and each eighth's max.
    for (var i = lid; i < GQ * LS; i += WG) {
        let b = 4u * i;
        let s = ((buf[b] + buf[b + 1u]) + (buf[b + 2u] + buf[b + 3u])) * P.scale;
        sc[i] = select(MASKED, s, i % LS < cn);
    }
    workgroupBarrier();
    if lid < GQ * 8u {
        var m = MASKED;
        for (var i = 0u; i < LS / 8u; i++) {
            m = max(m, sc[lid * (LS / 8u) + i]);
        }
        m8[lid] = m;
    }
    workgroupBarrier();
    // Weights against the split's max (masked keys: 0), and their sums.
    for (var i = lid; i < GQ * LS; i += WG) {
        sc[i] = exp(sc[i] - eighth_max(i / LS));
    }
    workgroupBarrier();
    if lid < GQ * 8u {
        var t = 0.0;
        for (var i = 0u; i < LS / 8u; i++) {
            t += sc[lid * (LS / 8u) + i];
        }
        t8[lid] = t;
    }

    if VQ {
        v_quads(lid, lo, cn, kvi, kvw, nh, h0, wid.y);
        return;
    }
    // V: lane `lane` of word w, keys lane, lane + LANES, ...
    let lane = lid / HW;
    let w = lid % HW;
    var acc: array<vec2<f32>, GQ>;
    if lane < LANES {
        // Four keys' loads in flight per round (a round's keys past the
        // split read its last key and weigh 0).
        let vb = kvi * HW + w;
        for (var j = lane; j < cn; j += 4u * LANES) {
            var vv: array<vec2<f32>, 4>;
            for (var r = 0u; r < 4u; r++) {
                let jr = min(j + r * LANES, cn - 1u);
                vv[r] = unpack2x16float(VC[(lo + jr) * kvw + vb]);
            }
            for (var r = 0u; r < 4u; r++) {
                let jr = j + r * LANES;
                let jc = min(jr, cn - 1u);
                for (var g = 0u; g < GQ; g++) {
                    acc[g] += select(0.0, sc[g * LS + jc], jr < cn) * vv[r];
                }
            }
        }
    }
    for (var g = 0u; g < GQ; g++) {
        workgroupBarrier();
        if lane < LANES {
            buf[lane * HD + 2u * w] = acc[g].x;
            buf[lane * HD + 2u * w + 1u] = acc[g].y;
        }
        workgroupBarrier();
        if g < nh && lid < HD {
            var a = 0.0;
            for (var l = 0u; l < LANES; l++) {
                a += buf[l * HD + lid];
            }
            let o = ((h0 + g) * P.splits + wid.y) * (HD + 2u);
            Part[o + lid] = a;
            if lid == 0u {
                var t = 0.0;
                for (var i = 0u; i < 8u; i++) {
                    t += t8[g * 8u + i];
                }
                Part[o + HD] = t;
                Part[o + HD + 1u] = eighth_max(g);
            }
        }
    }
}
