// matvec.wgsl's `glu_q` with OWN_X: the workgroup quantizes its own x
// instead of reading what a quantize_x.wgsl pass left: token t's row of X
// times the FFN norm's gains (x * G; the product finishes the norm, flag
// NORM, as after the pass) cut into 32-element int8 blocks in workgroup
// memory, XQ4 (16-byte words) and XD (scales, then each block's sum of
// squares of x at XD[XDB + block]), laid out as quantize_x.wgsl lays out
// one token (the wide decoders read them with qb = db = 0, the norm's sum
// with sq_base = XDB). The arithmetic is quantize_x.wgsl's: each element
// x * g, each block's largest magnitude and int8_block.wgsl's rounding,
// each block's squares summed in the pass's order, so that the int8 x and
// the norm's scale are the pass's bit for bit.
// Why: the pass is one dependent dispatch a layer (~6 us of an H200
// decode step); every workgroup redoing it reads x and the gains (16 KiB
// each at 4096 columns) from the cache instead. Only the wide path, only
// where the whole row fits in workgroup memory beside the product's own
// arrays (`kernels::own_x_fits`), and x's row a multiple of 32 long.
// The host prepends XQW (the row's 16-byte words, 2 per block) and XDB
// (its blocks), and uses X and G through the vec4 readers xv4 and gv4
// (bindings 11 and 12).

var<workgroup> XQ4: array<vec4<u32>, XQW>;
var<workgroup> XD: array<f32, 2 * XDB>;

const NT: u32 = WG * TEAMS;
// `red` holds two magnitudes and two sums of squares a block.
const_assert RW * TEAMS >= 4u * XDB;

// Never called: the integer path's x is XQ4 and XD.
fn xload(xb: u32, k: u32) -> f32 {
    return 0.0;
}

// The norm's sum of squares of block b (token t: always 0 here).
fn x_sq(t: u32, b: u32) -> f32 {
    return XD[XDB + b];
}

// Elements k .. k + 3 of the row at xb times their gains.
fn own_v4(xb: u32, k: u32) -> vec4<f32> {
    return xv4(xb + k) * gv4(k);
}

// The int8 blocks of the row at xb and their sums of squares, by all NT
// threads (lid: the index in the workgroup); every thread returns after
// the last barrier, the blocks in place.
fn own_x(lid: u32, xb: u32) {
    let nb = P.cols / 32u;
    // Thread h takes elements 16 h .. 16 h + 15, half of block h / 2; the
    // halves' magnitudes and squares meet in red. One vec4 at a time,
    // loaded again for the packing (from the cache): on the H200 that ran
    // the 1B 1.8% faster than holding a thread's 16 values across the
    // barrier (BENCHMARKS.md, 2026-11-29g).
    for (var h = lid; h < 2u * nb; h += NT) {
        let k = 16u * h;
        let x0 = xv4(xb + k);
        let x1 = xv4(xb + k + 4u);
        let x2 = xv4(xb + k + 8u);
        let x3 = xv4(xb + k + 12u);
        red[2u * nb + h] = (dot(x0, x0) + dot(x1, x1)) + (dot(x2, x2) + dot(x3, x3));
        var m = abs(x0 * gv4(k));
        m = max(m, abs(x1 * gv4(k + 4u)));
        m = max(m, abs(x2 * gv4(k + 8u)));
        m = max(m, abs(x3 * gv4(k + 12u)));
        red[h] = max(max(m.x, m.y), max(m.z, m.w));
    }
    workgroupBarrier();
    for (var h = lid; h < 2u * nb; h += NT) {
        let k = 16u * h;
        let amax = max(red[h & ~1u], red[h | 1u]);
        let id = q8_inv(amax);
        XQ4[h] = vec4<u32>(
            q8_pack(own_v4(xb, k), id),
            q8_pack(own_v4(xb, k + 4u), id),
            q8_pack(own_v4(xb, k + 8u), id),
            q8_pack(own_v4(xb, k + 12u), id),
        );
        if (h & 1u) == 0u {
            XD[h >> 1u] = q8_scale(amax);
            XD[XDB + (h >> 1u)] = red[2u * nb + h] + red[2u * nb + h + 1u];
        }
    }
    workgroupBarrier();
}
