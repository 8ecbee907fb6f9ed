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
// runs instead: from kernels::deep_keys keys (1024 at head sizes >= 128,
// 4096 at 64-127; with few splits its few workgroups leave the GPU idle).
// Here a workgroup takes all
// GQ query heads of its kv head that it serves and the split's LS keys at
// once: every thread loads its share of the K rows in one round trip, the
// scores and the split's max come from short shared-memory reductions,
// and each V word is loaded once for all GQ heads. Nothing runs per key
// serially but the V sum (LS / lanes keys a thread).
// Every per-head sum (the partial dots, the V sums) runs four heads at a
// time in vec4 registers over query and weight rows laid out so (qv, wv):
// with the V sums in a per-thread array indexed by head, the kernel took
// 72 of its 88 us a layer (8B, 8192 keys) even with no K or V loaded at
// all; in vec4s it takes 47 (BENCHMARKS.md, 2026-11-26d).
// Threads: scores: thread (key lid / TPK, part lid % TPK) takes a TPK-th
// of the head's words (PW of them) of its key for every head, the TPK
// partial dots meet in `buf`; V: thread (lane lid / HW, word lid % HW)
// sums keys lane, lane + LANES, .. of word w for every head, the lanes
// meet in `buf` one head at a time.
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 2 head_dim (= HD), 4
//   scale, 6 splits, 7 window.
// The host prepends `const HD` (head_dim, <= 512), `GQ` (query heads per
//   workgroup: GQ * HD <= 1024, GQ <= 8), `LS` (keys per split, a
//   multiple of 8) and `TPK` (threads per key; LS * TPK threads, at most
//   256 and at least HD / 2: `kernels::DeepShape`) and appends f16.wgsl.
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * head_dim]), 2
//   KC, 3 VC (u32, [ctx][kv_heads * head_dim / 2]), 4 P, 5 S, 9 Part (f32,
//   [heads][P.splits][head_dim + 2]: acc, then total, then m), 10 KC4 (KC
//   again as vec4<u32>: the K rows' loads where a thread's share of a row
//   is whole 16-byte words).
// Dispatch: (kv_heads * ceil(group / GQ), P.splits, 1) workgroups of
//   LS * TPK threads.

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
// KC again, as 16-byte words (the host binds the same buffer).
@group(0) @binding(10) var<storage, read> KC4: array<vec4<u32>>;

const WG: u32 = LS * TPK;
const_assert WG <= 256u;
const_assert LS % 8u == 0u;
// Words (f16 pairs) of a head row; a score thread's share of them.
const HW: u32 = HD / 2u;
const_assert WG >= HW;
const_assert WG >= GQ * 8u;
const PW: u32 = (HW + TPK - 1u) / TPK;
// A part is whole 16-byte words that tile the row exactly (the row starts
// on one: kvw and HW are then multiples of 4).
const VEC: bool = PW % 4u == 0u && PW * TPK == HW;
// V lanes: threads per word of the row.
const LANES: u32 = min(WG / HW, LS);
// A score no key has, and the start of a max.
const MASKED: f32 = -3.4e38;

// The queries (f16-rounded) by part, element and four heads a vec4:
// qv[p * QS + e * GV + q] holds element 2 PW p + e of heads 4q .. 4q + 3
// (0 past the heads in use and past the row), so that a partial dot reads
// two vec4 a key word and sums every head in vec4 registers. One pad vec4
// a part: the parts' rows, read at once by a warp, then start in
// different banks.
const GV: u32 = (GQ + 3u) / 4u;
const QS: u32 = 2u * PW * GV + 1u;
var<workgroup> qv: array<vec4<f32>, TPK * QS>;
// Partial dots [GQ][LS][TPK], then the lanes' V sums of one head [LANES][HD]
// (LANES * HD <= 2 WG).
var<workgroup> buf: array<f32, max(GQ, 2u) * WG>;
// Scores, then weights, by key, four heads a vec4: wv[j * GV + q] holds
// key j's for heads 4q .. 4q + 3 (0 past GQ), so that the V sums read one
// vec4 a key and keep their accumulators in vec4 registers. Per head
// eighths' max and sum.
var<workgroup> wv: array<vec4<f32>, LS * GV>;
var<workgroup> m8: array<f32, GQ * 8u>;
var<workgroup> t8: array<f32, GQ * 8u>;

fn first_key(p: u32) -> u32 {
    if P.window == 0u || p < P.window {
        return 0u;
    }
    return p + 1u - P.window;
}

// a[i] without a dynamic index (which may put `a` in memory).
fn lane4(a: vec4<f32>, i: u32) -> f32 {
    return select(select(a.x, a.y, i == 1u), select(a.z, a.w, i == 3u), i >= 2u);
}

// Head g's score (or weight) of key j.
fn score(g: u32, j: u32) -> f32 {
    return wv[j * GV + g / 4u][g % 4u];
}

fn eighth_max(g: u32) -> f32 {
    var m = MASKED;
    for (var i = 0u; i < 8u; i++) {
        m = max(m, m8[g * 8u + i]);
    }
    return m;
}

@compute @workgroup_size(WG)
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
    let key = lid / TPK;
    let part = lid % TPK;
    let krow = min(lo + key, len - 1u) * kvw + kvi * HW;
    var kw: array<u32, PW>;
    if VEC {
        // A quarter of the loads.
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
    // The queries, f16-rounded, into qv.
    for (var i = lid; i < TPK * 2u * PW * GQ; i += WG) {
        let g = i % GQ;
        let pe = i / GQ;
        let e = pe % (2u * PW);
        let p = pe / (2u * PW);
        let el = 2u * PW * p + e;
        var v = 0.0;
        if g < nh && el < HD {
            v = round_f16(Q[(h0 + g) * HD + el]);
        }
        qv[p * QS + e * GV + g / 4u][g % 4u] = v;
    }
    workgroupBarrier();

    // Partial dots: this thread's words of its key, every head at once
    // (heads 0-3 in d0, 4-7 in d1).
    var d0 = vec4<f32>();
    var d1 = vec4<f32>();
    let qb = part * QS;
    for (var i = 0u; i < PW; i++) {
        let kk = unpack2x16float(kw[i]);
        let e = qb + 2u * i * GV;
        d0 += qv[e] * kk.x + qv[e + GV] * kk.y;
        if GV > 1u {
            d1 += qv[e + 1u] * kk.x + qv[e + GV + 1u] * kk.y;
        }
    }
    for (var g = 0u; g < GQ; g++) {
        buf[(g * LS + key) * TPK + part] = lane4(select(d0, d1, g >= 4u), g % 4u);
    }
    workgroupBarrier();
    // Scores (thread i: head i / LS, key i % LS), and each eighth's max.
    for (var i = lid; i < GQ * LS; i += WG) {
        let b = TPK * i;
        var s = 0.0;
        for (var e = 0u; e < TPK; e++) {
            s += buf[b + e];
        }
        s *= P.scale;
        wv[(i % LS) * GV + i / LS / 4u][i / LS % 4u] = select(MASKED, s, i % LS < cn);
    }
    workgroupBarrier();
    if lid < GQ * 8u {
        var m = MASKED;
        for (var i = 0u; i < LS / 8u; i++) {
            m = max(m, score(lid / 8u, (lid % 8u) * (LS / 8u) + i));
        }
        m8[lid] = m;
    }
    workgroupBarrier();
    // Weights against the split's max (masked keys: 0), and their sums.
    for (var i = lid; i < GQ * LS; i += WG) {
        let g = i / LS;
        let j = (i % LS) * GV + g / 4u;
        wv[j][g % 4u] = exp(wv[j][g % 4u] - eighth_max(g));
    }
    workgroupBarrier();
    if lid < GQ * 8u {
        var t = 0.0;
        for (var i = 0u; i < LS / 8u; i++) {
            t += score(lid / 8u, (lid % 8u) * (LS / 8u) + i);
        }
        t8[lid] = t;
    }

    // V: lane `lane` of word w, keys lane, lane + LANES, ...
    let lane = lid / HW;
    let w = lid % HW;
    // Heads 0-3 in ax0 / ay0 (the word's two dims), 4-7 in ax1 / ay1.
    var ax0 = vec4<f32>();
    var ay0 = vec4<f32>();
    var ax1 = vec4<f32>();
    var ay1 = vec4<f32>();
    if lane < LANES {
        // Four keys' loads in flight per round (a round's keys past the
        // split read its last key and weigh 0).
        let vb = kvi * HW + w;
        let last = cn - 1u;
        for (var j = lane; j < cn; j += 4u * LANES) {
            let j1 = j + LANES;
            let j2 = j1 + LANES;
            let j3 = j2 + LANES;
            let v0 = unpack2x16float(VC[(lo + j) * kvw + vb]);
            let v1 = unpack2x16float(VC[(lo + min(j1, last)) * kvw + vb]);
            let v2 = unpack2x16float(VC[(lo + min(j2, last)) * kvw + vb]);
            let v3 = unpack2x16float(VC[(lo + min(j3, last)) * kvw + vb]);
            let w0 = wv[j * GV];
            let w1 = select(vec4<f32>(), wv[min(j1, last) * GV], j1 < cn);
            let w2 = select(vec4<f32>(), wv[min(j2, last) * GV], j2 < cn);
            let w3 = select(vec4<f32>(), wv[min(j3, last) * GV], j3 < cn);
            ax0 += w0 * v0.x + w1 * v1.x + w2 * v2.x + w3 * v3.x;
            ay0 += w0 * v0.y + w1 * v1.y + w2 * v2.y + w3 * v3.y;
            if GV > 1u {
                let u0 = wv[j * GV + 1u];
                let u1 = select(vec4<f32>(), wv[min(j1, last) * GV + 1u], j1 < cn);
                let u2 = select(vec4<f32>(), wv[min(j2, last) * GV + 1u], j2 < cn);
                let u3 = select(vec4<f32>(), wv[min(j3, last) * GV + 1u], j3 < cn);
                ax1 += u0 * v0.x + u1 * v1.x + u2 * v2.x + u3 * v3.x;
                ay1 += u0 * v0.y + u1 * v1.y + u2 * v2.y + u3 * v3.y;
            }
        }
    }
    for (var g = 0u; g < GQ; g++) {
        workgroupBarrier();
        if lane < LANES {
            let hi = g >= 4u;
            buf[lane * HD + 2u * w] = lane4(select(ax0, ax1, hi), g % 4u);
            buf[lane * HD + 2u * w + 1u] = lane4(select(ay0, ay1, hi), g % 4u);
        }
        workgroupBarrier();
        let o = ((h0 + g) * P.splits + wid.y) * (HD + 2u);
        for (var d = lid; g < nh && d < HD; d += WG) {
            var a = 0.0;
            for (var l = 0u; l < LANES; l++) {
                a += buf[l * HD + d];
            }
            Part[o + d] = a;
        }
        if g < nh && lid == 0u {
            var t = 0.0;
            for (var i = 0u; i < 8u; i++) {
                t += t8[g * 8u + i];
            }
            Part[o + HD] = t;
            Part[o + HD + 1u] = eighth_max(g);
        }
    }
}
