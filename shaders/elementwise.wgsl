// Element-wise kernels over the first S.n tokens of a [tokens][width] buffer.
// Entry `silu_mul`: A[i] = silu(A[i]) * B[i] (SwiGLU).
// Entry `gelu_mul`: A[i] = geglu(A[i], B[i]) (gemma3's GeGLU, f16.wgsl's
//   llama.cpp semantics; the host appends f16.wgsl).
// Entry `add_bias`: A[i] += B[i % width] (q/k/v biases).
// Bindings: 0 A (f32, read_write), 1 B (f32), 2 P (Params), 3 S (Step).
// Dispatch: (min(groups, 65535), ceil(groups / 65535), 1) workgroups of 64
//   threads, groups = ceil(tokens * width / 64); i = gid.x + gid.y * 64 * nx.

struct Params {
    width: u32,
    nx: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
    _p4: u32,
    _p5: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read_write> A: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;

@compute @workgroup_size(64)
fn silu_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 64u * P.nx;
    if i >= S.n * P.width {
        return;
    }
    let g = A[i];
    A[i] = g / (1.0 + exp(-g)) * B[i];
}

@compute @workgroup_size(64)
fn gelu_mul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 64u * P.nx;
    if i >= S.n * P.width {
        return;
    }
    A[i] = geglu(A[i], B[i]);
}

@compute @workgroup_size(64)
fn add_bias(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 64u * P.nx;
    if i >= S.n * P.width {
        return;
    }
    A[i] += B[i % P.width];
}
