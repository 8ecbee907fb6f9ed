// The matrix kernels' uniform block (Params, one per dispatch: a
// product's shape, flags and epilogue parameters), the step (Step) and the
// flags, for matrix.wgsl and its users and for quantize_x.wgsl, which
// reads the uniform block of the product it quantizes x for.
// Bindings: none (the users declare theirs). Dispatch: none (a library).

struct Params {
    rows: u32,
    cols: u32,
    w_row0: u32,
    out_off: u32,
    out_stride: u32,
    row_bytes: u32,
    flags: u32,
    nx: u32,
    eps: f32,
    split: u32,
    kvd: u32,
    head_dim: u32,
    rope_dim: u32,
    theta_scale: f32,
    freq_scale: f32,
    // First slot of this dispatch's argmax partials (entry `head`).
    part_base: u32,
    // Byte of weight row 0 (not 0 for one member of a mixed group).
    w_byte0: u32,
    // Mixed groups: first byte and bytes per row of sections 1 (k, or up)
    // and 2 (v); section 0 is row 0 on.
    base1: u32,
    rb1: u32,
    base2: u32,
    rb2: u32,
    // The integer path with NORM: where quantize_x.wgsl's per-block sums
    // of squares start in XD (after every token's scales), from which the
    // product takes the norm's scale.
    sq_base: u32,
    // matvec.wgsl's `main_q`: where the next product's per-block sums of
    // squares start in the int8 x scales it writes (HD), as sq_base there.
    out_sq_base: u32,
    _p2: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

const F_ACC: u32 = 1u;
const F_NORM: u32 = 2u;
const F_LAST: u32 = 4u;
const F_BIAS: u32 = 8u;
const F_NEOX: u32 = 16u;
const F_FF: u32 = 32u;
