// Weight decoding 8 elements ("a unit") at a time, for the matrix kernels.
// Computes: unit u of a row covers 8 of its elements, in two groups of 4
//   consecutive elements starting at unit_cols_<fmt>(u).x and .y; and
//   unit_dot_<fmt>(rb, u, xa, xb) = sum of weight * x over the unit, with xa
//   and xb the x values of those two groups. Units are in row order, so
//   unit u lies in block u * 8 / block_len. A row has cols / 8 units; the
//   host picks a fast decoder only where its alignment holds (below) and
//   the per-element `_elem` one (any format, via load_weight) otherwise.
// Bindings: none of its own (reads `W` like dequant.wgsl, which must be
//   included too). Dispatch: none (a library). The host appends aliases
//   `unit_cols` and `unit_dot` for the matrix's format.

// 4 bytes starting at an even byte offset: every block starts on an even
// byte, so two 16-bit halves of two words at worst. Both words are read
// (no divergent branch); the second may lie one word past the end, which
// WebGPU's bounds handling turns into a harmless zero or clamp.
fn rd_w2(b: u32) -> u32 {
    let i = b >> 2u;
    let lo = W[i];
    let hi = W[i + 1u];
    return select((lo >> 16u) | (hi << 16u), lo, (b & 2u) == 0u);
}

fn nib_lo(q: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(q, q >> 8u, q >> 16u, q >> 24u) & vec4<u32>(15u));
}

fn nib_hi(q: u32) -> vec4<f32> {
    return vec4<f32>(vec4<u32>(q >> 4u, q >> 12u, q >> 20u, q >> 28u) & vec4<u32>(15u));
}

fn i8x4(q: u32) -> vec4<f32> {
    let s = bitcast<i32>(q);
    return vec4<f32>(vec4<i32>(s << 24u, s << 16u, s << 8u, s) >> vec4<u32>(24u));
}

fn f16x4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}

fn bf16x4(a: u32, b: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xffff0000u, b << 16u, b & 0xffff0000u));
}

fn hsum(v: vec4<f32>) -> f32 {
    return (v.x + v.y) + (v.z + v.w);
}

// Any format: elements 8u .. 8u + 7, decoded one at a time.
fn unit_cols_elem(u: u32) -> vec2<u32> {
    return vec2<u32>(8u * u, 8u * u + 4u);
}

fn unit_dot_elem(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let k = 8u * u;
    let a = vec4<f32>(load_weight(rb, k), load_weight(rb, k + 1u), load_weight(rb, k + 2u), load_weight(rb, k + 3u));
    let b = vec4<f32>(load_weight(rb, k + 4u), load_weight(rb, k + 5u), load_weight(rb, k + 6u), load_weight(rb, k + 7u));
    return dot(a, xa) + dot(b, xb);
}

// The 32-element nibble formats: unit j of a block is its qs word j, whose
// low nibbles are elements 4j .. 4j + 3 and high nibbles 16 + 4j .. + 3.
fn unit_cols_nib(u: u32) -> vec2<u32> {
    let k = 32u * (u >> 2u) + 4u * (u & 3u);
    return vec2<u32>(k, k + 16u);
}

// Q4_0: 18-byte blocks (f16 d, 16 bytes of nibbles), value (q - 8) * d.
fn unit_dot_q4_0(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let m = vec4<f32>(8.0);
    return rd_f16(blk) * (dot(nib_lo(q) - m, xa) + dot(nib_hi(q) - m, xb));
}

// Q4_1: 20-byte blocks (f16 d, f16 m, nibbles), value q * d + m; rows are
// whole blocks, so every block is 4-byte aligned.
fn unit_dot_q4_1(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return dm.x * (dot(nib_lo(q), xa) + dot(nib_hi(q), xb)) + dm.y * (hsum(xa) + hsum(xb));
}

// IQ4_NL: Q4_0's layout with a lookup table instead of q - 8.
fn unit_dot_iq4_nl(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let lo = vec4<f32>(IQ4_VALUES[q & 15u], IQ4_VALUES[(q >> 8u) & 15u], IQ4_VALUES[(q >> 16u) & 15u], IQ4_VALUES[(q >> 24u) & 15u]);
    let hi = vec4<f32>(IQ4_VALUES[(q >> 4u) & 15u], IQ4_VALUES[(q >> 12u) & 15u], IQ4_VALUES[(q >> 20u) & 15u], IQ4_VALUES[q >> 28u]);
    return rd_f16(blk) * (dot(lo, xa) + dot(hi, xb));
}

// Q8_0: 34-byte blocks (f16 d, 32 int8); unit j = elements 8j .. 8j + 7.
fn unit_dot_q8_0(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    return rd_f16(blk) * (dot(i8x4(rd_w2(b)), xa) + dot(i8x4(rd_w2(b + 4u)), xb));
}

// F16 with cols % 8 == 0 (rows 16-byte aligned): 4 words per unit.
fn unit_dot_f16(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 4u * u;
    return dot(f16x4(W[w], W[w + 1u]), xa) + dot(f16x4(W[w + 2u], W[w + 3u]), xb);
}

// BF16 with cols % 8 == 0.
fn unit_dot_bf16(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 4u * u;
    return dot(bf16x4(W[w], W[w + 1u]), xa) + dot(bf16x4(W[w + 2u], W[w + 3u]), xb);
}

// F32 with cols % 8 == 0.
fn unit_dot_f32(rb: u32, u: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
    let w = (rb >> 2u) + 8u * u;
    let a = bitcast<vec4<f32>>(vec4<u32>(W[w], W[w + 1u], W[w + 2u], W[w + 3u]));
    let b = bitcast<vec4<f32>>(vec4<u32>(W[w + 4u], W[w + 5u], W[w + 6u], W[w + 7u]));
    return dot(a, xa) + dot(b, xb);
}

// The unit's weights themselves, for kernels that stage them in shared
// memory: column 0 holds the elements at unit_cols(u).x .. + 3, column 1
// those at unit_cols(u).y .. + 3. Same preconditions as unit_dot_<fmt>.
fn unit_w_elem(rb: u32, u: u32) -> mat2x4<f32> {
    let k = 8u * u;
    return mat2x4<f32>(
        vec4<f32>(load_weight(rb, k), load_weight(rb, k + 1u), load_weight(rb, k + 2u), load_weight(rb, k + 3u)),
        vec4<f32>(load_weight(rb, k + 4u), load_weight(rb, k + 5u), load_weight(rb, k + 6u), load_weight(rb, k + 7u)));
}

fn unit_w_q4_0(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let d = rd_f16(blk);
    let m = vec4<f32>(8.0);
    return mat2x4<f32>((nib_lo(q) - m) * d, (nib_hi(q) - m) * d);
}

fn unit_w_q4_1(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 20u;
    let dm = unpack2x16float(W[blk >> 2u]);
    let q = W[(blk >> 2u) + 1u + (u & 3u)];
    return mat2x4<f32>(nib_lo(q) * dm.x + dm.y, nib_hi(q) * dm.x + dm.y);
}

fn unit_w_iq4_nl(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 18u;
    let q = rd_w2(blk + 2u + 4u * (u & 3u));
    let d = rd_f16(blk);
    let lo = vec4<f32>(IQ4_VALUES[q & 15u], IQ4_VALUES[(q >> 8u) & 15u], IQ4_VALUES[(q >> 16u) & 15u], IQ4_VALUES[(q >> 24u) & 15u]);
    let hi = vec4<f32>(IQ4_VALUES[(q >> 4u) & 15u], IQ4_VALUES[(q >> 12u) & 15u], IQ4_VALUES[(q >> 20u) & 15u], IQ4_VALUES[q >> 28u]);
    return mat2x4<f32>(lo * d, hi * d);
}

fn unit_w_q8_0(rb: u32, u: u32) -> mat2x4<f32> {
    let blk = rb + (u >> 2u) * 34u;
    let b = blk + 2u + 8u * (u & 3u);
    let d = rd_f16(blk);
    return mat2x4<f32>(i8x4(rd_w2(b)) * d, i8x4(rd_w2(b + 4u)) * d);
}

fn unit_w_f16(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 4u * u;
    return mat2x4<f32>(f16x4(W[w], W[w + 1u]), f16x4(W[w + 2u], W[w + 3u]));
}

fn unit_w_bf16(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 4u * u;
    return mat2x4<f32>(bf16x4(W[w], W[w + 1u]), bf16x4(W[w + 2u], W[w + 3u]));
}

fn unit_w_f32(rb: u32, u: u32) -> mat2x4<f32> {
    let w = (rb >> 2u) + 8u * u;
    return mat2x4<f32>(
        bitcast<vec4<f32>>(vec4<u32>(W[w], W[w + 1u], W[w + 2u], W[w + 3u])),
        bitcast<vec4<f32>>(vec4<u32>(W[w + 4u], W[w + 5u], W[w + 6u], W[w + 7u])));
}
