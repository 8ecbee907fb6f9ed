//! wasm32 simd128 fast paths, compiled when the build enables `simd128`
//! (`-C target-feature=+simd128`, which `.cargo/config.toml` sets for
//! wasm32-unknown-unknown; every current browser runs it).
//!
//! Unlike the x86 kernels, these give results bitwise equal to the scalar
//! code's, not merely close: the vectors run across weight rows (lane `r` is
//! row `r` of a group of four), and each lane does exactly the scalar f32
//! operations in the scalar order. The integer block sums, the only part
//! computed in a different order, are exact. So a browser without simd128
//! support produces the very same tokens (NaN payloads aside, which wasm
//! leaves unspecified).
//!
//! The integer dot products have no u8 x i8 instruction to lean on; they run
//! on i16 lanes with `i32x4.dot_i16x8_s` (`pmaddwd`). Each 32-element block
//! is four i16x8 vectors: the even then odd elements of 0..16, then of
//! 16..32, which is the order that falls out of a 16-bit view of packed
//! nibbles or bytes. The quants are masked where they sit in each 16-bit
//! lane, and the activations, decoded once per call, carry the matching
//! powers of two (see [`nibbles_in_place`]).
//!
//! The weights' f16 scales are converted with a multiply that handles
//! zeros and subnormals; a group of rows with an infinite or NaN scale is
//! recomputed by the scalar code.
//!
//! [`gemm`] first decodes every activation row (quants in that layout,
//! scales as f32), then computes four weight rows at a time against one
//! token (decode) or against groups of up to four tokens (prefill), so that
//! each weight block is unpacked once for the group. Decode touches each
//! group's memory in address order before computing it: wasm has no
//! prefetch instruction.

use super::scalar::f16_to_f32;
use super::{GgmlType, IQ4_NL_VALUES};
use std::arch::wasm32::*;
use std::cell::Cell;
use std::mem::size_of;

pub(super) fn level_name() -> &'static str {
    "simd128"
}

thread_local! {
    /// The prepared activations of the current call; kept so calls do not allocate.
    static SCRATCH: Cell<Vec<v128>> = const { Cell::new(Vec::new()) };
    /// Where the touched bytes go, so that no compiler drops the loads.
    static SINK: Cell<u8> = const { Cell::new(0) };
}

/// Runs `$body` with `$k` naming the kernel type for `$ty`, or `$other`
/// when there is none: the one list of what is accelerated.
macro_rules! with_kernel {
    ($ty:expr, $k:ident => $body:expr, _ => $other:expr) => {
        match $ty {
            GgmlType::Q4_0 => {
                type $k = Blocks32<Q4_0>;
                $body
            }
            GgmlType::Q4_1 => {
                type $k = Blocks32<Q4_1>;
                $body
            }
            GgmlType::Q5_0 => {
                type $k = Blocks32<Q5_0>;
                $body
            }
            GgmlType::Q5_1 => {
                type $k = Blocks32<Q5_1>;
                $body
            }
            GgmlType::Q8_0 => {
                type $k = Blocks32<Q8_0>;
                $body
            }
            GgmlType::Q8_1 => {
                type $k = Blocks32<Q8_1>;
                $body
            }
            GgmlType::IQ4_NL => {
                type $k = Blocks32<Iq4Nl>;
                $body
            }
            GgmlType::Q4_K => {
                type $k = BlocksK<Q4K>;
                $body
            }
            GgmlType::Q5_K => {
                type $k = BlocksK<Q5K>;
                $body
            }
            GgmlType::Q6_K => {
                type $k = BlocksK<Q6K>;
                $body
            }
            GgmlType::F32 => {
                type $k = Float<F32>;
                $body
            }
            GgmlType::F16 => {
                type $k = Float<F16>;
                $body
            }
            GgmlType::BF16 => {
                type $k = Float<Bf16>;
                $body
            }
            _ => $other,
        }
    };
}

fn has_kernel(ty: GgmlType) -> bool {
    with_kernel!(ty, _K => true, _ => false)
}

/// See [`super::gemm`]. `false` sends the caller to the scalar code: no
/// kernel for `ty`, or lengths the fast path would have to truncate.
pub(super) fn gemm(
    ty: GgmlType,
    n: usize,
    w: &[u8],
    act: &[u8],
    ntok: usize,
    out: &mut [f32],
) -> bool {
    if !has_kernel(ty) || ntok == 0 || n == 0 {
        return false;
    }
    let (Some(wrb), Some(arb)) = (ty.row_bytes(n), ty.vec_dot_type().row_bytes(n)) else {
        return false;
    };
    let rows = out.len() / ntok;
    let enough = |len: usize, count: usize, each: usize| {
        count.checked_mul(each).is_some_and(|need| len >= need)
    };
    if !enough(w.len(), rows, wrb) || !enough(act.len(), ntok, arb) {
        return false;
    }
    let job = Job {
        n,
        w,
        wrb,
        act,
        arb,
        ntok,
        out,
    };
    // SAFETY: `job`'s slices hold `rows` weight rows and `ntok` activation
    // rows of the sizes `ty` and `n` give.
    unsafe { with_kernel!(ty, K => run::<K>(job), _ => unreachable!()) }
    true
}

/// See [`super::vec_dot`]: a one-row, one-token [`gemm`].
pub(super) fn vec_dot(ty: GgmlType, n: usize, w: &[u8], act: &[u8]) -> Option<f32> {
    let mut out = [0f32];
    gemm(ty, n, w, act, 1, &mut out).then_some(out[0])
}

/// A validated gemm call: `w` holds at least `out.len() / ntok` rows of
/// `wrb` bytes and `act` at least `ntok` rows of `arb` bytes.
struct Job<'a> {
    n: usize,
    w: &'a [u8],
    wrb: usize,
    act: &'a [u8],
    arb: usize,
    ntok: usize,
    out: &'a mut [f32],
}

/// One weight format's kernel.
trait Kernel {
    /// The weight format, for the scalar fallback.
    const TY: GgmlType;
    /// An activation row, decoded once per call, is `per_tok(n)` of these.
    type A: Copy;
    fn per_tok(n: usize) -> usize;
    /// Decodes the activation row at `a` into `dst[..per_tok(n)]`.
    unsafe fn prepare(n: usize, a: *const u8, dst: *mut Self::A);
    /// `NR` weight rows of `n` elements against `NT` prepared activation
    /// rows: result `t` holds, in lane `r`, scalar `vec_dot` of row `r` and
    /// token `t`, bit for bit (lanes `NR..` are junk). Unless [`is_rare`]
    /// holds for the second value: then a weight scale was one of the rare
    /// values (infinite or NaN) that the fast f16 conversion gets wrong, and
    /// the results are to be thrown away.
    unsafe fn tile<const NR: usize, const NT: usize>(
        n: usize,
        w: [*const u8; NR],
        a: [*const Self::A; NT],
    ) -> ([v128; NT], v128);
}

#[inline(always)]
fn lanes(v: v128) -> [f32; 4] {
    // SAFETY: v128 and [f32; 4] have the same size, and every bit pattern is a valid f32.
    unsafe { std::mem::transmute::<v128, [f32; 4]>(v) }
}

/// A gemm call with its activations prepared.
struct Ctx<'a, A> {
    n: usize,
    w: &'a [u8],
    wrb: usize,
    act: &'a [u8],
    arb: usize,
    prep: *const A,
    per: usize,
}

impl<A> Ctx<'_, A> {
    /// Rows `r..r + NR` against tokens `t..t + NT`: value `[t][r]`.
    #[inline(always)]
    unsafe fn tile<K: Kernel<A = A>, const NR: usize, const NT: usize>(
        &self,
        r: usize,
        t: usize,
    ) -> [[f32; 4]; NT] {
        let w = std::array::from_fn(|i| self.w.as_ptr().add((r + i) * self.wrb));
        let a = std::array::from_fn(|j| self.prep.add((t + j) * self.per));
        let (v, rare) = K::tile::<NR, NT>(self.n, w, a);
        let mut out = v.map(lanes);
        if is_rare(rare) {
            for (j, o) in out.iter_mut().enumerate() {
                for (i, x) in o.iter_mut().take(NR).enumerate() {
                    let wr = &self.w[(r + i) * self.wrb..(r + i + 1) * self.wrb];
                    let ar = &self.act[(t + j) * self.arb..(t + j + 1) * self.arb];
                    *x = super::scalar::vec_dot(K::TY, self.n, wr, ar);
                }
            }
        }
        out
    }
}

unsafe fn run<K: Kernel>(job: Job) {
    let Job {
        n,
        w,
        wrb,
        act,
        arb,
        ntok,
        out,
    } = job;
    let per = K::per_tok(n);
    let words = (per * ntok * size_of::<K::A>()).div_ceil(16);
    let mut buf = SCRATCH.take();
    buf.clear();
    buf.resize(words, i32x4_splat(0));
    debug_assert!(std::mem::align_of::<K::A>() <= 16);
    let prep = buf.as_mut_ptr() as *mut K::A;
    for t in 0..ntok {
        K::prepare(n, act.as_ptr().add(t * arb), prep.add(t * per));
    }
    let c = Ctx {
        n,
        w,
        wrb,
        act,
        arb,
        prep,
        per,
    };
    let rows = out.len() / ntok;
    if ntok == 1 {
        let mut r = 0;
        let mut sink = 0u8;
        while r + 4 <= rows {
            // Touch every cache line of the four rows first, in address
            // order. wasm has no prefetch instruction, and the kernel's four
            // interleaved row streams alone keep too few memory reads in
            // flight (and confuse the hardware prefetcher): with weights
            // streaming from memory, this doubles the speed.
            for at in (r * wrb..(r + 4) * wrb).step_by(64) {
                sink ^= w[at];
            }
            let [v] = c.tile::<K, 4, 1>(r, 0);
            out[r..r + 4].copy_from_slice(&v);
            r += 4;
        }
        while r < rows {
            out[r] = c.tile::<K, 1, 1>(r, 0)[0][0];
            r += 1;
        }
        SINK.set(SINK.get() ^ sink);
    } else {
        // Tokens in chunks whose prepared activations stay in L1 while the
        // rows pass over them. Results do not depend on the grouping.
        const CHUNK: usize = 16;
        let mut t0 = 0;
        while t0 < ntok {
            let t1 = (t0 + CHUNK).min(ntok);
            let mut r = 0;
            while r + 4 <= rows {
                let mut put = |t: usize, v: &[[f32; 4]]| {
                    for (j, v) in v.iter().enumerate() {
                        for (k, &x) in v.iter().enumerate() {
                            out[(r + k) * ntok + t + j] = x;
                        }
                    }
                };
                let mut t = t0;
                while t + 4 <= t1 {
                    put(t, &c.tile::<K, 4, 4>(r, t));
                    t += 4;
                }
                if t + 2 <= t1 {
                    put(t, &c.tile::<K, 4, 2>(r, t));
                    t += 2;
                }
                if t < t1 {
                    put(t, &c.tile::<K, 4, 1>(r, t));
                }
                r += 4;
            }
            while r < rows {
                for t in t0..t1 {
                    out[r * ntok + t] = c.tile::<K, 1, 1>(r, t)[0][0];
                }
                r += 1;
            }
            t0 = t1;
        }
    }
    SCRATCH.set(buf);
}

// ---------------------------------------------------------------------------
// Helpers

#[inline(always)]
unsafe fn load(p: *const u8) -> v128 {
    v128_load(p as *const v128)
}

#[inline(always)]
unsafe fn read_u32(p: *const u8) -> u32 {
    (p as *const u32).read_unaligned()
}

/// The even bytes of `x`, sign-extended into i16 lanes.
#[inline(always)]
fn even(x: v128) -> v128 {
    i16x8_shr(i16x8_shl(x, 8), 8)
}

/// The odd bytes of `x`, sign-extended into i16 lanes.
#[inline(always)]
fn odd(x: v128) -> v128 {
    i16x8_shr(x, 8)
}

/// 32 signed bytes (elements 0..16 in `lo`, 16..32 in `hi`) in the block
/// layout: even and odd elements of each half as i16 lanes.
#[inline(always)]
fn split(lo: v128, hi: v128) -> [v128; 4] {
    [even(lo), odd(lo), even(hi), odd(hi)]
}

/// The 32 nibbles of 16 packed bytes (low nibbles elements 0..16, high
/// nibbles 16..32) in the block layout.
#[inline(always)]
fn nibbles(q: v128) -> [v128; 4] {
    let m = u16x8_splat(0x0f);
    [
        v128_and(q, m),
        v128_and(u16x8_shr(q, 8), m),
        v128_and(u16x8_shr(q, 4), m),
        u16x8_shr(q, 12),
    ]
}

/// The 32 nibbles of 16 packed bytes as [`Block32`] kernels see them: each
/// 16-bit lane holds four nibbles (even and odd element of 0..16 in its low
/// and high byte's low nibbles, of 16..32 in the high nibbles), and masking
/// in place gives them times 1, 256, 16 and 1. The activations are scaled
/// to match (see `Blocks32::prepare`), which leaves every product 256 times
/// too large, fixed once per block sum.
#[inline(always)]
fn nibbles_in_place(q: v128) -> [v128; 4] {
    [
        v128_and(q, u16x8_splat(0x000f)),
        v128_and(q, u16x8_splat(0x0f00)),
        v128_and(q, u16x8_splat(0x00f0)),
        u16x8_shr(q, 12),
    ]
}

/// 32 signed bytes (elements 0..16 in `lo`, 16..32 in `hi`) as [`Block32`]
/// kernels see them: the even and odd bytes of each 16-bit lane, each moved
/// or masked into the high byte, so 256 times their value.
#[inline(always)]
fn bytes_in_place(lo: v128, hi: v128) -> [v128; 4] {
    let m = u16x8_splat(0xff00);
    [
        i16x8_shl(lo, 8),
        v128_and(lo, m),
        i16x8_shl(hi, 8),
        v128_and(hi, m),
    ]
}

/// Bit `bit` of each i16 lane of `x`, moved to bit 4 (the rest cleared).
#[inline(always)]
fn bit_to_16(x: v128, bit: u32) -> v128 {
    let moved = if bit >= 4 {
        u16x8_shr(x, bit - 4)
    } else {
        i16x8_shl(x, 4 - bit)
    };
    v128_and(moved, u16x8_splat(0x10))
}

/// Sum of `u[k] . a[k]` (i16 products, pairs summed in i32), in i32 lanes.
#[inline(always)]
fn dot4(u: &[v128; 4], a: &[v128; 4]) -> v128 {
    i32x4_add(
        i32x4_add(i32x4_dot_i16x8(u[0], a[0]), i32x4_dot_i16x8(u[1], a[1])),
        i32x4_add(i32x4_dot_i16x8(u[2], a[2]), i32x4_dot_i16x8(u[3], a[3])),
    )
}

#[inline(always)]
fn dot2(u0: v128, a0: v128, u1: v128, a1: v128) -> v128 {
    i32x4_add(i32x4_dot_i16x8(u0, a0), i32x4_dot_i16x8(u1, a1))
}

/// Lane `r` of the result is the sum of the four i32 lanes of `v[r]`.
#[inline(always)]
fn hsum4(v: [v128; 4]) -> v128 {
    let s01 = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(v[0], v[1]),
        i32x4_shuffle::<2, 6, 3, 7>(v[0], v[1]),
    );
    let s23 = i32x4_add(
        i32x4_shuffle::<0, 4, 1, 5>(v[2], v[3]),
        i32x4_shuffle::<2, 6, 3, 7>(v[2], v[3]),
    );
    i32x4_add(
        i32x4_shuffle::<0, 1, 4, 5>(s01, s23),
        i32x4_shuffle::<2, 3, 6, 7>(s01, s23),
    )
}

/// Partial sums of up to four rows (the rest zero) for [`hsum4`].
#[inline(always)]
fn pad4<const NR: usize>(v: [v128; NR]) -> [v128; 4] {
    let mut out = [i32x4_splat(0); 4];
    out[..NR].copy_from_slice(&v);
    out
}

/// The u32 at byte `off` of each of `NR` rows, in lanes `0..NR` (the rest
/// hold two f16 ones, which keep [`f16_low`] on its fast path).
#[inline(always)]
unsafe fn gather_u32<const NR: usize>(w: &[*const u8; NR], off: usize) -> v128 {
    let mut v = [0x3c00_3c00u32; 4];
    for r in 0..NR {
        v[r] = read_u32(w[r].add(off));
    }
    u32x4(v[0], v[1], v[2], v[3])
}

/// Exact f16 -> f32 of the low 16 bits of each u32 lane (upper bits zero),
/// bit for bit what [`f16_to_f32`] gives, NaN payloads included.
#[inline(always)]
fn f16x4(h: v128) -> v128 {
    let em = v128_and(h, u32x4_splat(0x7fff));
    let sign = i32x4_shl(v128_xor(h, em), 16);
    let bias = u32x4_splat(112 << 23);
    // Normal: move the fields, rebias the exponent (15 -> 127); infinity and
    // NaN (all-ones exponent) need it rebiased to 255, twice as far.
    let normal = i32x4_add(i32x4_shl(em, 13), bias);
    let infnan = i32x4_gt(em, i32x4_splat(0x7bff));
    let normal = i32x4_add(normal, v128_and(infnan, bias));
    // Subnormal or zero: em * 2^-24, exact.
    let sub = f32x4_mul(f32x4_convert_i32x4(em), f32x4_splat(1.0 / 16_777_216.0));
    let is_sub = i32x4_lt(em, i32x4_splat(0x400));
    v128_or(sign, v128_bitselect(sub, normal, is_sub))
}

/// [`f16x4`] of the low 16 bits of each u32 lane, whatever the high bits
/// hold, except for infinities and NaNs: those give wrong results, and set
/// bit 15 of the lane in `rare` (see [`is_rare`]). Scaling the moved fields
/// by 2^112 rebiases the exponent and gets zeros and subnormals right at
/// once.
#[inline(always)]
fn f16_low(v: v128, rare: &mut v128) -> v128 {
    let em = v128_and(v, u32x4_splat(0x7fff));
    // An all-ones exponent carries into bit 15.
    *rare = v128_or(*rare, i32x4_add(em, u32x4_splat(0x400)));
    let x = f32x4_mul(i32x4_shl(em, 13), f32x4_splat(TWO_112));
    v128_or(x, v128_and(i32x4_shl(v, 16), u32x4_splat(0x8000_0000)))
}

/// [`f16_low`] of both halves of each u32 lane: (low, high).
#[inline(always)]
fn f16_pair(v: v128, rare: &mut v128) -> (v128, v128) {
    let em = v128_and(v, u32x4_splat(0x7fff_7fff));
    *rare = v128_or(*rare, i16x8_add(em, u16x8_splat(0x400)));
    let scale = f32x4_splat(TWO_112);
    let lo = f32x4_mul(i32x4_shl(v128_and(em, u32x4_splat(0x7fff)), 13), scale);
    let lo = v128_or(lo, v128_and(i32x4_shl(v, 16), u32x4_splat(0x8000_0000)));
    let hi = f32x4_mul(v128_and(u32x4_shr(em, 3), u32x4_splat(0x0fff_e000)), scale);
    let hi = v128_or(hi, v128_and(v, u32x4_splat(0x8000_0000)));
    (lo, hi)
}

/// Whether [`f16_low`] or [`f16_pair`] met an infinity or NaN.
#[inline(always)]
fn is_rare(rare: v128) -> bool {
    v128_any_true(v128_and(rare, u16x8_splat(0x8000)))
}

const TWO_112: f32 = f32::from_bits((127 + 112) << 23);

// ---------------------------------------------------------------------------
// 32-element formats against Q8_0 / Q8_1

/// A prepared Q8_0 or Q8_1 activation block.
#[derive(Clone, Copy)]
#[repr(C)]
struct A32 {
    /// The quants in the block layout.
    q: [v128; 4],
    d: f32,
    /// Q8_1's second field (d * sum of the quants as stored), else 0.
    s: f32,
    /// The exact sum of the quants.
    sum: i32,
}

/// A 32-element weight format.
trait Block32 {
    const TY: GgmlType;
    /// Bytes per weight block and per activation block.
    const WB: usize;
    const AB: usize;
    /// Offset of the quants in an activation block: 2 in Q8_0, 4 in Q8_1.
    const AQ: usize;
    /// Whether the second f16 of the weight block is an additive min.
    const MIN: bool;
    /// What the unpacked quants exceed the true ones by (Q4_0's 8, Q5_0's
    /// 16): the block sum gets `OFF * sum(a)` taken off.
    const OFF: i32;
    /// Whether `unpack` gives nibbles as [`nibbles_in_place`] does (else
    /// bytes as [`bytes_in_place`] does).
    const NIBBLES: bool;
    /// The block's quants (plus `OFF`) in the block layout, scaled as
    /// `NIBBLES` says.
    unsafe fn unpack(wb: *const u8) -> [v128; 4];
}

/// The kernel of a [`Block32`] format.
struct Blocks32<B>(std::marker::PhantomData<B>);

impl<B: Block32> Kernel for Blocks32<B> {
    const TY: GgmlType = B::TY;
    type A = A32;

    fn per_tok(n: usize) -> usize {
        n / 32
    }

    #[inline(always)]
    unsafe fn prepare(n: usize, a: *const u8, dst: *mut A32) {
        for b in 0..n / 32 {
            let ab = a.add(b * B::AB);
            let q = split(load(ab.add(B::AQ)), load(ab.add(B::AQ + 16)));
            let s16 = i16x8_add(i16x8_add(q[0], q[1]), i16x8_add(q[2], q[3]));
            let s = lanes_i32(i32x4_extadd_pairwise_i16x8(s16));
            // Weight nibbles come scaled by 1, 256, 16 and 1: scale these by
            // 256, 1, 16 and 256 (no i16 overflow: |q| <= 128). Weight bytes
            // come scaled by 256 throughout.
            let q = if B::NIBBLES {
                [
                    i16x8_shl(q[0], 8),
                    q[1],
                    i16x8_shl(q[2], 4),
                    i16x8_shl(q[3], 8),
                ]
            } else {
                q
            };
            let h = |at: usize| f16_to_f32(u16::from_le_bytes([*ab.add(at), *ab.add(at + 1)]));
            dst.add(b).write(A32 {
                q,
                d: h(0),
                s: if B::AQ == 4 { h(2) } else { 0.0 },
                sum: s[0] + s[1] + s[2] + s[3],
            });
        }
    }

    #[inline(always)]
    unsafe fn tile<const NR: usize, const NT: usize>(
        n: usize,
        w: [*const u8; NR],
        a: [*const A32; NT],
    ) -> ([v128; NT], v128) {
        let mut acc = [f32x4_splat(0.0); NT];
        let mut rare = i32x4_splat(0);
        for b in 0..n / 32 {
            let mut part = [[i32x4_splat(0); NR]; NT];
            for r in 0..NR {
                let u = B::unpack(w[r].add(b * B::WB));
                for t in 0..NT {
                    part[t][r] = dot4(&u, &(*a[t].add(b)).q);
                }
            }
            let dm = gather_u32::<NR>(&w, b * B::WB);
            let (d, m) = if B::MIN {
                f16_pair(dm, &mut rare)
            } else {
                let d = f16_low(dm, &mut rare);
                (d, d)
            };
            for t in 0..NT {
                let ab = &*a[t].add(b);
                // Every product was 256 times too large (exact: the sums stay
                // under 2^28).
                let mut isum = i32x4_shr(hsum4(pad4(part[t])), 8);
                if B::OFF != 0 {
                    isum = i32x4_sub(isum, i32x4_splat(B::OFF * ab.sum));
                }
                // sum += d_w * d_a * isum; sum += m_w * s_a.
                let dd = f32x4_mul(d, f32x4_splat(ab.d));
                acc[t] = f32x4_add(acc[t], f32x4_mul(dd, f32x4_convert_i32x4(isum)));
                if B::MIN {
                    acc[t] = f32x4_add(acc[t], f32x4_mul(m, f32x4_splat(ab.s)));
                }
            }
        }
        (acc, rare)
    }
}

#[inline(always)]
fn lanes_i32(v: v128) -> [i32; 4] {
    // SAFETY: same size, every bit pattern valid.
    unsafe { std::mem::transmute::<v128, [i32; 4]>(v) }
}

struct Q4_0;
impl Block32 for Q4_0 {
    const TY: GgmlType = GgmlType::Q4_0;
    const WB: usize = 18;
    const AB: usize = 34;
    const AQ: usize = 2;
    const MIN: bool = false;
    const OFF: i32 = 8;
    const NIBBLES: bool = true;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        nibbles_in_place(load(wb.add(2)))
    }
}

struct Q4_1;
impl Block32 for Q4_1 {
    const TY: GgmlType = GgmlType::Q4_1;
    const WB: usize = 20;
    const AB: usize = 36;
    const AQ: usize = 4;
    const MIN: bool = true;
    const OFF: i32 = 0;
    const NIBBLES: bool = true;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        nibbles_in_place(load(wb.add(4)))
    }
}

/// Q5_0 and Q5_1 keep the fifth bit of element j in bit j of a u32: as 16
/// (or 0) in the block layout, scaled like [`nibbles_in_place`].
#[inline(always)]
unsafe fn fifth_bits(p: *const u8) -> [v128; 4] {
    let bits = read_u32(p);
    let lo = u16x8_splat(bits as u16);
    let hi = u16x8_splat((bits >> 16) as u16);
    let even = u16x8(1, 1 << 2, 1 << 4, 1 << 6, 1 << 8, 1 << 10, 1 << 12, 1 << 14);
    let odd = u16x8(
        1 << 1,
        1 << 3,
        1 << 5,
        1 << 7,
        1 << 9,
        1 << 11,
        1 << 13,
        1 << 15,
    );
    let f = |x: v128, m: v128, v: u16| v128_and(i16x8_eq(v128_and(x, m), m), u16x8_splat(v));
    [
        f(lo, even, 16),
        f(lo, odd, 16 << 8),
        f(hi, even, 16 << 4),
        f(hi, odd, 16),
    ]
}

#[inline(always)]
unsafe fn five_bit(qh: *const u8, qs: *const u8) -> [v128; 4] {
    let n = nibbles_in_place(load(qs));
    let h = fifth_bits(qh);
    [
        v128_or(n[0], h[0]),
        v128_or(n[1], h[1]),
        v128_or(n[2], h[2]),
        v128_or(n[3], h[3]),
    ]
}

struct Q5_0;
impl Block32 for Q5_0 {
    const TY: GgmlType = GgmlType::Q5_0;
    const WB: usize = 22;
    const AB: usize = 34;
    const AQ: usize = 2;
    const MIN: bool = false;
    const OFF: i32 = 16;
    const NIBBLES: bool = true;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        five_bit(wb.add(2), wb.add(6))
    }
}

struct Q5_1;
impl Block32 for Q5_1 {
    const TY: GgmlType = GgmlType::Q5_1;
    const WB: usize = 24;
    const AB: usize = 36;
    const AQ: usize = 4;
    const MIN: bool = true;
    const OFF: i32 = 0;
    const NIBBLES: bool = true;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        five_bit(wb.add(4), wb.add(8))
    }
}

struct Q8_0;
impl Block32 for Q8_0 {
    const TY: GgmlType = GgmlType::Q8_0;
    const WB: usize = 34;
    const AB: usize = 34;
    const AQ: usize = 2;
    const MIN: bool = false;
    const OFF: i32 = 0;
    const NIBBLES: bool = false;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        bytes_in_place(load(wb.add(2)), load(wb.add(18)))
    }
}

/// Q8_1 as a weight format: ggml only uses it for activations, but the
/// scalar code accepts it; its second field is not a min.
struct Q8_1;
impl Block32 for Q8_1 {
    const TY: GgmlType = GgmlType::Q8_1;
    const WB: usize = 36;
    const AB: usize = 36;
    const AQ: usize = 4;
    const MIN: bool = false;
    const OFF: i32 = 0;
    const NIBBLES: bool = false;
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        bytes_in_place(load(wb.add(4)), load(wb.add(20)))
    }
}

struct Iq4Nl;
impl Block32 for Iq4Nl {
    const TY: GgmlType = GgmlType::IQ4_NL;
    const WB: usize = 18;
    const AB: usize = 34;
    const AQ: usize = 2;
    const MIN: bool = false;
    const OFF: i32 = 0;
    const NIBBLES: bool = false;
    /// The nibbles index the code book, one `swizzle` per half.
    #[inline(always)]
    unsafe fn unpack(wb: *const u8) -> [v128; 4] {
        let book = v128_load(IQ4_NL_VALUES.as_ptr() as *const v128);
        let q = load(wb.add(2));
        let lo = i8x16_swizzle(book, v128_and(q, u8x16_splat(0x0f)));
        let hi = i8x16_swizzle(book, u8x16_shr(q, 4));
        bytes_in_place(lo, hi)
    }
}

// ---------------------------------------------------------------------------
// K-quants against Q8_K (f32 d at 0, 256 quants at 4, 16 i16 group sums at 260)

/// A prepared Q8_K activation block.
#[derive(Clone, Copy)]
#[repr(C)]
struct AK {
    /// Group g (16 quants) as its even then odd elements: `q[2g]`, `q[2g + 1]`.
    q: [v128; 32],
    /// The exact sum of each group's quants, as 16 i16 lanes.
    gsum: [v128; 2],
    /// The block's own group-sum field, as stored (the scalar code uses it
    /// for the mins).
    bsum: [v128; 2],
    d: f32,
}

/// A K-quant weight format: the integer sums of one block against `NT`
/// activation blocks.
trait BlockK {
    const TY: GgmlType;
    const WB: usize;
    /// Byte offset of the f16 d, read as the low half of a u32 at `D_AT`
    /// (or as the high half when `D_HIGH`); Q4_K/Q5_K's dmin follows d.
    const D_AT: usize;
    const D_HIGH: bool;
    const MIN: bool;
    /// Per token: `sum(scale * q * a)` and, for formats with mins,
    /// `sum(min * group sum)`, as i32 lanes to be added up.
    unsafe fn sums<const NT: usize>(wb: *const u8, a: [&AK; NT]) -> ([v128; NT], [v128; NT]);
}

/// The kernel of a [`BlockK`] format.
struct BlocksK<B>(std::marker::PhantomData<B>);

impl<B: BlockK> Kernel for BlocksK<B> {
    const TY: GgmlType = B::TY;
    type A = AK;

    fn per_tok(n: usize) -> usize {
        n / 256
    }

    #[inline(always)]
    unsafe fn prepare(n: usize, a: *const u8, dst: *mut AK) {
        for b in 0..n / 256 {
            let ab = a.add(b * 292);
            let mut q = [i32x4_splat(0); 32];
            let mut gs = [0i16; 16];
            for g in 0..16 {
                let x = load(ab.add(4 + 16 * g));
                q[2 * g] = even(x);
                q[2 * g + 1] = odd(x);
                let s = lanes_i32(i32x4_extadd_pairwise_i16x8(i16x8_add(
                    q[2 * g],
                    q[2 * g + 1],
                )));
                gs[g] = (s[0] + s[1] + s[2] + s[3]) as i16;
            }
            let gsum = [
                v128_load(gs.as_ptr() as *const v128),
                v128_load(gs.as_ptr().add(8) as *const v128),
            ];
            dst.add(b).write(AK {
                q,
                gsum,
                bsum: [load(ab.add(260)), load(ab.add(276))],
                d: (ab as *const f32).read_unaligned(),
            });
        }
    }

    #[inline(always)]
    unsafe fn tile<const NR: usize, const NT: usize>(
        n: usize,
        w: [*const u8; NR],
        a: [*const AK; NT],
    ) -> ([v128; NT], v128) {
        let mut acc = [f32x4_splat(0.0); NT];
        let mut rare = i32x4_splat(0);
        for b in 0..n / 256 {
            let mut part = [[i32x4_splat(0); NR]; NT];
            let mut mpart = [[i32x4_splat(0); NR]; NT];
            let ab: [&AK; NT] = std::array::from_fn(|t| &*a[t].add(b));
            for r in 0..NR {
                let (i, m) = B::sums::<NT>(w[r].add(b * B::WB), ab);
                for t in 0..NT {
                    part[t][r] = i[t];
                    mpart[t][r] = m[t];
                }
            }
            let dm = gather_u32::<NR>(&w, b * B::WB + B::D_AT);
            let (d, dmin) = if B::D_HIGH {
                (f16_low(u32x4_shr(dm, 16), &mut rare), f32x4_splat(0.0))
            } else {
                f16_pair(dm, &mut rare)
            };
            for t in 0..NT {
                // sum += d_a * d * isum; sum -= d_a * dmin * msum.
                let da = f32x4_splat(ab[t].d);
                let isum = f32x4_convert_i32x4(hsum4(pad4(part[t])));
                acc[t] = f32x4_add(acc[t], f32x4_mul(f32x4_mul(da, d), isum));
                if B::MIN {
                    let msum = f32x4_convert_i32x4(hsum4(pad4(mpart[t])));
                    acc[t] = f32x4_sub(acc[t], f32x4_mul(f32x4_mul(da, dmin), msum));
                }
            }
        }
        (acc, rare)
    }
}

/// Q4_K/Q5_K's eight 6-bit scales, and their mins repeated for the two
/// 16-element groups each covers (i16 lanes, groups 0..8 then 8..16).
#[inline(always)]
unsafe fn scales_k4(s: *const u8) -> ([i32; 8], [v128; 2]) {
    let s = std::slice::from_raw_parts(s, 12);
    let mut sc = [0i32; 8];
    let mut mn = [0i16; 16];
    for j in 0..8 {
        let (x, m) = super::scalar::scale_min_k4(j, s);
        sc[j] = x as i32;
        mn[2 * j] = m as i16;
        mn[2 * j + 1] = m as i16;
    }
    let mn = [
        v128_load(mn.as_ptr() as *const v128),
        v128_load(mn.as_ptr().add(8) as *const v128),
    ];
    (sc, mn)
}

/// Q4_K and Q5_K: four 64-element chunks of 32 bytes whose low nibbles are
/// sub-block 2c and high nibbles sub-block 2c + 1; Q5_K's fifth bit of
/// sub-block `s` is bit `s` of `qh[l]`.
#[inline(always)]
unsafe fn sums_k4<const NT: usize, const FIVE: bool>(
    wb: *const u8,
    a: [&AK; NT],
) -> ([v128; NT], [v128; NT]) {
    let (sc, mn) = scales_k4(wb.add(4));
    let qs = if FIVE { wb.add(48) } else { wb.add(16) };
    let mut isum = [i32x4_splat(0); NT];
    for c in 0..4 {
        let mut lo = [i32x4_splat(0); NT];
        let mut hi = [i32x4_splat(0); NT];
        for h in 0..2 {
            let mut u = nibbles(load(qs.add(32 * c + 16 * h)));
            if FIVE {
                let qh = load(wb.add(16 + 16 * h));
                let s = 2 * c as u32;
                u[0] = v128_or(u[0], bit_to_16(qh, s));
                u[1] = v128_or(u[1], bit_to_16(qh, s + 8));
                u[2] = v128_or(u[2], bit_to_16(qh, s + 1));
                u[3] = v128_or(u[3], bit_to_16(qh, s + 9));
            }
            // Lanes 16h + 2k (+1) of chunk c: groups 4c + h (low nibbles)
            // and 4c + 2 + h (high nibbles).
            let (gl, gh) = (4 * c + h, 4 * c + 2 + h);
            for t in 0..NT {
                let q = &a[t].q;
                lo[t] = i32x4_add(lo[t], dot2(u[0], q[2 * gl], u[1], q[2 * gl + 1]));
                hi[t] = i32x4_add(hi[t], dot2(u[2], q[2 * gh], u[3], q[2 * gh + 1]));
            }
        }
        let (sl, sh) = (i32x4_splat(sc[2 * c]), i32x4_splat(sc[2 * c + 1]));
        for t in 0..NT {
            isum[t] = i32x4_add(
                isum[t],
                i32x4_add(i32x4_mul(lo[t], sl), i32x4_mul(hi[t], sh)),
            );
        }
    }
    let msum = std::array::from_fn(|t| dot2(mn[0], a[t].bsum[0], mn[1], a[t].bsum[1]));
    (isum, msum)
}

struct Q4K;
impl BlockK for Q4K {
    const TY: GgmlType = GgmlType::Q4_K;
    const WB: usize = 144;
    const D_AT: usize = 0;
    const D_HIGH: bool = false;
    const MIN: bool = true;
    #[inline(always)]
    unsafe fn sums<const NT: usize>(wb: *const u8, a: [&AK; NT]) -> ([v128; NT], [v128; NT]) {
        sums_k4::<NT, false>(wb, a)
    }
}

struct Q5K;
impl BlockK for Q5K {
    const TY: GgmlType = GgmlType::Q5_K;
    const WB: usize = 176;
    const D_AT: usize = 0;
    const D_HIGH: bool = false;
    const MIN: bool = true;
    #[inline(always)]
    unsafe fn sums<const NT: usize>(wb: *const u8, a: [&AK; NT]) -> ([v128; NT], [v128; NT]) {
        sums_k4::<NT, true>(wb, a)
    }
}

/// Q6_K: per 128-element half, 64 bytes of low nibbles (quarters 0 and 1
/// in the low nibbles of bytes 0..32 and 32..64, quarters 2 and 3 in their
/// high nibbles) and 32 bytes of four 2-bit high parts; codes are offset by
/// 32, and each 16 elements have a signed 8-bit scale.
struct Q6K;
impl BlockK for Q6K {
    const TY: GgmlType = GgmlType::Q6_K;
    const WB: usize = 210;
    /// d is the block's last two bytes: the high half of the u32 at 206.
    const D_AT: usize = 206;
    const D_HIGH: bool = true;
    const MIN: bool = false;

    #[inline(always)]
    unsafe fn sums<const NT: usize>(wb: *const u8, a: [&AK; NT]) -> ([v128; NT], [v128; NT]) {
        let scales = load(wb.add(192));
        let sc16 = [
            i16x8_extend_low_i8x16(scales),
            i16x8_extend_high_i8x16(scales),
        ];
        let mut isum = [i32x4_splat(0); NT];
        let low4 = u16x8_splat(0x0f);
        let two = u16x8_splat(0x30);
        for h in 0..2 {
            for p in 0..2 {
                let ql0 = load(wb.add(64 * h + 16 * p));
                let ql1 = load(wb.add(64 * h + 32 + 16 * p));
                let qh = load(wb.add(128 + 32 * h + 16 * p));
                for quarter in 0..4u32 {
                    let ql = if quarter % 2 == 0 { ql0 } else { ql1 };
                    let ns = if quarter < 2 { 0 } else { 4 };
                    let high = |bit: u32| {
                        let moved = if bit >= 4 {
                            u16x8_shr(qh, bit - 4)
                        } else {
                            i16x8_shl(qh, 4 - bit)
                        };
                        v128_and(moved, two)
                    };
                    let ce = v128_or(v128_and(u16x8_shr(ql, ns), low4), high(2 * quarter));
                    let co = v128_or(v128_and(u16x8_shr(ql, 8 + ns), low4), high(8 + 2 * quarter));
                    let g = 8 * h + 2 * quarter as usize + p;
                    let s = i32x4_splat(*wb.add(192 + g) as i8 as i32);
                    for t in 0..NT {
                        let q = &a[t].q;
                        let dot = dot2(ce, q[2 * g], co, q[2 * g + 1]);
                        isum[t] = i32x4_add(isum[t], i32x4_mul(dot, s));
                    }
                }
            }
        }
        // The codes are 32 above the quants: take 32 * sum(scale * group sum) off.
        for (t, isum) in isum.iter_mut().enumerate() {
            let off = dot2(sc16[0], a[t].gsum[0], sc16[1], a[t].gsum[1]);
            *isum = i32x4_sub(*isum, i32x4_shl(off, 5));
        }
        (isum, [i32x4_splat(0); NT])
    }
}

// ---------------------------------------------------------------------------
// Float formats: weights and activations in the same type, summed in order.

trait FloatLoad {
    const TY: GgmlType;
    const BYTES: usize;
    /// Four elements starting at `p`, widened to f32; see [`f16_low`]
    /// for `rare`.
    unsafe fn load4(p: *const u8, rare: &mut v128) -> v128;
    /// The same, exactly for every value.
    unsafe fn exact4(p: *const u8) -> v128;
    unsafe fn one(p: *const u8) -> f32;
}

struct F32;
struct F16;
struct Bf16;

impl FloatLoad for F32 {
    const TY: GgmlType = GgmlType::F32;
    const BYTES: usize = 4;
    #[inline(always)]
    unsafe fn load4(p: *const u8, _: &mut v128) -> v128 {
        load(p)
    }
    #[inline(always)]
    unsafe fn exact4(p: *const u8) -> v128 {
        load(p)
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        (p as *const f32).read_unaligned()
    }
}

impl FloatLoad for F16 {
    const TY: GgmlType = GgmlType::F16;
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load4(p: *const u8, rare: &mut v128) -> v128 {
        f16_low(
            u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64)),
            rare,
        )
    }
    #[inline(always)]
    unsafe fn exact4(p: *const u8) -> v128 {
        f16x4(u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64)))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        f16_to_f32((p as *const u16).read_unaligned())
    }
}

impl FloatLoad for Bf16 {
    const TY: GgmlType = GgmlType::BF16;
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load4(p: *const u8, _: &mut v128) -> v128 {
        Self::exact4(p)
    }
    #[inline(always)]
    unsafe fn exact4(p: *const u8) -> v128 {
        i32x4_shl(
            u32x4_extend_low_u16x8(v128_load64_zero(p as *const u64)),
            16,
        )
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        super::scalar::bf16_to_f32((p as *const u16).read_unaligned())
    }
}

struct Float<L>(std::marker::PhantomData<L>);

impl<L: FloatLoad> Kernel for Float<L> {
    const TY: GgmlType = L::TY;
    /// The activation row widened to f32.
    type A = f32;

    fn per_tok(n: usize) -> usize {
        n
    }

    #[inline(always)]
    unsafe fn prepare(n: usize, a: *const u8, dst: *mut f32) {
        let mut i = 0;
        while i + 4 <= n {
            v128_store(dst.add(i) as *mut v128, L::exact4(a.add(i * L::BYTES)));
            i += 4;
        }
        while i < n {
            dst.add(i).write(L::one(a.add(i * L::BYTES)));
            i += 1;
        }
    }

    /// Four elements of each row at a time, transposed so that each step
    /// adds element `i` of every row: `sum += w[i] * a[i]`, in order.
    #[inline(always)]
    unsafe fn tile<const NR: usize, const NT: usize>(
        n: usize,
        w: [*const u8; NR],
        a: [*const f32; NT],
    ) -> ([v128; NT], v128) {
        let mut acc = [f32x4_splat(0.0); NT];
        let mut rare = i32x4_splat(0);
        let mut i = 0;
        while i + 4 <= n {
            let mut v = [f32x4_splat(0.0); 4];
            for r in 0..NR {
                v[r] = L::load4(w[r].add(i * L::BYTES), &mut rare);
            }
            let t0 = i32x4_shuffle::<0, 4, 1, 5>(v[0], v[1]);
            let t1 = i32x4_shuffle::<2, 6, 3, 7>(v[0], v[1]);
            let t2 = i32x4_shuffle::<0, 4, 1, 5>(v[2], v[3]);
            let t3 = i32x4_shuffle::<2, 6, 3, 7>(v[2], v[3]);
            let cols = [
                i32x4_shuffle::<0, 1, 4, 5>(t0, t2),
                i32x4_shuffle::<2, 3, 6, 7>(t0, t2),
                i32x4_shuffle::<0, 1, 4, 5>(t1, t3),
                i32x4_shuffle::<2, 3, 6, 7>(t1, t3),
            ];
            for (j, &c) in cols.iter().enumerate() {
                for t in 0..NT {
                    let x = f32x4_splat(*a[t].add(i + j));
                    acc[t] = f32x4_add(acc[t], f32x4_mul(c, x));
                }
            }
            i += 4;
        }
        while i < n {
            let mut c = [0f32; 4];
            for r in 0..NR {
                c[r] = L::one(w[r].add(i * L::BYTES));
            }
            let c = f32x4(c[0], c[1], c[2], c[3]);
            for t in 0..NT {
                acc[t] = f32x4_add(acc[t], f32x4_mul(c, f32x4_splat(*a[t].add(i))));
            }
            i += 1;
        }
        (acc, rare)
    }
}

// ---------------------------------------------------------------------------
// Activation encoding and f16 rounding

/// Encodes activations into Q8_0, Q8_1 or F16 with exactly the scalar
/// code's results; `false` for other types.
pub(super) fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> bool {
    match ty {
        GgmlType::Q8_0 | GgmlType::Q8_1 => quantize_q8(ty, src, dst),
        GgmlType::F16 => {
            let mut chunks = src.chunks_exact(8);
            let mut out = dst.chunks_exact_mut(16);
            for (x, o) in (&mut chunks).zip(&mut out) {
                // SAFETY: `x` holds 8 floats and `o` 16 bytes.
                unsafe {
                    let lo = f16_bits(load(x.as_ptr() as *const u8));
                    let hi = f16_bits(load(x.as_ptr().add(4) as *const u8));
                    let h = i8x16_shuffle::<0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29>(
                        lo, hi,
                    );
                    v128_store(o.as_mut_ptr() as *mut v128, h);
                }
            }
            let done = src.len() / 8 * 8;
            let tail = (done * 2).min(dst.len());
            super::scalar::quantize_row(ty, &src[done..], &mut dst[tail..]);
        }
        _ => return false,
    }
    true
}

fn quantize_q8(ty: GgmlType, src: &[f32], dst: &mut [u8]) {
    let (bb, qs_at) = if ty == GgmlType::Q8_0 {
        (34, 2)
    } else {
        (36, 4)
    };
    let half = f32x4_splat(0.5);
    let neg_half = f32x4_splat(-0.5);
    for (x, blk) in src.chunks_exact(32).zip(dst.chunks_exact_mut(bb)) {
        // SAFETY: `x` holds 32 floats.
        let v: [v128; 8] =
            std::array::from_fn(|k| unsafe { load(x.as_ptr().add(4 * k) as *const u8) });
        // max |x|: the order of a max does not matter, and pmax is a plain
        // maxps (NaNs aside, as everywhere here).
        let mut m = f32x4_abs(v[0]);
        for &vk in &v[1..] {
            m = f32x4_pmax(m, f32x4_abs(vk));
        }
        m = f32x4_pmax(m, i32x4_shuffle::<2, 3, 0, 1>(m, m));
        m = f32x4_pmax(m, i32x4_shuffle::<1, 0, 3, 2>(m, m));
        let amax = f32x4_extract_lane::<0>(m);
        let d = amax / 127.0;
        let id = f32x4_splat(if d != 0.0 { 1.0 / d } else { 0.0 });
        // roundf: truncate, then step away from zero when the exact
        // remainder is at least one half; all in exact float integers
        // (|q| <= 127), which adding 1.5 * 2^23 then moves into the low
        // mantissa bits. Cheaper in V8 than the saturating conversion.
        let one = f32x4_splat(1.0);
        let magic = f32x4_splat(12_582_912.0);
        let q: [v128; 8] = std::array::from_fn(|k| {
            let y = f32x4_mul(v[k], id);
            let t = f32x4_trunc(y);
            let f = f32x4_sub(y, t);
            let up = v128_and(f32x4_ge(f, half), one);
            let down = v128_and(f32x4_le(f, neg_half), one);
            let r = f32x4_sub(f32x4_add(t, up), down);
            i32x4_sub(f32x4_add(r, magic), magic)
        });
        let b0 = i8x16_narrow_i16x8(
            i16x8_narrow_i32x4(q[0], q[1]),
            i16x8_narrow_i32x4(q[2], q[3]),
        );
        let b1 = i8x16_narrow_i16x8(
            i16x8_narrow_i32x4(q[4], q[5]),
            i16x8_narrow_i32x4(q[6], q[7]),
        );
        // SAFETY: the block has 32 bytes of quants at `qs_at`.
        unsafe {
            v128_store(blk.as_mut_ptr().add(qs_at) as *mut v128, b0);
            v128_store(blk.as_mut_ptr().add(qs_at + 16) as *mut v128, b1);
        }
        blk[0..2].copy_from_slice(&half::f16::from_f32(d).to_bits().to_le_bytes());
        if ty == GgmlType::Q8_1 {
            let mut s = i32x4_splat(0);
            for &qk in &q {
                s = i32x4_add(s, qk);
            }
            let s = lanes_i32(s);
            let sum = (s[0] + s[1] + s[2] + s[3]) as f32 * d;
            blk[2..4].copy_from_slice(&half::f16::from_f32(sum).to_bits().to_le_bytes());
        }
    }
}

/// Each f32 lane rounded to the nearest f16 value (ties to even), as f32:
/// what converting to f16 and back gives, bit for bit (overflow to
/// infinity, f16 subnormals, NaNs kept and quietened).
#[inline(always)]
fn round_f16x4(x: v128) -> v128 {
    let abs = v128_and(x, u32x4_splat(0x7fff_ffff));
    let sign = v128_xor(x, abs);
    // f16 normal range: round the f32 mantissa to 10 bits, to even; a carry
    // moves into the exponent, as it should.
    let lsb = v128_and(u32x4_shr(abs, 13), u32x4_splat(1));
    let r = i32x4_add(abs, i32x4_add(u32x4_splat(0xfff), lsb));
    let r = v128_and(r, u32x4_splat(0xffff_e000));
    // Past the largest f16 (65504): infinity.
    let over = u32x4_gt(r, u32x4_splat(0x477f_e000));
    let r = v128_bitselect(u32x4_splat(0x7f80_0000), r, over);
    // Below 2^-14: multiples of 2^-24. Adding 0.5, whose ulp is 2^-24,
    // rounds to one, to even; taking it off again is exact.
    let sub = f32x4_sub(f32x4_add(abs, f32x4_splat(0.5)), f32x4_splat(0.5));
    let r = v128_bitselect(sub, r, u32x4_lt(abs, u32x4_splat(0x3880_0000)));
    // NaN: the top ten mantissa bits, plus the quiet bit.
    let nan = v128_or(
        v128_and(abs, u32x4_splat(0xffff_e000)),
        u32x4_splat(0x0040_0000),
    );
    let r = v128_bitselect(nan, r, u32x4_gt(abs, u32x4_splat(0x7f80_0000)));
    v128_or(r, sign)
}

/// Whether every lane of `abs` (an f32 magnitude) rounds to a normal f16:
/// from 2^-14 (0x3880_0000) up to, not including, 65520 (0x477f_f000),
/// which rounds to infinity. Two sign bits tell.
#[inline(always)]
fn is_f16_normal(abs: v128) -> bool {
    let t = i32x4_sub(abs, u32x4_splat(0x3880_0000));
    i32x4_bitmask(v128_or(t, i32x4_add(t, u32x4_splat(0x7100_1000)))) == 0
}

/// [`round_f16x4`], shorter when every lane is in f16's normal range,
/// where the attention's values live.
#[inline(always)]
fn round_f16x4_normal(x: v128) -> v128 {
    let abs = v128_and(x, u32x4_splat(0x7fff_ffff));
    if !is_f16_normal(abs) {
        return round_f16x4(x);
    }
    // Round the mantissa to 10 bits, to even; a carry moves into the
    // exponent, as it should.
    let lsb = v128_and(u32x4_shr(abs, 13), u32x4_splat(1));
    let r = i32x4_add(x, i32x4_add(u32x4_splat(0xfff), lsb));
    v128_and(r, u32x4_splat(0xffff_e000))
}

/// The f16 bit patterns (in the low half of each u32 lane) of four f32s,
/// rounded to nearest even, as `half::f16::from_f32` gives them.
#[inline(always)]
fn f16_bits(x: v128) -> v128 {
    let abs = v128_and(x, u32x4_splat(0x7fff_ffff));
    if !is_f16_normal(abs) {
        return f16_bits_exact(x);
    }
    // Round the mantissa to 10 bits, to even, then move the fields and
    // rebias the exponent (127 -> 15).
    let lsb = v128_and(u32x4_shr(abs, 13), u32x4_splat(1));
    let r = i32x4_add(abs, i32x4_add(u32x4_splat(0xfff), lsb));
    let h = i32x4_sub(u32x4_shr(r, 13), u32x4_splat(112 << 10));
    v128_or(h, u32x4_shr(v128_xor(x, abs), 16))
}

/// [`f16_bits`] for every value.
#[inline(always)]
fn f16_bits_exact(x: v128) -> v128 {
    let r = round_f16x4(x);
    let abs = v128_and(r, u32x4_splat(0x7fff_ffff));
    let sign = u32x4_shr(v128_xor(r, abs), 16);
    // Normal: move the fields and rebias the exponent (127 -> 15).
    let normal = i32x4_sub(u32x4_shr(abs, 13), u32x4_splat(112 << 10));
    // Subnormal (below 2^-14): the multiple of 2^-24, exactly.
    let sub = i32x4_trunc_sat_f32x4(f32x4_mul(abs, f32x4_splat(16_777_216.0)));
    // Infinity or NaN: all-ones exponent and the top mantissa bits.
    let infnan = v128_or(
        v128_and(u32x4_shr(abs, 13), u32x4_splat(0x3ff)),
        u32x4_splat(0x7c00),
    );
    let h = v128_bitselect(sub, normal, u32x4_lt(abs, u32x4_splat(0x3880_0000)));
    let h = v128_bitselect(infnan, h, u32x4_ge(abs, u32x4_splat(0x7f80_0000)));
    v128_or(h, sign)
}

/// See [`super::round_f16_in_place`].
#[inline]
pub(super) fn round_f16_in_place(x: &mut [f32]) {
    let mut chunks = x.chunks_exact_mut(4);
    for c in &mut chunks {
        // SAFETY: `c` holds four floats.
        unsafe {
            let p = c.as_mut_ptr() as *mut v128;
            v128_store(p, round_f16x4_normal(v128_load(p)));
        }
    }
    for v in chunks.into_remainder() {
        *v = f16_to_f32(half::f16::from_f32(*v).to_bits());
    }
}

/// See [`super::dot_f32_lanes16`]: the 16 lanes are four f32x4 vectors.
#[inline]
pub(super) fn dot_f32_lanes16(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [f32x4_splat(0.0); 4];
    for (ac, bc) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        for (j, acc) in acc.iter_mut().enumerate() {
            // SAFETY: each chunk holds 16 floats.
            let (x, y) = unsafe {
                (
                    load(ac.as_ptr().add(4 * j) as *const u8),
                    load(bc.as_ptr().add(4 * j) as *const u8),
                )
            };
            *acc = f32x4_add(*acc, f32x4_mul(x, y));
        }
    }
    // Lanes l += l + 8, then l += l + 4, l += l + 2, l += l + 1.
    let s = f32x4_add(f32x4_add(acc[0], acc[2]), f32x4_add(acc[1], acc[3]));
    let s = f32x4_add(s, i32x4_shuffle::<2, 3, 2, 3>(s, s));
    f32x4_extract_lane::<0>(s) + f32x4_extract_lane::<1>(s)
}
