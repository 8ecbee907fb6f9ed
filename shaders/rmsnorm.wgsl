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
// Dispatch: (rows_per_token, tokens, 1) workgroups of 64 threads, one per
//   row: row = wid.x + wid.y * num_workgroups.x, so (tokens, 1, 1) for
//   whole hidden states and (heads, tokens, 1) for heads. With P.last_only
//   one workgroup that reads token S.n - 1 and writes row 0 (the LM head
//   input).
// Loads are grouped (8, then 4 per thread) so that a thread waits for few
// memory round trips: GPU compilers do not overlap successive iterations.

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

const WG: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

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

// Row `src` normalised into row `dst`. Each thread reads back only the
// elements it writes, after the barriers of the sum, so src == dst in the
// same buffer (in place) is safe (xload's clamped read past the row's end
// may see another thread's write, but select discards it).
fn norm_row(src: u32, dst: u32, lid: u32, add: bool) {
    let xb = src * P.dim;
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
    partial[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(partial[0] / f32(P.dim) + P.eps);
    let ob = dst * P.dim;
    for (var k = lid; k < P.dim; k += 4u * WG) {
        let k1 = k + WG;
        let k2 = k + 2u * WG;
        let k3 = k + 3u * WG;
        let a0 = xload(xb, k);
        let a1 = xload(xb, k1);
        let a2 = xload(xb, k2);
        let a3 = xload(xb, k3);
        let g0 = G[min(k, P.dim - 1u)];
        let g1 = G[min(k1, P.dim - 1u)];
        let g2 = G[min(k2, P.dim - 1u)];
        let g3 = G[min(k3, P.dim - 1u)];
        put(ob + k, (a0 * scale) * g0, add);
        if k1 < P.dim {
            put(ob + k1, (a1 * scale) * g1, add);
        }
        if k2 < P.dim {
            put(ob + k2, (a2 * scale) * g2, add);
        }
        if k3 < P.dim {
            put(ob + k3, (a3 * scale) * g3, add);
        }
    }
}

@compute @workgroup_size(64)
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

@compute @workgroup_size(64)
fn add(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32) {
    let r = wid.x + wid.y * nwg.x;
    norm_row(r, r, lid, true);
}
