//! Architectures as data. Each supported `general.architecture` has one
//! small function here that reads its GGUF metadata into a `Spec`: what
//! every layer does (norms, rope, window, activation), which tensors it
//! carries, and how they are packed. Both backends walk the same `Spec`,
//! so a new architecture is a new function here plus only the kernels it
//! newly needs.
//!
//! The facts below (which layers slide, which rope a layer uses, where a
//! scale applies) follow llama.cpp's graphs for these architectures, the
//! oracle for every reference in ../shared.

use crate::error::{Error, Result};
use crate::gguf::Gguf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
    Gemma3,
    Phi3,
}

/// Every architecture `Arch::from_name` accepts, for error messages.
pub const SUPPORTED: &[&str] = &["llama", "qwen2", "qwen3", "gemma3", "phi3"];

impl Arch {
    pub fn from_name(name: &str) -> Result<Arch> {
        Ok(match name {
            "llama" => Arch::Llama,
            "qwen2" => Arch::Qwen2,
            "qwen3" => Arch::Qwen3,
            "gemma3" => Arch::Gemma3,
            "phi3" => Arch::Phi3,
            other => return Err(Error::UnknownArchitecture(other.to_string())),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
            Arch::Gemma3 => "gemma3",
            Arch::Phi3 => "phi3",
        }
    }
}

/// How rope pairs up dimensions. llama.cpp's converter permutes llama's Q/K
/// so that adjacent pairs rotate; the others keep HF's halves layout (NEOX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    Adjacent,
    Neox,
}

/// The feed-forward gate's activation: `down · (act(gate · x) * (up · x))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Silu,
    /// GELU, tanh approximation (Gemma).
    GeluTanh,
}

/// What one layer does beyond the common pre-norm block
/// `x += attn(norm(x)); x += ffn(norm(x))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerSpec {
    /// Per-head RMSNorm of q and k before rope (qwen3, gemma3).
    pub qk_norm: bool,
    /// Rope frequency base and linear scale (1 / factor) of this layer:
    /// Gemma 3's sliding layers have their own base and no scaling.
    pub rope_base: f32,
    pub rope_freq_scale: f32,
    /// A query at position p sees keys p - window + 1 ..= p; `None`: all.
    pub window: Option<usize>,
    /// RMSNorm of the attention / FFN output before it joins the residual
    /// (gemma3's `post_attention_norm` and `post_ffw_norm`).
    pub post_attn_norm: bool,
    pub post_ffn_norm: bool,
}

impl LayerSpec {
    /// ggml's per-pair angle step: theta_i = pos * base^(-2i / rope_dim).
    pub fn theta_scale(&self, rope_dim: usize) -> f32 {
        self.rope_base.powf(-2.0 / rope_dim as f32)
    }
}

/// The whole architecture: the per-layer specs plus what is shared.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub arch: Arch,
    pub rope_style: RopeStyle,
    /// Multiplies the token embeddings (gemma3: sqrt(dim)).
    pub embed_scale: Option<f32>,
    /// Multiplies q·k before the softmax.
    pub attn_scale: f32,
    pub activation: Activation,
    /// Q, K and V as row ranges of one `attn_qkv` tensor (phi3).
    pub fused_qkv: bool,
    /// Gate and up as the two halves of one `ffn_up` tensor (phi3).
    pub fused_gate_up: bool,
    pub layers: Vec<LayerSpec>,
}

impl Spec {
    /// One line for `info`: how these layers differ from the llama block.
    pub fn summary(&self) -> String {
        let first = &self.layers[0];
        let global = self
            .layers
            .iter()
            .find(|l| l.window.is_none())
            .unwrap_or(first);
        let mut parts = vec![format!(
            "rope {:?} base {} scale {}",
            self.rope_style, global.rope_base, global.rope_freq_scale
        )];
        let windowed: Vec<&LayerSpec> = self.layers.iter().filter(|l| l.window.is_some()).collect();
        if let Some(l) = windowed.first() {
            parts.push(format!(
                "sliding window {} on {} of {} layers (rope base {})",
                l.window.unwrap_or(0),
                windowed.len(),
                self.layers.len(),
                l.rope_base
            ));
        }
        if first.qk_norm {
            parts.push("q/k norm".into());
        }
        if first.post_attn_norm || first.post_ffn_norm {
            parts.push("post-norms".into());
        }
        parts.push(format!("{:?} FFN", self.activation));
        if self.fused_qkv || self.fused_gate_up {
            parts.push("fused qkv / gate-up".into());
        }
        if let Some(e) = self.embed_scale {
            parts.push(format!("embeddings x {e}"));
        }
        parts.push(format!("attention scale {}", self.attn_scale));
        parts.join(", ")
    }
}

/// The tensor-name table: llama.cpp's GGUF names, shared by every
/// architecture here; which of them a file must carry follows from its
/// `Spec` (see `Weights::from_gguf`).
pub mod tensor {
    pub const TOKEN_EMBD: &str = "token_embd.weight";
    pub const OUTPUT_NORM: &str = "output_norm.weight";
    pub const OUTPUT: &str = "output.weight";
    pub const ROPE_FREQS: &str = "rope_freqs.weight";
    /// Phi-3's long-context rope factors (longrope), which we do not run.
    pub const ROPE_LONG: &str = "rope_factors_long.weight";
    pub const ROPE_SHORT: &str = "rope_factors_short.weight";
    // Per layer, as `blk.{l}.{name}.weight` (or `.bias`).
    pub const ATTN_NORM: &str = "attn_norm";
    pub const Q: &str = "attn_q";
    pub const K: &str = "attn_k";
    pub const V: &str = "attn_v";
    pub const QKV: &str = "attn_qkv";
    pub const Q_NORM: &str = "attn_q_norm";
    pub const K_NORM: &str = "attn_k_norm";
    pub const WO: &str = "attn_output";
    pub const POST_ATTN_NORM: &str = "post_attention_norm";
    pub const FFN_NORM: &str = "ffn_norm";
    pub const GATE: &str = "ffn_gate";
    pub const UP: &str = "ffn_up";
    pub const DOWN: &str = "ffn_down";
    pub const POST_FFN_NORM: &str = "post_ffw_norm";
}

/// What the architecture functions need from the metadata already read
/// into `Config`.
pub struct Shape {
    pub n_layers: usize,
    pub head_dim: usize,
    pub dim: usize,
    pub n_heads: usize,
}

/// Read `g`'s architecture into a `Spec`.
pub fn describe(g: &Gguf, arch: Arch, s: &Shape) -> Result<Spec> {
    let m = Meta { g, arch };
    let spec = match arch {
        Arch::Llama => llama(&m, s)?,
        Arch::Qwen2 => qwen2(&m, s)?,
        Arch::Qwen3 => qwen3(&m, s)?,
        Arch::Gemma3 => gemma3(&m, s)?,
        Arch::Phi3 => phi3(&m, s)?,
    };
    for l in &spec.layers {
        let positive = |v: f32| v.is_finite() && v > 0.0;
        if !(positive(l.rope_base) && positive(l.rope_freq_scale)) {
            return Err(Error::Malformed("rope base or scale is invalid".into()));
        }
    }
    if !(spec.attn_scale.is_finite() && spec.attn_scale > 0.0) {
        return Err(Error::Malformed("attention scale is invalid".into()));
    }
    Ok(spec)
}

/// The keys of one architecture's namespace.
struct Meta<'a> {
    g: &'a Gguf,
    arch: Arch,
}

impl Meta<'_> {
    fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.arch.name())
    }
    fn f32(&self, k: &str) -> Option<f32> {
        self.g.get_f32(&self.key(k))
    }

    /// The linear rope scale (1 / factor) the metadata asks for; any other
    /// scaling type is an error rather than silently ignored.
    fn rope_freq_scale(&self) -> Result<f32> {
        if self.g.tensor(tensor::ROPE_LONG).is_some() || self.g.tensor(tensor::ROPE_SHORT).is_some()
        {
            return Err(Error::Unsupported(
                "rope scaling 'longrope' (rope_factors_long/short tensors)".into(),
            ));
        }
        let key = self.key("rope.scaling.type");
        match self.g.get_str(&key) {
            None | Some("none") => Ok(1.0),
            Some("linear") => Ok(1.0 / self.f32("rope.scaling.factor").unwrap_or(1.0)),
            Some(other) => Err(Error::Unsupported(format!(
                "rope scaling type '{other}' ({key}); supported: none, linear, \
                 and llama3 via the rope_freqs tensor"
            ))),
        }
    }

    fn rope_base(&self) -> f32 {
        self.f32("rope.freq_base").unwrap_or(10000.0)
    }

    /// The same layer everywhere: the llama block, with or without q/k norm.
    fn uniform(&self, s: &Shape, qk_norm: bool) -> Result<Vec<LayerSpec>> {
        let layer = LayerSpec {
            qk_norm,
            rope_base: self.rope_base(),
            rope_freq_scale: self.rope_freq_scale()?,
            window: None,
            post_attn_norm: false,
            post_ffn_norm: false,
        };
        Ok(vec![layer; s.n_layers])
    }
}

/// The usual 1/sqrt(head size) softmax scale.
fn default_scale(s: &Shape) -> f32 {
    1.0 / (s.head_dim as f32).sqrt()
}

/// Llama 1-3: the reference block. Llama 3.1+ carries its rope scaling as
/// per-pair frequency divisors in `rope_freqs.weight` (read with the weights).
fn llama(m: &Meta, s: &Shape) -> Result<Spec> {
    Ok(Spec {
        arch: Arch::Llama,
        rope_style: RopeStyle::Adjacent,
        embed_scale: None,
        attn_scale: default_scale(s),
        activation: Activation::Silu,
        fused_qkv: false,
        fused_gate_up: false,
        layers: m.uniform(s, false)?,
    })
}

/// Qwen2: llama with q/k/v biases (read where present) and NEOX rope.
fn qwen2(m: &Meta, s: &Shape) -> Result<Spec> {
    Ok(Spec {
        arch: Arch::Qwen2,
        rope_style: RopeStyle::Neox,
        ..llama(m, s)?
    })
}

/// Qwen3: NEOX rope, no biases, per-head RMSNorm of q and k.
fn qwen3(m: &Meta, s: &Shape) -> Result<Spec> {
    Ok(Spec {
        arch: Arch::Qwen3,
        rope_style: RopeStyle::Neox,
        layers: m.uniform(s, true)?,
        ..llama(m, s)?
    })
}

/// Gemma 3: embeddings times sqrt(dim); four norms per layer and q/k norm;
/// GELU-gated FFN; five of every six layers attend through a sliding
/// window with their own rope base (10000 unless the file says) and no
/// rope scaling; tied embeddings (the absent `output.weight`).
fn gemma3(m: &Meta, s: &Shape) -> Result<Spec> {
    let window_key = m.key("attention.sliding_window");
    let window = match m.g.get_usize(&window_key) {
        Some(w) if w > 0 => w,
        _ => return Err(Error::MissingKey(window_key)),
    };
    let global = LayerSpec {
        qk_norm: true,
        rope_base: m.rope_base(),
        rope_freq_scale: m.rope_freq_scale()?,
        window: None,
        post_attn_norm: true,
        post_ffn_norm: true,
    };
    let local = LayerSpec {
        rope_base: m.f32("rope.freq_base_swa").unwrap_or(10000.0),
        rope_freq_scale: 1.0,
        window: Some(window),
        ..global
    };
    const PATTERN: usize = 6;
    let layers = (0..s.n_layers)
        .map(|l| {
            if l % PATTERN < PATTERN - 1 {
                local
            } else {
                global
            }
        })
        .collect();
    // Gemma scales the queries by 1/sqrt(query_pre_attn_scalar): the head
    // size, except on the 27B model (62 layers), where it is dim / heads.
    let scalar = if s.n_layers == 62 {
        s.dim / s.n_heads
    } else {
        s.head_dim
    };
    Ok(Spec {
        arch: Arch::Gemma3,
        rope_style: RopeStyle::Neox,
        embed_scale: Some((s.dim as f32).sqrt()),
        attn_scale: 1.0 / (scalar as f32).sqrt(),
        activation: Activation::GeluTanh,
        fused_qkv: false,
        fused_gate_up: false,
        layers,
    })
}

/// Phi-3 / Phi-4-mini: NEOX rope, Q/K/V fused in `attn_qkv`, gate and up
/// fused in `ffn_up`. Its `sliding_window` key is ignored, as llama.cpp
/// does (the converters fill it inconsistently).
fn phi3(m: &Meta, s: &Shape) -> Result<Spec> {
    Ok(Spec {
        arch: Arch::Phi3,
        rope_style: RopeStyle::Neox,
        fused_qkv: true,
        fused_gate_up: true,
        ..llama(m, s)?
    })
}
