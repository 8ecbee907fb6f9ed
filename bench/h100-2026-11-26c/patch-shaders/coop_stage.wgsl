// The staged tensor-core prefill's first passes (matmul_coop.wgsl's
// `staged` entry reads what they write): a product's weights decoded to
// f16 once per batch, in logical row order, and its x rounded to f16.
// Decoding in the tile loop (the kernel's other entry) spent most of its
// time there rather than on the tensor cores (BENCHMARKS.md); staged, the
// product loads 16 x 16 blocks straight from these buffers.
//   stage_w: WF[L][k] = f16(W[phys_row(L)][k]) for logical rows L < the
//     rows rounded up to TM (rows past the last repeat it, as tile.wgsl's
//     reads do), k < P.cols; one 8-element unit per thread.
//   stage_x: XF[t][k] = f16(X[t][k]) for tokens t < S.n, 0 for the rest
//     of the last TN-token tile; 8 values per thread.
// Rounding to f16 is what the tile loop did too (matmul_coop.wgsl's
// header gives the bound).
// Bindings: matrix.wgsl's W (0), P (3), S (5), X through `xv4` (1 or 11);
//   16 WF and 17 XF (array<u32>: f16 pairs, [rows][cols] and
//   [tokens][cols]).
// Dispatch: stage_w (x, y) workgroups of 256 threads, x * y * 256 >= the
//   padded rows * cols / 8 (the host spreads them over x then y);
//   stage_x (cols * TN / 2048, ceil(S.n / TN)) of 256.
//   The host prepends TM, TN and WGS (tile.wgsl's), and appends matrix.wgsl,
//   tile.wgsl, the decoders and `w_sec`, `phys_row`, `xv4` as for
//   matmul.wgsl (its `epilogue` is never called).

@group(0) @binding(16) var<storage, read_write> WF: array<u32>;
@group(0) @binding(17) var<storage, read_write> XF: array<u32>;

@compute @workgroup_size(256)
fn stage_w(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.x + gid.y * nw.x * 256u;
    let upr = P.cols / 8u;
    let l = i / upr;
    if l >= (P.rows + TM - 1u) / TM * TM {
        return;
    }
    let u = i % upr;
    let w = tile_row(0u, l);
    let s = w_sec(w);
    let v = tile_w(s, row_byte(w), u);
    let kc = tile_cols(s, u % 4u);
    let o = (l * P.cols + (u / 4u) * 32u) / 2u;
    WF[o + kc.x / 2u] = pack2x16float(v[0].xy);
    WF[o + kc.x / 2u + 1u] = pack2x16float(v[0].zw);
    WF[o + kc.y / 2u] = pack2x16float(v[1].xy);
    WF[o + kc.y / 2u + 1u] = pack2x16float(v[1].zw);
}

@compute @workgroup_size(256)
fn stage_x(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let gpt = P.cols / 8u;
    let i = wid.x * 256u + lid;
    let t = wid.y * TN + i / gpt;
    if i >= gpt * TN {
        return;
    }
    let k = 8u * (i % gpt);
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    if t < S.n {
        a = xv4(t * P.cols + k);
        b = xv4(t * P.cols + k + 4u);
    }
    let o = (t * P.cols + k) / 2u;
    XF[o] = pack2x16float(a.xy);
    XF[o + 1u] = pack2x16float(a.zw);
    XF[o + 2u] = pack2x16float(b.xy);
    XF[o + 3u] = pack2x16float(b.zw);
}
