// Decode attention over one split of the keys (flash-decoding's first
// half): for one token at position p = S.pos and each query head h of this
// workgroup, over the keys [lo, hi) of split s = workgroup_id.y (lo =
// first_key(p) + LS * NC * s, hi = min(p + 1, lo + LS * NC); first_key as
// in attention.wgsl), taken as NC chunks of LS keys one after another, the
// softmax's pieces relative to the split's own max m:
// acc = sum_j e^(score_j - m) V[j], total = sum_j e^(score_j - m), and m,
// score_j = (f16(q) . K[j]) * scale, all in f32. attention.wgsl's `merge`
// (or `merge_q`) then combines the splits. Splits past the last key exit
// without writing.
// Why this shape: attention.wgsl's `split` stages 16 or 32 keys at a
// time and walks each chunk as an online softmax, with four barriers a
// chunk, a serial dot product per (head, key) thread and 1 or 2 of a
// group's query heads per workgroup (so the KV rows are read twice). On
// the H100 it read an 8B's cache at ~0.23 TB/s at 8192 keys. When this
// runs instead: from kernels::deep_keys keys (512 at head sizes >= 128,
// 1024 at 64-127; with few splits its few workgroups leave the GPU idle).
// Why NC chunks a split (1 by default, 2 from kernels::deep_tiers' far
// tier): deep contexts launch as many splits as LS-key chunks, and each
// split's fixed costs (its queries staged, its barriers, its partials
// written and merged) come with it. Walking two chunks a split, with the
// next chunk's K loads in flight through this chunk's softmax and V sums,
// ran llama-3.1-8b 2.6-2.9% faster at 8192 keys on the H200 (split 864 ->
// 780 us and merge 351 -> 317 a step, timed alone) but 1% slower at 2048,
// with half as many workgroups in flight (BENCHMARKS.md, 2026-11-29).
// Here a workgroup takes all
// GQ query heads of its kv head that it serves and the split's LS keys at
// once: every thread loads its share of the K rows in one round trip at
// the start (and of the V rows in one more), the scores and the split's max come from short
// shared-memory reductions, and each V word is loaded once for all GQ
// heads. Nothing runs per key serially but the V sum (LS / lanes keys a
// thread).
// Every per-head sum (the partial dots, the V sums) runs four heads at a
// time in vec4 registers over query and weight rows laid out so (qv, wv):
// with the V sums in a per-thread array indexed by head, the kernel took
// 72 of its 88 us a layer (8B, 8192 keys) even with no K or V loaded at
// all; in vec4s it takes 47 (BENCHMARKS.md, 2026-11-26d), and with each
// thread's K loads and its V loads issued at once and the V sums meeting
// four heads a round instead of one, 33 (2026-11-26e).
// Threads: scores: thread (key lid / TPK, part lid % TPK) takes a TPK-th
// of the head's words (PW of them) of its key for every head, the TPK
// partial dots meet in `buf`; V: thread (lane lid / HW, word lid % HW)
// sums keys lane, lane + LANES, .. of word w for every head, the lanes
// meet in `buf` HB heads at a time.
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 2 head_dim (= HD), 4
//   scale, 6 splits, 7 window.
// The host prepends `const HD` (head_dim, <= 512), `GQ` (query heads per
//   workgroup: GQ * HD <= 1024, GQ <= 8), `LS` (keys per chunk, a
//   multiple of 8), `NC` (chunks per split), `TPK` (threads per key; LS * TPK threads, at most 256
//   and at least HD / 2: `kernels::DeepShape`), `PW` and `LANES` (below),
//   `HB` (heads whose V sums meet in `buf` at once) and `BUF` (its
//   length), and appends
//   attn_step.wgsl (P, S, first_key) and f16.wgsl; it replaces the lines
//   K_LOADS, K_NEXT, V_EARLY, V_LOADS, K_DOTS and V_SUMS with the loads
//   and sums written out (`kernels::split_src`; the V loads go to one of
//   V_EARLY and V_LOADS, by the shape's v_early).
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * head_dim]), 2
//   KC, 3 VC (u32, [ctx][kv_heads * head_dim / 2]), 4 P, 5 S, 9 Part (f32,
//   [heads][P.splits][head_dim + 2]: acc, then total, then m), 10 KC4 (KC
//   again as vec4<u32>: the K rows' loads where a thread's share of a row
//   is whole 16-byte words).
// Dispatch: (kv_heads * ceil(group / GQ), P.splits, 1) workgroups of
//   LS * TPK threads.

@group(0) @binding(2) var<storage, read> KC: array<u32>;
@group(0) @binding(3) var<storage, read> VC: array<u32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(9) var<storage, read_write> Part: array<f32>;
// KC again, as 16-byte words (the host binds the same buffer).
@group(0) @binding(10) var<storage, read> KC4: array<vec4<u32>>;

const WG: u32 = LS * TPK;
const_assert WG <= 256u;
const_assert LS % 8u == 0u;
// Words (f16 pairs) of a head row.
const HW: u32 = HD / 2u;
const_assert WG >= HW;
const_assert WG >= GQ * 8u;
// PW (the host's): a score thread's share of the row's words,
// ceil(HW / TPK).
// A part is whole 16-byte words that tile the row exactly (the row starts
// on one: kvw and HW are then multiples of 4).
const VEC: bool = PW % 4u == 0u && PW * TPK == HW;
// LANES (the host's): V lanes, threads per word of the row, min(WG / HW,
// LS).
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
// Partial dots [GQ][LS][TPK], then the lanes' V sums of HB heads
// [HB][LANES][HD]; BUF (the host's) is the larger of the two.
var<workgroup> buf: array<f32, BUF>;
// Scores, then weights, by key, four heads a vec4: wv[j * GV + q] holds
// key j's for heads 4q .. 4q + 3 (0 past GQ), so that the V sums read one
// vec4 a key and keep their accumulators in vec4 registers. Per head
// eighths' max and sum.
var<workgroup> wv: array<vec4<f32>, LS * GV>;
var<workgroup> m8: array<f32, GQ * 8u>;
var<workgroup> t8: array<f32, GQ * 8u>;
// The running max per head over the chunks so far, and each chunk's
// rescale of the sums before it, four heads a vec4 (0 past GQ).
var<workgroup> mrun: array<f32, GQ>;
var<workgroup> sv: array<vec4<f32>, GV>;

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
    let lo0 = first_key(S.pos) + wid.y * LS * NC;
    if lo0 >= len {
        return;
    }
    let grp = P.heads / P.kv_heads;
    let per = (grp + GQ - 1u) / GQ;
    let kvi = wid.x / per;
    let h0 = kvi * grp + (wid.x % per) * GQ;
    let nh = min(GQ, kvi * grp + grp - h0);
    let kvw = P.kv_heads * HW;

    // This thread's K words of the first chunk, loaded before anything
    // waits (keys past the split's end read its last key; their scores
    // are masked and their weights 0), and later its V words, all in one
    // round trip each. The host writes the loads out as named values
    // (`k0`, `k1`, .. and `v0`, `v1`, ..), not arrays, which may live in
    // memory: K_LOADS, PW of them for key `key`'s part `part` of row
    // `krow` (K_NEXT loads them again from a new `krow`); V_LOADS, NV of
    // them for word `w` of keys `lane`, `lane` + LANES, ..
    let key = lid / TPK;
    let part = lid % TPK;
    let last = len - 1u;
    var krow = min(lo0 + key, last) * kvw + kvi * HW;
    // V: lane `lane` of word w (idle threads past LANES take the last lane's
    // keys, and their sums are never written).
    let lane = min(lid / HW, LANES - 1u);
    let w = lid % HW;
    let vb = kvi * HW + w;
K_LOADS
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
    if lid < GQ {
        mrun[lid] = MASKED;
    }
    // The V sums of heads 0-3 in ax0 / ay0 (the word's two dims), 4-7 in
    // ax1 / ay1, against the running max mrun, over every chunk so far.
    var ax0 = vec4<f32>();
    var ay0 = vec4<f32>();
    var ax1 = vec4<f32>();
    var ay1 = vec4<f32>();

    // The split's NC chunks of LS keys, one after another, as an online
    // softmax: each chunk's weights against the running max, the sums so
    // far rescaled where a chunk raises it. Chunks past the last key are
    // skipped (the same for the whole workgroup).
    for (var c = 0u; c < NC; c++) {
        let lo = lo0 + c * LS;
        if lo >= len {
            break;
        }
        let cn = min(LS, len - lo);
        // qv (first chunk), and every thread done with the last chunk's
        // wv, sv and m8.
        workgroupBarrier();

        // Partial dots: this thread's words of its key, every head at once
        // (heads 0-3 in d0, 4-7 in d1).
        var d0 = vec4<f32>();
        var d1 = vec4<f32>();
        let qb = part * QS;
K_DOTS
        // The next chunk's K words, in flight through this chunk's softmax
        // and V sums.
        if c + 1u < NC && lo + LS < len {
            krow = min(lo + LS + key, last) * kvw + kvi * HW;
K_NEXT
        }
        // With the shape's v_early, this chunk's V words are loaded here
        // (V_EARLY) instead of at V_LOADS: their round trip overlaps the
        // softmax's barriers, and they take the K words' registers, which
        // the dots have just freed (with NC > 1 the next chunk's K words
        // are live too).
V_EARLY
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
        // Weights against the running max (masked keys: 0), and how much
        // the sums so far shrink (sv: 1 where the chunk does not raise the
        // max, 0 at the first chunk).
        for (var i = lid; i < GQ * LS; i += WG) {
            let g = i / LS;
            let j = (i % LS) * GV + g / 4u;
            wv[j][g % 4u] = exp(wv[j][g % 4u] - max(mrun[g], eighth_max(g)));
        }
        if lid < GQ {
            sv[lid / 4u][lid % 4u] = exp(mrun[lid] - max(mrun[lid], eighth_max(lid)));
        }
        workgroupBarrier();
        if lid < GQ * 8u {
            var t = 0.0;
            for (var i = 0u; i < LS / 8u; i++) {
                t += score(lid / 8u, (lid % 8u) * (LS / 8u) + i);
            }
            t8[lid] = t8[lid] * sv[lid / 32u][lid / 8u % 4u] + t;
        }
        // No thread reads mrun again before the next chunk's barriers.
        if lid < GQ {
            mrun[lid] = max(mrun[lid], eighth_max(lid));
        }

        // V sums: keys lane, lane + LANES, .. of word w (V_SUMS, a block
        // of multiply-adds per loaded word; masked keys weigh 0, and keys
        // past the chunk's LS, in the last round where LANES does not
        // divide it, are guarded by the host). The V words are loaded
        // here (without v_early), not with the K words: held through the
        // K dots too they cost more (registers, so fewer workgroups at
        // once, measured: 8B at 8192 keys 36.0 -> 33.4 us a layer with
        // them here, BENCHMARKS.md 2026-11-26e, ab6) than their round trip
        // here. V_EARLY, after the dots, is the middle way.
V_LOADS
        ax0 *= sv[0];
        ay0 *= sv[0];
        if GV > 1u {
            ax1 *= sv[GV - 1u];
            ay1 *= sv[GV - 1u];
        }
V_SUMS
    }
    // The lanes meet in `buf`, HB heads a round (two barriers a round).
    let summer = lid / HW < LANES;
    for (var g0 = 0u; g0 < GQ; g0 += HB) {
        workgroupBarrier();
        if summer {
            for (var b = 0u; b < HB; b++) {
                let g = g0 + b;
                let hi = g >= 4u;
                let o = (b * LANES + lane) * HD + 2u * w;
                buf[o] = lane4(select(ax0, ax1, hi), g % 4u);
                buf[o + 1u] = lane4(select(ay0, ay1, hi), g % 4u);
            }
        }
        workgroupBarrier();
        for (var i = lid; i < HB * HD; i += WG) {
            let b = i / HD;
            let d = i % HD;
            let g = g0 + b;
            if g < nh {
                var a = 0.0;
                for (var l = 0u; l < LANES; l++) {
                    a += buf[(b * LANES + l) * HD + d];
                }
                Part[((h0 + g) * P.splits + wid.y) * (HD + 2u) + d] = a;
            }
        }
        if lid < HB && g0 + lid < nh {
            let g = g0 + lid;
            let o = ((h0 + g) * P.splits + wid.y) * (HD + 2u);
            var t = 0.0;
            for (var i = 0u; i < 8u; i++) {
                t += t8[g * 8u + i];
            }
            Part[o + HD] = t;
            Part[o + HD + 1u] = mrun[g];
        }
    }
}
