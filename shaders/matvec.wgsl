// Matrix-vector products with a block-format weight matrix, one token per
// z slice: Y[t][row_off + r] (= or +=) sum_k W[r][k] * X[t][k].
// Bindings: 0 W (weight rows of this part, array<u32>), 1 X (f32,
//   [tokens][cols]), 2 Y (f32, [tokens][out_stride]), 3 P (Params).
// Dispatch: (nx, ceil(rows / nx), tokens) workgroups of 64 threads, one
//   workgroup per output row; row = wid.x + wid.y * nx. The host appends
//   dequant.wgsl and a `load_weight` alias for the matrix's format.

struct Params {
    rows: u32,
    cols: u32,
    row_off: u32,
    out_stride: u32,
    row_bytes: u32,
    accumulate: u32,
    nx: u32,
    _pad: u32,
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * P.nx;
    if row >= P.rows {
        return;
    }
    let t = wid.z;
    let rb = row * P.row_bytes;
    let xb = t * P.cols;
    var acc = 0.0;
    for (var k = lid; k < P.cols; k += WG) {
        acc += load_weight(rb, k) * X[xb + k];
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            partial[lid] += partial[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let o = t * P.out_stride + P.row_off + row;
        var v = partial[0];
        if P.accumulate != 0u {
            v += Y[o];
        }
        Y[o] = v;
    }
}
