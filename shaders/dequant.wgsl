// Weight decoding for every ggml block format, one element at a time.
// Computes: fn w_<fmt>(rb, k) -> f32, element k of the weight row whose
//   first byte is `rb` in the storage array `W` (array<u32>), which the
//   kernel that includes this file declares. Rows start on even bytes
//   (every block size is even), so 16-bit fields never straddle a word.
// Bindings: none of its own. Dispatch: none (a library). The host appends
//   `fn load_weight(rb: u32, k: u32) -> f32 { return w_<fmt>(rb, k); }`.

fn rd_u8(b: u32) -> u32 {
    return (W[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
}

fn rd_i8(b: u32) -> i32 {
    return bitcast<i32>(rd_u8(b) << 24u) >> 24u;
}

fn rd_u16(b: u32) -> u32 {
    return (W[b >> 2u] >> ((b & 2u) * 8u)) & 0xffffu;
}

fn rd_f16(b: u32) -> f32 {
    return unpack2x16float(rd_u16(b)).x;
}

// Nibble j (0..32) of 16 packed bytes at `qs`: low nibbles first.
fn nib(qs: u32, j: u32) -> u32 {
    let byte = rd_u8(qs + (j & 15u));
    return select(byte & 15u, byte >> 4u, j >= 16u);
}

// IQ4_NL's 16 values (-127 .. 113) as signed bytes, four to a word, so
// that a lookup is two selects and a shift: a dynamically indexed array
// lives in per-thread memory on GPUs (on the H100 it held IQ4_XS matvecs
// to 0.16 TB/s).
const IQ4_W0: u32 = 0xBFAD9881u;
const IQ4_W1: u32 = 0xF6EADDCFu;
const IQ4_W2: u32 = 0x26190D01u;
const IQ4_W3: u32 = 0x71594535u;

fn iq4v(v: u32) -> f32 {
    let b4 = (v & 4u) != 0u;
    let w = select(select(IQ4_W0, IQ4_W1, b4), select(IQ4_W2, IQ4_W3, b4), v >= 8u);
    return f32(bitcast<i32>(w << ((3u - (v & 3u)) * 8u)) >> 24u);
}

// iq4v of each component (each 0..15).
fn iq4v4(v: vec4<u32>) -> vec4<f32> {
    let b4 = (v & vec4<u32>(4u)) != vec4<u32>(0u);
    let lo = select(vec4<u32>(IQ4_W0), vec4<u32>(IQ4_W1), b4);
    let hi = select(vec4<u32>(IQ4_W2), vec4<u32>(IQ4_W3), b4);
    let w = select(lo, hi, v >= vec4<u32>(8u));
    let sh = (vec4<u32>(3u) - (v & vec4<u32>(3u))) * 8u;
    return vec4<f32>(bitcast<vec4<i32>>(w << sh) >> vec4<u32>(24u));
}

fn w_f32(rb: u32, k: u32) -> f32 {
    return bitcast<f32>(W[(rb >> 2u) + k]);
}

fn w_f16(rb: u32, k: u32) -> f32 {
    return rd_f16(rb + 2u * k);
}

fn w_bf16(rb: u32, k: u32) -> f32 {
    return bitcast<f32>(rd_u16(rb + 2u * k) << 16u);
}

fn w_q4_0(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 18u;
    let q = f32(i32(nib(blk + 2u, k % 32u)) - 8);
    return q * rd_f16(blk);
}

fn w_q4_1(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 20u;
    return f32(nib(blk + 4u, k % 32u)) * rd_f16(blk) + rd_f16(blk + 2u);
}

fn q5_high(qh: u32, j: u32) -> u32 {
    // The fifth bits form a little-endian u32 that starts 2 bytes into a word.
    let bits = rd_u16(qh) | (rd_u16(qh + 2u) << 16u);
    return ((bits >> j) & 1u) << 4u;
}

fn w_q5_0(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 22u;
    let j = k % 32u;
    let q = nib(blk + 6u, j) | q5_high(blk + 2u, j);
    return f32(i32(q) - 16) * rd_f16(blk);
}

fn w_q5_1(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 24u;
    let j = k % 32u;
    let q = nib(blk + 8u, j) | q5_high(blk + 4u, j);
    return f32(q) * rd_f16(blk) + rd_f16(blk + 2u);
}

fn w_q8_0(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 34u;
    return f32(rd_i8(blk + 2u + k % 32u)) * rd_f16(blk);
}

fn w_iq4_nl(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 32u) * 18u;
    return iq4v(nib(blk + 2u, k % 32u)) * rd_f16(blk);
}

fn w_q2_k(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 84u;
    let e = k % 256u;
    let s = rd_u8(blk + e / 16u);
    let half = e / 128u;
    let shift = ((e % 128u) / 32u) * 2u;
    let q = (rd_u8(blk + 16u + half * 32u + e % 32u) >> shift) & 3u;
    let dl = rd_f16(blk + 80u) * f32(s & 15u);
    let ml = rd_f16(blk + 82u) * f32(s >> 4u);
    return dl * f32(q) - ml;
}

// Q3_K's blocks are padded to 112 bytes on the GPU (`upload::block_pad`).
fn w_q3_k(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 112u;
    let e = k % 256u;
    let g = e / 16u;
    let sb = blk + 96u;
    var low: u32;
    if g < 8u {
        low = rd_u8(sb + g) & 15u;
    } else {
        low = rd_u8(sb + g - 8u) >> 4u;
    }
    let high = (rd_u8(sb + 8u + g % 4u) >> (2u * (g / 4u))) & 3u;
    let sc = i32(low | (high << 4u)) - 32;
    let half = e / 128u;
    let j = (e % 128u) / 32u;
    let l = e % 32u;
    let q2 = i32((rd_u8(blk + 32u + half * 32u + l) >> (2u * j)) & 3u);
    let hbit = (rd_u8(blk + l) >> (half * 4u + j)) & 1u;
    let q = q2 - select(0, 4, hbit == 0u);
    let dl = rd_f16(blk + 108u) * f32(sc);
    return dl * f32(q);
}

// Q4_K/Q5_K's 6-bit scale (x) and min (y) of sub-block j from 12 bytes at s.
fn scale_min_k4(j: u32, s: u32) -> vec2<u32> {
    if j < 4u {
        return vec2<u32>(rd_u8(s + j) & 63u, rd_u8(s + j + 4u) & 63u);
    }
    let sc = (rd_u8(s + j + 4u) & 15u) | ((rd_u8(s + j - 4u) >> 6u) << 4u);
    let mn = (rd_u8(s + j + 4u) >> 4u) | ((rd_u8(s + j) >> 6u) << 4u);
    return vec2<u32>(sc, mn);
}

fn w_q4_k(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 144u;
    let e = k % 256u;
    let sm = scale_min_k4(e / 32u, blk + 4u);
    let byte = rd_u8(blk + 16u + (e / 64u) * 32u + e % 32u);
    let v = select(byte & 15u, byte >> 4u, ((e % 64u) / 32u) == 1u);
    let dl = rd_f16(blk) * f32(sm.x);
    let ml = rd_f16(blk + 2u) * f32(sm.y);
    return dl * f32(v) - ml;
}

fn w_q5_k(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 176u;
    let e = k % 256u;
    let sm = scale_min_k4(e / 32u, blk + 4u);
    let byte = rd_u8(blk + 48u + (e / 64u) * 32u + e % 32u);
    var v = select(byte & 15u, byte >> 4u, ((e % 64u) / 32u) == 1u);
    v = v | (((rd_u8(blk + 16u + e % 32u) >> (e / 32u)) & 1u) << 4u);
    let dl = rd_f16(blk) * f32(sm.x);
    let ml = rd_f16(blk + 2u) * f32(sm.y);
    return dl * f32(v) - ml;
}

fn w_q6_k(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 210u;
    let e = k % 256u;
    let half = e / 128u;
    let quarter = (e % 128u) / 32u;
    let l = e % 32u;
    let lbyte = rd_u8(blk + half * 64u + (quarter % 2u) * 32u + l);
    let low = select(lbyte >> 4u, lbyte & 15u, quarter < 2u);
    let high = (rd_u8(blk + 128u + half * 32u + l) >> (2u * quarter)) & 3u;
    let q = i32(low | (high << 4u)) - 32;
    let dl = rd_f16(blk + 208u) * f32(rd_i8(blk + 192u + e / 16u));
    return dl * f32(q);
}

fn w_iq4_xs(rb: u32, k: u32) -> f32 {
    let blk = rb + (k / 256u) * 136u;
    let e = k % 256u;
    let sub = e / 32u;
    let low = (rd_u8(blk + 4u + sub / 2u) >> (4u * (sub % 2u))) & 15u;
    let high = (rd_u16(blk + 2u) >> (2u * sub)) & 3u;
    let ls = i32(low | (high << 4u)) - 32;
    let dl = rd_f16(blk) * f32(ls);
    return dl * iq4v(nib(blk + 8u + sub * 16u, e % 32u));
}
