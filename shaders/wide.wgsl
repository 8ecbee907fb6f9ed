// Wide integer decoding for the int8-x matvec (matvec.wgsl with INT_X, x
// from quantize_x.wgsl): one call covers a "wide unit" of 32 elements of a
// row, the 4 consecutive 8-element units 4v .. 4v + 3 of units.wgsl's
// grouping for the format. Why: the per-unit decoders (unit_idot_<fmt>)
// load one u32 of quants per call, decode the block's scales again for
// every 8 elements and spend ~6 float multiplies on 8 multiply-adds; on
// the H100 that held a Q4_K matvec to a third of the memory bandwidth.
// Here each thread loads 16 bytes of quants (and 32 elements' worth of
// x) per row at once, sums the 4-word integer dot products in i32, and
// applies each scale once per 16 or 32 elements.
// Computes:
//   wide_cols_<group>(v): the two 16-element groups of x that wide unit v
//     multiplies, as indices of vec4<u32> words (16 int8 elements each)
//     into the token's x (XQ4 in matvec's int binding 13): .x the group of
//     the first 16 weights (low nibbles, first half), .y the other. Each
//     lies in one 32-element x block, index / 2. Groupings: `b32` (the
//     32-element formats, `nib` and `elem`: block v, its elements 0..15 and
//     16..31), `k64` (Q4_K/Q5_K: chunk c = v / 2 % 4 of block v / 8, its
//     16 elements at 64c + 16 (v % 2) and the 16 at 32 further, sub-blocks
//     2c and 2c + 1), `q6k` (Q6_K: the 16 elements at 128h + 32p + 16 (v %
//     2) of half h = v / 4 % 2, p = v / 2 % 2, and the 16 at 64 further:
//     one 16-element scale group each).
//   wide_idot_<fmt>(rb, v, xa, xc, da, dc, sa, sc) = the sum over wide unit
//     v of the row at byte rb of weight * x, with xa, xc the two x groups
//     (packed int8), da, dc their blocks' scales and sa, sc the sums of
//     their 16 int8 values (the formats with mins, Q4_K/Q5_K/Q4_1/Q5_1/
//     Q2_K, multiply them by the min; Q4_0, Q5_0 and Q3_K take their
//     fixed offset off the unsigned quants' sums with them; the host
//     passes 0 to the others). The result equals the sum of
//     the four unit_idot_<fmt> calls up to f32 rounding.
// Loads: Q4_K (144-byte blocks), Q5_K (176) and Q3_K (112 on the GPU)
//   are 16-byte multiples, so rows of whole blocks keep every block
//   16-byte aligned (the host pads
//   mixed groups' members to 16 bytes): their header and quants are read
//   through `wq4(i)` (16-byte word i of W), which the host defines as a
//   vec4<u32> alias binding of W where the storage-buffer limit allows, 4
//   scalar loads otherwise. Q6_K (210), Q4_0 (18) and Q8_0 (34) blocks
//   start on even bytes only: 16 bytes are read as 5 words and shifted
//   (rd4), and a whole Q4_0 / Q8_0 block, scale included, as 5 / 9 words.
//   IQ4_XS (136) is 8-byte aligned: 4 word loads. IQ4_NL (18) is read as
//   Q4_0, Q5_0 (22) as Q4_0 with its fifth bits in between. Q4_1 (20),
//   Q5_1 (24) and Q2_K (84) are word-aligned: word loads. Q3_K's blocks
//   are padded to 112 bytes on the GPU (`upload::block_pad`) and read
//   through `wq4` as Q4_K's.
// Every format here has 32- or 256-element blocks, so a row (whole blocks)
// is whole wide units: there is no tail. Q2_K and Q3_K use the `b32`
// grouping too: a wide unit of theirs is one 32-element x block, two
// scale groups.
// Bindings: none of its own (reads `W` like dequant.wgsl and units.wgsl,
//   which must be included too, and the host's `wq4`; IQ4_XS and IQ4_NL
//   call book_table.wgsl's or book_shuffle.wgsl's iq4_lut2). Dispatch:
//   none.

const NIB: u32 = 0x0f0f0f0fu;

// 16 bytes at the even byte offset b: words i .. i + 4 (i = b / 4) read
// once and shifted by two bytes where b is not a multiple of 4. The fifth
// word is read either way (no divergent branch); for a block at the very
// end it may lie one word past the buffer, where WebGPU's bounds handling
// returns a harmless value that the select drops.
fn rd4(b: u32) -> vec4<u32> {
    let i = b >> 2u;
    let lo = vec4<u32>(W[i], W[i + 1u], W[i + 2u], W[i + 3u]);
    return select(fun16(lo, vec4<u32>(lo.yzw, W[i + 4u])), lo, (b & 2u) == 0u);
}

// Each word of a taken from its upper half and the lower half of the
// matching word of b: the 4 bytes that start 2 bytes into a's word.
fn fun16(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    return (a >> vec4<u32>(16u)) | (b << vec4<u32>(16u));
}

// The sum of the 16 signed bytes of x (the sum of x a min multiplies).
fn xsum4(x: vec4<u32>) -> i32 {
    return dot4I8Packed(ONES, x.x) + dot4I8Packed(ONES, x.y) + dot4I8Packed(ONES, x.z) + dot4I8Packed(ONES, x.w);
}

// The dot product of 16 packed int8 weights with 16 packed int8 x values.
fn idot16(w: vec4<u32>, x: vec4<u32>) -> i32 {
    return dot4I8Packed(w.x, x.x) + dot4I8Packed(w.y, x.y) + dot4I8Packed(w.z, x.z) + dot4I8Packed(w.w, x.w);
}

// i8_off for 4 words: the bytes (each < 0x80) minus o.
fn i8_off4(q: vec4<u32>, off: u32) -> vec4<u32> {
    return (q + vec4<u32>(off)) ^ vec4<u32>(0x80808080u);
}

fn wide_cols_b32(v: u32) -> vec2<u32> {
    return vec2<u32>(2u * v, 2u * v + 1u);
}

fn wide_cols_k64(v: u32) -> vec2<u32> {
    let a = 4u * (v >> 1u) + (v & 1u);
    return vec2<u32>(a, a + 2u);
}

fn wide_cols_q6k(v: u32) -> vec2<u32> {
    let a = 8u * (v >> 2u) + (v & 3u);
    return vec2<u32>(a, a + 4u);
}

// Q4_K: 9 16-byte words per block: word 0 = (d and dmin, 12 scale bytes),
// words 1 .. 8 the nibbles; wide unit v is nibble word v % 8 of block
// v / 8: its low nibbles are sub-block 2c's 16 elements (x group a), its
// high nibbles sub-block 2c + 1's (group c), c = v / 2 % 4.
fn wide_idot_q4_k(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let b4 = (rb >> 4u) + (v >> 3u) * 9u;
    let hd = wq4(b4);
    let q = wq4(b4 + 1u + (v & 7u));
    let s = vec4<i32>(k4_scales_u(hd.y, hd.z, hd.w, (v >> 1u) & 3u));
    let ia = idot16(q & vec4<u32>(NIB), xa);
    let ic = idot16((q >> vec4<u32>(4u)) & vec4<u32>(NIB), xc);
    let dm = unpack2x16float(hd.x);
    return da * (dm.x * f32(s.x * ia) - dm.y * f32(s.z * sa)) + dc * (dm.x * f32(s.y * ic) - dm.y * f32(s.w * sc));
}

// Q5_K: 11 16-byte words per block: the header, 2 of fifth bits (qh), 8
// of nibbles; bit s of qh byte l is element 32s + l's, so the qh bytes of
// wide unit v's elements are qh word v % 2, bits 2c (group a) and 2c + 1.
fn wide_idot_q5_k(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let b4 = (rb >> 4u) + (v >> 3u) * 11u;
    let hd = wq4(b4);
    let c = (v >> 1u) & 3u;
    let h = wq4(b4 + 1u + (v & 1u)) >> vec4<u32>(2u * c);
    let q = wq4(b4 + 3u + (v & 7u));
    let lo = (q & vec4<u32>(NIB)) | ((h & vec4<u32>(0x01010101u)) << vec4<u32>(4u));
    let hi = ((q >> vec4<u32>(4u)) & vec4<u32>(NIB)) | ((h & vec4<u32>(0x02020202u)) << vec4<u32>(3u));
    let s = vec4<i32>(k4_scales_u(hd.y, hd.z, hd.w, c));
    let ia = idot16(lo, xa);
    let ic = idot16(hi, xc);
    let dm = unpack2x16float(hd.x);
    return da * (dm.x * f32(s.x * ia) - dm.y * f32(s.z * sa)) + dc * (dm.x * f32(s.y * ic) - dm.y * f32(s.w * sc));
}

// Q6_K (units.wgsl's layout): wide unit v of block v / 8 is ql bytes
// 16 (v % 8) .. + 15 (low nibbles: group a; high: group c) and qh bytes
// 32h + 16 (v % 2) .. + 15 shifted by 2p; each group has one int8 scale
// (groups of 16 elements), bytes 8h + 2p + v % 2 and 4 further. The
// offset of 32 comes off each weight (i8_off4), not off the sums of x as
// Q4_0's, Q5_0's and Q3_K's: that measured 1-7% slower on the H200
// (BENCHMARKS.md, 2026-11-27f).
fn wide_idot_q6_k(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let blk = rb + (v >> 3u) * 210u;
    let hf = (v >> 2u) & 1u;
    let p = (v >> 1u) & 1u;
    let ql = rd4(blk + 16u * (v & 7u));
    let qh = rd4(blk + 128u + 32u * hf + 16u * (v & 1u)) >> vec4<u32>(2u * p);
    let lo = i8_off4((ql & vec4<u32>(NIB)) | ((qh & vec4<u32>(0x03030303u)) << vec4<u32>(4u)), 0x60606060u);
    let hi = i8_off4(((ql >> vec4<u32>(4u)) & vec4<u32>(NIB)) | (((qh >> vec4<u32>(4u)) & vec4<u32>(0x03030303u)) << vec4<u32>(4u)), 0x60606060u);
    let si = blk + 192u + 8u * hf + 2u * p + (v & 1u);
    let ia = rd_i8(si) * idot16(lo, xa);
    let ic = rd_i8(si + 4u) * idot16(hi, xc);
    return rd_f16(blk + 208u) * (da * f32(ia) + dc * f32(ic));
}

// Q4_0: wide unit v is block v (18 bytes: f16 d, 16 bytes of nibbles),
// read whole as the 5 words that cover it: d is the low half of the first
// where the block starts on a word, the high half otherwise. The nibbles
// are summed unsigned and the offset of 8 taken off as 8 times the sum of
// x (sa + sc), which the host computes once for all rows, rather than off
// every weight word of every row.
fn wide_idot_q4_0(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let blk = rb + v * 18u;
    let i = blk >> 2u;
    let w0 = W[i];
    let lo = vec4<u32>(W[i + 1u], W[i + 2u], W[i + 3u], W[i + 4u]);
    let odd = (blk & 2u) != 0u;
    let q = select(fun16(vec4<u32>(w0, lo.xyz), lo), lo, odd);
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let ia = idot16(q & vec4<u32>(NIB), xa);
    let ic = idot16((q >> vec4<u32>(4u)) & vec4<u32>(NIB), xc);
    return d * da * f32(ia + ic - 8 * (sa + sc));
}

// units.wgsl's bits16_bytes for 4 words: bits 0..3 of each as bit 4 of
// its four bytes, by one multiply (the four shifted copies of the nibble,
// by 4, 11, 18 and 25, do not overlap, so nothing carries).
fn bits16_bytes4(h: vec4<u32>) -> vec4<u32> {
    return ((h & vec4<u32>(15u)) * vec4<u32>(0x02040810u)) & vec4<u32>(0x10101010u);
}

// Q5_0: wide unit v is block v (22 bytes: f16 d, 4 bytes of fifth bits
// qh, 16 of nibbles, as Q4_0's), read whole as the 6 words that cover it:
// where the block starts on a word, qh straddles words 0 and 1 and the
// nibbles are shifted by two bytes; otherwise qh is word 1 and the
// nibbles words 2 .. 5. Element j < 16 (low nibble of byte j) takes bit j
// of qh, element j + 16 (its high nibble) bit j + 16: nibble word k's
// fifth bits are qh >> 4k and qh >> (16 + 4k). The offset of 16 comes
// off the sums as Q4_0's.
fn wide_idot_q5_0(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let blk = rb + v * 22u;
    let i = blk >> 2u;
    let w0 = W[i];
    let m = vec4<u32>(W[i + 1u], W[i + 2u], W[i + 3u], W[i + 4u]);
    let n = vec4<u32>(m.yzw, W[i + 5u]);
    let odd = (blk & 2u) != 0u;
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let qh = select((w0 >> 16u) | (m.x << 16u), m.x, odd);
    let q = select(fun16(m, n), n, odd);
    let sh = vec4<u32>(0u, 4u, 8u, 12u);
    let hl = bits16_bytes4(vec4<u32>(qh) >> sh);
    let hh = bits16_bytes4(vec4<u32>(qh >> 16u) >> sh);
    let ia = idot16((q & vec4<u32>(NIB)) | hl, xa);
    let ic = idot16(((q >> vec4<u32>(4u)) & vec4<u32>(NIB)) | hh, xc);
    return d * da * f32(ia + ic - 16 * (sa + sc));
}

// Q4_1: wide unit v is block v (20 bytes, word-aligned: f16 d and f16
// min m in word 0, the nibbles as Q4_0's in words 1 .. 4). The weights are
// d q + m (q unsigned), so the min multiplies the sum of x: sa + sc.
fn wide_idot_q4_1(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let bw = (rb >> 2u) + v * 5u;
    let dm = unpack2x16float(W[bw]);
    let q = vec4<u32>(W[bw + 1u], W[bw + 2u], W[bw + 3u], W[bw + 4u]);
    let ia = idot16(q & vec4<u32>(NIB), xa);
    let ic = idot16((q >> vec4<u32>(4u)) & vec4<u32>(NIB), xc);
    return da * (dm.x * f32(ia + ic) + dm.y * f32(sa + sc));
}

// Q5_1: wide unit v is block v (24 bytes, word-aligned: d and m, then the
// fifth bits qh as Q5_0's, then the nibbles), weights d q + m as Q4_1's.
fn wide_idot_q5_1(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let bw = (rb >> 2u) + v * 6u;
    let dm = unpack2x16float(W[bw]);
    let qh = W[bw + 1u];
    let q = vec4<u32>(W[bw + 2u], W[bw + 3u], W[bw + 4u], W[bw + 5u]);
    let sh = vec4<u32>(0u, 4u, 8u, 12u);
    let a = (q & vec4<u32>(NIB)) | bits16_bytes4(vec4<u32>(qh) >> sh);
    let c = ((q >> vec4<u32>(4u)) & vec4<u32>(NIB)) | bits16_bytes4(vec4<u32>(qh >> 16u) >> sh);
    return da * (dm.x * f32(idot16(a, xa) + idot16(c, xc)) + dm.y * f32(sa + sc));
}

// Q2_K (84-byte blocks, word-aligned: 16 scale bytes (scale low nibble,
// min high), 64 bytes of 2-bit quants, f16 d and dmin): wide unit v is
// elements 32 (v % 8) .. + 31 of block v / 8, half h = v % 8 / 4, shift
// i = v % 4: quant bytes 32h .. 32h + 31 shifted by 2i, scale groups
// 2 (v % 8) and + 1 (one per x group).
fn wide_idot_q2_k(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let bw = (rb >> 2u) + (v >> 3u) * 21u;
    let u = v & 7u;
    let qw = bw + 4u + 8u * (u >> 2u);
    let sh = vec4<u32>(2u * (u & 3u));
    let m3 = vec4<u32>(0x03030303u);
    let qa = (vec4<u32>(W[qw], W[qw + 1u], W[qw + 2u], W[qw + 3u]) >> sh) & m3;
    let qc = (vec4<u32>(W[qw + 4u], W[qw + 5u], W[qw + 6u], W[qw + 7u]) >> sh) & m3;
    let s2 = (W[bw + (u >> 1u)] >> (16u * (u & 1u))) & 0xffffu;
    let s = vec4<i32>(vec4<u32>(s2 & 15u, (s2 >> 8u) & 15u, (s2 >> 4u) & 15u, s2 >> 12u));
    let dm = unpack2x16float(W[bw + 20u]);
    return da * (dm.x * f32(s.x * idot16(qa, xa) + s.y * idot16(qc, xc)) - dm.y * f32(s.z * sa + s.w * sc));
}

// Q3_K (blocks of 110 bytes padded to 112 on the GPU, `upload::block_pad`:
// 32 bytes hmask, 64 of 2-bit quants as Q2_K's, 12 of 6-bit scales, f16
// d, 2 of padding; units.wgsl's unit_dot_q3_k has the layout), read as 7
// 16-byte words a block (`wq4`): wide unit u = v % 8 is elements 32u ..
// + 31 of block v / 8: quant words 2 + 2h, 3 + 2h (h = u / 4) shifted by
// 2 (u % 4), high bits bit u of hmask words 0 and 1, scale groups 2u and
// 2u + 1 in word 6, whose low nibbles are one byte pair (bytes 96 + 2 (u
// % 4), nibble u / 4) and high bits another (bytes 104 + 2 (u % 2), bits
// 2 (u / 2)); d is the low half of word 6's last u32. The quants are
// summed unsigned (0 .. 7) and the offset of 4 taken off the sums as
// Q4_0's. Why the padding: read from unpadded blocks (2-byte aligned: 9
// words shifted per 32 bytes, 16-bit scale reads) the 8B gate/up read
// 0.95 TB/s on the H200; 16-byte loads in their place (the same bytes,
// wrong values) took its time from 1,706 to 1,177 us (BENCHMARKS.md,
// 2026-11-29f).
fn wide_idot_q3_k(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let b4 = (rb >> 4u) + (v >> 3u) * 7u;
    let u = v & 7u;
    let qw = b4 + 2u + 2u * (u >> 2u);
    let sh = vec4<u32>(2u * (u & 3u));
    let hs = vec4<u32>(u);
    let m3 = vec4<u32>(0x03030303u);
    let m1 = vec4<u32>(0x01010101u);
    let two = vec4<u32>(2u);
    let qa = ((wq4(qw) >> sh) & m3) | (((wq4(b4) >> hs) & m1) << two);
    let qc = ((wq4(qw + 1u) >> sh) & m3) | (((wq4(b4 + 1u) >> hs) & m1) << two);
    let sw = wq4(b4 + 6u);
    let lo = (select(sw.x, sw.y, (u & 2u) != 0u) >> (16u * (u & 1u) + 4u * (u >> 2u))) & 0xffffu;
    let hi = (sw.z >> (16u * (u & 1u) + 2u * (u >> 1u))) & 0xffffu;
    let s_a = i32((lo & 15u) | ((hi & 3u) << 4u)) - 32;
    let s_c = i32(((lo >> 8u) & 15u) | (((hi >> 8u) & 3u) << 4u)) - 32;
    return unpack2x16float(sw.w).x * da * f32(s_a * (idot16(qa, xa) - 4 * sa) + s_c * (idot16(qc, xc) - 4 * sc));
}

// Q8_0: wide unit v is block v (34 bytes: f16 d, 32 int8), read whole as
// the 9 words that cover it (d as Q4_0's).
fn wide_idot_q8_0(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let blk = rb + v * 34u;
    let i = blk >> 2u;
    let w0 = W[i];
    let m = vec4<u32>(W[i + 1u], W[i + 2u], W[i + 3u], W[i + 4u]);
    let n = vec4<u32>(W[i + 5u], W[i + 6u], W[i + 7u], W[i + 8u]);
    let odd = (blk & 2u) != 0u;
    let a = select(fun16(vec4<u32>(w0, m.xyz), m), m, odd);
    let c = select(fun16(vec4<u32>(m.w, n.xyz), n), n, odd);
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    return d * da * f32(idot16(a, xa) + idot16(c, xc));
}

// IQ4_NL's code book (iq4_lut_fill, iq4_lut2) comes from book_table.wgsl
// (a table in workgroup memory) or book_shuffle.wgsl (registers read by
// subgroupShuffle), which the host appends.

// IQ4_XS: wide unit v is sub-block v % 8 of block v / 8 (16 bytes of
// nibbles at word 2 + 4 (v % 8), laid out as IQ4_NL's), one scale. Needs
// the code book filled (the host's loop calls iq4_lut_fill first).
fn wide_idot_iq4_xs(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let bw = (rb >> 2u) + (v >> 3u) * 34u;
    let qw = bw + 2u + 4u * (v & 7u);
    let q0 = iq4_lut2(W[qw]);
    let q1 = iq4_lut2(W[qw + 1u]);
    let q2 = iq4_lut2(W[qw + 2u]);
    let q3 = iq4_lut2(W[qw + 3u]);
    let a = vec4<u32>(q0.x, q1.x, q2.x, q3.x);
    let c = vec4<u32>(q0.y, q1.y, q2.y, q3.y);
    return iq4_xs_scale(bw, 4u * v) * da * f32(idot16(a, xa) + idot16(c, xc));
}

// IQ4_NL: wide unit v is block v, laid out as Q4_0's (18 bytes: f16 d, 16
// bytes of nibbles) and read the same way; the nibbles' values come from
// the code book (as IQ4_XS's). Needs it filled. Why: through the
// per-unit decoder (iq4_bytes per 4 nibbles) an 8B-sized IQ4_NL matvec
// ran at 0.7 TB/s on the H100 (BENCHMARKS.md, 2026-11-26).
fn wide_idot_iq4_nl(rb: u32, v: u32, xa: vec4<u32>, xc: vec4<u32>, da: f32, dc: f32, sa: i32, sc: i32) -> f32 {
    let blk = rb + v * 18u;
    let i = blk >> 2u;
    let w0 = W[i];
    let lo = vec4<u32>(W[i + 1u], W[i + 2u], W[i + 3u], W[i + 4u]);
    let odd = (blk & 2u) != 0u;
    let q = select(fun16(vec4<u32>(w0, lo.xyz), lo), lo, odd);
    let d = unpack2x16float(select(w0, w0 >> 16u, odd)).x;
    let q0 = iq4_lut2(q.x);
    let q1 = iq4_lut2(q.y);
    let q2 = iq4_lut2(q.z);
    let q3 = iq4_lut2(q.w);
    let a = vec4<u32>(q0.x, q1.x, q2.x, q3.x);
    let c = vec4<u32>(q0.y, q1.y, q2.y, q3.y);
    return d * da * f32(idot16(a, xa) + idot16(c, xc));
}
