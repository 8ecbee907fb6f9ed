// Tiled matrix products for prefill on cooperative matrices (tensor cores):
// Y[t][L] = sum_k W[phys(L)][k] x[t][k], as matmul.wgsl computes it, for
// a tile of TM logical rows x TN tokens per workgroup of WGS threads in
// subgroups of 32. Only where the device has wgpu's experimental
// cooperative matrices with 16 x 16 x 16 f16 x f16 -> f32 products, f16
// and subgroups of exactly 32 (the host checks; everything else takes
// matmul.wgsl).
// Per step of KS = 32 columns the threads decode the tile's weights
// (tile.wgsl's wfetch) and stage them and the tokens' x into shared memory
// as f16 (x packed to f16 already, xfetch_h, for the tiles the host makes
// with `Tile::half_x`; else f32 x converted, xfetch_f). The next step's
// are fetched after this one's products are issued, so that their round
// trip overlaps the tensor cores' work; each subgroup then
// multiplies its MR x MT blocks of 16 x 16 outputs (rows RS .. of the
// tile, tokens TS ..) in f32 accumulators, two 16-column halves per step.
// Rounding the weights and x to f16 is the one numerical difference from
// matmul.wgsl (the products and sums stay f32): at most 2^-11 relative per
// factor, and |x| must stay under f16's 65504 (llama.cpp's f16 and int8
// prefill paths make the same assumption about activations).
// After the last step each 16 x 16 block goes through the subgroup's 1 KiB
// of Cs to matrix.wgsl's epilogue, which needs single elements.
// Bindings: matrix.wgsl's (those the epilogue uses); with xfetch_h not
//   X but 16 XH (x in f16, pack_f16.wgsl's).
// Dispatch: (ceil(rows / TM), ceil(S.n / TN), 1) workgroups of WGS threads.
//   The host prepends `enable f16; enable wgpu_cooperative_matrix;`, TM,
//   TN, WGS, UPT and XPT (as matmul.wgsl's), SR (subgroups along the rows;
//   WGS / 32 / SR along the tokens), and appends the generated entry `main`
//   and what matmul.wgsl's host appends after it.

// Row stride of Wh and Xh in quads of f16: 32 columns plus 8 of padding,
// so that the 8 rows a tensor-core load reads at once fall in distinct
// banks (a stride of 64 bytes would put every other row on the same
// banks).
const KSW: u32 = 10u;

// [TM][KSW] weights and [TN][KSW] x of this step as quads of f16: A
// row-major, B column-major (token t's 32 values contiguous). Why quads
// and not array<f16>: the staging then converts four values at once and
// stores them with one 8-byte write, instead of a conversion and a 2-byte
// write per value, which held the tile to a fraction of the tensor cores'
// speed (synthetic 8B pp512 on the H100: +55% with pairs, +65% with quads;
// BENCHMARKS.md, 2026-11-26f); the
// cooperative loads read the same bytes (their stride counts the array's
// elements, here quads). Not u32 words: NVIDIA's compiler rejects a
// cooperative load of f16 from a u32 array.
var<workgroup> Wh: array<vec4<f16>, TM * KSW>;
var<workgroup> Xh: array<vec4<f16>, TN * KSW>;
// The tokens' x as f16, 8 a 16-byte element ([tokens][cols / 8]; bound
// in place of matrix.wgsl's X). Not vec4<u32> words bitcast to f16: naga
// rejects that bitcast.
@group(0) @binding(16) var<storage, read> XH: array<mat2x4<f16>>;

// One 16 x 16 f32 block per subgroup, column-major (token-major), on its
// way to the epilogue.
var<workgroup> Cs: array<f32, WGS / 32u * 256u>;

fn wstore(r0: u32, lid: u32, i: u32, w: mat2x4<f32>) {
    let ui = lid + i * WGS;
    let r = ui / 4u;
    let kc = tile_cols(w_sec(tile_row(r0, r)), ui % 4u) / 4u;
    Wh[r * KSW + kc.x] = vec4<f16>(w[0]);
    Wh[r * KSW + kc.y] = vec4<f16>(w[1]);
}

// x group i of this thread's share (8 values of one token, zeros past the
// last token) from XH, which pack_f16.wgsl filled: one 16-byte load, no
// conversion (tile.wgsl's xfetch of f32 loads 32 bytes and the store
// converts them; those loads took a quarter of the 8B's wo and down
// products on the H200, BENCHMARKS.md 2026-11-27d).
fn xfetch_h(t0: u32, k0: u32, lid: u32, i: u32) -> mat2x4<f16> {
    let gi = lid + i * WGS;
    let tok = t0 + gi / 4u;
    if tok < S.n {
        return XH[(tok * P.cols + k0 + 8u * (gi % 4u)) / 8u];
    }
    return mat2x4<f16>();
}

// The same from X in f32 (tile.wgsl's xfetch), converted here: for the
// products too small for the pack pass to pay (`kernels::HALF_X_MIN`).
fn xfetch_f(t0: u32, k0: u32, lid: u32, i: u32) -> mat2x4<f16> {
    let x = xfetch(t0, k0, lid, i);
    return mat2x4<f16>(vec4<f16>(x[0]), vec4<f16>(x[1]));
}

fn xstore(lid: u32, i: u32, x: mat2x4<f16>) {
    let gi = lid + i * WGS;
    let b = (gi / 4u) * KSW + 2u * (gi % 4u);
    Xh[b] = x[0];
    Xh[b + 1u] = x[1];
}

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
