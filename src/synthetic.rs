//! Random-weight GGUF files of a named model shape (llama or gemma3
//! layout), built in memory.
//!
//! Benchmarks need models of real sizes in every weight format, but the
//! checkpoints themselves are large downloads and exist only in some
//! formats. Speed does not depend on the weight values, so a file with the
//! right shape, a valid tokenizer and small random weights measures the
//! same thing. The bytes go through the ordinary parser and loaders, so a
//! synthetic model exercises exactly the paths a downloaded one does.

use gguf_rs_lib::format::types::GGUFValueType;

use crate::error::{Error, Result};
use crate::gguf::write::{self, Writer};
use crate::gguf::Value;
use crate::quant::{self, GgmlType};

/// The hyperparameters that decide a model's size and cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub name: &'static str,
    /// `general.architecture`: "llama", or "gemma3" (q/k norms, post-norms,
    /// GELU, sliding window on 5 of 6 layers; see arch.rs).
    pub arch: &'static str,
    pub dim: usize,
    pub n_layers: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub ffn_dim: usize,
    pub vocab: usize,
    /// No `output.weight`: the LM head reuses `token_embd.weight`.
    pub tied: bool,
    pub rope_base: f32,
    pub context: usize,
    /// Head size when it is not dim / heads (written as key_length); 0: dim / heads.
    pub head_dim: usize,
    /// gemma3's sliding window (0 for llama).
    pub window: usize,
}

pub const SMOLLM2_135M: Shape = Shape {
    name: "smollm2-135m",
    arch: "llama",
    dim: 576,
    n_layers: 30,
    n_heads: 9,
    n_kv_heads: 3,
    ffn_dim: 1536,
    vocab: 49152,
    tied: true,
    rope_base: 100000.0,
    context: 8192,
    head_dim: 0,
    window: 0,
};

pub const TINYLLAMA_1_1B: Shape = Shape {
    name: "tinyllama-1.1b",
    arch: "llama",
    dim: 2048,
    n_layers: 22,
    n_heads: 32,
    n_kv_heads: 4,
    ffn_dim: 5632,
    vocab: 32000,
    tied: false,
    rope_base: 10000.0,
    context: 2048,
    head_dim: 0,
    window: 0,
};

/// Gemma 3 270M's shape (its real file is Q4_K_M; see ../shared/README.md).
pub const GEMMA3_270M: Shape = Shape {
    name: "gemma3-270m",
    arch: "gemma3",
    dim: 640,
    n_layers: 18,
    n_heads: 4,
    n_kv_heads: 1,
    ffn_dim: 2048,
    vocab: 262144,
    tied: true,
    rope_base: 1000000.0,
    context: 32768,
    head_dim: 256,
    window: 512,
};

/// Llama 3.2 1B's shape (tied LM head, as its release; no rope scaling):
/// the smaller of issue 12's two side-by-side shapes.
pub const LLAMA32_1B: Shape = Shape {
    name: "llama-3.2-1b",
    arch: "llama",
    dim: 2048,
    n_layers: 16,
    n_heads: 32,
    n_kv_heads: 8,
    ffn_dim: 8192,
    vocab: 128256,
    tied: true,
    rope_base: 500000.0,
    context: 131072,
    head_dim: 0,
    window: 0,
};

/// Llama 3.1 8B's shape (no rope scaling: speed does not depend on it),
/// the size issue 12's bandwidth goals are stated for.
pub const LLAMA31_8B: Shape = Shape {
    name: "llama-3.1-8b",
    arch: "llama",
    dim: 4096,
    n_layers: 32,
    n_heads: 32,
    n_kv_heads: 8,
    ffn_dim: 14336,
    vocab: 128256,
    tied: false,
    rope_base: 500000.0,
    context: 131072,
    head_dim: 0,
    window: 0,
};

pub const PRESETS: [Shape; 5] = [
    SMOLLM2_135M,
    TINYLLAMA_1_1B,
    GEMMA3_270M,
    LLAMA32_1B,
    LLAMA31_8B,
];

/// Tokens every synthetic vocabulary starts with: `<unk>`, `<s>`, `</s>`
/// and the 256 byte tokens SPM falls back to.
const FIXED_TOKENS: usize = 3 + 256;

/// Weight formats a synthetic model can be written in: those `quantize_row`
/// encodes without a search, and those written as random bits
/// (`RANDOM_BITS`).
pub const TYPES: [GgmlType; 15] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
];

/// Formats with no encoder here (the K-quants' and the IQ4 formats' need
/// a search): weights are random quant bits with small random f16 scales at
/// `scale_fields`, which decode to finite values of about unit size;
/// speed does not depend on the values.
const RANDOM_BITS: [GgmlType; 7] = [
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
];

/// Byte offsets of the f16 scales in one block of a `RANDOM_BITS` format.
fn scale_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q2_K => &[80, 82],
        GgmlType::Q3_K => &[108],
        GgmlType::Q6_K => &[208],
        GgmlType::IQ4_NL | GgmlType::IQ4_XS => &[0],
        _ => &[0, 2],
    }
}

/// Parse `PRESET:TYPE`, e.g. `smollm2-135m:Q4_0`.
pub fn parse_spec(spec: &str) -> Result<(Shape, GgmlType)> {
    let (preset, ty) = spec.split_once(':').ok_or_else(|| {
        Error::InvalidArgument(format!("synthetic model '{spec}' is not PRESET:TYPE"))
    })?;
    let shape = PRESETS
        .iter()
        .find(|s| s.name.eq_ignore_ascii_case(preset))
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|s| s.name).collect();
            Error::InvalidArgument(format!(
                "unknown synthetic preset '{preset}' (known: {})",
                names.join(", ")
            ))
        })?;
    let ty = TYPES
        .iter()
        .find(|t| t.name().eq_ignore_ascii_case(ty))
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = TYPES.iter().map(|t| t.name()).collect();
            Error::InvalidArgument(format!(
                "synthetic weights cannot be '{ty}' (possible: {})",
                names.join(", ")
            ))
        })?;
    Ok((shape, ty))
}

enum Meta {
    U32(u32),
    F32(f32),
    Bool(bool),
    Str(String),
    Strs(Vec<String>),
    F32s(Vec<f32>),
    I32s(Vec<i32>),
}

/// How a tensor's values are drawn.
#[derive(Clone, Copy)]
enum Fill {
    /// Centred, std 0.02: keeps activations finite through every layer.
    /// Rows are windows of a shared pool, see [`POOL`].
    Weight,
    /// Around 1.0, like trained RMSNorm gains.
    Norm,
}

struct Planned {
    name: String,
    ty: GgmlType,
    /// ggml order: the row length first.
    dims: Vec<usize>,
    fill: Fill,
    /// In the data section, which may be larger than the address space
    /// (`file_bytes`; `build` holds the file in memory, so checks it).
    offset: u64,
    bytes: usize,
}

impl Meta {
    fn value(self) -> Value {
        match self {
            Meta::U32(x) => Value::U32(x),
            Meta::F32(x) => Value::F32(x),
            Meta::Bool(x) => Value::Bool(x),
            Meta::Str(x) => Value::String(x),
            Meta::Strs(a) => write::array(
                GGUFValueType::String,
                a.into_iter().map(Value::String).collect(),
            ),
            Meta::F32s(a) => {
                write::array(GGUFValueType::F32, a.into_iter().map(Value::F32).collect())
            }
            Meta::I32s(a) => {
                write::array(GGUFValueType::I32, a.into_iter().map(Value::I32).collect())
            }
        }
    }
}

impl Shape {
    pub fn head_dim(&self) -> usize {
        match self.head_dim {
            0 => self.dim / self.n_heads.max(1),
            hd => hd,
        }
    }

    fn gemma(&self) -> bool {
        self.arch == "gemma3"
    }

    fn check(&self, ty: GgmlType) -> Result<()> {
        let bad = |why: String| {
            Err(Error::InvalidArgument(format!(
                "shape {}: {why}",
                self.name
            )))
        };
        if self.dim == 0 || self.n_layers == 0 || self.ffn_dim == 0 || self.n_heads == 0 {
            return bad("every size must be positive".into());
        }
        if self.n_kv_heads == 0 || !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return bad("KV heads must divide heads".into());
        }
        if !matches!(self.arch, "llama" | "gemma3") {
            return bad(format!("architecture {} is not written", self.arch));
        }
        let derived = self.head_dim == 0 && !self.dim.is_multiple_of(self.n_heads);
        if derived || !self.head_dim().is_multiple_of(2) {
            return bad("dim must split into heads of even size".into());
        }
        if self.vocab < FIXED_TOKENS {
            return bad(format!(
                "the vocabulary needs at least {FIXED_TOKENS} tokens"
            ));
        }
        let block = ty.block_len();
        for n in [self.dim, self.ffn_dim] {
            if n % block != 0 {
                return bad(format!("{n} is not a multiple of {ty}'s block of {block}"));
            }
        }
        Ok(())
    }

    fn metadata(&self, ty: GgmlType) -> Vec<(String, Meta)> {
        let arch = self.arch;
        let a = |k: &str| format!("{arch}.{k}");
        let mut tokens: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
        tokens.extend((0..=255u8).map(|b| format!("<0x{b:02X}>")));
        // Filler pieces are distinct words so that the vocabulary has no
        // duplicates and encoding real text exercises merges.
        tokens.extend((FIXED_TOKENS..self.vocab).map(|i| format!("\u{2581}w{i}")));
        let mut scores = vec![0.0f32; FIXED_TOKENS];
        scores.extend((FIXED_TOKENS..self.vocab).map(|i| -(i as f32)));
        // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte.
        let mut types = vec![2i32, 3, 3];
        types.extend(std::iter::repeat_n(6, 256));
        types.extend(std::iter::repeat_n(1, self.vocab - FIXED_TOKENS));
        let mut meta = vec![
            ("general.architecture".into(), Meta::Str(arch.into())),
            (
                "general.name".into(),
                Meta::Str(format!("synthetic {} {}", self.name, ty.name())),
            ),
            (
                "general.alignment".into(),
                Meta::U32(write::DEFAULT_ALIGNMENT as u32),
            ),
            (a("context_length"), Meta::U32(self.context as u32)),
            (a("embedding_length"), Meta::U32(self.dim as u32)),
            (a("block_count"), Meta::U32(self.n_layers as u32)),
            (a("feed_forward_length"), Meta::U32(self.ffn_dim as u32)),
            (a("attention.head_count"), Meta::U32(self.n_heads as u32)),
            (
                a("attention.head_count_kv"),
                Meta::U32(self.n_kv_heads as u32),
            ),
            (a("rope.freq_base"), Meta::F32(self.rope_base)),
            (a("rope.dimension_count"), Meta::U32(self.head_dim() as u32)),
            (a("attention.layer_norm_rms_epsilon"), Meta::F32(1e-5)),
            (a("vocab_size"), Meta::U32(self.vocab as u32)),
            ("tokenizer.ggml.model".into(), Meta::Str("llama".into())),
            ("tokenizer.ggml.tokens".into(), Meta::Strs(tokens)),
            ("tokenizer.ggml.scores".into(), Meta::F32s(scores)),
            ("tokenizer.ggml.token_type".into(), Meta::I32s(types)),
            ("tokenizer.ggml.unknown_token_id".into(), Meta::U32(0)),
            ("tokenizer.ggml.bos_token_id".into(), Meta::U32(1)),
            ("tokenizer.ggml.eos_token_id".into(), Meta::U32(2)),
            ("tokenizer.ggml.add_bos_token".into(), Meta::Bool(true)),
            (a("attention.key_length"), Meta::U32(self.head_dim() as u32)),
            (
                a("attention.value_length"),
                Meta::U32(self.head_dim() as u32),
            ),
        ];
        if self.gemma() {
            meta.extend([
                (a("attention.sliding_window"), Meta::U32(self.window as u32)),
                (a("rope.freq_base_swa"), Meta::F32(10000.0)),
            ]);
        }
        meta
    }

    fn tensors(&self, ty: GgmlType) -> Vec<Planned> {
        let hd = self.head_dim();
        let (d, q, kv, ff) = (
            self.dim,
            self.n_heads * hd,
            self.n_kv_heads * hd,
            self.ffn_dim,
        );
        let mut v = Vec::new();
        let mut add = |name: String, ty: GgmlType, dims: Vec<usize>, fill: Fill| {
            v.push(Planned {
                name,
                ty,
                dims,
                fill,
                offset: 0,
                bytes: 0,
            })
        };
        add(
            "token_embd.weight".into(),
            ty,
            vec![d, self.vocab],
            Fill::Weight,
        );
        if !self.tied {
            add(
                "output.weight".into(),
                ty,
                vec![d, self.vocab],
                Fill::Weight,
            );
        }
        add(
            "output_norm.weight".into(),
            GgmlType::F32,
            vec![d],
            Fill::Norm,
        );
        for l in 0..self.n_layers {
            let n = |s: &str| format!("blk.{l}.{s}");
            add(n("attn_norm.weight"), GgmlType::F32, vec![d], Fill::Norm);
            add(n("attn_q.weight"), ty, vec![d, q], Fill::Weight);
            add(n("attn_k.weight"), ty, vec![d, kv], Fill::Weight);
            add(n("attn_v.weight"), ty, vec![d, kv], Fill::Weight);
            add(n("attn_output.weight"), ty, vec![q, d], Fill::Weight);
            add(n("ffn_norm.weight"), GgmlType::F32, vec![d], Fill::Norm);
            add(n("ffn_gate.weight"), ty, vec![d, ff], Fill::Weight);
            add(n("ffn_up.weight"), ty, vec![d, ff], Fill::Weight);
            add(n("ffn_down.weight"), ty, vec![ff, d], Fill::Weight);
            if self.gemma() {
                for norm in ["attn_q_norm", "attn_k_norm"] {
                    add(
                        n(&format!("{norm}.weight")),
                        GgmlType::F32,
                        vec![hd],
                        Fill::Norm,
                    );
                }
                for norm in ["post_attention_norm", "post_ffw_norm"] {
                    add(
                        n(&format!("{norm}.weight")),
                        GgmlType::F32,
                        vec![d],
                        Fill::Norm,
                    );
                }
            }
        }
        v
    }

    /// Size of the file `build` would make, in bytes.
    pub fn file_bytes(&self, ty: GgmlType) -> Result<u64> {
        self.check(ty)?;
        let (header, tensors) = self.layout(ty)?;
        Ok(header.len() as u64 + tensors.last().map_or(0, |t| t.offset + t.bytes as u64))
    }

    /// The header (metadata and tensor records, padded) and where each
    /// tensor's data goes relative to the data section.
    fn layout(&self, ty: GgmlType) -> Result<(Vec<u8>, Vec<Planned>)> {
        let mut w = Writer::new();
        for (k, v) in self.metadata(ty) {
            w.kv(&k, &v.value())?;
        }
        let mut tensors = self.tensors(ty);
        for t in &mut tensors {
            (t.offset, t.bytes) = w.tensor(&t.name, t.ty, &t.dims)?;
        }
        Ok((w.header(), tensors))
    }
}

/// xorshift64*: far faster than the sampler's generator needs to be, and
/// the weights only have to look unstructured.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        // splitmix64 spreads nearby seeds (tensor, row) apart; never zero.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        XorShift((z ^ (z >> 31)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Roughly normal, mean 0, std 1: the sum of four 16-bit uniforms
    /// (Irwin-Hall), one generator step per value.
    fn normal(&mut self) -> f32 {
        let r = self.next();
        let s = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
        // Four uniforms on [0, 65536) have mean 131070 and std 65536/sqrt(3).
        (s as f32 - 131070.0) * (1.732_050_8 / 65536.0)
    }
}

/// Values per weight row are a window of this many precomputed normals at a
/// random start: drawing every value afresh made TinyLlama F16 take 10 s on
/// two cores, and the speed measured does not depend on the values.
const POOL: usize = 1 << 16;

fn fill_rows(t: &Planned, index: usize, first_row: usize, out: &mut [u8], pool: &[f32], seed: u64) {
    let cols = t.dims[0];
    let row_bytes = t.ty.row_bytes(cols).unwrap_or(0);
    if row_bytes == 0 {
        return;
    }
    let mut row = vec![0f32; cols];
    for (r, dst) in out.chunks_exact_mut(row_bytes).enumerate() {
        let mut rng = XorShift::new(seed ^ ((index as u64) << 40) ^ (first_row + r) as u64);
        if matches!(t.fill, Fill::Weight) && RANDOM_BITS.contains(&t.ty) {
            for c in dst.chunks_mut(8) {
                let r = rng.next().to_le_bytes();
                c.copy_from_slice(&r[..c.len()]);
            }
            // Quants times scales reach about 4096 x d: d near 2^-12.
            for blk in dst.chunks_exact_mut(t.ty.block_bytes()) {
                for &at in scale_fields(t.ty) {
                    let d = half::f16::from_f32((1.0 + 0.1 * rng.normal()) / 4096.0);
                    blk[at..at + 2].copy_from_slice(&d.to_bits().to_le_bytes());
                }
            }
            continue;
        }
        let src = match t.fill {
            Fill::Weight => {
                let start = (rng.next() % POOL as u64) as usize;
                &pool[start..start + cols]
            }
            Fill::Norm => {
                row.iter_mut().for_each(|x| *x = 1.0 + 0.1 * rng.normal());
                &row
            }
        };
        quant::quantize_row(t.ty, src, dst);
    }
}

fn zeroed(len: usize) -> Vec<u8> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::native::huge_vec(len)
    }
    #[cfg(target_arch = "wasm32")]
    {
        vec![0; len]
    }
}

/// Build the whole GGUF file for `shape` with weights of type `ty` (norms
/// are F32). The same `seed` gives the same bytes. Rows are drawn and
/// quantized straight into the returned buffer, on every core.
pub fn build(shape: &Shape, ty: GgmlType, seed: u64) -> Result<Vec<u8>> {
    shape.check(ty)?;
    if !TYPES.contains(&ty) {
        return Err(Error::InvalidArgument(format!(
            "synthetic weights cannot be {ty}"
        )));
    }
    let (header, tensors) = shape.layout(ty)?;
    let data_len = tensors.last().map_or(0, |t| t.offset + t.bytes as u64);
    let total = header.len() as u64 + data_len;
    // Built in memory: the file must fit the address space, and then so
    // does every offset in it.
    let total = usize::try_from(total).map_err(|_| {
        Error::Unsupported(format!(
            "a synthetic model of {total} bytes is larger than this platform's address space"
        ))
    })?;
    let mut buf = zeroed(total);
    buf[..header.len()].copy_from_slice(&header);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let widest = tensors.iter().map(|t| t.dims[0]).max().unwrap_or(0);
    let mut rng = XorShift::new(seed);
    let pool: Vec<f32> = (0..POOL + widest).map(|_| 0.02 * rng.normal()).collect();
    let pool = &pool[..];
    let data = &mut buf[header.len()..];
    for (i, t) in tensors.iter().enumerate() {
        let at = t.offset as usize;
        let out = &mut data[at..at + t.bytes];
        let rows: usize = t.dims[1..].iter().product();
        let row_bytes = t.bytes / rows.max(1);
        if threads == 1 || rows < 2 * threads {
            fill_rows(t, i, 0, out, pool, seed);
            continue;
        }
        let per = rows.div_ceil(threads);
        std::thread::scope(|s| {
            for (c, chunk) in out.chunks_mut(per * row_bytes).enumerate() {
                s.spawn(move || fill_rows(t, i, c * per, chunk, pool, seed));
            }
        });
    }
    Ok(buf)
}
