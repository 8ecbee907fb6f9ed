//! A transformer checkpoint as the engines see it: `Config` (hyperparameters
//! from GGUF metadata) and `Weights` (views into the file's bytes, in their
//! block format). Run state lives with each backend, not here.

use crate::error::{Error, Result};
use crate::gguf::{Gguf, TensorInfo};
use crate::quant::{self, GgmlType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Qwen2,
}

impl Arch {
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
        }
    }
}

/// How rope pairs up dimensions. llama.cpp's converter permutes llama's Q/K
/// so that adjacent pairs rotate; qwen2 keeps HF's halves layout (NEOX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    Adjacent,
    Neox,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub arch: Arch,
    pub dim: usize,
    pub n_layers: usize,
    pub n_heads: usize,
    pub n_kv_heads: usize,
    pub head_dim: usize,
    pub ffn_dim: usize,
    pub vocab_size: usize,
    /// Context length the model was trained with.
    pub train_ctx: usize,
    /// Leading dims of each head that rope rotates.
    pub rope_dim: usize,
    pub rope_base: f32,
    /// Linear rope scaling (1 / factor); 1.0 when unscaled.
    pub rope_freq_scale: f32,
    pub rope_style: RopeStyle,
    pub norm_eps: f32,
    pub tied_embeddings: bool,
}

impl Config {
    pub fn q_dim(&self) -> usize {
        self.n_heads * self.head_dim
    }
    pub fn kv_dim(&self) -> usize {
        self.n_kv_heads * self.head_dim
    }

    /// Read the hyperparameters for a supported architecture. Every count is
    /// bounded so that no later allocation is sized by a wild value.
    pub fn from_gguf(g: &Gguf) -> Result<Config> {
        let arch_name = g
            .get_str("general.architecture")
            .ok_or_else(|| Error::MissingKey("general.architecture".into()))?;
        let arch = match arch_name {
            "llama" => Arch::Llama,
            "qwen2" => Arch::Qwen2,
            other => return Err(Error::UnknownArchitecture(other.to_string())),
        };
        let key = |k: &str| format!("{arch_name}.{k}");
        let req = |k: &str, max: usize| -> Result<usize> {
            let full = key(k);
            match g.get_usize(&full) {
                Some(v) if v > 0 && v <= max => Ok(v),
                Some(v) => Err(Error::Malformed(format!("{full} = {v} is out of range"))),
                None => Err(Error::MissingKey(full)),
            }
        };
        const MAX_DIM: usize = 1 << 16;
        let dim = req("embedding_length", MAX_DIM)?;
        let n_layers = req("block_count", 1024)?;
        let n_heads = req("attention.head_count", 1024)?;
        let n_kv_heads = match g.get_usize(&key("attention.head_count_kv")) {
            None => n_heads,
            Some(v) if v > 0 && n_heads % v == 0 => v,
            Some(v) => {
                return Err(Error::Malformed(format!(
                    "head_count_kv {v} does not divide head_count {n_heads}"
                )))
            }
        };
        let ffn_dim = req("feed_forward_length", 1 << 18)?;
        let head_dim = match g.get_usize(&key("attention.key_length")) {
            Some(v) if v > 0 && v <= 512 => v,
            Some(v) => return Err(Error::Malformed(format!("key_length {v} out of range"))),
            None if dim % n_heads == 0 => dim / n_heads,
            None => {
                return Err(Error::Malformed(format!(
                    "embedding_length {dim} is not a multiple of head_count {n_heads}"
                )))
            }
        };
        let rope_dim = g
            .get_usize(&key("rope.dimension_count"))
            .unwrap_or(head_dim);
        if rope_dim > head_dim || rope_dim % 2 != 0 {
            return Err(Error::Malformed(format!(
                "rope.dimension_count {rope_dim} does not fit head size {head_dim}"
            )));
        }
        let train_ctx = g
            .get_usize(&key("context_length"))
            .unwrap_or(2048)
            .clamp(1, 1 << 24);
        let rope_base = g.get_f32(&key("rope.freq_base")).unwrap_or(10000.0);
        let rope_freq_scale = match g.get_str(&key("rope.scaling.type")) {
            Some("linear") => 1.0 / g.get_f32(&key("rope.scaling.factor")).unwrap_or(1.0),
            _ => 1.0,
        };
        let norm_eps = g
            .get_f32(&key("attention.layer_norm_rms_epsilon"))
            .unwrap_or(1e-5);
        let valid = rope_base.is_finite()
            && rope_base > 0.0
            && norm_eps.is_finite()
            && norm_eps >= 0.0
            && rope_freq_scale.is_finite()
            && rope_freq_scale > 0.0;
        if !valid {
            return Err(Error::Malformed(
                "rope base, scale or norm epsilon is invalid".into(),
            ));
        }
        let embd = g
            .tensor("token_embd.weight")
            .ok_or_else(|| Error::MissingTensor("token_embd.weight".into()))?;
        if embd.dims.len() != 2 || embd.dims[0] != dim {
            return Err(Error::ShapeMismatch(format!(
                "token_embd.weight is {:?}, expected [{dim}, vocab]",
                embd.dims
            )));
        }
        let vocab_size = embd.dims[1];
        if let Some(v) = g.get_usize(&key("vocab_size")) {
            if v != vocab_size {
                return Err(Error::ShapeMismatch(format!(
                    "{arch_name}.vocab_size is {v} but token_embd.weight has {vocab_size} rows"
                )));
            }
        }
        Ok(Config {
            arch,
            dim,
            n_layers,
            n_heads,
            n_kv_heads,
            head_dim,
            ffn_dim,
            vocab_size,
            train_ctx,
            rope_dim,
            rope_base,
            rope_freq_scale,
            rope_style: match arch {
                Arch::Llama => RopeStyle::Adjacent,
                Arch::Qwen2 => RopeStyle::Neox,
            },
            norm_eps,
            tied_embeddings: g.tensor("output.weight").is_none(),
        })
    }
}

/// A 2-D weight in its block format: `rows` output features, each a
/// contiguous run of `cols` input weights starting at `offset` in `Weights::data`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Matrix {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub offset: usize,
    pub row_bytes: usize,
}

impl Matrix {
    pub fn size(&self) -> usize {
        self.rows * self.row_bytes
    }
    pub fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        &data[self.offset..self.offset + self.size()]
    }
    pub fn row<'a>(&self, data: &'a [u8], r: usize) -> &'a [u8] {
        let start = self.offset + r * self.row_bytes;
        &data[start..start + self.row_bytes]
    }
}

#[derive(Debug, Clone)]
pub struct Layer {
    pub attn_norm: Vec<f32>,
    pub wq: Matrix,
    pub wk: Matrix,
    pub wv: Matrix,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    pub wo: Matrix,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Matrix,
    pub w_up: Matrix,
    pub w_down: Matrix,
}

/// The checkpoint. `data` is the GGUF file itself (moved in, never copied);
/// matrices point into it. Small vectors (norms, biases) are decoded to f32.
#[derive(Debug)]
pub struct Weights {
    pub data: Vec<u8>,
    pub token_embd: Matrix,
    pub layers: Vec<Layer>,
    pub output_norm: Vec<f32>,
    /// The LM head; equal to `token_embd` when embeddings are tied.
    pub output: Matrix,
    /// Per-dimension rope frequency divisors (Llama 3.1+), if present.
    pub rope_freqs: Option<Vec<f32>>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Dequantize every quantized matrix and store it as f16 (reproduces
    /// llama.cpp's F16 files made from a quantized checkpoint).
    pub upcast_f16: bool,
}

impl Weights {
    pub fn from_gguf(g: &Gguf, c: &Config, data: Vec<u8>, opts: LoadOptions) -> Result<Weights> {
        if data.len() != g.file_len {
            return Err(Error::InvalidArgument(
                "weights buffer differs from the parsed file".into(),
            ));
        }
        let tensor = |name: &str| -> Result<&TensorInfo> {
            g.tensor(name)
                .ok_or_else(|| Error::MissingTensor(name.to_string()))
        };
        let matrix = |name: &str, cols: usize, rows: usize| -> Result<Matrix> {
            let t = tensor(name)?;
            if t.dims != [cols, rows] {
                return Err(Error::ShapeMismatch(format!(
                    "{name} is {:?}, expected [{cols}, {rows}]",
                    t.dims
                )));
            }
            if matches!(t.ty, GgmlType::Q8_1 | GgmlType::Q8_K) {
                return Err(Error::UnsupportedTensorType {
                    tensor: name.into(),
                    type_name: t.ty.name().into(),
                });
            }
            Ok(Matrix {
                ty: t.ty,
                rows,
                cols,
                offset: t.offset,
                row_bytes: t.size / rows,
            })
        };
        let vector = |name: &str, len: usize| -> Result<Vec<f32>> {
            let t = tensor(name)?;
            if t.dims != [len] {
                return Err(Error::ShapeMismatch(format!(
                    "{name} is {:?}, expected [{len}]",
                    t.dims
                )));
            }
            let mut out = vec![0.0; len];
            quant::dequantize_row(t.ty, t.bytes(&data), &mut out);
            Ok(out)
        };
        let optional_vector = |name: &str, len: usize| -> Result<Option<Vec<f32>>> {
            match g.tensor(name) {
                Some(_) => vector(name, len).map(Some),
                None => Ok(None),
            }
        };

        let (dim, qd, kvd, ff) = (c.dim, c.q_dim(), c.kv_dim(), c.ffn_dim);
        let token_embd = matrix("token_embd.weight", dim, c.vocab_size)?;
        let mut layers = Vec::with_capacity(c.n_layers);
        for l in 0..c.n_layers {
            let n = |s: &str| format!("blk.{l}.{s}");
            layers.push(Layer {
                attn_norm: vector(&n("attn_norm.weight"), dim)?,
                wq: matrix(&n("attn_q.weight"), dim, qd)?,
                wk: matrix(&n("attn_k.weight"), dim, kvd)?,
                wv: matrix(&n("attn_v.weight"), dim, kvd)?,
                bq: optional_vector(&n("attn_q.bias"), qd)?,
                bk: optional_vector(&n("attn_k.bias"), kvd)?,
                bv: optional_vector(&n("attn_v.bias"), kvd)?,
                wo: matrix(&n("attn_output.weight"), qd, dim)?,
                ffn_norm: vector(&n("ffn_norm.weight"), dim)?,
                w_gate: matrix(&n("ffn_gate.weight"), dim, ff)?,
                w_up: matrix(&n("ffn_up.weight"), dim, ff)?,
                w_down: matrix(&n("ffn_down.weight"), ff, dim)?,
            });
        }
        let output_norm = vector("output_norm.weight", dim)?;
        let output = if c.tied_embeddings {
            token_embd
        } else {
            matrix("output.weight", dim, c.vocab_size)?
        };
        let rope_freqs = optional_vector("rope_freqs.weight", c.rope_dim / 2)?;
        let mut w = Weights {
            data,
            token_embd,
            layers,
            output_norm,
            output,
            rope_freqs,
        };
        if opts.upcast_f16 {
            w.upcast_f16();
        }
        Ok(w)
    }

    /// Every matrix, each once (the tied LM head is not repeated).
    pub fn matrices_mut(&mut self) -> Vec<&mut Matrix> {
        let mut v: Vec<&mut Matrix> = vec![&mut self.token_embd];
        for l in &mut self.layers {
            v.extend([
                &mut l.wq,
                &mut l.wk,
                &mut l.wv,
                &mut l.wo,
                &mut l.w_gate,
                &mut l.w_up,
                &mut l.w_down,
            ]);
        }
        v.push(&mut self.output);
        v
    }

    /// Re-encode every quantized matrix as f16 into a fresh buffer. The old
    /// file bytes are released once the new buffer is built.
    fn upcast_f16(&mut self) {
        let tied = self.output == self.token_embd;
        let old = std::mem::take(&mut self.data);
        let mut data = Vec::new();
        let mut row = Vec::new();
        let mut mats = self.matrices_mut();
        if tied {
            mats.pop();
        }
        for m in mats {
            let src = m.bytes(&old);
            let f16_row = m.cols * 2;
            let offset = data.len();
            let needs = !matches!(m.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16);
            if !needs {
                data.extend_from_slice(src);
                m.offset = offset;
                continue;
            }
            row.resize(m.cols, 0.0);
            data.resize(offset + m.rows * f16_row, 0);
            for r in 0..m.rows {
                quant::dequantize_row(m.ty, &src[r * m.row_bytes..(r + 1) * m.row_bytes], &mut row);
                let dst = offset + r * f16_row;
                quant::quantize_row(GgmlType::F16, &row, &mut data[dst..dst + f16_row]);
            }
            *m = Matrix {
                ty: GgmlType::F16,
                offset,
                row_bytes: f16_row,
                ..*m
            };
        }
        if tied {
            self.output = self.token_embd;
        }
        self.data = data;
    }

    /// Bytes of weights one decode step reads (all matrices, the LM head
    /// once, plus one embedding row).
    pub fn bytes_per_token(&self) -> usize {
        let mut n = self.output.size() + self.token_embd.row_bytes;
        for l in &self.layers {
            n += [l.wq, l.wk, l.wv, l.wo, l.w_gate, l.w_up, l.w_down]
                .iter()
                .map(|m| m.size())
                .sum::<usize>();
        }
        n
    }
}
