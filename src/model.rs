//! A transformer checkpoint as the engines see it: `Config` (hyperparameters
//! from GGUF metadata) and `Weights` (views into the file's bytes, in their
//! block format). Run state lives with each backend, not here.

use crate::arch::{self, tensor};
pub use crate::arch::{Activation, Arch, LayerSpec, RopeStyle, Spec};
use crate::error::{Error, Result};
use crate::gguf::{Gguf, TensorInfo};
use crate::quant::{self, GgmlType};

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
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
    pub norm_eps: f32,
    pub tied_embeddings: bool,
    /// What each layer does (see `arch`).
    pub spec: Spec,
}

/// The largest head size either engine runs (their per-head scratch).
pub const MAX_HEAD_DIM: usize = 512;

impl Config {
    pub fn arch(&self) -> Arch {
        self.spec.arch
    }
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
        let arch = Arch::from_name(arch_name)?;
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
            Some(v) => v,
            None if dim % n_heads == 0 => dim / n_heads,
            None => {
                return Err(Error::Malformed(format!(
                    "embedding_length {dim} is not a multiple of head_count {n_heads}"
                )))
            }
        };
        // Both engines keep one head in fixed-size buffers, and the value
        // rows are the key rows' size; whether derived or stated, bound it.
        if head_dim == 0 || head_dim > MAX_HEAD_DIM {
            return Err(Error::Malformed(format!(
                "head size {head_dim} is out of range (1..={MAX_HEAD_DIM})"
            )));
        }
        if let Some(v) = g.get_usize(&key("attention.value_length")) {
            if v != head_dim {
                return Err(Error::Unsupported(format!(
                    "value heads of {v} dims with key heads of {head_dim}"
                )));
            }
        }
        let rope_dim = g
            .get_usize(&key("rope.dimension_count"))
            .unwrap_or(head_dim);
        if rope_dim > head_dim || !rope_dim.is_multiple_of(2) {
            return Err(Error::Malformed(format!(
                "rope.dimension_count {rope_dim} does not fit head size {head_dim}"
            )));
        }
        let train_ctx = g
            .get_usize(&key("context_length"))
            .unwrap_or(2048)
            .clamp(1, 1 << 24);
        let norm_eps = g
            .get_f32(&key("attention.layer_norm_rms_epsilon"))
            .unwrap_or(1e-5);
        if !(norm_eps.is_finite() && norm_eps >= 0.0) {
            return Err(Error::Malformed("norm epsilon is invalid".into()));
        }
        let shape = arch::Shape {
            n_layers,
            head_dim,
            dim,
            n_heads,
        };
        let spec = arch::describe(g, arch, &shape)?;
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
            dim,
            n_layers,
            n_heads,
            n_kv_heads,
            head_dim,
            ffn_dim,
            vocab_size,
            train_ctx,
            rope_dim,
            norm_eps,
            tied_embeddings: g.tensor(tensor::OUTPUT).is_none(),
            spec,
        })
    }
}

/// A 2-D weight in its block format: `rows` output features, each a
/// contiguous run of `cols` input weights starting at `offset` in
/// `Weights::data` (resident) or in the file (a weight plan, whose file
/// may be larger than the address space).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Matrix {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub offset: u64,
    pub row_bytes: usize,
}

impl Matrix {
    pub fn size(&self) -> usize {
        self.rows * self.row_bytes
    }
    /// Where the matrix starts in `data`, the buffer in memory that holds
    /// it (so its offset fits `usize`).
    fn start(&self) -> usize {
        usize::try_from(self.offset)
            .expect("a matrix of a buffer in memory lies inside the address space")
    }
    pub fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        let start = self.start();
        &data[start..start + self.size()]
    }
    pub fn row<'a>(&self, data: &'a [u8], r: usize) -> &'a [u8] {
        let start = self.start() + r * self.row_bytes;
        &data[start..start + self.row_bytes]
    }
}

/// One layer's tensors. Which optional ones are present follows the
/// layer's `LayerSpec`; fused files (phi3) give `wq`/`wk`/`wv` and
/// `w_gate`/`w_up` as row ranges of one tensor, views rather than copies.
#[derive(Debug, Clone)]
pub struct Layer {
    pub attn_norm: Vec<f32>,
    pub wq: Matrix,
    pub wk: Matrix,
    pub wv: Matrix,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    /// Per-head gains (`head_dim` long) of the q/k norm.
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    pub wo: Matrix,
    pub post_attn_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: Matrix,
    pub w_up: Matrix,
    pub w_down: Matrix,
    pub post_ffn_norm: Option<Vec<f32>>,
}

/// The checkpoint. `data` is the GGUF file itself (moved in, never copied);
/// matrices point into it. Small vectors (norms, biases) are decoded to f32.
#[derive(Debug)]
pub struct Weights {
    pub data: Vec<u8>,
    /// Whether the matrices' bytes are in `data` (false: a weight plan,
    /// whose matrices a streamed GPU load writes from the source).
    pub resident: bool,
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
        if data.len() as u64 != g.file_len {
            return Err(Error::InvalidArgument(
                "weights buffer differs from the parsed file".into(),
            ));
        }
        let w = Weights::assemble(g, c, |t| Ok(t.bytes(&data)))?;
        let mut w = Weights { data, ..w };
        if opts.upcast_f16 {
            w.upcast_f16();
        }
        Ok(w)
    }

    /// The weight plan of a streamed load: every matrix is where it lies in
    /// the file (`Matrix::offset`), not in `data`, which stays empty
    /// (`resident` false); the vectors (norms, biases, rope factors) are
    /// decoded from `small`, the bytes of each 1-D tensor (`small_tensors`)
    /// by file offset. A GPU load then writes each matrix from the source
    /// into its buffer.
    pub fn plan(
        g: &Gguf,
        c: &Config,
        small: &std::collections::HashMap<u64, Vec<u8>>,
    ) -> Result<Weights> {
        let w = Weights::assemble(g, c, |t| {
            small
                .get(&t.offset)
                .filter(|b| b.len() == t.size)
                .map(Vec::as_slice)
                .ok_or_else(|| Error::InvalidArgument(format!("{}'s bytes were not read", t.name)))
        })?;
        Ok(Weights {
            resident: false,
            ..w
        })
    }

    /// The shapes alone, from the header: matrices located as in `plan`,
    /// vectors of the right lengths but zero (their bytes are not read).
    /// The memory plan (`gpu::plan_memory`) sizes buffers from it.
    pub fn layout(g: &Gguf, c: &Config) -> Result<Weights> {
        let small = Weights::small_tensors(g);
        let zeros = vec![0u8; small.iter().map(|t| t.size).max().unwrap_or(0)];
        let w = Weights::assemble(g, c, |t| Ok(&zeros[..t.size.min(zeros.len())]))?;
        Ok(Weights {
            resident: false,
            ..w
        })
    }

    /// The tensors `plan` reads up front: the 1-D ones, small next to the
    /// matrices (a few KiB per layer).
    pub fn small_tensors(g: &Gguf) -> Vec<&TensorInfo> {
        g.tensors.iter().filter(|t| t.dims.len() == 1).collect()
    }

    /// Shapes checked, matrices located, vectors decoded from `bytes_of`;
    /// `data` left empty for the caller.
    fn assemble<'d>(
        g: &Gguf,
        c: &Config,
        bytes_of: impl Fn(&TensorInfo) -> Result<&'d [u8]>,
    ) -> Result<Weights> {
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
            quant::dequantize_row(t.ty, bytes_of(t)?, &mut out);
            Ok(out)
        };
        let optional_vector = |name: &str, len: usize| -> Result<Option<Vec<f32>>> {
            match g.tensor(name) {
                Some(_) => vector(name, len).map(Some),
                None => Ok(None),
            }
        };

        // Row ranges of one tensor: `parts` rows each, one after another.
        let views = |name: &str, cols: usize, parts: &[usize]| -> Result<Vec<Matrix>> {
            let whole = matrix(name, cols, parts.iter().sum())?;
            let mut row = 0;
            Ok(parts
                .iter()
                .map(|&rows| {
                    let m = Matrix {
                        rows,
                        offset: whole.offset + (row * whole.row_bytes) as u64,
                        ..whole
                    };
                    row += rows;
                    m
                })
                .collect())
        };

        let (dim, qd, kvd, ff, hd) = (c.dim, c.q_dim(), c.kv_dim(), c.ffn_dim, c.head_dim);
        let token_embd = matrix(tensor::TOKEN_EMBD, dim, c.vocab_size)?;
        let mut layers = Vec::with_capacity(c.n_layers);
        for (l, spec) in c.spec.layers.iter().enumerate() {
            let n = |s: &str| format!("blk.{l}.{s}.weight");
            let bias = |s: &str, len| optional_vector(&format!("blk.{l}.{s}.bias"), len);
            let when = |on: bool, s: &str, len| on.then(|| vector(&n(s), len)).transpose();
            let [wq, wk, wv] = if c.spec.fused_qkv {
                let v = views(&n(tensor::QKV), dim, &[qd, kvd, kvd])?;
                [v[0], v[1], v[2]]
            } else {
                [
                    matrix(&n(tensor::Q), dim, qd)?,
                    matrix(&n(tensor::K), dim, kvd)?,
                    matrix(&n(tensor::V), dim, kvd)?,
                ]
            };
            let [w_gate, w_up] = if c.spec.fused_gate_up {
                let v = views(&n(tensor::UP), dim, &[ff, ff])?;
                [v[0], v[1]]
            } else {
                [
                    matrix(&n(tensor::GATE), dim, ff)?,
                    matrix(&n(tensor::UP), dim, ff)?,
                ]
            };
            layers.push(Layer {
                attn_norm: vector(&n(tensor::ATTN_NORM), dim)?,
                wq,
                wk,
                wv,
                bq: bias(tensor::Q, qd)?,
                bk: bias(tensor::K, kvd)?,
                bv: bias(tensor::V, kvd)?,
                q_norm: when(spec.qk_norm, tensor::Q_NORM, hd)?,
                k_norm: when(spec.qk_norm, tensor::K_NORM, hd)?,
                wo: matrix(&n(tensor::WO), qd, dim)?,
                post_attn_norm: when(spec.post_attn_norm, tensor::POST_ATTN_NORM, dim)?,
                ffn_norm: vector(&n(tensor::FFN_NORM), dim)?,
                w_gate,
                w_up,
                w_down: matrix(&n(tensor::DOWN), ff, dim)?,
                post_ffn_norm: when(spec.post_ffn_norm, tensor::POST_FFN_NORM, dim)?,
            });
        }
        let output_norm = vector(tensor::OUTPUT_NORM, dim)?;
        let output = if c.tied_embeddings {
            token_embd
        } else {
            matrix(tensor::OUTPUT, dim, c.vocab_size)?
        };
        let rope_freqs = optional_vector(tensor::ROPE_FREQS, c.rope_dim / 2)?;
        Ok(Weights {
            data: Vec::new(),
            resident: true,
            token_embd,
            layers,
            output_norm,
            output,
            rope_freqs,
        })
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
                m.offset = offset as u64;
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
                offset: offset as u64,
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
    /// once, plus one embedding row): a u64, as a streamed model's weights
    /// may exceed the address space.
    pub fn bytes_per_token(&self) -> u64 {
        let mut n = self.output.size() as u64 + self.token_embd.row_bytes as u64;
        for l in &self.layers {
            n += [l.wq, l.wk, l.wv, l.wo, l.w_gate, l.w_up, l.w_down]
                .iter()
                .map(|m| m.size() as u64)
                .sum::<u64>();
        }
        n
    }
}
