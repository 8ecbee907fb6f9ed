// Tiled matrix products for prefill: Y[t][L] = sum_k W[phys(L)][k] x[t][k]
// for a tile of TM logical rows x TN tokens per workgroup of WGS threads,
// each thread RPT rows x TPT tokens (the host picks 128 x 64 with 8 x 8 per
// thread where the device allows 24 KiB of workgroup memory, else 64 x 64
// with 4 x 4). Per step of 32 columns the threads decode the tile's weights
// into shared memory, one 8-element unit at a time (so each weight is
// decoded once per TN tokens, not once per token), and stage the tokens' x
// values; the next step's weights and x are fetched into registers while
// the current step is multiplied.
// Rows and epilogues are matrix.wgsl's, picked by the host, which appends
// `phys_row` (plain, silu_row or qkv_row) and `epilogue(t, l0, v)` (v: rows
// l0 .. l0 + 3 of token t; store_row each, store_silu of two pairs, or
// store_qkv of one quad). x is X (no NORM, no LAST); the host uses
// matvec.wgsl instead unless cols % 32 == 0.
// Bindings: matrix.wgsl's (those the epilogue uses).
// Dispatch: (ceil(rows / TM), ceil(S.n / TN), 1) workgroups of WGS threads.
//   The host prepends TM, TN, WGS, UPT (units staged per thread, TM * 4 /
//   WGS) and XPT (8-value x groups per thread, TN * 4 / WGS), and appends
//   the generated entry `main` (its per-thread accumulators written out),
//   tile.wgsl (the staging reads, and KS), matrix.wgsl, dequant.wgsl,
//   units.wgsl, `w_sec`, the decoders `tile_cols(sec, u)` and `tile_w(sec, rb, u)` (units.wgsl's unit_cols
//   and unit_w of the matrix's format, or of section sec's in a mixed
//   group), and `xv4(i)` (X[i .. i + 4]: one vec4 load through
//   binding 11, X again, or four scalar loads with WEBGGUF_GPU_VX=0).

// [KS][TM / 4] and [KS][TN / 4]: element k of rows (tokens) 4i .. 4i + 3.
var<workgroup> Ws: array<vec4<f32>, KS * TM / 4u>;
var<workgroup> Xs: array<vec4<f32>, KS * TN / 4u>;

fn wstore(r0: u32, lid: u32, i: u32, w: mat2x4<f32>) {
    let ui = lid + i * WGS;
    let r = ui / 4u;
    let kc = tile_cols(w_sec(tile_row(r0, r)), ui % 4u);
    for (var e = 0u; e < 4u; e++) {
        Ws[(kc.x + e) * (TM / 4u) + r / 4u][r % 4u] = w[0][e];
        Ws[(kc.y + e) * (TM / 4u) + r / 4u][r % 4u] = w[1][e];
    }
}

fn xstore(lid: u32, i: u32, x: mat2x4<f32>) {
    let gi = lid + i * WGS;
    let t = gi / 4u;
    let k = 8u * (gi % 4u);
    for (var e = 0u; e < 4u; e++) {
        Xs[(k + e) * (TN / 4u) + t / 4u][t % 4u] = x[0][e];
        Xs[(k + 4u + e) * (TN / 4u) + t / 4u][t % 4u] = x[1][e];
    }
}
