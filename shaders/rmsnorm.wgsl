// RMS norm of rows: y = X[r] / sqrt(mean(X[r]^2) + eps) * G, every row of
// P.dim elements normalised by its own RMS and multiplied by the same
// dim-long gains.
// Entry `main`: Out[r] = y. Entry `add`: Out[r] += y (gemma3's post-norms:
//   X a sublayer's output, Out the residual stream).
// A row is any dim-long run: a token's hidden state (dim = the model dim),
// or one head of a token's q or k (dim = head_dim: rows [tokens * heads]
// [head_dim] are contiguous), qwen3/gemma3's per-head q/k norm.
// Bindings: 0 X (f32, [rows][dim]), 1 G (dim gains), 2 Out (f32, like X),
//   3 P (Params), 4 S (Step; `main` only, for last_only: `add` has no
//   binding 4). The host appends `fn xat(i: u32) -> f32`:
//   X[i], or Out[i] for the in-place pipeline (`main` only; no binding 0:
//   wgpu forbids one buffer bound both read-only and read-write).
// Dispatch: (rows_per_token, tokens, 1) workgroups of WG threads (the
//   host prepends `const WG`: 256 for hidden states, 64 for heads), one per
//   row: row = wid.x + wid.y * num_workgroups.x, so (tokens, 1, 1) for
//   whole hidden states and (heads, tokens, 1) for heads. With P.last_only
//   one workgroup that reads token S.n - 1 and writes row 0 (the LM head
//   input).
// Loads are grouped so that a thread waits for few memory round trips (GPU
// compilers do not overlap successive iterations): rows of up to 4 * WG
// (or 16 * WG) elements load each thread's 4 (16) values and gains at
// once and keep them for the write (one round trip); longer rows loop, 8
// loads a turn for the sum and 4 for the write. Why: one decode token's
// norm is a single workgroup, and 64 threads looping over a 4096-element
// row took ~23 us on the H200 (24 round trips; BENCHMARKS.md, 2026-11-27).

// Params: 0 dim (elements per row), 1 eps (f32), 2 last_only (`main`).
struct Params {
    dim: u32,
    eps: f32,
    last_only: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
    _p4: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read> G: array<f32>;
@group(0) @binding(2) var<storage, read_write> Out: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<uniform> S: Step;

var<workgroup> partial: array<f32, WG>;

fn xload(xb: u32, k: u32) -> f32 {
    return select(0.0, xat(xb + min(k, P.dim - 1u)), k < P.dim);
}

// Out[o] = v, or += v for `add`.
fn put(o: u32, v: f32, add: bool) {
    if add {
        Out[o] += v;
    } else {
        Out[o] = v;
    }
}

// G[k], or 0 past the row's end (read clamped, as xload).
fn gload(k: u32) -> f32 {
    return select(0.0, G[min(k, P.dim - 1u)], k < P.dim);
}

// The workgroup's sum of every thread's ss, then the row's scale.
fn row_scale(lid: u32, ss: f32) -> f32 {
    partial[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    return 1.0 / sqrt(partial[0] / f32(P.dim) + P.eps);
}

// Out[o + i * WG] = (or +=) x[i] * scale * g[i] for the 4 strided
// elements at k, k + WG, ... that lie in the row.
fn put4(o: u32, k: u32, x: vec4<f32>, g: vec4<f32>, scale: f32, add: bool) {
    let y = (x * scale) * g;
    for (var i = 0u; i < 4u; i++) {
        if k + i * WG < P.dim {
            put(o + k + i * WG, y[i], add);
        }
    }
}

// x elements k, k + WG, k + 2 WG, k + 3 WG of the row at xb (0 past its end).
fn xload4(xb: u32, k: u32) -> vec4<f32> {
    return vec4<f32>(xload(xb, k), xload(xb, k + WG), xload(xb, k + 2u * WG), xload(xb, k + 3u * WG));
}

fn gload4(k: u32) -> vec4<f32> {
    return vec4<f32>(gload(k), gload(k + WG), gload(k + 2u * WG), gload(k + 3u * WG));
}

// Row `src` normalised into row `dst`. Each thread reads back only the
// elements it writes, after the barriers of the sum, so src == dst in the
// same buffer (in place) is safe (xload's clamped read past the row's end
// may see another thread's write, but select discards it).
fn norm_row(src: u32, dst: u32, lid: u32, add: bool) {
    let xb = src * P.dim;
    let ob = dst * P.dim;
    // P.dim is uniform, so the barriers in each branch are reached by
    // the whole workgroup. Rows up to 4 * WG load 4 values a thread, so
    // that short rows (heads, small models) issue no loads they drop.
    if P.dim <= 4u * WG {
        let x0 = xload4(xb, lid);
        let g0 = gload4(lid);
        put4(ob, lid, x0, g0, row_scale(lid, dot(x0, x0)), add);
        return;
    }
    if P.dim <= 16u * WG {
        // Every value and gain this thread needs, loaded at once and kept.
        let x0 = xload4(xb, lid);
        let x1 = xload4(xb, lid + 4u * WG);
        let x2 = xload4(xb, lid + 8u * WG);
        let x3 = xload4(xb, lid + 12u * WG);
        let g0 = gload4(lid);
        let g1 = gload4(lid + 4u * WG);
        let g2 = gload4(lid + 8u * WG);
        let g3 = gload4(lid + 12u * WG);
        let scale = row_scale(lid, (dot(x0, x0) + dot(x1, x1)) + (dot(x2, x2) + dot(x3, x3)));
        put4(ob, lid, x0, g0, scale, add);
        put4(ob, lid + 4u * WG, x1, g1, scale, add);
        put4(ob, lid + 8u * WG, x2, g2, scale, add);
        put4(ob, lid + 12u * WG, x3, g3, scale, add);
        return;
    }
    // Eight loads in flight per thread (as in matvec.wgsl's norm_scale).
    var ss = 0.0;
    for (var k = lid; k < P.dim; k += 8u * WG) {
        let v0 = xload(xb, k);
        let v1 = xload(xb, k + WG);
        let v2 = xload(xb, k + 2u * WG);
        let v3 = xload(xb, k + 3u * WG);
        let v4 = xload(xb, k + 4u * WG);
        let v5 = xload(xb, k + 5u * WG);
        let v6 = xload(xb, k + 6u * WG);
        let v7 = xload(xb, k + 7u * WG);
        ss += ((v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)) + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7));
    }
    let scale = row_scale(lid, ss);
    for (var k = lid; k < P.dim; k += 4u * WG) {
        put4(ob, k, xload4(xb, k), gload4(k), scale, add);
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32) {
    var src = wid.x + wid.y * nwg.x;
    var dst = src;
    if P.last_only != 0u {
        src = S.n - 1u;
        dst = 0u;
    }
    norm_row(src, dst, lid, false);
}

@compute @workgroup_size(WG)
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32) {
    let r = wid.x + wid.y * nwg.x;
    norm_row(r, r, lid, true);
}
