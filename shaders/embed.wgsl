// Token embedding gather: X[t][k] = token_embd[tokens[t]][k] * P.scale,
// dequantized and scaled in f32 (gemma3 scales by sqrt(dim); 1.0 for the
// others, which multiplies exactly).
// Bindings: 0 W (embedding rows of this part, array<u32>), 1 T (token ids),
//   2 X (f32, [tokens][cols]), 3 P (Params: rows, cols, row_off, row_bytes
//   of the part; word 4 the scale as f32 bits).
// Dispatch: (ceil(cols / 64), tokens, 1) workgroups of 64 threads, once per
//   part; tokens outside the part's rows are left to the other parts. The
//   host appends dequant.wgsl and a `load_weight` alias.

struct Params {
    rows: u32,
    cols: u32,
    row_off: u32,
    row_bytes: u32,
    scale: f32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> T: array<u32>;
@group(0) @binding(2) var<storage, read_write> X: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    let t = gid.y;
    let tok = T[t];
    if k >= P.cols || tok < P.row_off || tok - P.row_off >= P.rows {
        return;
    }
    X[t * P.cols + k] = load_weight((tok - P.row_off) * P.row_bytes, k) * P.scale;
}
