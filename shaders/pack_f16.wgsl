// The tensor-core prefill tile's x: each token's row of X rounded to f16
// and packed, two values a u32 (element 2i in the low half of word i), so
// that matmul_coop.wgsl stages 8 values of x with one 16-byte load and no
// conversion (its x loads in f32 took a quarter of the 8B's wo and down
// products on the H200, BENCHMARKS.md 2026-11-27d). pack2x16float rounds
// as the tile's own f32-to-f16 conversion did.
// Thread i of the grid packs values 4i .. 4i + 3 of the first S.n tokens'
// rows (cols a multiple of 4: the tiled products' are of 32).
// Bindings: the product's own: 1 X (f32, [tokens][cols], as vec4), 3 P
//   (its Params: only rows and cols declared, in matrix.wgsl's order), 5 S
//   (Step); and 16 XH (u32 pairs, [tokens][cols / 2]), written.
// Dispatch: (min(g, NX), ceil(g / NX), 1) workgroups of 64 threads, g =
//   ceil(S.n * cols / 4 / 64); i = gid.x + gid.y * 64 * NX (the host
//   prepends NX).

struct Params {
    rows: u32,
    cols: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(1) var<storage, read> X: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(16) var<storage, read_write> XH: array<vec2<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * 64u * NX;
    if i >= S.n * (P.cols / 4u) {
        return;
    }
    let v = X[i];
    XH[i] = vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
}
