// Tiled matrix products for prefill: Y[t][L] = sum_k W[phys(L)][k] x[t][k]
// for a tile of 64 logical rows x 64 tokens per workgroup of 256 threads,
// each thread 4 rows x 4 tokens. Per step of 32 columns, every thread
// decodes one 8-element unit of the tile's weights into shared memory
// (so each weight is decoded once per 64 tokens, not once per token) and
// loads 8 x values; the next step's weights and x are fetched into
// registers while the current step is multiplied.
// Rows and epilogues are matrix.wgsl's, picked by the host, which appends
// `phys_row` (plain, silu_row or qkv_row) and `epilogue(t, l0, v)` (v: the
// thread's 4 rows l0 .. l0 + 3 for token t; store_row each, store_silu of
// two pairs, or store_qkv of one quad). x is X (no NORM, no LAST); the host
// uses matvec.wgsl instead unless cols % 32 == 0.
// Bindings: matrix.wgsl's (those the epilogue uses).
// Dispatch: (ceil(rows / 64), ceil(S.n / 64), 1) workgroups of 256 threads.
//   The host also appends matrix.wgsl, dequant.wgsl, units.wgsl and the
//   format's `unit_cols` and `unit_w` aliases.

const TM: u32 = 64u;
const TN: u32 = 64u;
const KS: u32 = 32u;

// [KS][TM / 4] and [KS][TN / 4]: element k of rows (tokens) 4i .. 4i + 3.
var<workgroup> Ws: array<vec4<f32>, 512>;
var<workgroup> Xs: array<vec4<f32>, 512>;

struct Stage {
    w: mat2x4<f32>,
    x0: vec4<f32>,
    x1: vec4<f32>,
}

// This thread's share of step k0: its weight unit and its 8 x values.
fn fetch(rb: u32, k0: u32, j: u32, xb: u32, tok_ok: bool) -> Stage {
    var s: Stage;
    s.w = unit_w(rb, k0 / 8u + j);
    let k = k0 + 8u * j;
    let x0 = vec4<f32>(X[xb + k], X[xb + k + 1u], X[xb + k + 2u], X[xb + k + 3u]);
    let x1 = vec4<f32>(X[xb + k + 4u], X[xb + k + 5u], X[xb + k + 6u], X[xb + k + 7u]);
    s.x0 = select(vec4<f32>(0.0), x0, tok_ok);
    s.x1 = select(vec4<f32>(0.0), x1, tok_ok);
    return s;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r0 = wid.x * TM;
    let t0 = wid.y * TN;
    // Staging roles: weight row lid / 4, unit lid % 4 of the step; token
    // lid / 4, x values 8 (lid % 4) .. + 7 of the step.
    let sr = lid / 4u;
    let j = lid % 4u;
    let rb = (P.w_row0 + phys_row(min(r0 + sr, P.rows - 1u))) * P.row_bytes;
    let tok = t0 + sr;
    let xb = min(tok, S.n - 1u) * P.cols;
    let tok_ok = tok < S.n;
    // Where the unit's two groups of 4 lie within the step.
    let kc = unit_cols(j);
    // Compute roles: rows 4 ty .. + 3, tokens 4 tx .. + 3 of the tile.
    let ty = lid / 16u;
    let tx = lid % 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var st = fetch(rb, 0u, j, xb, tok_ok);
    for (var k0 = 0u; k0 < P.cols; k0 += KS) {
        for (var i = 0u; i < 4u; i++) {
            Ws[(kc.x + i) * 16u + sr / 4u][sr % 4u] = st.w[0][i];
            Ws[(kc.y + i) * 16u + sr / 4u][sr % 4u] = st.w[1][i];
            Xs[(8u * j + i) * 16u + sr / 4u][sr % 4u] = st.x0[i];
            Xs[(8u * j + 4u + i) * 16u + sr / 4u][sr % 4u] = st.x1[i];
        }
        workgroupBarrier();
        if k0 + KS < P.cols {
            st = fetch(rb, k0 + KS, j, xb, tok_ok);
        }
        for (var kk = 0u; kk < KS; kk++) {
            let w = Ws[kk * 16u + ty];
            let x = Xs[kk * 16u + tx];
            acc0 += w.x * x;
            acc1 += w.y * x;
            acc2 += w.z * x;
            acc3 += w.w * x;
        }
        workgroupBarrier();
    }
    let l0 = r0 + 4u * ty;
    for (var c = 0u; c < 4u; c++) {
        let t = t0 + 4u * tx + c;
        if t >= S.n || l0 >= P.rows {
            continue;
        }
        epilogue(t, l0, vec4<f32>(acc0[c], acc1[c], acc2[c], acc3[c]));
    }
}
