//! The memory plan: the GPU bytes a load would allocate, by kind, and its
//! largest buffer, from a file's header alone and without a device; and
//! the CPU engine's need beside it (`plan_memory`).
//!
//! It walks the model as `GpuBackend::build` does and sizes each buffer
//! with build's own pieces: `Dims` (context, batch, split limit, attention
//! path), `ScratchSizes`, `kv_cache_bytes`, `split_rows` and
//! `concat_bytes` (how matrices are split and grouped), `overlap` (one
//! matvec uniform per part a product reads), the sampler's
//! `sample_sizes`/`sample_levels`, and `padded`. tests/memory_plan.rs
//! checks that it equals what a load counts (`Gpu::memory`), kind by kind.

use serde::Serialize;

use super::build::{
    half_x_cols, int_g_cols, int_h_cols, int_x_cols, kv_cache_bytes, Dims, ScratchSizes,
};
use super::device::{padded, PARAMS_BYTES, STEP_BYTES};
use super::ops::{
    half_x_bytes, int_x_sizes, overlap, sample_levels, sample_sizes, LEVEL_BYTES,
    MATVEC_PARAM_WORDS, SAMPLING_BYTES,
};
use super::upload::{concat_bytes, split_rows};
use super::GpuOptions;
use crate::cpu::RunState;
use crate::engine::{context_for, EngineOptions};
use crate::error::Result;
use crate::gguf::Gguf;
use crate::memory::{CpuMemory, GpuLimits, GpuMemory, MemKind};
use crate::model::{Config, Matrix, Weights};

const MATVEC_PARAM_BYTES: u64 = MATVEC_PARAM_WORDS as u64 * 4;

/// What a plan assumes: the options the load would get, the adapter's
/// limits (which also bound how matrices are split) and the wasm memory
/// the CPU engine may use.
#[derive(Debug, Clone, Copy)]
pub struct PlanOptions {
    /// Context (0: the model's, up to `default_context`) and batch; the
    /// CPU engine's need is taken at the same context.
    pub engine: EngineOptions,
    /// `max_binding`, `max_batch` and the tuning flags that change buffers
    /// (`fuse`, `chunked_attention`, `split_attention`, `deep_split_keys`,
    /// `flash_prefill`, `int_prefill`).
    pub gpu: GpuOptions,
    pub limits: GpuLimits,
    /// Memory the CPU engine may use (`memory::WASM_LIMIT` in the browser).
    pub cpu_limit: u64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            engine: EngineOptions::default(),
            gpu: GpuOptions::default(),
            limits: GpuLimits::WEBGPU_DEFAULT,
            cpu_limit: crate::memory::WASM_LIMIT,
        }
    }
}

/// A model's memory before it is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryPlan {
    /// The context both engines would allocate.
    pub context: usize,
    /// The GPU buffers a load would make, or `None` where the GPU backend
    /// cannot take the model at all (`gpu_error`).
    pub gpu: Option<GpuMemory>,
    /// Why the GPU would refuse it: a shape it does not run, or a limit of
    /// `limits` that the buffers exceed (naming it, with the sizes).
    pub gpu_error: Option<String>,
    pub gpu_fits: bool,
    pub cpu: CpuMemory,
    /// Why the CPU engine would not fit `cpu_limit`, if it would not.
    pub cpu_error: Option<String>,
    pub cpu_fits: bool,
}

/// The memory plan of the model whose header is `g` (the file is
/// `g.file_len` bytes): the GPU's buffers by kind and whether they fit
/// `o.limits`, and the CPU engine's need against `o.cpu_limit`. Errors
/// only where the header does not describe a model this crate loads.
pub fn plan_memory(g: &Gguf, o: &PlanOptions) -> Result<MemoryPlan> {
    let c = Config::from_gguf(g)?;
    let w = Weights::layout(g, &c)?;
    let ctx = context_for(&c, &o.engine);
    let (gpu, gpu_error) = match gpu_memory(
        &c,
        &w,
        ctx,
        o.engine.max_batch,
        &o.gpu,
        o.limits.binding_limit(),
    ) {
        Ok(m) => (Some(m), m.check(&o.limits).err()),
        Err(e) => (None, Some(e.to_string())),
    };
    let (kv, scratch) = RunState::footprint(&c, ctx, o.engine.max_batch);
    let cpu = CpuMemory::new(g.file_len, kv, scratch);
    let cpu_error = cpu.check(o.cpu_limit).err();
    Ok(MemoryPlan {
        context: ctx,
        gpu,
        gpu_fits: gpu_error.is_none(),
        gpu_error,
        cpu,
        cpu_fits: cpu_error.is_none(),
        cpu_error,
    })
}

/// The buffers `GpuBackend::new(gpu, c, w, ctx, max_batch, opts, ..)`
/// makes on a device whose `Gpu::binding_limit` is `binding_limit`, as
/// `Gpu::memory` counts them after the load. `w` may be a layout
/// (`Weights::layout`): only shapes are read.
pub fn gpu_memory(
    c: &Config,
    w: &Weights,
    ctx: usize,
    max_batch: usize,
    opts: &GpuOptions,
    binding_limit: u64,
) -> Result<GpuMemory> {
    let d = Dims::new(c, ctx, max_batch, opts, binding_limit)?;
    let mut m = GpuMemory::default();
    let mut add = |kind: MemKind, bytes: u64| m.add(kind, padded(bytes));
    use MemKind::{KvCache, Scratch, Weights as W};

    for b in ScratchSizes::new(c, &d).all() {
        add(Scratch, b);
    }
    add(Scratch, STEP_BYTES);
    // The integer path's int8 x (its quantize passes share the matvecs'
    // uniforms).
    if let Some(cols) = int_x_cols(w, opts) {
        for b in int_x_sizes(cols, d.batch, true) {
            add(Scratch, b);
        }
    }
    // The down products' int8 x that gate/up writes (glu_q).
    if let Some(cols) = int_h_cols(w, opts) {
        for b in int_x_sizes(cols, d.batch, false) {
            add(Scratch, b);
        }
    }
    // The gate/up products' int8 x that Wo writes (wo_q), with its sums.
    if let Some(cols) = int_g_cols(w, opts) {
        for b in int_x_sizes(cols, d.batch, true) {
            add(Scratch, b);
        }
    }
    // The tensor-core tile's f16 x.
    if let Some(cols) = half_x_cols(w, opts) {
        add(Scratch, half_x_bytes(cols, d.batch));
    }
    let [pen, cand, stat, mask] = sample_sizes(c.vocab_size);
    for b in [SAMPLING_BYTES, pen, cand, cand, stat, mask] {
        add(Scratch, b);
    }
    for _ in sample_levels(c.vocab_size) {
        add(Scratch, LEVEL_BYTES);
    }

    // The embedding: its parts, and one gather uniform each.
    let embd = Planned::matrix("token_embd", &w.token_embd, d.limit)?;
    for &(_, bytes) in &embd.parts {
        add(W, bytes);
        add(Scratch, PARAMS_BYTES);
    }
    // Rope factors (a one-element dummy without them) and the shared
    // uniforms: norm, head norm, three element-wise widths.
    add(W, 4 * w.rope_freqs.as_ref().map_or(1, Vec::len) as u64);
    for _ in 0..5 {
        add(Scratch, PARAMS_BYTES);
    }

    // Decode, prefill, and where they apply the split, mid.wgsl,
    // split.wgsl (deep) and flash lists.
    let deep = if d.split_attention {
        let group = c.n_heads / c.n_kv_heads.max(1);
        super::kernels::deep_tiers(&opts.tuning, c.head_dim, group, d.ctx).len()
    } else {
        0
    };
    let lists =
        2 + d.split_attention as usize + d.mid_tiers.len() + deep + d.flash.is_some() as usize;
    for (layer, spec) in w.layers.iter().zip(&c.spec.layers) {
        let qkv = Planned::group(
            &[&layer.wq, &layer.wk, &layer.wv],
            d.limit,
            opts.tuning.fuse,
        )?;
        let gate_up = Planned::group(&[&layer.w_gate, &layer.w_up], d.limit, opts.tuning.fuse)?;
        let wo = Planned::matrix("attn_output", &layer.wo, d.limit)?;
        let wd = Planned::matrix("ffn_down", &layer.w_down, d.limit)?;
        for mat in qkv.mats.iter().chain(&gate_up.mats).chain([&wo, &wd]) {
            for &(_, bytes) in &mat.parts {
                add(W, bytes);
            }
        }
        // Norms and biases, each alone, and the biases concatenated.
        let vectors = [
            Some(&layer.attn_norm),
            Some(&layer.ffn_norm),
            layer.q_norm.as_ref(),
            layer.k_norm.as_ref(),
            layer.post_attn_norm.as_ref(),
            layer.post_ffn_norm.as_ref(),
            layer.bq.as_ref(),
            layer.bk.as_ref(),
            layer.bv.as_ref(),
        ];
        for v in vectors.into_iter().flatten() {
            add(W, v.len() as u64 * 4);
        }
        if layer.bq.is_some() || layer.bk.is_some() || layer.bv.is_some() {
            add(W, (c.q_dim() + 2 * c.kv_dim()) as u64 * 4);
        }
        add(KvCache, kv_cache_bytes(c, d.ctx));
        add(KvCache, kv_cache_bytes(c, d.ctx));
        // Rope (q, k) and attention uniforms.
        for _ in 0..3 {
            add(Scratch, PARAMS_BYTES);
        }
        // One matvec uniform per part each product reads, in each list.
        let qkv_ops = match qkv.fused() {
            Some(f) if d.quads && !spec.qk_norm => f.ops(0..f.rows),
            _ => (0..3).map(|i| qkv.seg_ops(i)).sum(),
        };
        let gate_up_ops = match gate_up.fused() {
            Some(f) => f.ops(0..f.rows),
            None => (0..2).map(|i| gate_up.seg_ops(i)).sum(),
        };
        let ops = qkv_ops + gate_up_ops + wo.ops(0..c.dim) + wd.ops(0..c.dim);
        for _ in 0..ops * lists {
            add(Scratch, MATVEC_PARAM_BYTES);
        }
    }

    add(W, w.output_norm.len() as u64 * 4);
    let out = if w.output == w.token_embd {
        embd
    } else {
        let out = Planned::matrix("output", &w.output, d.limit)?;
        for &(_, bytes) in &out.parts {
            add(W, bytes);
        }
        out
    };
    for _ in 0..out.ops(0..c.vocab_size) {
        add(Scratch, MATVEC_PARAM_BYTES);
    }
    // The three argmax uniforms: the head's pairs and their per-group
    // bests (its two passes), and the masked scan's.
    for _ in 0..3 {
        add(Scratch, PARAMS_BYTES);
    }
    Ok(m)
}

/// A matrix as `GpuMatrix` would hold it: each part's (rows, bytes).
struct Planned {
    rows: usize,
    /// ((first row, rows), bytes) of each part.
    parts: Vec<((usize, usize), u64)>,
}

impl Planned {
    fn matrix(label: &str, m: &Matrix, limit: u64) -> Result<Planned> {
        let (row_bytes, spans) = split_rows(label, m.ty, m.rows, m.cols, m.size(), limit)?;
        Ok(Planned {
            rows: m.rows,
            parts: spans
                .into_iter()
                .map(|(r, n)| ((r, n), (n * row_bytes) as u64))
                .collect(),
        })
    }

    /// The matvec dispatches (each with its uniform) over `rows`.
    fn ops(&self, rows: std::ops::Range<usize>) -> usize {
        self.parts
            .iter()
            .filter(|((r, n), _)| overlap(*r, *n, &rows).is_some())
            .count()
    }

    /// A group as `MatGroup::upload_from` makes it.
    fn group(members: &[&Matrix], limit: u64, fuse: bool) -> Result<PlannedGroup> {
        if let Some(total) = concat_bytes(members, limit, fuse) {
            let rows = members.iter().map(|m| m.rows).sum();
            let mut segs = Vec::new();
            let mut row = 0;
            for m in members {
                segs.push((0, row..row + m.rows));
                row += m.rows;
            }
            let one = Planned {
                rows,
                parts: vec![((0, rows), total as u64)],
            };
            return Ok(PlannedGroup {
                mats: vec![one],
                segs,
            });
        }
        let mut mats = Vec::new();
        let mut segs = Vec::new();
        for (i, m) in members.iter().enumerate() {
            mats.push(Planned::matrix("a grouped matrix", m, limit)?);
            segs.push((i, 0..m.rows));
        }
        Ok(PlannedGroup { mats, segs })
    }
}

/// `MatGroup`'s shape.
struct PlannedGroup {
    mats: Vec<Planned>,
    segs: Vec<(usize, std::ops::Range<usize>)>,
}

impl PlannedGroup {
    /// As `MatGroup::fused`.
    fn fused(&self) -> Option<&Planned> {
        (self.mats.len() == 1 && self.segs.len() > 1 && self.mats[0].parts.len() == 1)
            .then(|| &self.mats[0])
    }

    fn seg_ops(&self, i: usize) -> usize {
        let (m, rows) = &self.segs[i];
        self.mats[*m].ops(rows.clone())
    }
}
