// matvec.wgsl's `glu_q` with OWN_X: the workgroup quantizes its own x
// instead of reading what a quantize_x.wgsl pass left: token t's row of X
// with the FFN norm (rmsnorm(x) * G, flag NORM) cut into 32-element int8
// blocks in workgroup memory, XQ4 (16-byte words) and XD (scales), laid out
// as quantize_x.wgsl lays out one token (the wide decoders read them with
// qb = db = 0). The arithmetic is quantize_x.wgsl's: the norm's scale
// from row_norm.wgsl (which the pass calls too: one order of the sums),
// each element (x * scale) * g, each block's largest magnitude and
// int8_block.wgsl's rounding, so that the int8 x is the pass's.
// Why: the pass is one dependent dispatch a layer (~6 us of an H200
// decode step); every workgroup redoing it reads x and the gains (16 KiB
// each at 4096 columns) from the cache instead. Only the wide path, only
// where the whole row fits in workgroup memory beside the product's own
// arrays (`kernels::own_x_fits`), and x's row a multiple of 32 long.
// The host prepends XQW (the row's 16-byte words, 2 per block) and XDB
// (its blocks) and appends row_norm.wgsl, and uses X and G through the
// vec4 readers xv4 and gv4 (bindings 11 and 12).

var<workgroup> XQ4: array<vec4<u32>, XQW>;
var<workgroup> XD: array<f32, XDB>;

const NT: u32 = WG * TEAMS;
const_assert NT == 256u;
// `red` holds the threads' sums, then two magnitudes a block.
const_assert RW * TEAMS >= NT && RW * TEAMS >= 2u * XDB;

// Never called: the integer path's x is XQ4 and XD.
fn xload(xb: u32, k: u32) -> f32 {
    return 0.0;
}

// row_norm.wgsl's hooks (matvec.wgsl's `red` holds the threads' sums).
const NQ: u32 = NT;

// x[k0 .. k0 + 7] of the row at xb (k0 a multiple of 8; 0 past the row's
// end, which is a multiple of 32, so a group is all in or all out).
fn nq_x8(xb: u32, k0: u32) -> mat2x4<f32> {
    let k = min(k0, P.cols - 8u);
    let z = vec4<f32>();
    let inside = k0 < P.cols;
    return mat2x4<f32>(select(z, xv4(xb + k), inside), select(z, xv4(xb + k + 4u), inside));
}

fn nq_put(i: u32, v: f32) {
    red[i] = v;
}

fn nq_get(i: u32) -> f32 {
    return red[i];
}

// Elements k .. k + 3 of the row at xb normed: (x * scale) * g, as
// quantize_x.wgsl computes each.
fn own_v4(xb: u32, k: u32, scale: f32) -> vec4<f32> {
    return (xv4(xb + k) * scale) * gv4(k);
}

// The norm scale and the int8 blocks of the row at xb, by all NT threads
// (lid: the index in the workgroup); every thread returns after the last
// barrier, the blocks in place.
fn own_x(lid: u32, xb: u32) {
    let nb = P.cols / 32u;
    let scale = row_norm(lid, xb, 0xffffffffu).scale;
    // Thread h takes elements 16 h .. 16 h + 15, half of block h / 2; the
    // halves' magnitudes meet in red (after row_norm's last barrier,
    // nobody reads its sums any more). One vec4 at a time, loaded again
    // for the packing (from the cache): on the H200 that ran the 1B 1.8%
    // faster than holding a thread's 16 values across the barrier
    // (BENCHMARKS.md, 2026-11-29g).
    for (var h = lid; h < 2u * nb; h += NT) {
        let k = 16u * h;
        var m = abs(own_v4(xb, k, scale));
        m = max(m, abs(own_v4(xb, k + 4u, scale)));
        m = max(m, abs(own_v4(xb, k + 8u, scale)));
        m = max(m, abs(own_v4(xb, k + 12u, scale)));
        red[h] = max(max(m.x, m.y), max(m.z, m.w));
    }
    workgroupBarrier();
    for (var h = lid; h < 2u * nb; h += NT) {
        let k = 16u * h;
        let amax = max(red[h & ~1u], red[h | 1u]);
        let id = q8_inv(amax);
        XQ4[h] = vec4<u32>(
            q8_pack(own_v4(xb, k, scale), id),
            q8_pack(own_v4(xb, k + 4u, scale), id),
            q8_pack(own_v4(xb, k + 8u, scale), id),
            q8_pack(own_v4(xb, k + 12u, scale), id),
        );
        if (h & 1u) == 0u {
            XD[h >> 1u] = q8_scale(amax);
        }
    }
    workgroupBarrier();
}
