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
// Computes: unit_q_<fmt>(rb, u) -> UnitQ, for Q8_0, Q4_0, Q4_1, Q5_0,
//   Q5_1, IQ4_NL, IQ4_XS, Q4_K, Q5_K, Q6_K, Q2_K and Q3_K (the float
//   formats keep the f32 tile). Offsets are folded into the int8 bytes
//   where the format has a constant one (Q4_0's -8, Q5_0's -16, Q6_K's
//   -32, Q3_K's -4: units.wgsl's i8_off), and m carries the mins (Q4_1,
//   Q5_1 and the K-quants' -dmin * min; 0 elsewhere).
// Bindings: none of its own (reads `W` through dequant.wgsl's and
//   units.wgsl's readers, which the host appends too). Dispatch: none (a
//   library).

struct UnitQ {
    q: vec2<u32>,
    sm: vec2<f32>,
}

fn unit_q_q8_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    return UnitQ(vec2<u32>(rd_w2(b), rd_w2(b + 4u)), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q4_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let lo = i8_off(q & 0x0f0f0f0fu, 0x78787878u);
    let hi = i8_off((q >> 4u) & 0x0f0f0f0fu, 0x78787878u);
    return UnitQ(vec2<u32>(lo, hi), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q4_1(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return UnitQ(vec2<u32>(q & 0x0f0f0f0fu, (q >> 4u) & 0x0f0f0f0fu), dm);
}

fn unit_q_iq4_nl(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    return UnitQ(vec2<u32>(iq4_bytes(q), iq4_bytes(q >> 4u)), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q5_0(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 2u) * 22u;
    let q = rd_w2(blk + 6u + 4u * (u & 3u));
    let h = rd_w2(blk + 2u) >> (4u * (u & 3u));
    let lo = i8_off((q & 0x0f0f0f0fu) | bits16_bytes(h), 0x70707070u);
    let hi = i8_off(((q >> 4u) & 0x0f0f0f0fu) | bits16_bytes(h >> 16u), 0x70707070u);
    return UnitQ(vec2<u32>(lo, hi), vec2<f32>(rd_f16(blk), 0.0));
}

fn unit_q_q5_1(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 2u) * 6u;
    let dm = unpack2x16float(W[bw]);
    let h = W[bw + 1u] >> (4u * (u & 3u));
    let q = W[bw + 2u + (u & 3u)];
    let lo = (q & 0x0f0f0f0fu) | bits16_bytes(h);
    let hi = ((q >> 4u) & 0x0f0f0f0fu) | bits16_bytes(h >> 16u);
    return UnitQ(vec2<u32>(lo, hi), dm);
}

fn unit_q_iq4_xs(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 34u;
    let q = W[bw + 2u + (u & 31u)];
    return UnitQ(vec2<u32>(iq4_bytes(q), iq4_bytes(q >> 4u)), vec2<f32>(iq4_xs_scale(bw, u), 0.0));
}

// The K-quants: grouping `elem`, unit j of a block is elements 8j .. 8j +
// 7, as units.wgsl's unit_w decoders read them.
fn unit_q_q4_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 36u;
    let sb = (u >> 2u) & 7u;
    let qw = bw + 4u + 8u * (sb >> 1u) + 2u * (u & 3u);
    let sh = 4u * (sb & 1u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], sb >> 1u);
    let sm = select(s.xz, s.yw, (sb & 1u) == 1u);
    let q = vec2<u32>((W[qw] >> sh) & 0x0f0f0f0fu, (W[qw + 1u] >> sh) & 0x0f0f0f0fu);
    return UnitQ(q, vec2<f32>(dm.x * sm.x, -(dm.y * sm.y)));
}

fn unit_q_q5_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 44u;
    let sb = (u >> 2u) & 7u;
    let i = 2u * (u & 3u);
    let qw = bw + 12u + 8u * (sb >> 1u) + i;
    let sh = 4u * (sb & 1u);
    let q0 = ((W[qw] >> sh) & 0x0f0f0f0fu) | (((W[bw + 4u + i] >> sb) & 0x01010101u) << 4u);
    let q1 = ((W[qw + 1u] >> sh) & 0x0f0f0f0fu) | (((W[bw + 5u + i] >> sb) & 0x01010101u) << 4u);
    let dm = unpack2x16float(W[bw]);
    let s = k4_scales(W[bw + 1u], W[bw + 2u], W[bw + 3u], sb >> 1u);
    let sm = select(s.xz, s.yw, (sb & 1u) == 1u);
    return UnitQ(vec2<u32>(q0, q1), vec2<f32>(dm.x * sm.x, -(dm.y * sm.y)));
}

fn unit_q_q6_k(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 5u) * 210u;
    let hf = (u >> 4u) & 1u;
    let qt = (u >> 2u) & 3u;
    let l = 8u * (u & 3u);
    let lb = blk + 64u * hf + 32u * (qt & 1u) + l;
    let sh = 4u * (qt >> 1u);
    let hb = blk + 128u + 32u * hf + l;
    let q0 = ((rd_w2(lb) >> sh) & 0x0f0f0f0fu) | (((rd_w2(hb) >> (2u * qt)) & 0x03030303u) << 4u);
    let q1 = ((rd_w2(lb + 4u) >> sh) & 0x0f0f0f0fu) | (((rd_w2(hb + 4u) >> (2u * qt)) & 0x03030303u) << 4u);
    let dl = rd_f16(blk + 208u) * f32(rd_i8(blk + 192u + ((u & 31u) >> 1u)));
    return UnitQ(vec2<u32>(i8_off(q0, 0x60606060u), i8_off(q1, 0x60606060u)), vec2<f32>(dl, 0.0));
}

fn unit_q_q2_k(rb: u32, u: u32) -> UnitQ {
    let bw = (rb >> 2u) + (u >> 5u) * 21u;
    let j = u & 31u;
    let qw = bw + 4u + 8u * (j >> 4u) + 2u * (j & 3u);
    let sh = 2u * ((j >> 2u) & 3u);
    let s = (W[bw + (j >> 3u)] >> (8u * ((j >> 1u) & 3u))) & 255u;
    let dm = unpack2x16float(W[bw + 20u]);
    let q = vec2<u32>((W[qw] >> sh) & 0x03030303u, (W[qw + 1u] >> sh) & 0x03030303u);
    return UnitQ(q, vec2<f32>(dm.x * f32(s & 15u), -(dm.y * f32(s >> 4u))));
}

fn unit_q_q3_k(rb: u32, u: u32) -> UnitQ {
    let blk = rb + (u >> 5u) * 110u;
    let j = u & 31u;
    let hf = j >> 4u;
    let i = (j >> 2u) & 3u;
    let l = 8u * (j & 3u);
    let qb = blk + 32u + 32u * hf + l;
    let hs = 4u * hf + i;
    let q0 = ((rd_w2(qb) >> (2u * i)) & 0x03030303u) | (((rd_w2(blk + l) >> hs) & 0x01010101u) << 2u);
    let q1 = ((rd_w2(qb + 4u) >> (2u * i)) & 0x03030303u) | (((rd_w2(blk + l + 4u) >> hs) & 0x01010101u) << 2u);
    let g = j >> 1u;
    let low = (rd_u8(blk + 96u + (g & 7u)) >> (4u * (g >> 3u))) & 15u;
    let high = (rd_u8(blk + 104u + (g & 3u)) >> (2u * (g >> 2u))) & 3u;
    let dl = rd_f16(blk + 108u) * f32(i32(low | (high << 4u)) - 32);
    return UnitQ(vec2<u32>(i8_off(q0, 0x7c7c7c7cu), i8_off(q1, 0x7c7c7c7cu)), vec2<f32>(dl, 0.0));
}
