// Sampling on the GPU, as src/sampler.rs does it (llama.cpp's chain):
// repetition penalty, top-k, softmax, top-p, min-p, temperature, draw.
// Candidates are (logit, token) pairs ordered by logit, highest first, the
// lower token first among equal logits (NaN logits count as the lowest).
//
// Entry `first`: workgroup w sorts logits [1024 w, 1024 w + 1024) (after the
//   penalty: each token listed in Pen, distinct, l > 0 ? l / p : l * p) and
//   writes its best CAP = 128 pairs to Cout[128 w ..], and the chunk's max
//   m and sum of exp(l - m) to Stat[w]. With S.masked, a token whose bit
//   (i % 32 of Mask[i / 32], a grammar's) is clear is no candidate: it
//   becomes padding (token NONE, sorted last, no share of the sums), as the
//   CPU sampler leaves -inf logits out.
// Entry `merge`: the same over the pairs Cin[0 .. L.n_in), 1024 at a time:
//   each level keeps 128 of every 1024 until at most 1024 remain.
// Entry `last`: one workgroup sorts the remaining L.n_in <= 1024 pairs and
//   runs the chain on the best k = min(top_k, 128) of them: top_k 0 (i.e.
//   disabled) or >= vocab also means the 128 best, with the softmax for
//   top-p and min-p normalised over the whole vocabulary (from Stat) as on
//   the CPU, so the result differs from the CPU only when more than 128
//   tokens would survive top-p and min-p, or with 128 < top_k < vocab (then
//   the GPU normalises over its 128). It writes the drawn token (or with
//   greedy the best; 0 when no candidate exists, as on the CPU) to
//   Out[0]. Sums and cumulative sums are parallel (tree and scan), so they
//   round differently from the CPU's sequential sums: a draw whose random
//   number lies within ~1e-6 of a boundary can differ.
// Bindings: 0 Lg (f32 logits), 1 Cin (vec2<u32>: logit bits, token),
//   2 Cout (vec2<u32>), 3 Out (u32), 4 S (Sampling, written per step),
//   5 L (Level: n_in), 6 Pen (u32 tokens), 7 Stat (vec2<f32>, one per
//   `first` workgroup), 8 Mask (u32 words, ceil(vocab / 32); `first`,
//   read only with S.masked). At most 5 storage buffers per entry point.
// Dispatch: `first` (ceil(vocab / 1024), 1, 1), `merge` (ceil(n_in / 1024),
//   1, 1), `last` (1, 1, 1); workgroups of 256 threads.

struct Sampling {
    vocab: u32,
    top_k: u32,
    top_p: f32,
    min_p: f32,
    inv_temp: f32,
    penalty: f32,
    n_pen: u32,
    r: f32,
    greedy: u32,
    // Nonzero: apply Mask.
    masked: u32,
    _p1: u32,
    _p2: u32,
}

struct Level {
    n_in: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

@group(0) @binding(0) var<storage, read> Lg: array<f32>;
@group(0) @binding(1) var<storage, read> Cin: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> Cout: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> Out: array<u32>;
@group(0) @binding(4) var<uniform> S: Sampling;
@group(0) @binding(5) var<uniform> L: Level;
@group(0) @binding(6) var<storage, read> Pen: array<u32>;
@group(0) @binding(7) var<storage, read_write> Stat: array<vec2<f32>>;
@group(0) @binding(8) var<storage, read> Mask: array<u32>;

const WG: u32 = 256u;
const N: u32 = 1024u;
const CAP: u32 = 128u;
const NONE: u32 = 0xffffffffu;

var<workgroup> kv: array<f32, 1024>;
var<workgroup> ki: array<u32, 1024>;

// Below every real logit: padding and NaN logits sort last. (A constant
// -inf is not allowed in WGSL: Tint rejects it, naga does not.)
const NEG: f32 = -3.4e38;

fn neg_inf() -> f32 {
    return NEG;
}

// Whether (va, ia) comes before (vb, ib).
fn before(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    return va > vb || (va == vb && ia < ib);
}

// Bitonic sort of kv/ki[0..1024) into candidate order.
fn sort(lid: u32) {
    workgroupBarrier();
    for (var size = 2u; size <= N; size <<= 1u) {
        for (var stride = size >> 1u; stride > 0u; stride >>= 1u) {
            for (var t = lid; t < N / 2u; t += WG) {
                let i = 2u * t - (t & (stride - 1u));
                let j = i + stride;
                let va = kv[i];
                let ia = ki[i];
                let vb = kv[j];
                let ib = ki[j];
                let up = (i & size) == 0u;
                if select(before(va, ia, vb, ib), before(vb, ib, va, ia), up) {
                    kv[i] = vb;
                    ki[i] = ib;
                    kv[j] = va;
                    ki[j] = ia;
                }
            }
            workgroupBarrier();
        }
    }
}

fn write_best(wid: u32, lid: u32) {
    if lid < CAP {
        Cout[wid * CAP + lid] = vec2<u32>(bitcast<u32>(kv[lid]), ki[lid]);
    }
}

fn logit(i: u32) -> f32 {
    let v = Lg[min(i, S.vocab - 1u)];
    return select(select(v, neg_inf(), v != v), neg_inf(), i >= S.vocab);
}

// Whether token i < vocab is a candidate (the mask, if any, allows it).
fn allowed(i: u32) -> bool {
    let j = min(i, S.vocab - 1u);
    return S.masked == 0u || ((Mask[j / 32u] >> (j % 32u)) & 1u) == 1u;
}

@compute @workgroup_size(256)
fn first(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let base = wid.x * N;
    let v0 = logit(base + lid);
    let v1 = logit(base + lid + WG);
    let v2 = logit(base + lid + 2u * WG);
    let v3 = logit(base + lid + 3u * WG);
    let vs = array<f32, 4>(v0, v1, v2, v3);
    for (var m = 0u; m < 4u; m++) {
        let i = base + lid + m * WG;
        let none = i >= S.vocab || !allowed(i);
        kv[lid + m * WG] = select(vs[m], neg_inf(), none);
        ki[lid + m * WG] = select(i, NONE, none);
    }
    workgroupBarrier();
    for (var p = lid; p < S.n_pen; p += WG) {
        let t = Pen[p];
        // Masked-out tokens stay out (the CPU's -inf is unchanged by it).
        if t >= base && t < base + N && t < S.vocab && ki[t - base] != NONE {
            let l = kv[t - base];
            kv[t - base] = select(l * S.penalty, l / S.penalty, l > 0.0);
        }
    }
    sort(lid);
    write_best(wid.x, lid);
    // The chunk's max (first after sorting) and sum of exp(l - max) over
    // its candidates (a chunk all masked out sums to 0).
    let m = kv[0];
    red[lid] = (ex(lid, m) + ex(lid + WG, m)) + (ex(lid + 2u * WG, m) + ex(lid + 3u * WG, m));
    let total = tree_sum(lid);
    if lid == 0u {
        Stat[wid.x] = vec2<f32>(m, total);
    }
}

var<workgroup> red: array<f32, 256>;

// exp(kv[j] - m) for a candidate, 0 for padding.
fn ex(j: u32, m: f32) -> f32 {
    return select(exp(kv[j] - m), 0.0, ki[j] == NONE);
}

// The sum of red[0..256); every thread gets it.
fn tree_sum(lid: u32) -> f32 {
    workgroupBarrier();
    for (var d = WG / 2u; d > 0u; d >>= 1u) {
        if lid < d {
            red[lid] += red[lid + d];
        }
        workgroupBarrier();
    }
    let t = red[0];
    workgroupBarrier();
    return t;
}

// The max of red[0..256); every thread gets it.
fn tree_max(lid: u32) -> f32 {
    workgroupBarrier();
    for (var d = WG / 2u; d > 0u; d >>= 1u) {
        if lid < d {
            red[lid] = max(red[lid], red[lid + d]);
        }
        workgroupBarrier();
    }
    let t = red[0];
    workgroupBarrier();
    return t;
}

// Sum of exp(l - x0) over the whole vocabulary, from the chunk stats.
fn vocab_sum(lid: u32, x0: f32) -> f32 {
    let groups = (S.vocab + N - 1u) / N;
    var t = 0.0;
    for (var g = lid; g < groups; g += WG) {
        let st = Stat[g];
        t += st.y * exp(st.x - x0);
    }
    red[lid] = t;
    return tree_sum(lid);
}

fn load_pairs(base: u32, lid: u32) {
    for (var m = 0u; m < 4u; m++) {
        let i = base + lid + m * WG;
        let c = Cin[min(i, L.n_in - 1u)];
        kv[lid + m * WG] = select(bitcast<f32>(c.x), neg_inf(), i >= L.n_in);
        ki[lid + m * WG] = select(c.y, NONE, i >= L.n_in);
    }
}

@compute @workgroup_size(256)
fn merge(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    load_pairs(wid.x * N, lid);
    sort(lid);
    write_best(wid.x, lid);
}

var<workgroup> pr: array<f32, 128>;
var<workgroup> sc: array<f32, 128>;
var<workgroup> cut: atomic<u32>;

// Inclusive prefix sums of pr[0..128) into sc (Hillis-Steele).
fn scan(lid: u32) {
    if lid < CAP {
        sc[lid] = pr[lid];
    }
    workgroupBarrier();
    for (var d = 1u; d < CAP; d <<= 1u) {
        var v = 0.0;
        if lid < CAP && lid >= d {
            v = sc[lid - d];
        }
        workgroupBarrier();
        if lid < CAP {
            sc[lid] += v;
        }
        workgroupBarrier();
    }
}

// The first i < k with cond, or k: every thread proposes, atomicMin keeps.
fn first_where(lid: u32, cond: bool, k: u32) -> u32 {
    if lid == 0u {
        atomicStore(&cut, k);
    }
    workgroupBarrier();
    if lid < k && cond {
        atomicMin(&cut, lid);
    }
    workgroupBarrier();
    let c = atomicLoad(&cut);
    workgroupBarrier();
    return c;
}

// pr[0..k) = exp(x - x0) / (the sum of those, or `total` if positive) for
// thread lid < k (x0 the largest x), 0 beyond.
fn softmax(lid: u32, x: f32, x0: f32, k: u32, total: f32) {
    pr[lid % CAP] = 0.0;
    workgroupBarrier();
    if lid < k {
        pr[lid] = exp(x - x0);
    }
    scan(lid);
    let sum = select(sc[CAP - 1u], total, total > 0.0);
    workgroupBarrier();
    if lid < k {
        pr[lid] = pr[lid] / sum;
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn last(@builtin(local_invocation_index) lid: u32) {
    load_pairs(0u, lid);
    sort(lid);
    if S.greedy != 0u {
        if lid == 0u {
            Out[0] = select(ki[0], 0u, ki[0] == NONE);
        }
        return;
    }
    // Candidates that exist (padding sorts last).
    let valid = first_where(lid, ki[lid % N] == NONE, CAP);
    var k = select(min(S.top_k, CAP), CAP, S.top_k == 0u);
    k = max(min(k, valid), 1u);
    let x = kv[min(lid, CAP - 1u)];
    // Top-k disabled: the CPU's softmax runs over the whole vocabulary.
    var total = 0.0;
    if S.top_k == 0u || S.top_k >= S.vocab {
        total = vocab_sum(lid, kv[0]);
    }
    softmax(lid, x, kv[0], k, total);
    if S.top_p < 1.0 {
        scan(lid);
        let c = first_where(lid, sc[min(lid, CAP - 1u)] >= S.top_p, k);
        k = select(k, c + 1u, c < k);
    }
    if S.min_p > 0.0 {
        let floor = pr[0] * S.min_p;
        k = max(first_where(lid, pr[min(lid, CAP - 1u)] < floor, k), 1u);
    }
    // Temperature reshapes what is left: p^(1/T), renormalised.
    let lt = log(max(pr[min(lid, CAP - 1u)], 1.17549435e-38)) * S.inv_temp;
    let lt0 = pr[0];
    workgroupBarrier();
    softmax(lid, lt, log(max(lt0, 1.17549435e-38)) * S.inv_temp, k, 0.0);
    scan(lid);
    let pick = min(first_where(lid, S.r < sc[min(lid, CAP - 1u)], k), k - 1u);
    if lid == 0u {
        // No candidate at all (everything masked out): 0, as on the CPU.
        Out[0] = select(ki[pick], 0u, ki[pick] == NONE);
    }
}
