//! ggml block formats: sizes, decoding, activation encoding and dot products.
//!
//! The numerics follow ggml's CPU backend so that logits agree closely with
//! llama.cpp: a weight row is never decoded to f32 for a matrix product;
//! instead the activation row is encoded into the weight type's companion
//! format ([`GgmlType::vec_dot_type`]: Q8_0, Q8_1 or Q8_K, rounded exactly
//! like ggml's reference quantizers) and the two are combined block by block
//! with exact integer dot products, scaled and summed in f32.
//!
//! Typical use for `y = W x` with W of `rows x n` elements of type `ty`:
//! encode x once with [`quantize_row`]`(ty.vec_dot_type(), x, buf)`, then call
//! [`gemm`] on any range of rows (one token, or a prefill batch of tokens).
//! [`vec_dot`] is the one-row, one-token form. Both give bit-identical results.
//!
//! Layout of this module:
//! - [`scalar`]: portable reference code for every format. It is the oracle
//!   the SIMD paths are tested against and the fallback on every target.
//! - `x86`: AVX2 kernels (with AVX-VNNI or AVX512-VNNI dot products where
//!   present), chosen once at run time, for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
//!   IQ4_NL, Q4_K, Q6_K, F32, F16 and BF16 weights and for encoding Q8_0,
//!   Q8_1 and F16 activations. The environment variable `WEBGGUF_SIMD`
//!   (`scalar`, `avx2`, `avxvnni`) caps the level, for benchmarks.
//!
//! - `wasm`: wasm32 simd128 kernels, compiled in when the build enables
//!   `simd128`, for the same weight formats plus Q8_1, Q5_K, and for
//!   encoding Q8_0, Q8_1 and F16 activations. Their results are bitwise
//!   equal to the scalar code's (see the module's notes).
//!
//! Each fast path declines types it does not handle and the scalar code
//! takes over. [`with_round_f16`] and [`round_f16`] give the CPU engine's
//! attention its bulk f16 rounding on the same terms.
//!
//! Every function takes slices whose lengths the caller has validated against
//! `n` (see each function's precondition). Lengths are checked with
//! `debug_assert!`; in release builds too-short slices never cause
//! out-of-bounds access, the work is merely truncated to the whole blocks
//! present. Nothing panics on the contents of the bytes.

pub mod scalar;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod wasm;
#[cfg(target_arch = "x86_64")]
mod x86;

/// Elements per block of the 32-wide formats (Q4_0 ... Q8_1, IQ4_NL).
pub const QK32: usize = 32;
/// Elements per super-block of the K-quants and IQ4_XS.
pub const QK_K: usize = 256;

/// The non-linear 4-bit code book shared by IQ4_NL and IQ4_XS.
pub const IQ4_NL_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// A tensor element format, numbered as ggml numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ4_NL,
    IQ4_XS,
}

impl GgmlType {
    /// Every type this module knows, in ggml id order.
    pub const ALL: [GgmlType; 17] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::IQ4_NL,
        GgmlType::IQ4_XS,
        GgmlType::BF16,
    ];

    /// The type with ggml id `id`, or `None` for ids we do not support
    /// (including removed and not-yet-implemented ggml types).
    pub fn from_id(id: u32) -> Option<GgmlType> {
        Self::ALL.iter().copied().find(|t| t.id() == id)
    }

    /// ggml's numeric id, as stored in GGUF tensor infos.
    pub fn id(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_0 => 2,
            GgmlType::Q4_1 => 3,
            GgmlType::Q5_0 => 6,
            GgmlType::Q5_1 => 7,
            GgmlType::Q8_0 => 8,
            GgmlType::Q8_1 => 9,
            GgmlType::Q2_K => 10,
            GgmlType::Q3_K => 11,
            GgmlType::Q4_K => 12,
            GgmlType::Q5_K => 13,
            GgmlType::Q6_K => 14,
            GgmlType::Q8_K => 15,
            GgmlType::IQ4_NL => 20,
            GgmlType::IQ4_XS => 23,
            GgmlType::BF16 => 30,
        }
    }

    /// ggml's name for the type.
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::BF16 => "BF16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q8_1 => "Q8_1",
            GgmlType::Q2_K => "Q2_K",
            GgmlType::Q3_K => "Q3_K",
            GgmlType::Q4_K => "Q4_K",
            GgmlType::Q5_K => "Q5_K",
            GgmlType::Q6_K => "Q6_K",
            GgmlType::Q8_K => "Q8_K",
            GgmlType::IQ4_NL => "IQ4_NL",
            GgmlType::IQ4_XS => "IQ4_XS",
        }
    }

    /// Elements per block (1 for the plain float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => 1,
            GgmlType::Q4_0
            | GgmlType::Q4_1
            | GgmlType::Q5_0
            | GgmlType::Q5_1
            | GgmlType::Q8_0
            | GgmlType::Q8_1
            | GgmlType::IQ4_NL => QK32,
            GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::Q8_K
            | GgmlType::IQ4_XS => QK_K,
        }
    }

    /// Bytes per block; equal to `sizeof(block_xxx)` in ggml.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 | GgmlType::BF16 => 2,
            GgmlType::Q4_0 | GgmlType::IQ4_NL => 18,
            GgmlType::Q4_1 => 20,
            GgmlType::Q5_0 => 22,
            GgmlType::Q5_1 => 24,
            GgmlType::Q8_0 => 34,
            GgmlType::Q8_1 => 36,
            GgmlType::Q2_K => 84,
            GgmlType::Q3_K => 110,
            GgmlType::Q4_K => 144,
            GgmlType::Q5_K => 176,
            GgmlType::Q6_K => 210,
            GgmlType::Q8_K => 292,
            GgmlType::IQ4_XS => 136,
        }
    }

    /// Bytes taken by `n` elements, or `None` if `n` is not a whole number of
    /// blocks or the size overflows `usize`.
    pub fn row_bytes(self, n: usize) -> Option<usize> {
        if !n.is_multiple_of(self.block_len()) {
            return None;
        }
        (n / self.block_len()).checked_mul(self.block_bytes())
    }

    /// The format activations are encoded in before [`vec_dot`] with weights
    /// of this type; the same pairing ggml-cpu uses.
    pub fn vec_dot_type(self) -> GgmlType {
        match self {
            GgmlType::F32 => GgmlType::F32,
            GgmlType::F16 => GgmlType::F16,
            GgmlType::BF16 => GgmlType::BF16,
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL => GgmlType::Q8_0,
            GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q8_1 => GgmlType::Q8_1,
            GgmlType::Q2_K
            | GgmlType::Q3_K
            | GgmlType::Q4_K
            | GgmlType::Q5_K
            | GgmlType::Q6_K
            | GgmlType::Q8_K
            | GgmlType::IQ4_XS => GgmlType::Q8_K,
        }
    }

    /// Whether [`quantize_row`] can encode into this type.
    pub fn can_quantize(self) -> bool {
        matches!(
            self,
            GgmlType::F32
                | GgmlType::F16
                | GgmlType::BF16
                | GgmlType::Q4_0
                | GgmlType::Q4_1
                | GgmlType::Q5_0
                | GgmlType::Q5_1
                | GgmlType::Q8_0
                | GgmlType::Q8_1
                | GgmlType::Q8_K
        )
    }
}

impl std::fmt::Display for GgmlType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Decode `dst.len()` elements (a multiple of `ty.block_len()`) from `src`,
/// which holds `ty.row_bytes(dst.len())` bytes. Every type is supported.
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) {
    scalar::dequantize_row(ty, src, dst)
}

/// Encode `src` (a multiple of `ty.block_len()` elements) into `dst`
/// (`ty.row_bytes(src.len())` bytes), rounding like ggml's reference
/// quantizers. Returns `false`, leaving `dst` untouched, for the weight types
/// that need ggml's search-based quantizers (K-quants, IQ4_*); see
/// [`GgmlType::can_quantize`].
pub fn quantize_row(ty: GgmlType, src: &[f32], dst: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if x86::quantize_row(ty, src, dst) {
        return true;
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if wasm::quantize_row(ty, src, dst) {
        return true;
    }
    scalar::quantize_row(ty, src, dst)
}

/// Dot product of one weight row (type `ty`, `n` elements, `ty.row_bytes(n)`
/// bytes) with one activation row encoded in `ty.vec_dot_type()`
/// (`ty.vec_dot_type().row_bytes(n)` bytes). Every type is accepted, even
/// Q8_1 and Q8_K, which ggml only uses for activations.
pub fn vec_dot(ty: GgmlType, n: usize, w: &[u8], act: &[u8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(v) = x86::vec_dot(ty, n, w, act) {
        return v;
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if let Some(v) = wasm::vec_dot(ty, n, w, act) {
        return v;
    }
    scalar::vec_dot(ty, n, w, act)
}

/// Many dot products at once, for prefill and for whole matrix-vector
/// products: `w` holds `rows = out.len() / ntok` consecutive weight rows of
/// `n` elements, `act` holds `ntok` consecutive activation rows, each
/// `ty.vec_dot_type().row_bytes(n)` bytes. Writes
/// `out[r * ntok + t] = vec_dot(row r, activation t)`, bit-identical to
/// [`vec_dot`].
///
/// Prefer it to a loop of `vec_dot` calls even for one token: it decodes the
/// activation scales once per call, and unpacks each weight block once for up
/// to four tokens. Threads may call it concurrently (e.g. on disjoint row
/// ranges, each with its own `out`); its scratch space is per thread.
pub fn gemm(ty: GgmlType, n: usize, w: &[u8], act: &[u8], ntok: usize, out: &mut [f32]) {
    debug_assert!(
        ntok > 0 && out.len().is_multiple_of(ntok),
        "out.len() must be rows * ntok"
    );
    #[cfg(target_arch = "x86_64")]
    if x86::gemm(ty, n, w, act, ntok, out) {
        return;
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if wasm::gemm(ty, n, w, act, ntok, out) {
        return;
    }
    scalar::gemm(ty, n, w, act, ntok, out)
}

/// Which instruction set the fast paths use on this machine, for logs and
/// benchmarks.
pub fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        x86::level_name()
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        wasm::level_name()
    }
    #[cfg(not(any(
        target_arch = "x86_64",
        all(target_arch = "wasm32", target_feature = "simd128")
    )))]
    {
        "scalar"
    }
}

/// Work that rounds f32 values to f16 precision in bulk (the CPU engine's
/// attention): [`with_round_f16`] hands it the fastest rounding function
/// this CPU has, called from a function compiled for the same instruction
/// set so that the rounding inlines into the work's loops.
pub trait WithRoundF16 {
    type Out;
    /// `round(x)` replaces each element of `x` by the nearest f16 value
    /// (ties to even, overflow to infinity, NaNs kept), widened back to f32:
    /// what `half`'s conversions there and back give, bit for bit.
    fn run<R: Fn(&mut [f32]) + Copy>(self, round: R) -> Self::Out;
}

/// Runs `work` with the best f16 rounding: F16C on x86_64 CPUs with AVX2,
/// simd128 on wasm32 builds with it, else `half`'s portable conversions.
pub fn with_round_f16<W: WithRoundF16>(work: W) -> W::Out {
    #[cfg(target_arch = "x86_64")]
    let work = match x86::with_round_f16(work) {
        Ok(out) => return out,
        Err(work) => work,
    };
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        work.run(wasm::round_f16_in_place)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        work.run(scalar::round_f16_in_place)
    }
}

/// `x` rounded to f16 precision in place; see [`WithRoundF16::run`].
pub fn round_f16_in_place(x: &mut [f32]) {
    struct Once<'a>(&'a mut [f32]);
    impl WithRoundF16 for Once<'_> {
        type Out = ();
        #[inline(always)]
        fn run<R: Fn(&mut [f32]) + Copy>(self, round: R) {
            round(self.0)
        }
    }
    with_round_f16(Once(x))
}

/// Dot product of two f32 rows of a multiple of 16 elements, summed the way
/// ggml's 16-lane SIMD loops sum (the CPU attention's Q·K): lane `l` adds
/// the products of elements `l`, `l + 16`, ... in order, then the lanes are
/// folded in halves (8, 4, 2, 1). Bit for bit the same on every target.
pub fn dot_f32_lanes16(a: &[f32], b: &[f32]) -> f32 {
    debug_assert!(a.len() == b.len() && a.len().is_multiple_of(16));
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        wasm::dot_f32_lanes16(a, b)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        scalar::dot_f32_lanes16(a, b)
    }
}

/// The values where a rounding to f16 can go wrong: for every finite f16
/// h below the largest (the subnormals included), h itself, the midpoint
/// to the next f16 (exact in f32) and the f32s either side of that
/// midpoint, in both signs (253,944 values). The GPU's load-time check of
/// its f16 conversion (gpu::probe) and the f16 rounding tests start from
/// these.
pub fn f16_boundary_values() -> Vec<f32> {
    let mut xs = Vec::with_capacity(8 * 0x7bff);
    for h in 0..0x7bffu16 {
        let v = half::f16::from_bits(h).to_f32();
        let next = half::f16::from_bits(h + 1).to_f32();
        let mid = (v + next) / 2.0;
        for x in [
            v,
            mid,
            f32::from_bits(mid.to_bits() + 1),
            f32::from_bits(mid.to_bits() - 1),
        ] {
            xs.extend([x, -x]);
        }
    }
    xs
}

/// `out = x` rounded to f16 precision; `out` and `x` have the same length.
pub fn round_f16(x: &[f32], out: &mut [f32]) {
    out.copy_from_slice(x);
    round_f16_in_place(out)
}

/// Whole blocks present in a row of `n` elements, additionally clamped to
/// what the slices hold so that a too-short slice truncates instead of
/// reading out of bounds.
#[inline]
pub(crate) fn whole_blocks(
    n: usize,
    qk: usize,
    w: &[u8],
    wbb: usize,
    a: &[u8],
    abb: usize,
) -> usize {
    debug_assert_eq!(n % qk, 0, "row length {n} is not a multiple of {qk}");
    debug_assert!(w.len() >= n / qk * wbb, "weight row too short");
    debug_assert!(a.len() >= n / qk * abb, "activation row too short");
    (n / qk).min(w.len() / wbb).min(a.len() / abb)
}
