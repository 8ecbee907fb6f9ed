// Decode attention over few keys: for the one token at position p = S.pos
// and query head h = workgroup_id.x, softmax(f16(q) . K[j] * scale) over
// the keys [first_key(p), p] (at most NK of them: the host runs this only
// below SPLIT_KEYS keys), then the weighted sum of V[j] in llama.cpp's CPU
// flash-attention order with an f16 accumulator: attention.wgsl's
// `chunked` for one token (its running maxima, rescales, weights and f16
// replay in key order), each score summed in four parts (below).
// Why a second kernel for what `chunked` computes: `chunked` stages its
// keys in chunks of 8 to 32 with a global round trip and eight or more
// barriers a chunk, and serves a kv head's query heads from few
// workgroups; with the decode attention left out (wrong output) an 8B
// decoded its first 64 tokens 13-19% faster and SmolLM2 36%
// (BENCHMARKS.md, 2026-11-27b). Here the K loads are issued at the
// start, in one round trip, and four barriers follow:
// - scores: thread (key lid / 4, part lid % 4) loads its quarter of the
//   key's row (K_LOADS, named values: an array indexed in a loop may live
//   in memory) and sums its dims in d order (K_DOTS); key j's score is
//   then its four parts added in order, times the scale. Four threads a
//   key, not one, so that a thread holds 2-8 named 16-byte words, not a
//   whole row's 8-32: a first form that held all 64 keys' V words a
//   thread as named values took ~22 us more a dispatch than with none,
//   as if the driver issued such loads one after another
//   (BENCHMARKS.md, 2026-11-27b);
// - the running max before each key (the max of the scores before it, as
//   `chunked`'s scan gives it) and so its rescale and weight;
// - the f16 replay, thread w < HW for dims 2w, 2w + 1 over the keys in
//   order, its V words read from workgroup memory (vs): CK keys' rows
//   at a time, staged by all the threads (V_STAGE, named values), the
//   first CK at the start beside the K loads, so that their round trip
//   is the K loads' one, and any later ones between barriers. Reading
//   each step's words from memory instead (a ring of loads RING keys
//   ahead) waited one round trip every RING keys: timed alone on the
//   H200, that replay cost the 8B 6 us a layer at 16 keys and 10.5 at 63
//   (BENCHMARKS.md, 2026-11-30b). A step rounds acc * r only where r is
//   not 1 (a new running max, as attention.wgsl's `rescaled`: acc is
//   already an f16 value), by a branch that every thread takes alike:
//   0.5-1% faster decode on the 1B and SmolLM2 shapes than a select,
//   which waits on that rounding (BENCHMARKS.md, 2026-11-27b). The
//   replay rounds with round_f16_z: the device's conversion where the
//   load-time check found it exact (round_z_pack.wgsl, three operations:
//   8B decode +1.1% on the H200, BENCHMARKS.md, 2026-12-01), else
//   round_f16 by hand (round_z_hand.wgsl; no branch, see f16.wgsl
//   why). The steps go in
//   groups of GROUP (V_REPLAY, named values): the group's rescales,
//   weights and V words read first, then one branch for the whole
//   group, so that where none of its keys rescales (most groups past
//   the first keys) its steps are one add and one rounding each with
//   nothing else between them, since a branch each step keeps the next
//   step's reads behind it (the staged replay with a branch a step took
//   ~100 ns a key timed alone on the H200; in tg64 the two forms
//   measured within the noise of each other: BENCHMARKS.md,
//   2026-11-30b); the last keys of a stage one at a time.
// This sums each score in four parts where `chunked` sums all dims in
// order: a few f32 ulps of a score, the size of exp's last-bit
// difference between GPU and CPU that the tests' bound already allows.
// The host prepends `const HD` (head_dim, even, <= 256), `NK` (SPLIT_KEYS,
// with 4 NK = 256 threads), `PW` (words of a part, ceil(HD / 8)) and
// `CK` (keys a stage of V holds, `kernels::few_stage_keys`), and appends
// attn_step.wgsl (P, S, first_key), f16.wgsl, round_z_pack.wgsl or
// round_z_hand.wgsl (`Kernels::round_pack`), int8_block.wgsl and
// head_q.wgsl; it replaces the lines K_LOADS (through KC4 where a part is
// whole 16-byte words, `kernels::few_vec`, else KC), K_DOTS, V_STAGE
// and V_REPLAY (`kernels::few_src`).
// Entry `main`: Out[h * HD + d]. Entry `main_q`: the same, and the row
// also as the int8 blocks the Wo product's integer path reads (13 XQ, 14
// XD; head_q.wgsl, HD a multiple of 32).
// Bindings (attention.wgsl's numbers): 8 Q (f32, [heads * HD]), 2 KC or
//   10 KC4 (the key cache as u32 or vec4<u32>), 3 VC (u32, [ctx][kv_heads
//   * HD / 2]), 4 P, 5 S, 6 Out (f32, like Q), 13 XQ, 14 XD (`main_q`).
// Dispatch: (heads, 1, 1) workgroups of 4 NK = 256 threads.

@group(0) @binding(2) var<storage, read> KC: array<u32>;
@group(0) @binding(3) var<storage, read> VC: array<u32>;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;
@group(0) @binding(10) var<storage, read> KC4: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(14) var<storage, read_write> XD: array<f32>;

const HW: u32 = HD / 2u;
const WG: u32 = 4u * NK;
const_assert HD % 2u == 0u && HD <= 256u && WG <= 256u;
const_assert CK >= 1u && CK <= NK;

// The query, f16-rounded; each key's four partial dots; the scores; each
// key's rescale and weight; the output row (`main_q`).
var<workgroup> qs: array<f32, HD>;
var<workgroup> parts: array<f32, WG>;
var<workgroup> sc: array<f32, NK>;
var<workgroup> rs: array<f32, NK>;
var<workgroup> wt: array<f32, NK>;
var<workgroup> ob: array<f32, HD>;
// V rows [c0, c0 + CK) of the head (HW words each) for the replay.
var<workgroup> vs: array<u32, CK * HW>;

// Head h's output pair at dims 2w, 2w + 1 (threads w < HW; `ok` false for
// the others).
struct Pair {
    x: f32,
    y: f32,
    ok: bool,
}

// V words c0 .. c0 + CK of this head's rows into vs, clamped to the
// last key (steps past it never read them): each thread's loads first
// (V_STAGE's named values, all in flight at once), then its stores.
fn stage_v(c0: u32, last: u32, kvw: u32, kvh: u32, lid: u32) {
V_STAGE
}

fn attend(h: u32, lid: u32) -> Pair {
    let lo = first_key(S.pos);
    let n = min(S.pos + 1u - lo, NK);
    let last = lo + n - 1u;
    let grp = P.heads / P.kv_heads;
    let kvw = P.kv_heads * HW;
    let kvh = (h / grp) * HW;
    // The zero that keeps products out of fused multiply-adds, as in
    // attention.wgsl.
    let Z = bitcast<f32>(P._p0);
    // The same zero as u32, for the replay's round_f16_z (see there why).
    let ZU = P._p0;
    // Score role: key lid / 4 (past the last key: the last key, masked
    // below), part lid % 4: words part * PW .. of its row.
    let part = lid % 4u;
    let krow = min(lo + lid / 4u, last) * kvw + kvh;
    // Replay role: word w of the V rows.
    let w = lid;
K_LOADS
    stage_v(lo, last, kvw, kvh, lid);
    for (var i = lid; i < HD; i += WG) {
        qs[i] = round_f16(Q[h * HD + i]);
    }
    workgroupBarrier();
    var dot = 0.0;
K_DOTS
    parts[lid] = dot;
    workgroupBarrier();
    if lid < n {
        let b = 4u * lid;
        sc[lid] = (((parts[b] + parts[b + 1u]) + parts[b + 2u]) + parts[b + 3u]) * P.scale;
    }
    workgroupBarrier();
    // The running max before key j (from `chunked`'s starting max), and
    // so its rescale and weight, as `chunked` computes them (past the last
    // key: 1 and 0, never read).
    if lid < NK {
        let s = sc[lid];
        var prev = -3.0e38;
        for (var i = 0u; i < min(lid, n); i++) {
            prev = max(prev, sc[i]);
        }
        var r = 1.0;
        var wgt = 0.0;
        if lid < n {
            if s > prev {
                r = exp(prev - s);
                wgt = 1.0;
            } else {
                wgt = exp(s - prev);
            }
        }
        rs[lid] = r;
        wt[lid] = wgt;
    }
    workgroupBarrier();
    var ax = 0.0;
    var ay = 0.0;
    var total = 0.0;
    // Stage by stage: n, and so every bound here, is the same for the
    // whole workgroup, so all its threads reach each barrier.
    for (var c0 = 0u; c0 < n; c0 += CK) {
        if c0 > 0u {
            workgroupBarrier();
            stage_v(lo + c0, last, kvw, kvh, lid);
            workgroupBarrier();
        }
        if w < HW {
            let end = min(c0 + CK, n);
            var j = c0;
V_REPLAY
            for (; j < end; j++) {
                let r = rs[j];
                let wj = wt[j];
                let v = unpack2x16float(vs[(j - c0) * HW + w]);
                if r != 1.0 {
                    ax = round_f16_z(ax * r, ZU);
                    ay = round_f16_z(ay * r, ZU);
                }
                ax = round_f16_z(ax + (v.x * wj + Z), ZU);
                ay = round_f16_z(ay + (v.y * wj + Z), ZU);
                total = total * r + wj;
            }
        }
    }
    if w < HW {
        let inv = 1.0 / total;
        return Pair(ax * inv, ay * inv, true);
    }
    return Pair(0.0, 0.0, false);
}

// Head h's output row: this thread's pair to Out (threads w < HW).
fn put(h: u32, lid: u32, o: Pair) {
    if o.ok {
        Out[h * HD + 2u * lid] = o.x;
        Out[h * HD + 2u * lid + 1u] = o.y;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    put(wid.x, lid, attend(wid.x, lid));
}

@compute @workgroup_size(WG)
fn main_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let o = attend(wid.x, lid);
    let h = wid.x;
    put(h, lid, o);
    if o.ok {
        ob[2u * lid] = o.x;
        ob[2u * lid + 1u] = o.y;
    }
    workgroupBarrier();
    put_head_q(h, lid);
}
