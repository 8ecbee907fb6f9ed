// The tiled kernels' staging reads (matmul.wgsl, matmul_coop.wgsl): per
// step of KS = 32 columns, weight unit `i` of a thread's share of the
// tile's TM rows (decoded in its row's format) and x group `i` of its share
// of the TN tokens (8 values of one token, zeros past the last token).
// Bindings: matrix.wgsl's W, X (through `xv4`) and S. Dispatch: none (a
// library); the includer defines TM, TN and WGS and appends `tile_w`,
// `w_sec` and `xv4` as matmul.wgsl's header says.

const KS: u32 = 32u;

// The weight row of the tile's row r.
fn tile_row(r0: u32, r: u32) -> u32 {
    return phys_row(min(r0 + r, P.rows - 1u));
}

// Weight unit `i` of this thread's share of the step at k0, decoded in its
// row's format (`tile_w`: the matrix's, or its section's in a mixed group).
fn wfetch(r0: u32, k0: u32, lid: u32, i: u32) -> mat2x4<f32> {
    let ui = lid + i * WGS;
    let w = tile_row(r0, ui / 4u);
    return tile_w(w_sec(w), row_byte(w), k0 / 8u + ui % 4u);
}

// x group `i` of this thread's share: 8 values of one token.
fn xfetch(t0: u32, k0: u32, lid: u32, i: u32) -> mat2x4<f32> {
    let gi = lid + i * WGS;
    let tok = t0 + gi / 4u;
    let xb = min(tok, S.n - 1u) * P.cols + k0 + 8u * (gi % 4u);
    let a = xv4(xb);
    let b = xv4(xb + 4u);
    let ok = tok < S.n;
    return mat2x4<f32>(select(vec4<f32>(0.0), a, ok), select(vec4<f32>(0.0), b, ok));
}

