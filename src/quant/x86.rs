//! x86_64 fast paths: AVX2 + FMA + F16C, with VNNI's `vpdpbusd` when present.
//!
//! Every kernel computes one weight row against `NT` activation rows at once,
//! so that [`gemm`] unpacks each weight block once for several tokens. The
//! per-token arithmetic does not depend on `NT` (same operations, same
//! order), which is what makes `gemm` bit-identical to `vec_dot` (`NT = 1`).
//!
//! The kernels are generic over [`Dot`], the u8 x i8 dot-product primitive,
//! and marked `#[inline(always)]`; the three `#[target_feature]` entry points
//! at the bottom instantiate them, which is where the intrinsics get inlined.

use super::GgmlType;
use std::arch::x86_64::*;
use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    Scalar = 1,
    Avx2 = 2,
    AvxVnni = 3,
    Avx512Vnni = 4,
}

/// 0 until the first call detects the CPU; then a `Level` discriminant.
static LEVEL: AtomicU8 = AtomicU8::new(0);

fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Scalar,
        2 => Level::Avx2,
        3 => Level::AvxVnni,
        4 => Level::Avx512Vnni,
        _ => {
            let l = detect();
            LEVEL.store(l as u8, Ordering::Relaxed);
            l
        }
    }
}

/// The best level this CPU supports, capped by the `WEBGGUF_SIMD`
/// environment variable (`scalar`, `avx2`, `avxvnni`, `avx512vnni`) for
/// benchmarks and for ruling the fast paths out when debugging.
fn detect() -> Level {
    let best = detect_cpu();
    let cap = match std::env::var("WEBGGUF_SIMD").as_deref() {
        Ok("scalar") => Level::Scalar,
        Ok("avx2") => Level::Avx2,
        Ok("avxvnni") => Level::AvxVnni,
        _ => Level::Avx512Vnni,
    };
    if cap == Level::AvxVnni && best == Level::Avx512Vnni && !is_x86_feature_detected!("avxvnni") {
        return Level::Avx2;
    }
    if (cap as u8) < (best as u8) {
        cap
    } else {
        best
    }
}

fn detect_cpu() -> Level {
    let avx2 = is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c");
    if !avx2 {
        return Level::Scalar;
    }
    // The EVEX form has 32 registers, so it is preferred when both exist.
    if is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
    {
        return Level::Avx512Vnni;
    }
    if is_x86_feature_detected!("avxvnni") {
        return Level::AvxVnni;
    }
    Level::Avx2
}

pub(super) fn level_name() -> &'static str {
    level_name_of(level())
}

fn level_name_of(l: Level) -> &'static str {
    match l {
        Level::Scalar => "scalar",
        Level::Avx2 => "avx2",
        Level::AvxVnni => "avx2+avxvnni",
        Level::Avx512Vnni => "avx2+avx512vnni",
    }
}

/// Sum of four adjacent u8 x i8 products per i32 lane, added to `acc`.
trait Dot {
    /// 32 vector registers: room for the 8-token groups of `Block32`.
    const WIDE: bool = false;
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i;
}

struct Avx2;
struct AvxVnni;
struct Avx512Vnni;

impl Dot for Avx2 {
    /// `maddubs` saturates at i16, which no format here reaches: the largest
    /// pair is 2 * 128 * 127 (Q8_0's |-128| times a Q8 activation, which our
    /// quantizers keep within [-127, 127]).
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        let pairs = _mm256_maddubs_epi16(u, s);
        _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }
}

impl Dot for AvxVnni {
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(acc, u, s)
    }
}

impl Dot for Avx512Vnni {
    const WIDE: bool = true;
    #[inline(always)]
    unsafe fn dot(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(acc, u, s)
    }
}

/// Runs `ty`'s kernel when one exists for this CPU; `false` sends the caller
/// to the scalar code, as do lengths the fast path would have to truncate.
pub(super) fn gemm(
    ty: GgmlType,
    n: usize,
    w: &[u8],
    act: &[u8],
    ntok: usize,
    out: &mut [f32],
) -> bool {
    gemm_at(level(), ty, n, w, act, ntok, out)
}

fn gemm_at(
    lvl: Level,
    ty: GgmlType,
    n: usize,
    w: &[u8],
    act: &[u8],
    ntok: usize,
    out: &mut [f32],
) -> bool {
    if lvl == Level::Scalar || !has_kernel(ty) || ntok == 0 || n == 0 {
        return false;
    }
    let at = ty.vec_dot_type();
    let (Some(wrb), Some(arb)) = (ty.row_bytes(n), at.row_bytes(n)) else {
        return false;
    };
    let rows = out.len() / ntok;
    let enough = |len: usize, count: usize, each: usize| {
        count.checked_mul(each).is_some_and(|need| len >= need)
    };
    if !enough(w.len(), rows, wrb) || !enough(act.len(), ntok, arb) {
        return false;
    }
    // The activations' f16 scales, decoded once per call rather than once
    // per weight row; kept per thread so that calls do not allocate.
    let mut scales = SCALES.take();
    let per_tok = match at {
        GgmlType::Q8_0 => n / 32,
        GgmlType::Q8_1 => n / 32 * 2,
        _ => 0,
    };
    // The same scales again, for each full group of eight tokens transposed
    // (`per_tok` rows of 8), for the kernels that take eight at a time.
    scales.clear();
    scales.resize(per_tok * ntok * 2, 0.0);
    let job = Job {
        n,
        w,
        wrb,
        act,
        arb,
        ntok,
        scales: &mut scales,
        per_tok,
        out,
    };
    // SAFETY: `lvl` is at most what `detect` found, so the CPU has the
    // features each entry point enables, and `job`'s slices hold `rows`
    // weight rows and `ntok` activation rows.
    unsafe {
        match lvl {
            Level::Avx2 => run_avx2(ty, job),
            Level::AvxVnni => run_avxvnni(ty, job),
            Level::Avx512Vnni => run_avx512vnni(ty, job),
            Level::Scalar => unreachable!(),
        }
    }
    SCALES.set(scales);
    true
}

/// One dot product: like a one-row, one-token [`gemm`], but decoding the
/// activation scales on the fly, which costs less than preparing them for a
/// single use. `None` sends the caller to the scalar code.
pub(super) fn vec_dot(ty: GgmlType, n: usize, w: &[u8], act: &[u8]) -> Option<f32> {
    let lvl = level();
    if lvl == Level::Scalar || !has_kernel(ty) || n == 0 {
        return None;
    }
    let wrb = ty.row_bytes(n)?;
    let arb = ty.vec_dot_type().row_bytes(n)?;
    if w.len() < wrb || act.len() < arb {
        return None;
    }
    let (w, a) = (w.as_ptr(), act.as_ptr());
    // SAFETY: as in `gemm_at`; `w` and `act` hold a full row each.
    unsafe {
        Some(match lvl {
            Level::Avx2 => dot_avx2(ty, n, w, a),
            Level::AvxVnni => dot_avxvnni(ty, n, w, a),
            Level::Avx512Vnni => dot_avx512vnni(ty, n, w, a),
            Level::Scalar => unreachable!(),
        })
    }
}

thread_local! {
    static SCALES: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

#[cfg(test)]
const ALL_LEVELS: [Level; 3] = [Level::Avx2, Level::AvxVnni, Level::Avx512Vnni];

/// The levels this CPU supports, for tests that compare them all.
#[cfg(test)]
pub(super) fn levels() -> Vec<&'static str> {
    let top = level();
    ALL_LEVELS
        .into_iter()
        .filter(|&l| {
            l as u8 <= top as u8 && (l != Level::AvxVnni || is_x86_feature_detected!("avxvnni"))
        })
        .map(level_name_of)
        .collect()
}

/// [`gemm`] at a level named by [`levels`].
#[cfg(test)]
pub(super) fn gemm_level(
    name: &str,
    ty: GgmlType,
    n: usize,
    w: &[u8],
    a: &[u8],
    ntok: usize,
    out: &mut [f32],
) -> bool {
    let lvl = ALL_LEVELS.into_iter().find(|&l| level_name_of(l) == name);
    lvl.is_some_and(|l| levels().contains(&name) && gemm_at(l, ty, n, w, a, ntok, out))
}

/// Runs `$body` with `$k` naming the kernel type for `$ty`, or `$other`
/// when there is no kernel: the one list of what is accelerated.
macro_rules! with_kernel {
    ($ty:expr, $k:ident => $body:expr, _ => $other:expr) => {
        match $ty {
            GgmlType::Q4_0 => {
                type $k = Q4_0;
                $body
            }
            GgmlType::Q4_1 => {
                type $k = Q4_1;
                $body
            }
            GgmlType::Q5_0 => {
                type $k = Q5_0;
                $body
            }
            GgmlType::Q5_1 => {
                type $k = Q5_1;
                $body
            }
            GgmlType::Q8_0 => {
                type $k = Q8_0;
                $body
            }
            GgmlType::IQ4_NL => {
                type $k = Iq4Nl;
                $body
            }
            GgmlType::Q4_K => {
                type $k = Q4K;
                $body
            }
            GgmlType::Q6_K => {
                type $k = Q6K;
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

/// A validated gemm call: `w` holds at least `out.len() / ntok` rows of
/// `wrb` bytes, `act` at least `ntok` rows of `arb` bytes, and `scales` has
/// room for `per_tok` decoded activation scales per token.
struct Job<'a> {
    n: usize,
    w: &'a [u8],
    wrb: usize,
    act: &'a [u8],
    arb: usize,
    ntok: usize,
    scales: &'a mut [f32],
    per_tok: usize,
    out: &'a mut [f32],
}

/// One weight row against `NT` activation rows.
trait Kernel {
    /// Tokens per call in gemm: 4 for the integer kernels; 2 for the float
    /// kernels, whose four accumulators per token would otherwise spill.
    const GROUP: usize;
    /// Decodes the scales of the activation row at `a` into `dst`.
    unsafe fn prepare(n: usize, a: *const u8, dst: &mut [f32]);
    /// # Safety
    /// `w` points at a full weight row of `n` elements, each `a[t]` at a full
    /// activation row and, unless `INLINE` (decode the scales on the fly),
    /// `s[t]` at its scales decoded by `prepare`; the CPU has the features of
    /// the entry point.
    unsafe fn row<D: Dot, const NT: usize, const INLINE: bool>(
        n: usize,
        w: *const u8,
        a: [*const u8; NT],
        s: [*const f32; NT],
    ) -> [f32; NT];

    /// Whether `row8` exists (at `Dot::WIDE` levels only).
    const GROUP8: bool = false;
    /// Like `row::<D, 8, false>`, bit for bit, but for the eight activation
    /// rows `arb` bytes apart from `a`, with their decoded scales transposed:
    /// scale `c` of token `t` at `s[c * stride + t]`.
    #[inline(always)]
    unsafe fn row8<D: Dot>(
        _n: usize,
        _w: *const u8,
        _a: *const u8,
        _arb: usize,
        _s: *const f32,
        _stride: usize,
    ) -> [f32; 8] {
        unreachable!()
    }

    /// `NR` weight rows, `wrb` bytes apart, against one activation row: the
    /// decode case. Each result is bit-identical to `row::<D, 1, false>`'s.
    #[inline(always)]
    unsafe fn rows<D: Dot, const NR: usize>(
        n: usize,
        w: *const u8,
        wrb: usize,
        a: *const u8,
        s: *const f32,
    ) -> [f32; NR] {
        let mut out = [0f32; NR];
        for (r, o) in out.iter_mut().enumerate() {
            *o = Self::row::<D, 1, false>(n, w.add(r * wrb), [a], [s])[0];
        }
        out
    }
}

#[inline(always)]
unsafe fn run<D: Dot, K: Kernel>(job: Job) {
    let Job {
        n,
        w,
        wrb,
        act,
        arb,
        ntok,
        scales,
        per_tok,
        out,
    } = job;
    let (scales, scales_t) = scales.split_at_mut(per_tok * ntok);
    if per_tok > 0 {
        for (t, dst) in scales.chunks_exact_mut(per_tok).enumerate() {
            K::prepare(n, act.as_ptr().add(t * arb), dst);
        }
        if K::GROUP8 && D::WIDE && ntok >= 8 {
            let groups = scales.chunks_exact(per_tok * 8);
            for (src, dst) in groups.zip(scales_t.chunks_exact_mut(per_tok * 8)) {
                for (c, d8) in dst.chunks_exact_mut(8).enumerate() {
                    for (j, d) in d8.iter_mut().enumerate() {
                        *d = src[j * per_tok + c];
                    }
                }
            }
        }
    }
    let tok = |t: usize| act.as_ptr().add(t * arb);
    let sc = |t: usize| scales.as_ptr().add(t * per_tok);
    if ntok == 1 {
        const NR: usize = 4;
        let rows = out.len();
        let mut r = 0;
        while r + NR <= rows {
            let v = K::rows::<D, NR>(n, w.as_ptr().add(r * wrb), wrb, tok(0), sc(0));
            out[r..r + NR].copy_from_slice(&v);
            r += NR;
        }
        while r < rows {
            out[r] = K::rows::<D, 1>(n, w.as_ptr().add(r * wrb), wrb, tok(0), sc(0))[0];
            r += 1;
        }
        return;
    }
    // Tokens in chunks whose activations stay in L1 while every row of the
    // task passes over them (rather than all tokens streaming from L2 once
    // per row). Each result does not depend on how tokens are grouped.
    const CHUNK: usize = 32;
    let mut t0 = 0;
    while t0 < ntok {
        let t1 = (t0 + CHUNK).min(ntok);
        for (wrow, orow) in w.chunks_exact(wrb).zip(out.chunks_exact_mut(ntok)) {
            let wp = wrow.as_ptr();
            let mut t = t0;
            if K::GROUP8 && D::WIDE {
                while t + 8 <= t1 {
                    // `t` is a multiple of 8: `t0` is one of `CHUNK`.
                    let st = scales_t.as_ptr().add(t * per_tok);
                    let r = K::row8::<D>(n, wp, tok(t), arb, st, 8);
                    orow[t..t + 8].copy_from_slice(&r);
                    t += 8;
                }
            }
            if K::GROUP >= 4 {
                while t + 4 <= t1 {
                    let a = [tok(t), tok(t + 1), tok(t + 2), tok(t + 3)];
                    let r =
                        K::row::<D, 4, false>(n, wp, a, [sc(t), sc(t + 1), sc(t + 2), sc(t + 3)]);
                    orow[t..t + 4].copy_from_slice(&r);
                    t += 4;
                }
            }
            while t + 2 <= t1 {
                let r = K::row::<D, 2, false>(n, wp, [tok(t), tok(t + 1)], [sc(t), sc(t + 1)]);
                orow[t..t + 2].copy_from_slice(&r);
                t += 2;
            }
            if t < t1 {
                orow[t] = K::row::<D, 1, false>(n, wp, [tok(t)], [sc(t)])[0];
            }
        }
        t0 = t1;
    }
}

#[inline(always)]
unsafe fn dispatch<D: Dot>(ty: GgmlType, job: Job) {
    with_kernel!(ty, K => run::<D, K>(job), _ => unreachable!("no kernel for {ty}"))
}

#[inline(always)]
unsafe fn dot_one<D: Dot>(ty: GgmlType, n: usize, w: *const u8, a: *const u8) -> f32 {
    let s = [std::ptr::null()];
    with_kernel!(ty, K => K::row::<D, 1, true>(n, w, [a], s)[0], _ => unreachable!("no kernel for {ty}"))
}

/// Instantiates the kernels for one instruction set: the only functions
/// with `#[target_feature]`, into which everything above is inlined.
macro_rules! entry_points {
    ($features:literal, $dot:ty, $run:ident, $vec_dot:ident) => {
        #[target_feature(enable = $features)]
        unsafe fn $run(ty: GgmlType, job: Job) {
            dispatch::<$dot>(ty, job)
        }

        #[target_feature(enable = $features)]
        unsafe fn $vec_dot(ty: GgmlType, n: usize, w: *const u8, a: *const u8) -> f32 {
            dot_one::<$dot>(ty, n, w, a)
        }
    };
}

entry_points!("avx2,fma,f16c", Avx2, run_avx2, dot_avx2);
entry_points!("avx2,fma,f16c,avxvnni", AvxVnni, run_avxvnni, dot_avxvnni);
entry_points!(
    "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni",
    Avx512Vnni,
    run_avx512vnni,
    dot_avx512vnni
);

// ---------------------------------------------------------------------------
// Helpers

/// Horizontal sum, in a fixed order (the same for every `NT`).
#[inline(always)]
unsafe fn hsum(v: __m256) -> f32 {
    let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
}

/// Two f16 at `p` as f32 lanes 0 and 1 (lanes 2 and 3 zero). Loading just
/// four bytes keeps junk out of the unused lanes, where denormals would cost
/// microcode assists.
#[inline(always)]
unsafe fn f16x2(p: *const u8) -> __m128 {
    _mm_cvtph_ps(_mm_cvtsi32_si128((p as *const i32).read_unaligned()))
}

/// The f16 at `p` as f32 in lane 0 (lanes 1..4 hold junk; use `_ss` ops).
/// Reads four bytes with an explicit `vmovd`: knowing that only 16 bits
/// matter, the compiler would turn any plain load into a `vpinsrw` merging
/// into whatever register is at hand (often an accumulator), chaining each
/// block onto the previous block's result.
#[inline(always)]
unsafe fn f16x1(p: *const u8) -> __m128 {
    let r: __m128i;
    std::arch::asm!(
        "vmovd {r}, dword ptr [{p}]",
        r = lateout(xmm_reg) r,
        p = in(reg) p,
        options(pure, readonly, nostack, preserves_flags),
    );
    _mm_cvtph_ps(r)
}

/// 16 bytes of packed nibbles as 32 bytes in ggml's element order: low
/// nibbles (elements 0..16) in the lower half, high nibbles in the upper.
#[inline(always)]
unsafe fn nibbles(p: *const u8) -> __m256i {
    let both = _mm256_broadcastsi128_si256(_mm_loadu_si128(p as *const __m128i));
    let shifted = _mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0));
    _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f))
}

#[inline(always)]
unsafe fn load256(p: *const u8) -> __m256i {
    _mm256_loadu_si256(p as *const __m256i)
}

// ---------------------------------------------------------------------------
// 32-element formats against Q8_0 / Q8_1

/// A 32-element weight format: how to unpack one block into registers, and
/// how to fold that block into one token's accumulators.
trait Block32 {
    /// Bytes per weight block and per activation block.
    const WB: usize;
    const AB: usize;
    /// Offset of the quants in an activation block: 2 in Q8_0, 4 in Q8_1.
    const AQ: usize;
    /// Decoded activation scales per block: d, or for Q8_1 d and s.
    const AS: usize;
    /// A weight block unpacked into registers, shared by all tokens.
    type Unpacked: Copy;
    unsafe fn unpack(wb: *const u8) -> Self::Unpacked;
    /// The weight block's min in lane 0, for formats with one (`AS == 2`).
    #[inline(always)]
    unsafe fn min(_: Self::Unpacked) -> __m128 {
        _mm_setzero_ps()
    }
    /// Adds one block's contribution for the activation quants at `q`, with
    /// scale `d` (broadcast) and for Q8_1 sum `s` (broadcast), to `acc` (8
    /// lanes) and `extra` (4 lanes, Q4_1's min terms); all lanes of both are
    /// summed at the end.
    unsafe fn token<D: Dot>(
        w: Self::Unpacked,
        q: *const u8,
        d: __m256,
        s: __m128,
        acc: &mut __m256,
        extra: &mut __m128,
    );
}

/// Two accumulators per token, even and odd blocks, so that consecutive
/// blocks do not wait on each other's FMA.
impl<B: Block32> Kernel for B {
    const GROUP: usize = 4;
    const GROUP8: bool = true;

    /// As `row`, except that Q4_1's and Q5_1's min terms accumulate for all
    /// eight tokens in one register (lane `t` for token `t`, the same FMAs
    /// as lane 0 of `row`'s `extra[t]`), which leaves room for the sixteen
    /// `acc` registers.
    #[inline(always)]
    unsafe fn row8<D: Dot>(
        n: usize,
        w: *const u8,
        a: *const u8,
        arb: usize,
        s: *const f32,
        stride: usize,
    ) -> [f32; 8] {
        const NT: usize = 8;
        let mut acc = [[_mm256_setzero_ps(); 2]; NT];
        let mut extra = [_mm256_setzero_ps(); 2];
        let nb = n / 32;
        let mut b = 0;
        while b < nb {
            for k in 0..2 {
                // The blocks' pairs, and a last block alone into [0], as
                // in `row`.
                let i = b + k;
                if i >= nb {
                    break;
                }
                let wu = B::unpack(w.add(i * B::WB));
                let qi = a.add(i * B::AB + B::AQ);
                let si = s.add(i * B::AS * stride);
                for (t, acc) in acc.iter_mut().enumerate() {
                    let q = qi.add(t * arb);
                    let d = _mm256_broadcast_ss(&*si.add(t));
                    // The min term goes to `extra` below; this one is dead.
                    let mut unused = _mm_setzero_ps();
                    B::token::<D>(wu, q, d, _mm_setzero_ps(), &mut acc[k], &mut unused);
                }
                if B::AS == 2 {
                    let m = _mm256_broadcastss_ps(B::min(wu));
                    let sa = _mm256_loadu_ps(si.add(stride));
                    extra[k] = _mm256_fmadd_ps(m, sa, extra[k]);
                }
            }
            b += 2;
        }
        let mut e = [0f32; NT];
        _mm256_storeu_ps(e.as_mut_ptr(), _mm256_add_ps(extra[0], extra[1]));
        let mut out = [0f32; NT];
        for t in 0..NT {
            out[t] = hsum(_mm256_add_ps(acc[t][0], acc[t][1])) + e[t];
        }
        out
    }

    #[inline(always)]
    unsafe fn prepare(n: usize, a: *const u8, dst: &mut [f32]) {
        for (b, d) in dst.chunks_exact_mut(B::AS).take(n / 32).enumerate() {
            let v = f16x2(a.add(b * B::AB));
            d[0] = _mm_cvtss_f32(v);
            if B::AS == 2 {
                d[1] = _mm_cvtss_f32(_mm_movehdup_ps(v));
            }
        }
    }

    #[inline(always)]
    unsafe fn row<D: Dot, const NT: usize, const INLINE: bool>(
        n: usize,
        w: *const u8,
        a: [*const u8; NT],
        s: [*const f32; NT],
    ) -> [f32; NT] {
        let mut acc = [[_mm256_setzero_ps(); 2]; NT];
        let mut extra = [[_mm_setzero_ps(); 2]; NT];
        // Both sources give the same f32 values (f16 -> f32 is exact), so
        // the results do not depend on INLINE.
        let scales = |t: usize, i: usize| {
            if INLINE {
                let ab = a[t].add(i * B::AB);
                let v = if B::AS == 1 { f16x1(ab) } else { f16x2(ab) };
                (
                    _mm256_broadcastss_ps(v),
                    _mm_broadcastss_ps(_mm_movehdup_ps(v)),
                )
            } else {
                let p = s[t].add(i * B::AS);
                (
                    _mm256_broadcast_ss(&*p),
                    _mm_broadcast_ss(&*p.add(B::AS - 1)),
                )
            }
        };
        let nb = n / 32;
        let mut b = 0;
        while b + 2 <= nb {
            for k in 0..2 {
                let i = b + k;
                let wu = B::unpack(w.add(i * B::WB));
                for t in 0..NT {
                    let q = a[t].add(i * B::AB + B::AQ);
                    let (d, sum) = scales(t, i);
                    B::token::<D>(wu, q, d, sum, &mut acc[t][k], &mut extra[t][k]);
                }
            }
            b += 2;
        }
        if b < nb {
            let wu = B::unpack(w.add(b * B::WB));
            for t in 0..NT {
                let q = a[t].add(b * B::AB + B::AQ);
                let (d, sum) = scales(t, b);
                B::token::<D>(wu, q, d, sum, &mut acc[t][0], &mut extra[t][0]);
            }
        }
        let mut out = [0f32; NT];
        for t in 0..NT {
            let e = _mm_add_ps(extra[t][0], extra[t][1]);
            out[t] = hsum(_mm256_add_ps(acc[t][0], acc[t][1])) + _mm_cvtss_f32(e);
        }
        out
    }

    /// The same blocks into the same accumulators per row as `row` with one
    /// token, for `NR` rows interleaved: more independent memory streams
    /// and dependency chains in flight.
    #[inline(always)]
    unsafe fn rows<D: Dot, const NR: usize>(
        n: usize,
        w: *const u8,
        wrb: usize,
        a: *const u8,
        s: *const f32,
    ) -> [f32; NR] {
        let mut acc = [[_mm256_setzero_ps(); 2]; NR];
        let mut extra = [[_mm_setzero_ps(); 2]; NR];
        let nb = n / 32;
        const PF: usize = 2;
        let mut b = 0;
        while b < nb {
            // The group of rows after next, at this block pair: hardware
            // prefetch alone leaves the loads of each block's scales
            // waiting on memory. A prefetch past the end is harmless.
            for r in 0..NR {
                let ahead = w.wrapping_add((r + PF * NR) * wrb + b * B::WB);
                _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
            }
            for k in 0..2 {
                let i = b + k;
                if i < nb {
                    let p = s.add(i * B::AS);
                    let d = _mm256_broadcast_ss(&*p);
                    let sum = _mm_broadcast_ss(&*p.add(B::AS - 1));
                    let q = a.add(i * B::AB + B::AQ);
                    for r in 0..NR {
                        let wu = B::unpack(w.add(r * wrb + i * B::WB));
                        B::token::<D>(wu, q, d, sum, &mut acc[r][k], &mut extra[r][k]);
                    }
                }
            }
            b += 2;
        }
        let mut out = [0f32; NR];
        for r in 0..NR {
            let e = _mm_add_ps(extra[r][0], extra[r][1]);
            out[r] = hsum(_mm256_add_ps(acc[r][0], acc[r][1])) + _mm_cvtss_f32(e);
        }
        out
    }
}

/// Signed weight quants, their magnitudes, and the block scale.
#[derive(Clone, Copy)]
struct Signed {
    wq: __m256i,
    wabs: __m256i,
    d: __m256,
}

impl Signed {
    #[inline(always)]
    unsafe fn new(wq: __m256i, scale_at: *const u8) -> Signed {
        Signed {
            wq,
            wabs: _mm256_abs_epi8(wq),
            d: _mm256_broadcastss_ps(f16x1(scale_at)),
        }
    }

    /// Against a Q8_0 block: the sign of the weight moves onto the
    /// activation so that the u8 x i8 product applies. Activations never
    /// hold -128, whose negation would wrap.
    #[inline(always)]
    unsafe fn token<D: Dot>(self, q: *const u8, da: __m256, acc: &mut __m256) {
        let sq = _mm256_sign_epi8(load256(q), self.wq);
        let isum = D::dot(_mm256_setzero_si256(), self.wabs, sq);
        let d = _mm256_mul_ps(self.d, da);
        *acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), *acc);
    }
}

/// A format whose blocks are an f16 scale and 32 signed quants, against
/// Q8_0 activations.
macro_rules! signed_format {
    ($(#[$doc:meta])* $name:ident, $wb:expr, |$p:ident| $quants:expr) => {
        $(#[$doc])*
        struct $name;
        impl Block32 for $name {
            const WB: usize = $wb;
            const AB: usize = 34;
            const AQ: usize = 2;
            const AS: usize = 1;
            type Unpacked = Signed;
            #[inline(always)]
            unsafe fn unpack($p: *const u8) -> Signed {
                Signed::new($quants, $p)
            }
            #[inline(always)]
            unsafe fn token<D: Dot>(w: Signed, q: *const u8, d: __m256, _: __m128, acc: &mut __m256, _: &mut __m128) {
                w.token::<D>(q, d, acc)
            }
        }
    };
}

signed_format!(
    /// Nibbles minus 8.
    Q4_0, 18, |wb| _mm256_sub_epi8(nibbles(wb.add(2)), _mm256_set1_epi8(8))
);
signed_format!(
    /// Plain i8 quants.
    Q8_0, 34, |wb| load256(wb.add(2))
);
signed_format!(
    /// Nibbles indexing the IQ4_NL code book, which fits one `vpshufb` table.
    Iq4Nl, 18, |wb| _mm256_shuffle_epi8(iq4nl_book(), nibbles(wb.add(2)))
);

/// The IQ4_NL code book in both halves of a register.
#[inline(always)]
unsafe fn iq4nl_book() -> __m256i {
    _mm256_broadcastsi128_si256(_mm_loadu_si128(
        super::IQ4_NL_VALUES.as_ptr() as *const __m128i
    ))
}

/// Q5_0 and Q5_1 keep the fifth bit of element j in bit j of a u32; this
/// spreads those 32 bits into 32 bytes of 0x10 or 0.
#[inline(always)]
unsafe fn fifth_bits(p: *const u8) -> __m256i {
    let bits = _mm256_set1_epi32((p as *const i32).read_unaligned());
    // Byte j of the result looks at byte j / 8 of the u32 ...
    let spread = _mm256_setr_epi64x(
        0,
        0x0101_0101_0101_0101,
        0x0202_0202_0202_0202,
        0x0303_0303_0303_0303,
    );
    let bytes = _mm256_shuffle_epi8(bits, spread);
    // ... and is all ones exactly when bit j % 8 is set.
    let others = _mm256_set1_epi64x(0x7fbf_dfef_f7fb_fdfe);
    let set = _mm256_cmpeq_epi8(_mm256_or_si256(bytes, others), _mm256_set1_epi8(-1));
    _mm256_and_si256(set, _mm256_set1_epi8(0x10))
}

signed_format!(
    /// Nibbles plus the fifth bit, minus 16.
    Q5_0, 22, |wb| {
        let q = _mm256_or_si256(nibbles(wb.add(6)), fifth_bits(wb.add(2)));
        _mm256_sub_epi8(q, _mm256_set1_epi8(16))
    }
);

/// Q4_1 and Q5_1 share everything but the quants.
macro_rules! min_format {
    ($(#[$doc:meta])* $name:ident, $wb:expr, |$p:ident| $quants:expr) => {
        $(#[$doc])*
        struct $name;
        impl Block32 for $name {
            const WB: usize = $wb;
            const AB: usize = 36;
            const AQ: usize = 4;
            const AS: usize = 2;
            /// Quants, d broadcast, and m in lane 0 (other lanes zero).
            type Unpacked = (__m256i, __m256, __m128);
            #[inline(always)]
            unsafe fn unpack($p: *const u8) -> Self::Unpacked {
                let dm = f16x2($p);
                let m = _mm_and_ps(_mm_movehdup_ps(dm), _mm_castsi128_ps(_mm_set_epi32(0, 0, 0, -1)));
                ($quants, _mm256_broadcastss_ps(dm), m)
            }
            #[inline(always)]
            unsafe fn min(w: Self::Unpacked) -> __m128 {
                w.2
            }
            /// The min contributes m_w * s_a, where s_a = d_a * sum(q_a).
            #[inline(always)]
            unsafe fn token<D: Dot>(
                w: Self::Unpacked,
                q: *const u8,
                da: __m256,
                sa: __m128,
                acc: &mut __m256,
                extra: &mut __m128,
            ) {
                let isum = D::dot(_mm256_setzero_si256(), w.0, load256(q));
                let d = _mm256_mul_ps(w.1, da);
                *acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), *acc);
                *extra = _mm_fmadd_ps(w.2, sa, *extra);
            }
        }
    };
}

min_format!(
    /// Nibbles.
    Q4_1, 20, |wb| nibbles(wb.add(4))
);
min_format!(
    /// Nibbles plus the fifth bit.
    Q5_1, 24, |wb| _mm256_or_si256(nibbles(wb.add(8)), fifth_bits(wb.add(4)))
);

// ---------------------------------------------------------------------------
// K-quants against Q8_K (f32 d at 0, 256 quants at 4, 16 i16 group sums at 260)
//
// Scales multiply 16-bit pair sums (`maddubs` then `madd` with the scale),
// as ggml's AVX2 code does; VNNI would need a 32-bit multiply per group
// instead, so `D` goes unused here. One accumulator per token suffices: a
// super-block is long enough to hide the FMA latency.

/// Scale vectors for `madd`: i16 lane `lo` of `x`'s low 128-bit half
/// repeated across that half, and lane `hi` of its high half across the high
/// half.
#[inline(always)]
unsafe fn splat_i16(x: __m256i, lo: i32, hi: i32) -> __m256i {
    let idx = |j: i32| ((2 * j + 1) << 8) | (2 * j);
    let mask = _mm256_setr_epi16(
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(lo) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
        idx(hi) as i16,
    );
    _mm256_shuffle_epi8(x, mask)
}

/// The activation block `b` of a Q8_K row: (d broadcast, pointer to quants,
/// the 16 group sums).
#[inline(always)]
unsafe fn q8k(a: *const u8, b: usize) -> (__m256, *const u8, __m256i) {
    let ab = a.add(b * 292);
    (
        _mm256_broadcast_ss(&*(ab as *const f32)),
        ab.add(4),
        load256(ab.add(260)),
    )
}

struct Q4K;
impl Kernel for Q4K {
    const GROUP: usize = 4;
    unsafe fn prepare(_: usize, _: *const u8, _: &mut [f32]) {}

    #[inline(always)]
    unsafe fn row<D: Dot, const NT: usize, const INLINE: bool>(
        n: usize,
        w: *const u8,
        a: [*const u8; NT],
        _: [*const f32; NT],
    ) -> [f32; NT] {
        let mut acc = [_mm256_setzero_ps(); NT];
        let mut macc = [_mm256_setzero_ps(); NT];
        let low4 = _mm256_set1_epi8(0x0f);
        for b in 0..n / 256 {
            let wb = w.add(b * 144);
            let dm = f16x2(wb);
            let (d, dmin) = (
                _mm256_broadcastss_ps(dm),
                _mm256_broadcastss_ps(_mm_movehdup_ps(dm)),
            );
            let s = std::slice::from_raw_parts(wb.add(4), 12);
            let mut sc = [0i16; 8];
            let mut mn = [0i16; 8];
            for j in 0..8 {
                let (x, m) = super::scalar::scale_min_k4(j, s);
                sc[j] = x as i16;
                mn[j] = m as i16;
            }
            let sc = _mm_loadu_si128(sc.as_ptr() as *const __m128i);
            let sc = _mm256_broadcastsi128_si256(sc);
            // Each min covers two 16-element groups of the activation sums.
            let mn = _mm_loadu_si128(mn.as_ptr() as *const __m128i);
            let mn = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));

            let mut isum = [_mm256_setzero_si256(); NT];
            for c in 0..4 {
                let raw = load256(wb.add(16 + 32 * c));
                let lo = _mm256_and_si256(raw, low4);
                let hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
                let (slo, shi) = (
                    splat_i16(sc, 2 * c as i32, 2 * c as i32),
                    splat_i16(sc, 2 * c as i32 + 1, 2 * c as i32 + 1),
                );
                for t in 0..NT {
                    let q = a[t].add(b * 292 + 4 + 64 * c);
                    let plo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load256(q)), slo);
                    let phi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load256(q.add(32))), shi);
                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(plo, phi));
                }
            }
            for t in 0..NT {
                let (da, _, bsums) = q8k(a[t], b);
                acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(isum[t]), acc[t]);
                let msum = _mm256_madd_epi16(bsums, mn);
                macc[t] =
                    _mm256_fmadd_ps(_mm256_mul_ps(dmin, da), _mm256_cvtepi32_ps(msum), macc[t]);
            }
        }
        let mut out = [0f32; NT];
        for t in 0..NT {
            out[t] = hsum(acc[t]) - hsum(macc[t]);
        }
        out
    }
}

struct Q6K;
impl Kernel for Q6K {
    const GROUP: usize = 4;
    unsafe fn prepare(_: usize, _: *const u8, _: &mut [f32]) {}

    #[inline(always)]
    unsafe fn row<D: Dot, const NT: usize, const INLINE: bool>(
        n: usize,
        w: *const u8,
        a: [*const u8; NT],
        _: [*const f32; NT],
    ) -> [f32; NT] {
        let mut acc = [_mm256_setzero_ps(); NT];
        let low4 = _mm256_set1_epi8(0x0f);
        let two = _mm256_set1_epi8(0x03);
        for b in 0..n / 256 {
            let wb = w.add(b * 210);
            // d is the block's last two bytes; read them as the high half of
            // a four-byte load that stays inside the block.
            let d = _mm256_broadcastss_ps(_mm_movehdup_ps(f16x2(wb.add(206))));
            // 16 signed scales, one per 16 elements.
            let sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(wb.add(192) as *const __m128i));
            let mut isum = [_mm256_setzero_si256(); NT];
            for h in 0..2 {
                let ql0 = load256(wb.add(64 * h));
                let ql1 = load256(wb.add(64 * h + 32));
                let qh = load256(wb.add(128 + 32 * h));
                // The 6-bit codes (0..63) of the four 32-element quarters; the
                // 16-bit shifts cannot carry between bytes after the masks.
                let q = [
                    _mm256_or_si256(
                        _mm256_and_si256(ql0, low4),
                        _mm256_slli_epi16(_mm256_and_si256(qh, two), 4),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(ql1, low4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two), 4),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two), 4),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two), 4),
                    ),
                ];
                // This half's eight scales in both 128-bit lanes.
                let sch = if h == 0 {
                    _mm256_permute2x128_si256(sc, sc, 0x00)
                } else {
                    _mm256_permute2x128_si256(sc, sc, 0x11)
                };
                for (k, &qk) in q.iter().enumerate() {
                    // Quarter k holds groups 2k (low lane) and 2k + 1 (high).
                    let s = splat_i16(sch, 2 * k as i32, 2 * k as i32 + 1);
                    for t in 0..NT {
                        let qa = load256(a[t].add(b * 292 + 4 + 128 * h + 32 * k));
                        let p = _mm256_madd_epi16(_mm256_maddubs_epi16(qk, qa), s);
                        isum[t] = _mm256_add_epi32(isum[t], p);
                    }
                }
            }
            for t in 0..NT {
                let (da, _, bsums) = q8k(a[t], b);
                // The codes are offset by 32: subtract 32 * sum(scale * group sum).
                let offset = _mm256_slli_epi32(_mm256_madd_epi16(bsums, sc), 5);
                let total = _mm256_sub_epi32(isum[t], offset);
                acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, da), _mm256_cvtepi32_ps(total), acc[t]);
            }
        }
        let mut out = [0f32; NT];
        for t in 0..NT {
            out[t] = hsum(acc[t]);
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Float formats: weights and activations in the same type, f32 accumulation.

trait FloatLoad {
    const BYTES: usize;
    /// Eight elements starting at `p`, widened to f32.
    unsafe fn load8(p: *const u8) -> __m256;
    unsafe fn one(p: *const u8) -> f32;
}

struct F32;
struct F16;
struct Bf16;

impl FloatLoad for F32 {
    const BYTES: usize = 4;
    #[inline(always)]
    unsafe fn load8(p: *const u8) -> __m256 {
        _mm256_loadu_ps(p as *const f32)
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        (p as *const f32).read_unaligned()
    }
}

impl FloatLoad for F16 {
    const BYTES: usize = 2;
    #[inline(always)]
    unsafe fn load8(p: *const u8) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        super::scalar::f16_to_f32((p as *const u16).read_unaligned())
    }
}

impl FloatLoad for Bf16 {
    const BYTES: usize = 2;
    /// bf16 is the top half of an f32: widen and shift into place.
    #[inline(always)]
    unsafe fn load8(p: *const u8) -> __m256 {
        let wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(p as *const __m128i));
        _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16))
    }
    #[inline(always)]
    unsafe fn one(p: *const u8) -> f32 {
        super::scalar::bf16_to_f32((p as *const u16).read_unaligned())
    }
}

struct Float<L>(std::marker::PhantomData<L>);

impl<L: FloatLoad> Kernel for Float<L> {
    const GROUP: usize = 2;
    unsafe fn prepare(_: usize, _: *const u8, _: &mut [f32]) {}
    #[inline(always)]
    unsafe fn row<D: Dot, const NT: usize, const INLINE: bool>(
        n: usize,
        w: *const u8,
        a: [*const u8; NT],
        _: [*const f32; NT],
    ) -> [f32; NT] {
        // Four independent accumulators per token hide the FMA latency.
        let mut acc = [[_mm256_setzero_ps(); 4]; NT];
        let mut i = 0;
        while i + 32 <= n {
            let mut wv = [_mm256_setzero_ps(); 4];
            for (k, v) in wv.iter_mut().enumerate() {
                *v = L::load8(w.add((i + 8 * k) * L::BYTES));
            }
            for t in 0..NT {
                for k in 0..4 {
                    let av = L::load8(a[t].add((i + 8 * k) * L::BYTES));
                    acc[t][k] = _mm256_fmadd_ps(wv[k], av, acc[t][k]);
                }
            }
            i += 32;
        }
        while i + 8 <= n {
            let wv = L::load8(w.add(i * L::BYTES));
            for t in 0..NT {
                acc[t][0] = _mm256_fmadd_ps(wv, L::load8(a[t].add(i * L::BYTES)), acc[t][0]);
            }
            i += 8;
        }
        let mut out = [0f32; NT];
        for t in 0..NT {
            let [a0, a1, a2, a3] = acc[t];
            let mut s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
            for j in i..n {
                s += L::one(w.add(j * L::BYTES)) * L::one(a[t].add(j * L::BYTES));
            }
            out[t] = s;
        }
        out
    }
}

/// Runs `work` with F16C rounding, which rounds to nearest even exactly as
/// the portable conversion does, when the level has AVX2 (and so F16C);
/// hands `work` back otherwise.
pub(super) fn with_round_f16<W: super::WithRoundF16>(work: W) -> Result<W::Out, W> {
    if level() == Level::Scalar {
        return Err(work);
    }
    // SAFETY: the level check found AVX2 and F16C.
    Ok(unsafe { with_f16c(work) })
}

/// `work`'s loops compiled with F16C, so that `round` inlines into them.
#[target_feature(enable = "avx2,f16c")]
unsafe fn with_f16c<W: super::WithRoundF16>(work: W) -> W::Out {
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    unsafe fn round(x: &mut [f32]) {
        let mut chunks = x.chunks_exact_mut(8);
        for c in &mut chunks {
            let v = _mm256_loadu_ps(c.as_ptr());
            let r = _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v));
            _mm256_storeu_ps(c.as_mut_ptr(), r);
        }
        super::scalar::round_f16_in_place(chunks.into_remainder());
    }
    // SAFETY: our caller checked the features `round` enables.
    work.run(|x: &mut [f32]| unsafe { round(x) })
}

/// Encodes activations into Q8_0, Q8_1 or F16 with exactly the scalar
/// code's results; `false` for other types or CPUs without AVX2.
pub(super) fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> bool {
    if level() == Level::Scalar || !matches!(ty, GgmlType::Q8_0 | GgmlType::Q8_1 | GgmlType::F16) {
        return false;
    }
    // SAFETY: the level check found AVX2, FMA and F16C; the kernels only
    // touch whole blocks present in both slices.
    unsafe { quantize_avx2(ty, src, dst) }
    true
}

#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn quantize_avx2(ty: GgmlType, src: &[f32], dst: &mut [u8]) {
    if ty == GgmlType::F16 {
        let mut chunks = src.chunks_exact(8);
        let mut out = dst.chunks_exact_mut(16);
        for (x, o) in (&mut chunks).zip(&mut out) {
            let h = _mm256_cvtps_ph(_mm256_loadu_ps(x.as_ptr()), _MM_FROUND_TO_NEAREST_INT);
            _mm_storeu_si128(o.as_mut_ptr() as *mut __m128i, h);
        }
        let done = src.len() / 8 * 8;
        let tail = (done * 2).min(dst.len());
        super::scalar::quantize_row(ty, &src[done..], &mut dst[tail..]);
        return;
    }
    let (bb, qs_at) = if ty == GgmlType::Q8_0 {
        (34, 2)
    } else {
        (36, 4)
    };
    let sign = _mm256_set1_ps(-0.0);
    let half = _mm256_set1_ps(0.5);
    for (x, blk) in src.chunks_exact(32).zip(dst.chunks_exact_mut(bb)) {
        let p = x.as_ptr();
        let v = [
            _mm256_loadu_ps(p),
            _mm256_loadu_ps(p.add(8)),
            _mm256_loadu_ps(p.add(16)),
            _mm256_loadu_ps(p.add(24)),
        ];
        let mut m = _mm256_max_ps(
            _mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
            _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])),
        );
        m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
        m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, 0b01_00_11_10));
        m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, 0b10_11_00_01));
        let amax = _mm256_cvtss_f32(m);
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        // roundf: truncate, then step away from zero when the exact
        // remainder is at least one half (masks are -1, hence the signs).
        let mut q = [_mm256_setzero_si256(); 4];
        for (qk, &vk) in q.iter_mut().zip(&v) {
            let y = _mm256_mul_ps(vk, id);
            let t = _mm256_cvttps_epi32(y);
            let f = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
            let up = _mm256_castps_si256(_mm256_cmp_ps(f, half, _CMP_GE_OQ));
            let down = _mm256_castps_si256(_mm256_cmp_ps(
                f,
                _mm256_sub_ps(_mm256_setzero_ps(), half),
                _CMP_LE_OQ,
            ));
            *qk = _mm256_add_epi32(_mm256_sub_epi32(t, up), down);
        }
        // Packing works within 128-bit lanes; the permute restores order.
        let p = _mm256_packs_epi16(
            _mm256_packs_epi32(q[0], q[1]),
            _mm256_packs_epi32(q[2], q[3]),
        );
        let p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(blk.as_mut_ptr().add(qs_at) as *mut __m256i, p);
        let d16 = _mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT);
        blk[0..2].copy_from_slice(&(_mm_extract_epi16(d16, 0) as u16).to_le_bytes());
        if ty == GgmlType::Q8_1 {
            let s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b01_00_11_10));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0b10_11_00_01));
            let sum = _mm_cvtsi128_si32(s) as f32 * d;
            let s16 = _mm_cvtps_ph(_mm_set_ss(sum), _MM_FROUND_TO_NEAREST_INT);
            blk[2..4].copy_from_slice(&(_mm_extract_epi16(s16, 0) as u16).to_le_bytes());
        }
    }
}
