// RMS norm: Out[t] = X[t] / sqrt(mean(X[t]^2) + eps) * G.
// Bindings: 0 X (f32, [tokens][dim]), 1 G (norm weights), 2 Out (f32),
//   3 P (Params), 4 S (Step).
// Dispatch: (tokens, 1, 1) workgroups of 64 threads; with P.last_only one
//   workgroup that reads token S.n - 1 and writes row 0 (the LM head input).

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

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var src = wid.x;
    var dst = wid.x;
    if P.last_only != 0u {
        src = S.n - 1u;
        dst = 0u;
    }
    let xb = src * P.dim;
    var ss = 0.0;
    for (var k = lid; k < P.dim; k += WG) {
        let v = X[xb + k];
        ss += v * v;
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
    for (var k = lid; k < P.dim; k += WG) {
        Out[ob + k] = (X[xb + k] * scale) * G[k];
    }
}
