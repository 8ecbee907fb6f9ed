// Tiled matrix products for prefill on int8 x and packed integer dot
// products: Y[t][L] = sum_k W[phys(L)][k] x[t][k] with x as quantize_x.wgsl
// left it (per token, blocks of 32: int8 values and a scale dx), for a
// tile of TM logical rows x TN tokens per workgroup of WGS threads, each
// thread 4 RV rows x 4 XV tokens (matmul.wgsl's shapes). The portable
// fast path: dot4I8Packed is in every WebGPU implementation (an integer
// dot instruction where the GPU has one), and four int8 products per
// instruction out of shared memory a quarter the size of f32 staging.
// Per step of KS = 32 columns (one x block) the threads stage the tile's
// weights as int8 words plus each row's two (scale s, offset m) pairs, one
// per 16-column half (unit_q_<fmt>: w = s q + m exactly), and the tokens'
// int8 words and dx; the next step's are fetched into registers while
// this one is multiplied. Per half, each output's exact integer sum
// I = sum q x (and the tokens' S = sum x, for the offsets) is scaled once:
// y += s (dx I) + m (dx S). The only numerical difference from matmul.wgsl
// is x's rounding to int8 (|dx| / 2 per element, as the decode integer
// path); the integer sums are exact and the scaling is f32.
// Rows and epilogues are matrix.wgsl's, as in matmul.wgsl. The host uses
// this kernel only where cols % 32 == 0 and every format of the product
// has a unit_q decoder.
// Bindings: matrix.wgsl's that the epilogue uses (no X), and XQ (13, u32)
//   and XD (14, f32), quantize_x.wgsl's output: token t's words from
//   t * nb * 8, its scales from t * nb, nb = P.cols / 32.
// Dispatch: (ceil(rows / TM), ceil(S.n / TN), 1) workgroups of WGS threads.
//   The host prepends TM, TN, WGS, UPT (units staged per thread, TM * 4 /
//   WGS) and XPT (8-value x groups per thread, TN * 4 / WGS), and appends
//   the generated entry `main`, matrix.wgsl, dequant.wgsl, units.wgsl,
//   units_q.wgsl, `w_sec`, `tile_cols(sec, u)` and `tile_q(sec, rb, u)`
//   (units.wgsl's unit_cols and the unit_q_<fmt> of the matrix's format,
//   from units.wgsl or units_q.wgsl, or of section sec's in a mixed group)
//   and the XQ/XD bindings.

const KS: u32 = 32u;

// [8][TM / 4]: word j (columns 4j .. 4j + 3 of the step) of rows 4i .. 4i + 3;
// [4][TM / 4]: s of half 0, m of half 0, s of half 1, m of half 1.
var<workgroup> Wq: array<vec4<u32>, 2u * TM>;
var<workgroup> Wsm: array<vec4<f32>, TM>;
// [8][TN / 4]: word j of tokens 4i .. 4i + 3; [TN / 4]: their dx.
var<workgroup> Xq: array<vec4<u32>, 2u * TN>;
var<workgroup> Xd: array<vec4<f32>, TN / 4u>;

// The weight row of the tile's row r.
fn tile_row(r0: u32, r: u32) -> u32 {
    return phys_row(min(r0 + r, P.rows - 1u));
}

// Weight unit `i` of this thread's share of the step at k0, in its row's
// format.
fn wfetch(r0: u32, k0: u32, lid: u32, i: u32) -> UnitQ {
    let ui = lid + i * WGS;
    let w = tile_row(r0, ui / 4u);
    return tile_q(w_sec(w), row_byte(w), k0 / 8u + ui % 4u);
}

// A unit's two words where its columns say; the (s, m) of each half whose
// first column is one of the unit's group starts (so each half's pair is
// written by one thread: `nib` unit 0 starts both, `elem` units 0 and 2
// one each).
fn wstore(r0: u32, lid: u32, i: u32, w: UnitQ) {
    let ui = lid + i * WGS;
    let r = ui / 4u;
    let kc = tile_cols(w_sec(tile_row(r0, r)), ui % 4u);
    let at = r / 4u;
    let c = r % 4u;
    Wq[(kc.x / 4u) * (TM / 4u) + at][c] = w.q.x;
    Wq[(kc.y / 4u) * (TM / 4u) + at][c] = w.q.y;
    if kc.x % 16u == 0u {
        Wsm[(kc.x / 8u) * (TM / 4u) + at][c] = w.sm.x;
        Wsm[(kc.x / 8u + 1u) * (TM / 4u) + at][c] = w.sm.y;
    }
    if kc.y % 16u == 0u {
        Wsm[(kc.y / 8u) * (TM / 4u) + at][c] = w.sm.x;
        Wsm[(kc.y / 8u + 1u) * (TM / 4u) + at][c] = w.sm.y;
    }
}

// x group `i` of this thread's share: two int8 words (8 values) of one
// token and its block's dx bits; zeros past the last token.
fn xfetch(t0: u32, k0: u32, lid: u32, i: u32) -> vec3<u32> {
    let gi = lid + i * WGS;
    let tok = t0 + gi / 4u;
    let nb = P.cols / KS;
    let b = min(tok, S.n - 1u) * nb + k0 / KS;
    let wi = b * 8u + 2u * (gi % 4u);
    let v = vec3<u32>(XQ[wi], XQ[wi + 1u], bitcast<u32>(XD[b]));
    return select(vec3<u32>(0u), v, tok < S.n);
}

fn xstore(lid: u32, i: u32, x: vec3<u32>) {
    let gi = lid + i * WGS;
    let t = gi / 4u;
    let j = 2u * (gi % 4u);
    Xq[j * (TN / 4u) + t / 4u][t % 4u] = x.x;
    Xq[(j + 1u) * (TN / 4u) + t / 4u][t % 4u] = x.y;
    if gi % 4u == 0u {
        Xd[t / 4u][t % 4u] = bitcast<f32>(x.z);
    }
}

// The four int8 products of weight word w with each of four tokens' words.
fn dot4x(w: u32, x: vec4<u32>) -> vec4<i32> {
    return vec4<i32>(dot4I8Packed(w, x.x), dot4I8Packed(w, x.y), dot4I8Packed(w, x.z), dot4I8Packed(w, x.w));
}
