// The tensor-core products' epilogue (matmul_coop.wgsl's entries): each
// subgroup's 16 x 16 f32 blocks go through its 1 KiB of Cs (coopStore
// writes whole blocks) to matrix.wgsl's `epilogue`, which takes 4 rows of
// one token at a time.
// Bindings: none of its own (matrix.wgsl's, through `epilogue`).
// Dispatch: none (a library); the includer defines WGS.

// One 16 x 16 f32 block per subgroup, column-major (token-major), on its
// way to the epilogue.
var<workgroup> Cs: array<f32, WGS / 32u * 256u>;

// Lane sl's share of the subgroup's block in Cs (rows l0 .. l0 + 15 of
// tokens tb .. tb + 15): two quads of rows of one token each.
fn drain(cb: u32, sl: u32, l0: u32, tb: u32) {
    for (var e = sl; e < 64u; e += 32u) {
        let tt = e / 4u;
        let rq = 4u * (e % 4u);
        let i = cb + tt * 16u + rq;
        let t = tb + tt;
        if t < S.n && l0 + rq < P.rows {
            epilogue(t, l0 + rq, vec4<f32>(Cs[i], Cs[i + 1u], Cs[i + 2u], Cs[i + 3u]));
        }
    }
}
