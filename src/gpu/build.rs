//! The graph builder: the model's weights uploaded and turned into the op
//! lists the forward pass replays (`GpuBackend::build`), over the
//! activations every layer reuses (`Scratch`).
//!
//! It follows the architecture's description (`arch::Spec`), layer by
//! layer, as `cpu::forward` does, and picks its fusions from it: the fused
//! q/k/v kernel (rope and the cache store in its epilogue) where a layer
//! has no per-head q/k norm, the fused gate/up kernel with the layer's
//! activation, and the residual accumulated in place by the products
//! where there is no post-norm (else the product goes to `delta` and one
//! kernel adds its norm to x).

use std::cell::OnceCell;

use super::device::Gpu;
use super::kernels::{self, FlashTile, Kernels, Mv, Op, Shape};
use super::ops::{
    auto_rows, embed_ops, f, matvec_ops, starts_with_quantize, take_quantize, HalfX, IntX,
    MatvecArgs, QkvArgs, SampleBufs,
};
use super::upload::{GpuMatrix, MatGroup};
use super::{GpuBackend, GpuOptions};
use crate::error::{Error, Result};
use crate::memory::MemKind;
use crate::model::{Activation, Config, Layer, LayerSpec, Matrix, RopeStyle, Weights};

/// Activations for up to `batch` tokens, reused by every layer.
pub(super) struct Scratch {
    pub(super) x: wgpu::Buffer,
    pub(super) xb: wgpu::Buffer,
    pub(super) q: wgpu::Buffer,
    pub(super) k: wgpu::Buffer,
    pub(super) v: wgpu::Buffer,
    pub(super) xo: wgpu::Buffer,
    pub(super) hb: wgpu::Buffer,
    pub(super) hb2: wgpu::Buffer,
    /// A sublayer's output before its post-norm joins x (gemma3).
    pub(super) delta: wgpu::Buffer,
    pub(super) scores: wgpu::Buffer,
    pub(super) logits: wgpu::Buffer,
    pub(super) tokens: wgpu::Buffer,
    pub(super) step: wgpu::Buffer,
    pub(super) argmax: wgpu::Buffer,
    /// The LM head's per-workgroup (logit, row) bests.
    pub(super) partials: wgpu::Buffer,
    /// The best of each PAIRS_PER_GROUP of those (argmax `pairs_part`).
    pub(super) bests: wgpu::Buffer,
    /// Two, so that a step fed ahead has its own while the one before it
    /// is read.
    pub(super) read_id: [wgpu::Buffer; 2],
    pub(super) read_logits: wgpu::Buffer,
    pub(super) sample: SampleBufs,
    /// Split attention's partial results ([heads][splits][head_dim + 2]).
    pub(super) att_part: wgpu::Buffer,
}

impl GpuBackend {
    pub(super) fn build(
        gpu: Gpu,
        c: &Config,
        w: &Weights,
        ctx: usize,
        max_batch: usize,
        opts: GpuOptions,
        progress: &dyn Fn(f64),
    ) -> Result<GpuBackend> {
        let d = Dims::new(c, ctx, max_batch, &opts, gpu.binding_limit())?;
        let (ctx, limit, batch) = (d.ctx, d.limit, d.batch);
        let (dim, qd, kvd, ff, vocab) = (c.dim, c.q_dim(), c.kv_dim(), c.ffn_dim, c.vocab_size);
        let z = ScratchSizes::new(c, &d);
        let s = Scratch {
            x: gpu.storage("x", z.x)?,
            xb: gpu.storage("xb", z.xb)?,
            q: gpu.storage("q", z.q)?,
            k: gpu.storage("k", z.k)?,
            v: gpu.storage("v", z.v)?,
            xo: gpu.storage("xo", z.xo)?,
            hb: gpu.storage("hb", z.hb)?,
            hb2: gpu.storage("hb2", z.hb2)?,
            delta: gpu.storage("delta", z.delta)?,
            scores: gpu.storage("attention scores", z.scores)?,
            logits: gpu.storage("logits", z.logits)?,
            tokens: gpu.storage("tokens", z.tokens)?,
            step: gpu.step_buffer(),
            argmax: gpu.storage("argmax", z.argmax)?,
            partials: gpu.storage("argmax partials", z.partials)?,
            bests: gpu.storage("argmax bests", z.bests)?,
            read_id: [
                gpu.readback_buffer(z.read_id),
                gpu.readback_buffer(z.read_id),
            ],
            read_logits: gpu.readback_buffer(z.read_logits),
            sample: SampleBufs::new(&gpu, vocab)?,
            att_part: gpu.storage("attention splits", z.att_part)?,
        };
        // Weights (with norms, biases and rope factors) and the KV cache
        // are counted apart from the rest (`Gpu::memory`).
        let wg = gpu.for_kind(MemKind::Weights);
        let mut k = Kernels::new(&gpu, &opts.tuning);
        // Made whether or not this device compiles the integer path, so
        // that the memory plan (which knows no device) counts it alike.
        k.int_x = int_x_cols(w, &opts)
            .map(|cols| IntX::new(&gpu, cols, batch))
            .transpose()?;
        k.int_h = int_h_cols(w, &opts)
            .map(|cols| IntX::without_sums(&gpu, cols, batch))
            .transpose()?;
        k.int_g = int_g_cols(w, &opts)
            .map(|cols| IntX::new(&gpu, cols, batch))
            .transpose()?;
        k.half_x = half_x_cols(w, &opts)
            .map(|cols| HalfX::new(&gpu, cols, batch))
            .transpose()?;
        let mut keep = Vec::new();
        let mut mats = Vec::new();

        let embd = GpuMatrix::from_weights(&wg, "token_embd", w, &w.token_embd, limit)?;
        let embed_scale = c.spec.embed_scale.unwrap_or(1.0);
        let embed = embed_ops(&gpu, &mut k, &embd, &s.tokens, &s.x, embed_scale)?;

        let shared = Shared {
            ff: match &w.rope_freqs {
                Some(v) => wg.upload_f32("rope_freqs", v),
                None => wg.upload_f32("rope_freqs", &[1.0]),
            },
            norm: gpu.params([dim as u32, f(c.norm_eps), 0, 0, 0, 0, 0, 0]),
            head_norm: gpu.params([c.head_dim as u32, f(c.norm_eps), 0, 0, 0, 0, 0, 0]),
            ew_q: gpu.params([qd as u32, kernels::NX, 0, 0, 0, 0, 0, 0]),
            ew_kv: gpu.params([kvd as u32, kernels::NX, 0, 0, 0, 0, 0, 0]),
            ew_ff: gpu.params([ff as u32, kernels::NX, 0, 0, 0, 0, 0, 0]),
            simple_attention: d.simple_attention,
            split_attention: d.split_attention,
            flash: d.flash,
            split_rule: d.split_rule,
            ctx,
            attention_int8: opts.tuning.attention_int8
                && c.head_dim.is_multiple_of(32)
                && !d.simple_attention,
            // Workgroups of the chunked kernels: kv heads x query slots
            // per kv head (split.wgsl has its own: split_workgroups).
            att_wgs: kernels::chunk_workgroups(c.n_kv_heads, c.head_dim, c.n_heads / c.n_kv_heads),
            quads: d.quads,
            merge_parts: kernels::merge_parts(c.head_dim, opts.tuning.merge_dims),
        };

        let mut layers = Vec::new();
        let mut layers_one = Vec::new();
        let mut layers_long = Vec::new();
        let mut layers_mid: Vec<(usize, Vec<Op>)> =
            d.mid_tiers.iter().map(|&mk| (mk, Vec::new())).collect();
        let group = c.n_heads / c.n_kv_heads;
        let deep_tiers = if shared.split_attention {
            kernels::deep_tiers(&opts.tuning, c.head_dim, group, ctx)
        } else {
            Vec::new()
        };
        let mut layers_deep: Vec<(usize, Vec<Op>)> = deep_tiers
            .iter()
            .map(|&(from, _)| (from, Vec::new()))
            .collect();
        let mut layers_flash = Vec::new();
        // Each list's last down product, for down_q (by the lists' order,
        // which is the same for every layer).
        let mut last_down: Vec<Option<LastDown>> = Vec::new();
        for (l, (layer, spec)) in w.layers.iter().zip(&c.spec.layers).enumerate() {
            let lw = LayerBufs::upload(
                &gpu,
                c,
                w,
                l,
                layer,
                spec,
                ctx,
                d.splits,
                limit,
                opts.tuning.fuse,
            )?;
            let b = LayerOps {
                gpu: &gpu,
                c,
                s: &s,
                sh: &shared,
                spec,
                w: &lw,
                has_ff: w.rope_freqs.is_some(),
            };
            // (list, one token, its attention). few.wgsl attends at most
            // SPLIT_KEYS keys, so only where the split list takes the rest.
            let few = shared.split_attention && opts.tuning.few_attention;
            let mut lists = vec![
                (
                    &mut layers_one,
                    true,
                    if few { Attn::Few } else { Attn::Pass },
                ),
                (&mut layers, false, Attn::Pass),
            ];
            if shared.split_attention {
                lists.push((&mut layers_long, true, Attn::Split));
                for (mk, list) in layers_mid.iter_mut() {
                    lists.push((list, true, Attn::Mid(*mk)));
                }
                for ((_, list), &(_, sh)) in layers_deep.iter_mut().zip(&deep_tiers) {
                    lists.push((list, true, Attn::Deep(sh)));
                }
            }
            if let Some(tile) = shared.flash {
                lists.push((&mut layers_flash, false, Attn::Flash(tile)));
            }
            last_down.resize(lists.len(), None);
            for (i, (list, one, attn)) in lists.into_iter().enumerate() {
                let tiled = !one && opts.tuning.tiled_prefill;
                // The FFN's ops first: where its gate/up product starts
                // with a quantize pass into int_g, the Wo product may write
                // that x instead (main_q), and the pass goes.
                let (mut ffn, gx, down) = b.ffn_block(&mut k, tiled)?;
                let mut att = b.attention_block(&mut k, tiled, attn, gx.as_ref())?;
                if att.iter().any(|o| o.label == "wo_q") {
                    take_quantize(b.gpu, &k, &mut ffn);
                }
                // down_q: where this layer's q/k/v product starts with its
                // pass, the layer before's down product (the last ops in
                // the list) is made again to write that x, and the pass
                // goes.
                if let (Some(at), Some(wd)) = (last_down[i].take(), mats.last()) {
                    if opts.tuning.down_q && starts_with_quantize(b.gpu, &k, &att) {
                        let mark = gpu.live_buffers();
                        let ops = b.down_writing_qkv_x(&mut k, wd, at.had_pass)?;
                        if ops.iter().any(|o| o.label == "down_q") {
                            list.truncate(list.len() - at.len);
                            gpu.release(&at.uniforms);
                            list.extend(ops);
                            take_quantize(b.gpu, &k, &mut att);
                        } else {
                            // Not taken: its ops go unused.
                            gpu.release(&gpu.uniforms_since(mark));
                        }
                    }
                }
                list.extend(att);
                list.extend(ffn);
                last_down[i] = down;
            }
            keep.extend(lw.bufs);
            mats.extend(lw.qkv.mats);
            mats.extend(lw.gate_up.mats);
            mats.extend([lw.wo, lw.wd]);
            progress((l + 1) as f64 / w.layers.len() as f64);
        }

        let out_norm = wg.upload_f32("output_norm", &w.output_norm);
        // The LM head also leaves the best row of each workgroup, so that
        // argmax scans those instead of the whole vocabulary.
        let head_rows = auto_rows(vocab, Mv::Head);
        let head_args = MatvecArgs {
            mv: Mv::Head,
            label: "lm_head",
            norm: Some((&out_norm, c.norm_eps)),
            last: true,
            rows_per_group: head_rows,
            partials: Some(&s.partials),
            ..MatvecArgs::plain(&s.x, &s.logits, &s.step, vocab, false)
        };
        let out = if w.output == w.token_embd {
            None
        } else {
            Some(GpuMatrix::from_weights(&wg, "output", w, &w.output, limit)?)
        };
        let out_m = out.as_ref().unwrap_or(&embd);
        let head = matvec_ops(&gpu, &mut k, out_m, 0..vocab, &head_args)?;
        let groups: usize = out_m
            .parts
            .iter()
            .map(|p| p.rows.div_ceil(head_rows as usize))
            .sum();
        mats.extend(out);
        mats.push(embd);
        // Two passes: the head's per-group bests cut to one per
        // PAIRS_PER_GROUP in parallel, then their best; one workgroup
        // scanning all 32k of a 128k vocabulary's waited ~30 memory round
        // trips (40 us a token on the H100).
        let parts = groups.div_ceil(kernels::PAIRS_PER_GROUP);
        let am_p = gpu.params([groups as u32, vocab as u32, 0, 0, 0, 0, 0, 0]);
        let am_b = gpu.params([parts as u32, vocab as u32, 0, 0, 0, 0, 0, 0]);
        let argmax = vec![
            Op {
                bind: kernels::bind(
                    &gpu,
                    &k.argmax_pairs_part(&gpu),
                    &[(3, &s.partials), (5, &s.bests), (2, &am_p)],
                ),
                pipeline: k.argmax_pairs_part(&gpu),
                shape: Shape::Fixed([parts as u32, 1, 1]),
                label: "argmax",
            },
            Op {
                bind: kernels::bind(
                    &gpu,
                    &k.argmax_pairs(&gpu),
                    &[(3, &s.bests), (1, &s.argmax), (2, &am_b)],
                ),
                pipeline: k.argmax_pairs(&gpu),
                shape: Shape::Fixed([1, 1, 1]),
                label: "argmax",
            },
        ];
        // Greedy under a grammar: the head's per-group bests may be masked
        // out, so the masked argmax scans the logits themselves.
        let am_m = gpu.params([vocab as u32, vocab as u32, 0, 0, 0, 0, 0, 0]);
        let masked_argmax = vec![Op {
            bind: kernels::bind(
                &gpu,
                &k.argmax_masked(&gpu),
                &[
                    (0, &s.logits),
                    (1, &s.argmax),
                    (2, &am_m),
                    (4, &s.sample.mask),
                ],
            ),
            pipeline: k.argmax_masked(&gpu),
            shape: Shape::Fixed([1, 1, 1]),
            label: "argmax",
        }];
        keep.extend(shared.into_buffers());
        keep.extend([out_norm, am_p, am_m]);
        Ok(GpuBackend {
            gpu,
            vocab,
            ctx,
            max_batch: batch,
            s,
            embed,
            layers,
            layers_one,
            layers_long,
            layers_mid,
            layers_deep,
            layers_flash,
            head,
            argmax,
            masked_argmax,
            sample: OnceCell::new(),
            kernels: k,
            logits: vec![0.0; vocab],
            pipeline: opts.tuning.pipeline,
            ahead: None,
            feed: opts.tuning.feed,
            fed: None,
            _keep: keep,
            _matrices: mats,
        })
    }
}

/// What a load decides from the config and options before it makes a
/// buffer; `build` and the memory plan (`plan.rs`) both start from it.
pub(super) struct Dims {
    pub(super) ctx: usize,
    /// The prefill batch the scratch holds.
    pub(super) batch: usize,
    /// The most bytes one weight buffer holds.
    pub(super) limit: u64,
    /// The one-key-at-a-time attention kernel (with its score scratch).
    pub(super) simple_attention: bool,
    /// A third layer list, for decode past SPLIT_KEYS keys.
    pub(super) split_attention: bool,
    /// With it, one more for each mid.wgsl tier (`kernels::mid_tiers`:
    /// decode up to that many keys).
    pub(super) mid_tiers: Vec<usize>,
    /// A fourth, for prefill past SPLIT_KEYS keys (flash.wgsl), with this
    /// tile (`GpuTuning::flash_prefill`, with the chunked kernel, where the
    /// head size has a tile).
    pub(super) flash: Option<FlashTile>,
    /// Split slots per head in the partial results (`SplitRule::slots`:
    /// enough for either split kernel's splits at any position).
    pub(super) splits: usize,
    /// How attention.wgsl's `split` cuts the keys.
    pub(super) split_rule: kernels::SplitRule,
    /// The fused q/k/v kernel handles rows in quads of two pairs.
    pub(super) quads: bool,
}

impl Dims {
    /// `binding_limit`: the device's (`Gpu::binding_limit`).
    pub(super) fn new(
        c: &Config,
        ctx: usize,
        max_batch: usize,
        opts: &GpuOptions,
        binding_limit: u64,
    ) -> Result<Dims> {
        let ctx = ctx.max(1);
        if c.head_dim > 512 || !c.head_dim.is_multiple_of(2) {
            return Err(Error::DeviceLimit(format!(
                "head size {} (the GPU attention kernel takes even sizes up to 512)",
                c.head_dim
            )));
        }
        let limit = opts.max_binding.unwrap_or(u64::MAX).min(binding_limit);
        let mut batch = max_batch.min(opts.max_batch).clamp(1, ctx);
        // The one-key-at-a-time attention kernel needs a score scratch that
        // grows with batch x heads x context; the chunked one needs none.
        let simple_attention = c.head_dim > 256 || !opts.tuning.chunked_attention;
        let score_cap = binding_limit.min(256 << 20);
        while simple_attention && batch > 1 && (batch * c.n_heads * ctx * 4) as u64 > score_cap {
            batch /= 2;
        }
        let group = c.n_heads / c.n_kv_heads.max(1);
        let split_rule = kernels::SplitRule::new(&opts.tuning, c.head_dim, group);
        let deep = kernels::DeepShape::pick(opts.tuning.deep_shape, c.head_dim, group);
        let split_attention = !simple_attention && opts.tuning.split_attention;
        Ok(Dims {
            ctx,
            batch,
            limit,
            simple_attention,
            split_attention,
            mid_tiers: if split_attention {
                kernels::mid_tiers(&opts.tuning, c.head_dim)
            } else {
                Vec::new()
            },
            flash: FlashTile::new(c.head_dim, group)
                .filter(|_| !simple_attention && opts.tuning.flash_prefill),
            // attention.wgsl's splits, or split.wgsl's.
            splits: split_rule
                .slots(ctx, c.head_dim, group, c.n_kv_heads)
                .max(deep.rule().slots(ctx, c.head_dim, group, c.n_kv_heads)),
            split_rule,
            quads: c.head_dim.is_multiple_of(4) && c.rope_dim.is_multiple_of(4),
        })
    }
}

/// The longest rows an integer product reads (`IntX` holds `batch` tokens
/// of them): with `GpuTuning::int_dot`, those of the matrices with an
/// integer decoder (`kernels::int_decoder`) in a group (q/k/v, gate/up, or
/// one matrix) of at least its floor (`kernels::int_floor`); with
/// `int_prefill`, those of every layer matrix with an int8 tile decoder
/// (`kernels::tile_q_decoder`). None where neither has any: no `IntX` is
/// made. Unfused, a member alone may fall short of its floor, and a
/// device may lack dot4I8Packed: `matvec_ops` checks each product.
pub(super) fn int_x_cols(w: &Weights, opts: &GpuOptions) -> Option<usize> {
    let t = &opts.tuning;
    let tiles = w
        .layers
        .iter()
        .flat_map(|l| [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down])
        .filter(|m| t.int_prefill && kernels::tile_q_decoder(m.ty).is_some())
        .map(|m| m.cols)
        .max();
    if !t.int_dot {
        return tiles;
    }
    let groups = w.layers.iter().flat_map(|l| {
        [
            vec![&l.wq, &l.wk, &l.wv],
            vec![&l.w_gate, &l.w_up],
            vec![&l.wo],
            vec![&l.w_down],
        ]
    });
    groups
        .chain([vec![&w.output]])
        .filter(|g| {
            let floor = kernels::int_floor(
                g.iter().map(|m| m.ty),
                t.int_min_bytes,
                t.int_min_bytes_q8_0,
            );
            g.iter().map(|m| m.size() as u64).sum::<u64>() >= floor
        })
        .flatten()
        .filter(|m| kernels::int_decoder(m.ty).is_some())
        .map(|m| m.cols)
        .max()
        .max(tiles)
}

/// The down products' rows for `Kernels::int_h`, the int8 x that the
/// gate/up product writes for them (`GpuTuning::glu_q`): with `int_x`
/// (the same device-free rule, so that the memory plan counts it alike),
/// the longest down row, where one reaches `glu_q_min`.
pub(super) fn int_h_cols(w: &Weights, opts: &GpuOptions) -> Option<usize> {
    let t = &opts.tuning;
    if !(t.glu_q && t.int_dot) {
        return None;
    }
    int_x_cols(w, opts)?;
    w.layers
        .iter()
        .map(|l| l.w_down.cols)
        .max()
        .filter(|&c| c >= t.glu_q_min)
}

/// The fused gate/up products' rows for `Kernels::int_g`, the int8 x that
/// the Wo product writes for them (`GpuTuning::wo_q`): with `int_x` (the
/// same device-free rule, so that the memory plan counts it alike), the
/// longest gate row of a layer whose Wo product has `wo_q_min` rows.
/// Made whether or not the device takes main_q's shape, as `IntX` is
/// whether or not it has dot4I8Packed.
pub(super) fn int_g_cols(w: &Weights, opts: &GpuOptions) -> Option<usize> {
    let t = &opts.tuning;
    if !(t.wo_q && t.int_dot) {
        return None;
    }
    int_x_cols(w, opts)?;
    w.layers
        .iter()
        .filter(|l| l.wo.rows >= t.wo_q_min)
        .map(|l| l.w_gate.cols)
        .max()
}

/// The longest rows the tensor-core prefill tile may read in f16 (`HalfX`
/// holds `batch` tokens of them): with `GpuTuning::coop_matrix` and tiled
/// prefill, those of the layer products of at least `half_x_min` rows and
/// columns (`Kernels::half_tile`; q/k/v and gate/up counted as fused)
/// whose formats may take that tile (not F32 or BF16). Made whether or not
/// the device has cooperative matrices, as `IntX` is whether or not it
/// has dot4I8Packed, so that the memory plan (which knows no device)
/// counts it alike: batch x cols x 2 bytes (14 MiB for an 8B's 512-token
/// batch; none for the smaller shapes, whose products are under 4096).
pub(super) fn half_x_cols(w: &Weights, opts: &GpuOptions) -> Option<usize> {
    use crate::quant::GgmlType::{BF16, F32};
    let t = &opts.tuning;
    if !(t.coop_matrix && t.tiled_prefill) {
        return None;
    }
    w.layers
        .iter()
        .flat_map(|l| {
            let qkv = l.wq.rows + l.wk.rows + l.wv.rows;
            let ff = l.w_gate.rows + l.w_up.rows;
            [
                (&l.wq, qkv),
                (&l.wk, qkv),
                (&l.wv, qkv),
                (&l.wo, l.wo.rows),
                (&l.w_gate, ff),
                (&l.w_up, ff),
                (&l.w_down, l.w_down.rows),
            ]
        })
        .filter(|&(m, rows)| {
            kernels::takes_half_x(rows, m.cols, t.half_x_min) && !matches!(m.ty, F32 | BF16)
        })
        .map(|(m, _)| m.cols)
        .max()
}

/// Bytes of one layer's key (or value) cache: f16, `ctx` x kv_dim.
pub(super) fn kv_cache_bytes(c: &Config, ctx: usize) -> u64 {
    (ctx * c.kv_dim() * 2) as u64
}

/// The bytes asked for each `Scratch` buffer (before `padded`).
pub(super) struct ScratchSizes {
    x: u64,
    xb: u64,
    q: u64,
    k: u64,
    v: u64,
    xo: u64,
    hb: u64,
    hb2: u64,
    delta: u64,
    scores: u64,
    logits: u64,
    tokens: u64,
    argmax: u64,
    partials: u64,
    bests: u64,
    att_part: u64,
    read_id: u64,
    read_logits: u64,
}

impl ScratchSizes {
    pub(super) fn new(c: &Config, d: &Dims) -> ScratchSizes {
        let b = d.batch as u64;
        let (dim, qd, kvd, ff) = (
            c.dim as u64,
            c.q_dim() as u64,
            c.kv_dim() as u64,
            c.ffn_dim as u64,
        );
        let vocab = c.vocab_size as u64;
        ScratchSizes {
            x: b * dim * 4,
            xb: b * dim * 4,
            q: b * qd * 4,
            k: b * kvd * 4,
            v: b * kvd * 4,
            xo: b * qd * 4,
            hb: b * ff * 4,
            hb2: b * ff * 4,
            delta: b * dim * 4,
            scores: if d.simple_attention {
                b * (c.n_heads * d.ctx) as u64 * 4
            } else {
                4
            },
            logits: vocab * 4,
            tokens: b * 4,
            argmax: 4,
            partials: vocab * 8,
            bests: vocab.div_ceil(kernels::PAIRS_PER_GROUP as u64) * 8,
            att_part: (c.n_heads * d.splits * (c.head_dim + 2) * 4) as u64,
            read_id: 4,
            read_logits: vocab * 4,
        }
    }

    /// Every buffer's bytes as asked (the two id readbacks apart), the
    /// step uniform and the sampler's aside.
    pub(super) fn all(&self) -> [u64; 19] {
        [
            self.x,
            self.xb,
            self.q,
            self.k,
            self.v,
            self.xo,
            self.hb,
            self.hb2,
            self.delta,
            self.scores,
            self.logits,
            self.tokens,
            self.argmax,
            self.partials,
            self.bests,
            self.att_part,
            self.read_id,
            self.read_id,
            self.read_logits,
        ]
    }
}

/// Which attention a layer list runs.
#[derive(Clone, Copy)]
enum Attn {
    /// One pass per query (`LayerOps::attention`).
    Pass,
    /// Decode below SPLIT_KEYS keys in few.wgsl (`LayerOps::attention_few`).
    Few,
    /// Decode in splits, merged after (`LayerOps::attention_split`):
    /// attention.wgsl's `split`.
    Split,
    /// Decode in one dispatch over at most this many keys
    /// (`LayerOps::attention_mid`).
    Mid(usize),
    /// The same with split.wgsl's splits in this shape, for many keys.
    Deep(kernels::DeepShape),
    /// Prefill in tiles (`LayerOps::attention_flash`).
    Flash(FlashTile),
}

/// What every layer's ops share: uniform blocks and the attention shape.
struct Shared {
    /// Rope frequency divisors (a 1-element dummy without them).
    ff: wgpu::Buffer,
    /// rmsnorm over the model dim, and over one head (q/k norm).
    norm: wgpu::Buffer,
    head_norm: wgpu::Buffer,
    /// Element-wise widths: q, k/v, ffn.
    ew_q: wgpu::Buffer,
    ew_kv: wgpu::Buffer,
    ew_ff: wgpu::Buffer,
    simple_attention: bool,
    split_attention: bool,
    flash: Option<FlashTile>,
    /// `Dims::split_rule`.
    split_rule: kernels::SplitRule,
    /// The context (split.wgsl's dispatch covers it in splits of
    /// SPLIT_KEYS keys).
    ctx: usize,
    /// The chunked attention kernels may also write Wo's int8 x
    /// (`GpuTuning::attention_int8`; heads whole 32-element blocks; not
    /// the simple kernel).
    attention_int8: bool,
    att_wgs: u32,
    quads: bool,
    /// Workgroups a head of attention.wgsl's merge (`GpuTuning::merge_dims`).
    merge_parts: u32,
}

impl Shared {
    fn into_buffers(self) -> [wgpu::Buffer; 6] {
        [
            self.ff,
            self.norm,
            self.head_norm,
            self.ew_q,
            self.ew_kv,
            self.ew_ff,
        ]
    }
}

/// Where a layer's down product's ops end a layer list (its last `len`
/// ops), whether they begin with its quantize pass, and their uniform
/// blocks: what the next layer's down_q needs to make them again (and to
/// release what the first ones held).
#[derive(Clone)]
struct LastDown {
    len: usize,
    had_pass: bool,
    uniforms: Vec<wgpu::Buffer>,
}

/// One layer on the GPU: its weights, norms, biases, KV cache and the
/// uniform blocks of its rope and attention (which differ by layer:
/// gemma3's sliding layers have their own rope base and a window).
struct LayerBufs {
    qkv: MatGroup,
    gate_up: MatGroup,
    wo: GpuMatrix,
    wd: GpuMatrix,
    attn_norm: wgpu::Buffer,
    ffn_norm: wgpu::Buffer,
    q_norm: Option<wgpu::Buffer>,
    k_norm: Option<wgpu::Buffer>,
    post_attn_norm: Option<wgpu::Buffer>,
    post_ffn_norm: Option<wgpu::Buffer>,
    /// q, k and v biases, each alone, and concatenated like the fused rows.
    biases: [Option<wgpu::Buffer>; 3],
    qkv_bias: Option<wgpu::Buffer>,
    kc: wgpu::Buffer,
    vc: wgpu::Buffer,
    rope_q: wgpu::Buffer,
    rope_k: wgpu::Buffer,
    att: wgpu::Buffer,
    /// Every plain buffer above, for `_keep` (and Drop).
    bufs: Vec<wgpu::Buffer>,
}

impl LayerBufs {
    #[allow(clippy::too_many_arguments)]
    fn upload(
        gpu: &Gpu,
        c: &Config,
        w: &Weights,
        l: usize,
        layer: &Layer,
        spec: &LayerSpec,
        ctx: usize,
        splits: usize,
        limit: u64,
        fuse: bool,
    ) -> Result<LayerBufs> {
        let (qd, kvd) = (c.q_dim(), c.kv_dim());
        let name = |s: &str| format!("blk.{l}.{s}");
        let (wg, kv) = (
            gpu.for_kind(MemKind::Weights),
            gpu.for_kind(MemKind::KvCache),
        );
        let qkv = MatGroup::upload(
            &wg,
            &name("attn_qkv"),
            w,
            &[
                (&name("attn_q"), &layer.wq),
                (&name("attn_k"), &layer.wk),
                (&name("attn_v"), &layer.wv),
            ],
            limit,
            fuse,
        )?;
        let gate_up = MatGroup::upload(
            &wg,
            &name("ffn_gate_up"),
            w,
            &[
                (&name("ffn_gate"), &layer.w_gate),
                (&name("ffn_up"), &layer.w_up),
            ],
            limit,
            fuse,
        )?;
        let mat = |m: &Matrix, s: &str| GpuMatrix::from_weights(&wg, &name(s), w, m, limit);
        let vector =
            |label: &str, v: &Option<Vec<f32>>| v.as_ref().map(|v| wg.upload_f32(label, v));
        let qkv_bias = if layer.bq.is_some() || layer.bk.is_some() || layer.bv.is_some() {
            let mut all = Vec::with_capacity(qd + 2 * kvd);
            for (b, n) in [(&layer.bq, qd), (&layer.bk, kvd), (&layer.bv, kvd)] {
                match b {
                    Some(b) => all.extend_from_slice(b),
                    None => all.extend(std::iter::repeat_n(0.0, n)),
                }
            }
            Some(wg.upload_f32("qkv bias", &all))
        } else {
            None
        };
        let theta_scale = spec.theta_scale(c.rope_dim);
        let neox = c.spec.rope_style == RopeStyle::Neox;
        let rope = |heads: usize| {
            gpu.params([
                heads as u32,
                c.head_dim as u32,
                c.rope_dim as u32,
                neox as u32,
                f(theta_scale),
                f(spec.rope_freq_scale),
                w.rope_freqs.is_some() as u32,
                0,
            ])
        };
        let att = gpu.params([
            c.n_heads as u32,
            c.n_kv_heads as u32,
            c.head_dim as u32,
            ctx as u32,
            f(c.spec.attn_scale),
            0,
            splits as u32,
            window_keys(spec, ctx),
        ]);
        let mut lb = LayerBufs {
            qkv,
            gate_up,
            wo: mat(&layer.wo, "attn_output")?,
            wd: mat(&layer.w_down, "ffn_down")?,
            attn_norm: wg.upload_f32("attn_norm", &layer.attn_norm),
            ffn_norm: wg.upload_f32("ffn_norm", &layer.ffn_norm),
            q_norm: vector("attn_q_norm", &layer.q_norm),
            k_norm: vector("attn_k_norm", &layer.k_norm),
            post_attn_norm: vector("post_attention_norm", &layer.post_attn_norm),
            post_ffn_norm: vector("post_ffw_norm", &layer.post_ffn_norm),
            biases: [
                vector("attn_q.bias", &layer.bq),
                vector("attn_k.bias", &layer.bk),
                vector("attn_v.bias", &layer.bv),
            ],
            qkv_bias,
            kc: kv.storage("key cache", kv_cache_bytes(c, ctx))?,
            vc: kv.storage("value cache", kv_cache_bytes(c, ctx))?,
            rope_q: rope(c.n_heads),
            rope_k: rope(c.n_kv_heads),
            att,
            bufs: Vec::new(),
        };
        lb.bufs = [
            &lb.attn_norm,
            &lb.ffn_norm,
            &lb.kc,
            &lb.vc,
            &lb.rope_q,
            &lb.rope_k,
            &lb.att,
        ]
        .into_iter()
        .chain(&lb.q_norm)
        .chain(&lb.k_norm)
        .chain(&lb.post_attn_norm)
        .chain(&lb.post_ffn_norm)
        .chain(lb.biases.iter().flatten())
        .chain(&lb.qkv_bias)
        .cloned()
        .collect();
        Ok(lb)
    }
}

/// The attention shaders' P.window for a layer: its sliding window within
/// the context, 0 for none. Decode's split grid (`kernels::SplitGrid`)
/// counts keys with the same value, so both take it from here.
fn window_keys(spec: &LayerSpec, ctx: usize) -> u32 {
    spec.window.map_or(0, |w| w.min(ctx)) as u32
}

/// Builds one layer's ops; prefill (`tiled`: products as tiled matmuls)
/// and decode (matvecs, the norm folded into the products) lists alike.
struct LayerOps<'a> {
    gpu: &'a Gpu,
    c: &'a Config,
    s: &'a Scratch,
    sh: &'a Shared,
    spec: &'a LayerSpec,
    w: &'a LayerBufs,
    has_ff: bool,
}

impl LayerOps<'_> {
    /// x += [postnorm] Wo · attention(q, k, v), the q/k/v made from
    /// rmsnorm(x) and stored (k, v) to the cache; `gx`: the gate/up
    /// product's int8 x, which the Wo product may also write (main_q).
    fn attention_block(
        &self,
        k: &mut Kernels,
        tiled: bool,
        attn: Attn,
        gx: Option<&IntX>,
    ) -> Result<Vec<Op>> {
        let mut ops = match self
            .w
            .qkv
            .fused()
            .filter(|_| self.sh.quads && !self.spec.qk_norm)
        {
            Some(m) => self.qkv_fused(k, m, tiled)?,
            None => self.qkv_unfused(k, tiled)?,
        };
        let post = self.w.post_attn_norm.as_ref();
        let next = gx.map(|h| (h, &self.w.ffn_norm));
        let mut wo = self.residual(k, &self.w.wo, &self.s.xo, post, tiled, None, next, "wo")?;
        // Where Wo takes the integer path, the chunked attention kernels
        // write its int8 x too, which saves the quantize pass's dispatch
        // (the tiled prefill kernel does not: its Wo keeps its pass).
        let qx = match (&attn, k.int_x.clone()) {
            (Attn::Pass | Attn::Few | Attn::Split | Attn::Mid(_) | Attn::Deep(_), Some(ix))
                if self.sh.attention_int8 =>
            {
                take_quantize(self.gpu, k, &mut wo).then_some(ix)
            }
            _ => None,
        };
        ops.extend(match attn {
            Attn::Pass => vec![self.attention(k, qx.as_ref())],
            Attn::Few => vec![self.attention_few(k, qx.as_ref())],
            Attn::Split => self.attention_split(k, qx.as_ref(), None),
            Attn::Mid(mk) => vec![self.attention_mid(k, mk, qx.as_ref())],
            Attn::Deep(sh) => self.attention_split(k, qx.as_ref(), Some(sh)),
            Attn::Flash(tile) => vec![self.attention_flash(k, tile)],
        });
        ops.extend(wo);
        Ok(ops)
    }

    /// x += [postnorm] Wdown · (act(Wgate · xb) * (Wup · xb)), xb = rmsnorm(x);
    /// and the int8 x its ops begin quantizing for a fused gate/up product
    /// (`Kernels::int_g`, in decode and untiled batches without a
    /// post-attention norm), which the Wo product before may write instead.
    ///
    /// Also where its down product's ops end the list, for the next
    /// layer's down_q: in decode and untiled batches without a post-FFN
    /// norm (whose down product writes `delta`, not x).
    #[allow(clippy::type_complexity)]
    fn ffn_block(
        &self,
        k: &mut Kernels,
        tiled: bool,
    ) -> Result<(Vec<Op>, Option<IntX>, Option<LastDown>)> {
        // In decode the down product reads its int8 x from int_h, so that
        // a fused gate/up product on the integer path can write it there
        // (glu_q) and its quantize pass goes; where it cannot, that pass
        // writes int_h instead.
        let ih = k.int_h.clone().filter(|_| !tiled);
        let post = self.w.post_ffn_norm.as_ref();
        let mark = self.gpu.live_buffers();
        let mut down = self.residual(
            k,
            &self.w.wd,
            &self.s.hb,
            post,
            tiled,
            ih.as_ref(),
            None,
            "down",
        )?;
        let uniforms = self.gpu.uniforms_since(mark);
        let down_int = starts_with_quantize(self.gpu, k, &down);
        let gx = k
            .int_g
            .clone()
            .filter(|_| !tiled && self.w.post_attn_norm.is_none());
        let (mut ops, gx) = match self.w.gate_up.fused() {
            Some(m) => {
                let ih = ih.as_ref().filter(|_| down_int);
                let ops = self.ffn_fused(k, m, tiled, ih, gx.as_ref())?;
                let gx = gx.filter(|_| starts_with_quantize(self.gpu, k, &ops));
                (ops, gx)
            }
            None => (self.ffn_unfused(k, tiled)?, None),
        };
        if ops.iter().any(|o| o.label == "gate_up_q") {
            take_quantize(self.gpu, k, &mut down);
        }
        let last = (!tiled && post.is_none()).then(|| LastDown {
            len: down.len(),
            had_pass: starts_with_quantize(self.gpu, k, &down),
            uniforms,
        });
        ops.extend(down);
        Ok((ops, gx, last))
    }

    /// The layer before's down product `wd` (x += wd · hb, its int8 x from
    /// int_h as `ffn_block` made it, with its quantize pass if `had_pass`)
    /// also writing this layer's q/k/v int8 x (`Kernels::int_x`, with this
    /// layer's attn_norm gains) where main_q takes it ("down_q").
    fn down_writing_qkv_x(
        &self,
        k: &mut Kernels,
        wd: &GpuMatrix,
        had_pass: bool,
    ) -> Result<Vec<Op>> {
        let (ih, ix) = (k.int_h.clone(), k.int_x.clone());
        let next = ix.as_ref().map(|x| (x, &self.w.attn_norm));
        let mut ops = self.residual(k, wd, &self.s.hb, None, false, ih.as_ref(), next, "down")?;
        if !had_pass {
            take_quantize(self.gpu, k, &mut ops);
        }
        Ok(ops)
    }

    fn norm(&self, k: &Kernels, x: &wgpu::Buffer, g: &wgpu::Buffer, out: &wgpu::Buffer) -> Op {
        let p = k.rmsnorm(self.gpu);
        Op {
            bind: kernels::bind(
                self.gpu,
                &p,
                &[
                    (0, x),
                    (1, g),
                    (2, out),
                    (3, &self.sh.norm),
                    (4, &self.s.step),
                ],
            ),
            pipeline: p,
            shape: Shape::PerToken([1, 1, 1], 0),
            label: "rmsnorm",
        }
    }

    /// Fused: one kernel from x to q and the cache: norm folded (tiled:
    /// a separate rmsnorm into xb first), bias, rope, k/v stored.
    fn qkv_fused(&self, k: &mut Kernels, m: &GpuMatrix, tiled: bool) -> Result<Vec<Op>> {
        let (s, c, w) = (self.s, self.c, self.w);
        let a = MatvecArgs {
            mv: Mv::Qkv,
            label: "qkv",
            norm: (!tiled).then_some((&w.attn_norm, c.norm_eps)),
            split: c.q_dim(),
            tiled,
            qkv: Some(QkvArgs {
                kc: &w.kc,
                vc: &w.vc,
                bias: w.qkv_bias.as_ref(),
                ff: &self.sh.ff,
                has_ff: self.has_ff,
                kvd: c.kv_dim(),
                head_dim: c.head_dim,
                rope_dim: c.rope_dim,
                neox: c.spec.rope_style == RopeStyle::Neox,
                theta_scale: self.spec.theta_scale(c.rope_dim),
                freq_scale: self.spec.rope_freq_scale,
            }),
            ..MatvecArgs::plain(
                if tiled { &s.xb } else { &s.x },
                &s.q,
                &s.step,
                c.q_dim(),
                false,
            )
        };
        let mut ops = Vec::new();
        if tiled {
            ops.push(self.norm(k, &s.x, &w.attn_norm, &s.xb));
        }
        ops.extend(matvec_ops(self.gpu, k, m, 0..m.rows, &a)?);
        Ok(ops)
    }

    /// Unfused: norm, the three products, biases, per-head q/k norms,
    /// rope, and the store to the cache.
    fn qkv_unfused(&self, k: &mut Kernels, tiled: bool) -> Result<Vec<Op>> {
        let (gpu, s, c, w, sh) = (self.gpu, self.s, self.c, self.w, self.sh);
        let (qd, kvd) = (c.q_dim(), c.kv_dim());
        let mut ops = vec![self.norm(k, &s.x, &w.attn_norm, &s.xb)];
        for (i, (dst, width)) in [(&s.q, qd), (&s.k, kvd), (&s.v, kvd)]
            .into_iter()
            .enumerate()
        {
            let (m, rows) = w.qkv.seg(i);
            let a = MatvecArgs {
                tiled,
                ..MatvecArgs::plain(&s.xb, dst, &s.step, width, false)
            };
            ops.extend(matvec_ops(gpu, k, m, rows, &a)?);
        }
        let ew = [
            (&s.q, &sh.ew_q, qd),
            (&s.k, &sh.ew_kv, kvd),
            (&s.v, &sh.ew_kv, kvd),
        ];
        for (bias, (dst, p, width)) in w.biases.iter().zip(ew) {
            if let Some(bias) = bias {
                let pl = k.add_bias(gpu);
                ops.push(Op {
                    bind: kernels::bind(gpu, &pl, &[(0, dst), (1, bias), (2, p), (3, &s.step)]),
                    pipeline: pl,
                    shape: Shape::Flat(width as u32),
                    label: "add_bias",
                });
            }
        }
        if let (Some(qn), Some(kn)) = (&w.q_norm, &w.k_norm) {
            // Each head of each token is one row of head_dim.
            let pl = k.rmsnorm_in_place(gpu);
            for (buf, gains, heads) in [(&s.q, qn, c.n_heads), (&s.k, kn, c.n_kv_heads)] {
                ops.push(Op {
                    bind: kernels::bind(
                        gpu,
                        &pl,
                        &[(1, gains), (2, buf), (3, &sh.head_norm), (4, &s.step)],
                    ),
                    pipeline: pl.clone(),
                    shape: Shape::PerToken([heads as u32, 1, 1], 1),
                    label: "head_norm",
                });
            }
        }
        for (buf, p, heads) in [
            (&s.q, &w.rope_q, c.n_heads),
            (&s.k, &w.rope_k, c.n_kv_heads),
        ] {
            let pl = k.rope(gpu);
            ops.push(Op {
                bind: kernels::bind(gpu, &pl, &[(0, buf), (1, &sh.ff), (2, p), (3, &s.step)]),
                pipeline: pl,
                shape: Shape::PerToken([((heads * c.rope_dim / 2) as u32).div_ceil(64), 1, 1], 1),
                label: "rope",
            });
        }
        let pl = k.kv_store(gpu);
        ops.push(Op {
            bind: kernels::bind(
                gpu,
                &pl,
                &[
                    (0, &s.k),
                    (1, &s.v),
                    (2, &w.kc),
                    (3, &w.vc),
                    (4, &w.att),
                    (5, &s.step),
                ],
            ),
            pipeline: pl,
            shape: Shape::PerToken([((kvd / 2) as u32).div_ceil(64), 1, 1], 1),
            label: "kv_store",
        });
        Ok(ops)
    }

    /// What every attention kernel reads: the queries, the cache, its
    /// uniform block and the step.
    fn attention_reads(&self) -> [(u32, &wgpu::Buffer); 5] {
        let (s, w) = (self.s, self.w);
        [(8, &s.q), (2, &w.kc), (3, &w.vc), (4, &w.att), (5, &s.step)]
    }

    /// `attention_reads` for the kernels whose score threads read K rows
    /// as few.wgsl does (few.wgsl, mid.wgsl): the key cache as 16-byte
    /// words (binding 10) where `kernels::few_vec` holds, else as u32 (2).
    fn head_reads(&self) -> Vec<(u32, &wgpu::Buffer)> {
        let kc = if kernels::few_vec(self.c.head_dim) {
            10
        } else {
            2
        };
        self.attention_reads()
            .into_iter()
            .map(|(b, buf)| (if b == 2 { kc } else { b }, buf))
            .collect()
    }

    /// Attention over the cache in one pass per query (prefill, and decode
    /// up to SPLIT_KEYS keys or without the split kernel); with `qx` (the
    /// chunked kernel only) it also writes its output as Wo's int8 x.
    fn attention(&self, k: &mut Kernels, qx: Option<&IntX>) -> Op {
        let (gpu, s, c) = (self.gpu, self.s, self.c);
        let group = c.n_heads / c.n_kv_heads;
        let mut entries = self.attention_reads().to_vec();
        entries.push((6, &s.xo));
        let (pl, shape) = if self.sh.simple_attention {
            entries.push((7, &s.scores));
            (
                k.attention(gpu),
                Shape::PerToken([c.n_heads as u32, 1, 1], 1),
            )
        } else if let Some(ix) = qx {
            entries.extend([(13, &ix.q), (14, &ix.d)]);
            (
                k.attention_entry(
                    gpu,
                    c.head_dim,
                    group,
                    "chunked_q",
                    kernels::SplitRule::FIXED,
                ),
                Shape::PerToken([self.sh.att_wgs, 1, 1], 1),
            )
        } else {
            (
                k.attention_chunked(gpu, c.head_dim, group),
                Shape::PerToken([self.sh.att_wgs, 1, 1], 1),
            )
        };
        Op {
            bind: kernels::bind(gpu, &pl, &entries),
            pipeline: pl,
            shape,
            label: "attention",
        }
    }

    /// Decode below SPLIT_KEYS keys: few.wgsl, a workgroup per query head;
    /// with `qx` it also writes its output as Wo's int8 x.
    fn attention_few(&self, k: &mut Kernels, qx: Option<&IntX>) -> Op {
        let (gpu, s, c) = (self.gpu, self.s, self.c);
        let pl = k.attention_few(gpu, c.head_dim, qx.is_some());
        let mut entries = self.head_reads();
        entries.push((6, &s.xo));
        if let Some(ix) = qx {
            entries.extend([(13, &ix.q), (14, &ix.d)]);
        }
        Op {
            bind: kernels::bind(gpu, &pl, &entries),
            pipeline: pl,
            shape: Shape::Fixed([c.n_heads as u32, 1, 1]),
            label: "attention",
        }
    }

    /// Decode from SPLIT_KEYS keys up to `mk`: mid.wgsl, a workgroup per
    /// query head, no merge; with `qx` it also writes its output as Wo's
    /// int8 x.
    fn attention_mid(&self, k: &mut Kernels, mk: usize, qx: Option<&IntX>) -> Op {
        let (gpu, s, c, w) = (self.gpu, self.s, self.c, self.w);
        let pl = k.attention_mid(gpu, c.head_dim, mk, qx.is_some());
        // V rows as 16-byte words (binding 11) instead of u32 (3).
        let mut entries: Vec<_> = self
            .head_reads()
            .into_iter()
            .filter(|&(b, _)| b != 3)
            .collect();
        entries.extend([(11, &w.vc), (6, &s.xo)]);
        if let Some(ix) = qx {
            entries.extend([(13, &ix.q), (14, &ix.d)]);
        }
        Op {
            bind: kernels::bind(gpu, &pl, &entries),
            pipeline: pl,
            shape: Shape::Fixed([c.n_heads as u32, 1, 1]),
            label: "attention",
        }
    }

    /// Prefill past SPLIT_KEYS keys: flash.wgsl, a workgroup per kv head,
    /// tile of tokens and (large groups) share of the group.
    fn attention_flash(&self, k: &mut Kernels, tile: FlashTile) -> Op {
        let (gpu, s, c) = (self.gpu, self.s, self.c);
        let mut entries = self.attention_reads().to_vec();
        entries.push((6, &s.xo));
        if k.flash_coop_attention(c.head_dim) {
            let group = c.n_heads / c.n_kv_heads;
            let pl = k.attention_flash_coop(gpu, c.head_dim, kernels::flash_coop_heads(group));
            return Op {
                bind: kernels::bind(gpu, &pl, &entries),
                pipeline: pl,
                shape: kernels::flash_coop_shape(c.n_kv_heads, group),
                label: "attention",
            };
        }
        let pl = k.attention_flash(gpu, tile);
        Op {
            bind: kernels::bind(gpu, &pl, &entries),
            pipeline: pl,
            shape: tile.shape(c.n_kv_heads, c.n_heads / c.n_kv_heads),
            label: "attention",
        }
    }

    /// Decode past SPLIT_KEYS keys: the keys in splits, each split in its
    /// own workgroups (splits past the context or outside the window exit
    /// at once), then the merge; one pass would serialize every key of a
    /// kv head. With `qx` the merge also writes Wo's int8 x. `deep`: the
    /// splits in split.wgsl in that shape (whole query groups per
    /// workgroup), else attention.wgsl's `split` (the chunked kernel's
    /// workgroups).
    fn attention_split(
        &self,
        k: &mut Kernels,
        qx: Option<&IntX>,
        deep: Option<kernels::DeepShape>,
    ) -> Vec<Op> {
        let (gpu, s, c, w) = (self.gpu, self.s, self.c, self.w);
        let group = c.n_heads / c.n_kv_heads;
        // The merge counts the splits in use as its split kernel cut them:
        // split.wgsl's by its shape, or by the rule.
        let (sp, wgs, rule) = if let Some(sh) = deep {
            let wgs = kernels::split_workgroups(c.n_kv_heads, c.head_dim, group);
            let sp = k.attention_split(gpu, c.head_dim, group, sh);
            (sp, wgs, sh.rule())
        } else {
            let rule = self.sh.split_rule;
            let sp = k.attention_entry(gpu, c.head_dim, group, "split", rule);
            (sp, self.sh.att_wgs, rule)
        };
        let grid = kernels::SplitGrid {
            x: wgs,
            slots: rule.slots(self.sh.ctx, c.head_dim, group, c.n_kv_heads) as u32,
            window: window_keys(self.spec, self.sh.ctx),
            rule,
            head_dim: c.head_dim,
            group,
            kv_heads: c.n_kv_heads,
        };
        let parts = self.sh.merge_parts;
        let mp = k.attention_merge(gpu, c.head_dim, group, qx.is_some(), rule, parts);
        let mut split_entries = self.attention_reads().to_vec();
        split_entries.push((9, &s.att_part));
        if deep.is_some() {
            // split.wgsl also reads the key cache as 16-byte words.
            split_entries.push((10, &w.kc));
        }
        let mut merge_entries = vec![(9, &s.att_part), (4, &w.att), (5, &s.step), (6, &s.xo)];
        if let Some(ix) = qx {
            merge_entries.extend([(13, &ix.q), (14, &ix.d)]);
        }
        vec![
            Op {
                bind: kernels::bind(gpu, &sp, &split_entries),
                pipeline: sp,
                shape: Shape::Splits(grid),
                label: "attention",
            },
            Op {
                bind: kernels::bind(gpu, &mp, &merge_entries),
                pipeline: mp,
                shape: Shape::Fixed([c.n_heads as u32, parts, 1]),
                label: "attention_merge",
            },
        ]
    }

    /// x += [rmsnorm(·) * post] (m · input): accumulated into x by the
    /// product itself, or with a post-norm written to `delta` and added
    /// normed by one kernel. `label` names the product's decode dispatch
    /// ("wo", "down"), so that gpu-profile's decode table times the two
    /// apart: their rows differ in length (dim against ffn_dim).
    #[allow(clippy::too_many_arguments)]
    fn residual(
        &self,
        k: &mut Kernels,
        m: &GpuMatrix,
        input: &wgpu::Buffer,
        post: Option<&wgpu::Buffer>,
        tiled: bool,
        int_x: Option<&IntX>,
        int_next: Option<(&IntX, &wgpu::Buffer)>,
        label: &'static str,
    ) -> Result<Vec<Op>> {
        let (gpu, s, dim) = (self.gpu, self.s, self.c.dim);
        let Some(post) = post else {
            let a = MatvecArgs {
                tiled,
                int_x,
                int_next,
                label,
                ..MatvecArgs::plain(input, &s.x, &s.step, dim, true)
            };
            return matvec_ops(gpu, k, m, 0..dim, &a);
        };
        let a = MatvecArgs {
            tiled,
            int_x,
            label,
            ..MatvecArgs::plain(input, &s.delta, &s.step, dim, false)
        };
        let mut ops = matvec_ops(gpu, k, m, 0..dim, &a)?;
        let pl = k.rmsnorm_add(gpu);
        ops.push(Op {
            bind: kernels::bind(
                gpu,
                &pl,
                &[(0, &s.delta), (1, post), (2, &s.x), (3, &self.sh.norm)],
            ),
            pipeline: pl,
            shape: Shape::PerToken([1, 1, 1], 1),
            label: "post_norm",
        });
        Ok(ops)
    }

    fn gated(&self) -> Mv {
        match self.c.spec.activation {
            Activation::Silu => Mv::Silu,
            Activation::GeluTanh => Mv::Gelu,
        }
    }

    /// Fused: norm (tiled: separate), gate and up, act(gate) * up; with
    /// `int_out`, also as the down product's int8 x where it can (glu_q);
    /// `int_x`: the int8 x it reads on the integer path, if not
    /// `Kernels::int_x`.
    fn ffn_fused(
        &self,
        k: &mut Kernels,
        m: &GpuMatrix,
        tiled: bool,
        int_out: Option<&IntX>,
        int_x: Option<&IntX>,
    ) -> Result<Vec<Op>> {
        let (s, c, w) = (self.s, self.c, self.w);
        let a = MatvecArgs {
            mv: self.gated(),
            label: "gate_up",
            norm: (!tiled).then_some((&w.ffn_norm, c.norm_eps)),
            split: c.ffn_dim,
            tiled,
            int_out,
            int_x,
            ..MatvecArgs::plain(
                if tiled { &s.xb } else { &s.x },
                &s.hb,
                &s.step,
                c.ffn_dim,
                false,
            )
        };
        let mut ops = Vec::new();
        if tiled {
            ops.push(self.norm(k, &s.x, &w.ffn_norm, &s.xb));
        }
        ops.extend(matvec_ops(self.gpu, k, m, 0..m.rows, &a)?);
        Ok(ops)
    }

    /// Unfused: norm, gate, up, act(gate) * up.
    fn ffn_unfused(&self, k: &mut Kernels, tiled: bool) -> Result<Vec<Op>> {
        let (gpu, s, c, w) = (self.gpu, self.s, self.c, self.w);
        let mut ops = vec![self.norm(k, &s.x, &w.ffn_norm, &s.xb)];
        for (i, dst) in [&s.hb, &s.hb2].into_iter().enumerate() {
            let (m, rows) = w.gate_up.seg(i);
            let a = MatvecArgs {
                tiled,
                ..MatvecArgs::plain(&s.xb, dst, &s.step, c.ffn_dim, false)
            };
            ops.extend(matvec_ops(gpu, k, m, rows, &a)?);
        }
        let (pl, label) = match c.spec.activation {
            Activation::Silu => (k.silu_mul(gpu), "silu_mul"),
            Activation::GeluTanh => (k.gelu_mul(gpu), "gelu_mul"),
        };
        ops.push(Op {
            bind: kernels::bind(
                gpu,
                &pl,
                &[(0, &s.hb), (1, &s.hb2), (2, &self.sh.ew_ff), (3, &s.step)],
            ),
            pipeline: pl,
            shape: Shape::Flat(c.ffn_dim as u32),
            label,
        });
        Ok(ops)
    }
}
