// The int8 blocks of the integer matvec's x, as one definition for every
// kernel that writes them (quantize_x.wgsl; attention.wgsl's `store_q`,
// which writes Wo's x without a quantize pass), so that all give the same
// bits: a block of 32 values with largest magnitude amax is stored as the
// scale amax / 127 and the values round(v * 127 / amax) as int8.
// Computes: q8_inv(amax) = 127 / amax (0 where amax is 0: a block of
//   zeros); q8_pack(v, inv) = round(v * inv) of 4 values as int8, value j
//   in byte j (round: ties to even); q8_scale(amax) = amax / 127.
// Bindings: none. Dispatch: none (a library the host appends).

fn q8_inv(amax: f32) -> f32 {
    return select(0.0, 127.0 / amax, amax > 0.0);
}

// |v| * inv <= 127 up to rounding; the clamp keeps a rounded-up 127.00001
// from wrapping.
fn q8_pack(v: vec4<f32>, inv: f32) -> u32 {
    return pack4xI8Clamp(vec4<i32>(round(v * inv)));
}

fn q8_scale(amax: f32) -> f32 {
    return amax / 127.0;
}
