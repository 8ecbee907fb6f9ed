// Greedy sampling: Out[0] = the index of the largest of L[0..n] (the lowest
// index among equals; NaNs never win).
// Entry `main` reads the P.n logits L; entry `pairs` reads P.n (logit
// bits, index) pairs Pairs (the LM head's per-workgroup bests, matvec.wgsl
// `head`) and returns the index of the best pair. Entry `masked` is `main`
// over the logits a grammar allows (bit i % 32 of Mask[i / 32] set; the
// others count as -inf, as the CPU sampler sets them): a masked step scans
// the logits, since the head's per-group bests may be masked-out rows.
// With no allowed finite logit it returns 0, the CPU argmax of all -inf.
// Entry `pairs_part` cuts P.n pairs to one per 1024 (kernels.rs
// PAIRS_PER_GROUP): workgroup g writes the best of pairs [1024 g, 1024 g +
// 1024) to Best[g], for `pairs` to pick from; one workgroup reading all
// of a large vocabulary's pairs waits out a memory round trip per 1024.
// Bindings: 0 L (f32 logits) or 3 Pairs (vec2<u32>), 1 Out (u32), 2 P,
//   4 Mask (u32 words, ceil(P.n / 32) of them; `masked` only), 5 Best
//   (vec2<u32>; `pairs_part` only).
// Dispatch: (1, 1, 1): one workgroup of 256 threads; `pairs_part`
//   (ceil(P.n / 1024), 1, 1).

struct Params {
    n: u32,
    // The logits' count, for `pairs` (the index is clamped below it).
    vocab: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
    _p4: u32,
    _p5: u32,
    _p6: u32,
}

@group(0) @binding(0) var<storage, read> L: array<f32>;
@group(0) @binding(1) var<storage, read_write> Out: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<storage, read> Pairs: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> Mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> Best: array<vec2<u32>>;

const WG: u32 = 256u;
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

fn lload(i: u32) -> f32 {
    return select(-3.4e38, L[min(i, P.n - 1u)], i < P.n);
}

fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
    return v > bv || (v == bv && i < bi);
}

// The workgroup's best of every thread's (bv, bi), into best_v/best_i[0].
fn reduce(lid: u32, bv: f32, bi: u32) {
    best_v[lid] = bv;
    best_i[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            let ov = best_v[lid + s];
            let oi = best_i[lid + s];
            if better(ov, oi, best_v[lid], best_i[lid]) {
                best_v[lid] = ov;
                best_i[lid] = oi;
            }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var bv = -3.4e38;
    var bi = 0xffffffffu;
    // Eight loads in flight per thread; each thread's indices rise, so a
    // strict > keeps the lowest index among its equals.
    for (var i0 = lid; i0 < P.n; i0 += 8u * WG) {
        let v0 = lload(i0);
        let v1 = lload(i0 + WG);
        let v2 = lload(i0 + 2u * WG);
        let v3 = lload(i0 + 3u * WG);
        let v4 = lload(i0 + 4u * WG);
        let v5 = lload(i0 + 5u * WG);
        let v6 = lload(i0 + 6u * WG);
        let v7 = lload(i0 + 7u * WG);
        let vs = array<f32, 8>(v0, v1, v2, v3, v4, v5, v6, v7);
        for (var j = 0u; j < 8u; j++) {
            if vs[j] > bv {
                bv = vs[j];
                bi = i0 + j * WG;
            }
        }
    }
    reduce(lid, bv, bi);
    if lid == 0u {
        Out[0] = min(best_i[0], P.n - 1u);
    }
}

fn pload(i: u32) -> vec2<u32> {
    let p = Pairs[min(i, P.n - 1u)];
    return select(NONE, p, i < P.n);
}

// The better of b and each of the four pairs ps (logit bits, index).
fn best_of(ps: array<vec2<u32>, 4>, b0: vec2<u32>) -> vec2<u32> {
    var b = b0;
    for (var j = 0u; j < 4u; j++) {
        if better(bitcast<f32>(ps[j].x), ps[j].y, bitcast<f32>(b.x), b.y) {
            b = ps[j];
        }
    }
    return b;
}

// No pair yet: below every logit, past every index.
const NONE: vec2<u32> = vec2<u32>(0xff7fc99eu, 0xffffffffu);

@compute @workgroup_size(256)
fn pairs(@builtin(local_invocation_index) lid: u32) {
    var b = NONE;
    for (var i0 = lid; i0 < P.n; i0 += 4u * WG) {
        let p0 = pload(i0);
        let p1 = pload(i0 + WG);
        let p2 = pload(i0 + 2u * WG);
        let p3 = pload(i0 + 3u * WG);
        b = best_of(array<vec2<u32>, 4>(p0, p1, p2, p3), b);
    }
    reduce(lid, bitcast<f32>(b.x), b.y);
    if lid == 0u {
        Out[0] = min(best_i[0], P.vocab - 1u);
    }
}

@compute @workgroup_size(256)
fn pairs_part(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i0 = wid.x * 4u * WG + lid;
    let ps = array<vec2<u32>, 4>(pload(i0), pload(i0 + WG), pload(i0 + 2u * WG), pload(i0 + 3u * WG));
    let b = best_of(ps, NONE);
    reduce(lid, bitcast<f32>(b.x), b.y);
    if lid == 0u {
        Best[wid.x] = vec2<u32>(bitcast<u32>(best_v[0]), best_i[0]);
    }
}

// Logit i if the mask allows it, else below every real logit.
fn mload(i: u32) -> f32 {
    let j = min(i, P.n - 1u);
    let ok = i < P.n && ((Mask[j / 32u] >> (j % 32u)) & 1u) == 1u;
    return select(-3.4e38, L[j], ok);
}

@compute @workgroup_size(256)
fn masked(@builtin(local_invocation_index) lid: u32) {
    var bv = -3.4e38;
    var bi = 0xffffffffu;
    // As in `main`: four loads in flight, indices rising per thread.
    for (var i0 = lid; i0 < P.n; i0 += 4u * WG) {
        let vs = array<f32, 4>(mload(i0), mload(i0 + WG), mload(i0 + 2u * WG), mload(i0 + 3u * WG));
        for (var j = 0u; j < 4u; j++) {
            if vs[j] > bv {
                bv = vs[j];
                bi = i0 + j * WG;
            }
        }
    }
    reduce(lid, bv, bi);
    if lid == 0u {
        Out[0] = select(best_i[0], 0u, best_i[0] >= P.n);
    }
}
