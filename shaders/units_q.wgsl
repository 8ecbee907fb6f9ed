// Weight decoding to int8 for the integer prefill tile (matmul_int.wgsl):
// unit u of a row (8 elements, in two groups of 4 at unit_cols(u).x and
// .y, the groupings the f32 tile's unit_w decoders use: `nib` for the
// 32-element nibble formats and IQ4_XS, `elem` for Q8_0 and the K-quants)
// as its quants in two packed int8 words (value j of a group in byte j)
// and the scale s and offset m of its scale group, so that every weight
// of the unit is exactly s * q + m: the quant itself, never re-rounded.
// A unit lies inside one scale group of 16 elements or more (Q6_K, Q3_K
// and Q2_K scale 16 elements; the rest 32 or a whole block), so one (s, m)
// pair serves both words; `nib` units span a 32-element block's two
// 16-element halves, which share it.
// Computes: unit_q_<fmt>(rb, u) -> UnitQ (units.wgsl's struct), for
//   Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS, Q4_K, Q5_K, Q6_K, Q2_K
//   and Q3_K (the float formats keep the f32 tile). The 32-element formats'
//   and IQ4_XS's live in units.wgsl, where the integer matvec's unit_idot
//   decoders read them too; here are the K-quants', through units.wgsl's
//   unit_r decoders. Offsets are folded into the int8 bytes
//   where the format has a constant one (Q4_0's -8, Q5_0's -16, Q6_K's
//   -32, Q3_K's -4: units.wgsl's i8_off), and m carries the mins (Q4_1,
//   Q5_1 and the K-quants' -dmin * min; 0 elsewhere).
// Bindings: none of its own (reads `W` through dequant.wgsl's and
//   units.wgsl's readers, which the host appends too). Dispatch: none (a
//   library).

// The K-quants: units.wgsl's unit_r decoders, the fixed offsets folded
// into the bytes.
fn unit_q_q4_k(rb: u32, u: u32) -> UnitQ {
    return unit_r_q4_k(rb, u);
}

fn unit_q_q5_k(rb: u32, u: u32) -> UnitQ {
    return unit_r_q5_k(rb, u);
}

fn unit_q_q2_k(rb: u32, u: u32) -> UnitQ {
    return unit_r_q2_k(rb, u);
}

fn unit_q_q6_k(rb: u32, u: u32) -> UnitQ {
    let r = unit_r_q6_k(rb, u);
    return UnitQ(vec2<u32>(i8_off(r.q.x, 0x60606060u), i8_off(r.q.y, 0x60606060u)), r.sm);
}

fn unit_q_q3_k(rb: u32, u: u32) -> UnitQ {
    let r = unit_r_q3_k(rb, u);
    return UnitQ(vec2<u32>(i8_off(r.q.x, 0x7c7c7c7cu), i8_off(r.q.y, 0x7c7c7c7cu)), r.sm);
}
