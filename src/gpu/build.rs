//! The graph builder: the model's weights uploaded and turned into the op
//! lists the forward pass replays (`GpuBackend::build`), over the
//! activations every layer reuses (`Scratch`).

use std::cell::OnceCell;

use super::device::Gpu;
use super::kernels::{self, Kernels, Mv, Op, Shape};
use super::ops::{auto_rows, embed_ops, f, matvec_ops, MatvecArgs, QkvArgs, SampleBufs};
use super::upload::{GpuMatrix, MatGroup};
use super::{GpuBackend, GpuOptions};
use crate::error::{Error, Result};
use crate::model::{Config, Matrix, RopeStyle, Weights};

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
    pub(super) scores: wgpu::Buffer,
    pub(super) logits: wgpu::Buffer,
    pub(super) tokens: wgpu::Buffer,
    pub(super) step: wgpu::Buffer,
    pub(super) argmax: wgpu::Buffer,
    /// The LM head's per-workgroup (logit, row) bests.
    pub(super) partials: wgpu::Buffer,
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
        let ctx = ctx.max(1);
        let plain_llama = c.spec.embed_scale.is_none()
            && c.spec.activation == crate::model::Activation::Silu
            && c.spec.layers.iter().all(|l| {
                *l == c.spec.layers[0] && !l.qk_norm && l.window.is_none() && !l.post_attn_norm
            })
            && !c.spec.layers[0].post_ffn_norm;
        if !plain_llama {
            return Err(Error::Unsupported(format!(
                "the {} architecture on the GPU backend (use the CPU backend)",
                c.arch().name()
            )));
        }
        if c.head_dim > 512 || !c.head_dim.is_multiple_of(2) {
            return Err(Error::DeviceLimit(format!(
                "head size {} (the GPU attention kernel takes even sizes up to 512)",
                c.head_dim
            )));
        }
        let limit = opts
            .max_binding
            .unwrap_or(u64::MAX)
            .min(gpu.binding_limit());
        let (dim, qd, kvd, ff, vocab) = (c.dim, c.q_dim(), c.kv_dim(), c.ffn_dim, c.vocab_size);
        // The attention scratch grows with batch x heads x context.
        let mut batch = max_batch.min(opts.max_batch).clamp(1, ctx);
        // The one-key-at-a-time attention kernel needs a score scratch that
        // grows with batch x heads x context; the chunked one needs none.
        let simple_attention = c.head_dim > 256 || !opts.tuning.chunked_attention;
        let splits = ctx.div_ceil(kernels::SPLIT_KEYS);
        let score_cap = gpu.binding_limit().min(256 << 20);
        while simple_attention && batch > 1 && (batch * c.n_heads * ctx * 4) as u64 > score_cap {
            batch /= 2;
        }
        let b = batch as u64;
        let s = Scratch {
            x: gpu.storage("x", b * dim as u64 * 4)?,
            xb: gpu.storage("xb", b * dim as u64 * 4)?,
            q: gpu.storage("q", b * qd as u64 * 4)?,
            k: gpu.storage("k", b * kvd as u64 * 4)?,
            v: gpu.storage("v", b * kvd as u64 * 4)?,
            xo: gpu.storage("xo", b * qd as u64 * 4)?,
            hb: gpu.storage("hb", b * ff as u64 * 4)?,
            hb2: gpu.storage("hb2", b * ff as u64 * 4)?,
            scores: gpu.storage(
                "attention scores",
                if simple_attention {
                    b * (c.n_heads * ctx) as u64 * 4
                } else {
                    4
                },
            )?,
            logits: gpu.storage("logits", vocab as u64 * 4)?,
            tokens: gpu.storage("tokens", b * 4)?,
            step: gpu.step_buffer(),
            argmax: gpu.storage("argmax", 4)?,
            partials: gpu.storage("argmax partials", vocab as u64 * 8)?,
            read_id: [gpu.readback_buffer(4), gpu.readback_buffer(4)],
            read_logits: gpu.readback_buffer(vocab as u64 * 4),
            sample: SampleBufs::new(&gpu, vocab)?,
            att_part: gpu.storage(
                "attention splits",
                (c.n_heads * splits * (c.head_dim + 2) * 4) as u64,
            )?,
        };
        let mut k = Kernels::new(&gpu, &opts.tuning);
        let mut keep = Vec::new();
        let mut mats = Vec::new();

        let embd = GpuMatrix::from_weights(&gpu, "token_embd", w, &w.token_embd, limit)?;
        let embed = embed_ops(&gpu, &mut k, &embd, &s.tokens, &s.x)?;

        let ff_buf = match &w.rope_freqs {
            Some(v) => gpu.upload_f32("rope_freqs", v),
            None => gpu.upload_f32("rope_freqs", &[1.0]),
        };
        let l0 = c.spec.layers[0];
        let theta_scale = l0.theta_scale(c.rope_dim);
        let neox = c.spec.rope_style == RopeStyle::Neox;
        let rope_params = |heads: usize| {
            gpu.params([
                heads as u32,
                c.head_dim as u32,
                c.rope_dim as u32,
                neox as u32,
                f(theta_scale),
                f(l0.rope_freq_scale),
                w.rope_freqs.is_some() as u32,
                0,
            ])
        };
        let rope_q = rope_params(c.n_heads);
        let rope_k = rope_params(c.n_kv_heads);
        let norm_p = gpu.params([dim as u32, f(c.norm_eps), 0, 0, 0, 0, 0, 0]);
        let att_p = gpu.params([
            c.n_heads as u32,
            c.n_kv_heads as u32,
            c.head_dim as u32,
            ctx as u32,
            f(1.0 / (c.head_dim as f32).sqrt()),
            0,
            splits as u32,
            0,
        ]);
        let ew = |width: usize| gpu.params([width as u32, kernels::NX, 0, 0, 0, 0, 0, 0]);
        let (ew_q, ew_kv, ew_ff) = (ew(qd), ew(kvd), ew(ff));
        // The fused q/k/v kernel handles rows in quads of two pairs.
        let quads = c.head_dim.is_multiple_of(4) && c.rope_dim.is_multiple_of(4);

        let mut layers = Vec::new();
        let mut layers_one = Vec::new();
        let mut layers_long = Vec::new();
        let split_attention = !simple_attention && opts.tuning.split_attention;
        // Workgroups of the chunked and split kernels: kv heads x query
        // slots per kv head.
        let group = c.n_heads / c.n_kv_heads;
        let att_wgs = {
            let (_, qs) = kernels::chunk_shape(c.head_dim, group);
            c.n_kv_heads as u32 * (group as u32).div_ceil(qs)
        };
        let norm_op = |k: &Kernels, x: &wgpu::Buffer, g: &wgpu::Buffer, out: &wgpu::Buffer| Op {
            bind: kernels::bind(
                &gpu,
                &k.rmsnorm(&gpu),
                &[(0, x), (1, g), (2, out), (3, &norm_p), (4, &s.step)],
            ),
            pipeline: k.rmsnorm(&gpu),
            shape: Shape::PerToken([1, 1, 1], 0),
            label: "rmsnorm",
        };
        for (l, layer) in w.layers.iter().enumerate() {
            let qkv = MatGroup::upload(
                &gpu,
                &format!("blk.{l}.attn_qkv"),
                w,
                &[
                    (&format!("blk.{l}.attn_q"), &layer.wq),
                    (&format!("blk.{l}.attn_k"), &layer.wk),
                    (&format!("blk.{l}.attn_v"), &layer.wv),
                ],
                limit,
                opts.tuning.fuse,
            )?;
            let gate_up = MatGroup::upload(
                &gpu,
                &format!("blk.{l}.ffn_gate_up"),
                w,
                &[
                    (&format!("blk.{l}.ffn_gate"), &layer.w_gate),
                    (&format!("blk.{l}.ffn_up"), &layer.w_up),
                ],
                limit,
                opts.tuning.fuse,
            )?;
            let mat = |m: &Matrix, name: &str| {
                GpuMatrix::from_weights(&gpu, &format!("blk.{l}.{name}"), w, m, limit)
            };
            let wo = mat(&layer.wo, "attn_output")?;
            let wd = mat(&layer.w_down, "ffn_down")?;
            let attn_norm = gpu.upload_f32("attn_norm", &layer.attn_norm);
            let ffn_norm = gpu.upload_f32("ffn_norm", &layer.ffn_norm);
            let kc = gpu.storage("key cache", (ctx * kvd * 2) as u64)?;
            let vc = gpu.storage("value cache", (ctx * kvd * 2) as u64)?;

            // q/k/v bias, concatenated like the fused rows.
            let qkv_bias = if layer.bq.is_some() || layer.bk.is_some() || layer.bv.is_some() {
                let mut all = Vec::with_capacity(qd + 2 * kvd);
                for (b, n) in [(&layer.bq, qd), (&layer.bk, kvd), (&layer.bv, kvd)] {
                    match b {
                        Some(b) => all.extend_from_slice(b),
                        None => all.extend(std::iter::repeat_n(0.0, n)),
                    }
                }
                Some(gpu.upload_f32("qkv bias", &all))
            } else {
                None
            };
            // Products are tiled for a batch (prefill), matvec for one token.
            // Unfused q/k/v: norm, products, biases, rope, store to the cache.
            let qkv_unfused = |k: &mut Kernels, tiled: bool| -> Result<Vec<Op>> {
                let mut ops = vec![norm_op(k, &s.x, &attn_norm, &s.xb)];
                for (i, (dst, width)) in [(&s.q, qd), (&s.k, kvd), (&s.v, kvd)]
                    .into_iter()
                    .enumerate()
                {
                    let (m, rows) = qkv.seg(i);
                    let a = MatvecArgs {
                        tiled,
                        ..MatvecArgs::plain(&s.xb, dst, &s.step, width, false)
                    };
                    ops.extend(matvec_ops(&gpu, k, m, rows, &a)?);
                }
                for (bias, dst, p, width) in [
                    (&layer.bq, &s.q, &ew_q, qd),
                    (&layer.bk, &s.k, &ew_kv, kvd),
                    (&layer.bv, &s.v, &ew_kv, kvd),
                ] {
                    if let Some(bias) = bias {
                        let bb = gpu.upload_f32("bias", bias);
                        ops.push(Op {
                            bind: kernels::bind(
                                &gpu,
                                &k.add_bias(&gpu),
                                &[(0, dst), (1, &bb), (2, p), (3, &s.step)],
                            ),
                            pipeline: k.add_bias(&gpu),
                            shape: Shape::Flat(width as u32),
                            label: "add_bias",
                        });
                    }
                }
                for (buf, p, heads) in [(&s.q, &rope_q, c.n_heads), (&s.k, &rope_k, c.n_kv_heads)] {
                    ops.push(Op {
                        bind: kernels::bind(
                            &gpu,
                            &k.rope(&gpu),
                            &[(0, buf), (1, &ff_buf), (2, p), (3, &s.step)],
                        ),
                        pipeline: k.rope(&gpu),
                        shape: Shape::PerToken(
                            [((heads * c.rope_dim / 2) as u32).div_ceil(64), 1, 1],
                            1,
                        ),
                        label: "rope",
                    });
                }
                ops.push(Op {
                    bind: kernels::bind(
                        &gpu,
                        &k.kv_store(&gpu),
                        &[
                            (0, &s.k),
                            (1, &s.v),
                            (2, &kc),
                            (3, &vc),
                            (4, &att_p),
                            (5, &s.step),
                        ],
                    ),
                    pipeline: k.kv_store(&gpu),
                    shape: Shape::PerToken([((kvd / 2) as u32).div_ceil(64), 1, 1], 1),
                    label: "kv_store",
                });
                Ok(ops)
            };
            // Fused: one kernel from x to q and the cache (tiled: from xb,
            // normalised by a separate rmsnorm).
            let qkv_fused = |k: &mut Kernels, m: &GpuMatrix, tiled: bool| -> Result<Vec<Op>> {
                let a = MatvecArgs {
                    mv: Mv::Qkv,
                    label: "qkv",
                    norm: (!tiled).then_some((&attn_norm, c.norm_eps)),
                    split: qd,
                    tiled,
                    qkv: Some(QkvArgs {
                        kc: &kc,
                        vc: &vc,
                        bias: qkv_bias.as_ref(),
                        ff: &ff_buf,
                        has_ff: w.rope_freqs.is_some(),
                        kvd,
                        head_dim: c.head_dim,
                        rope_dim: c.rope_dim,
                        neox,
                        theta_scale,
                        freq_scale: l0.rope_freq_scale,
                    }),
                    ..MatvecArgs::plain(if tiled { &s.xb } else { &s.x }, &s.q, &s.step, qd, false)
                };
                let mut ops = Vec::new();
                if tiled {
                    ops.push(norm_op(k, &s.x, &attn_norm, &s.xb));
                }
                ops.extend(matvec_ops(&gpu, k, m, 0..m.rows, &a)?);
                Ok(ops)
            };
            let attention = if !simple_attention {
                let p = k.attention_chunked(&gpu, c.head_dim, group);
                Op {
                    bind: kernels::bind(
                        &gpu,
                        &p,
                        &[
                            (8, &s.q),
                            (2, &kc),
                            (3, &vc),
                            (4, &att_p),
                            (5, &s.step),
                            (6, &s.xo),
                        ],
                    ),
                    pipeline: p,
                    shape: Shape::PerToken([att_wgs, 1, 1], 1),
                    label: "attention",
                }
            } else {
                Op {
                    bind: kernels::bind(
                        &gpu,
                        &k.attention(&gpu),
                        &[
                            (8, &s.q),
                            (2, &kc),
                            (3, &vc),
                            (4, &att_p),
                            (5, &s.step),
                            (6, &s.xo),
                            (7, &s.scores),
                        ],
                    ),
                    pipeline: k.attention(&gpu),
                    shape: Shape::PerToken([c.n_heads as u32, 1, 1], 1),
                    label: "attention",
                }
            };
            let plain = |k: &mut Kernels,
                         m: &GpuMatrix,
                         x: &wgpu::Buffer,
                         tiled: bool|
             -> Result<Vec<Op>> {
                let a = MatvecArgs {
                    tiled,
                    ..MatvecArgs::plain(x, &s.x, &s.step, dim, true)
                };
                matvec_ops(&gpu, k, m, 0..dim, &a)
            };
            // Unfused: norm, gate, up, silu * up.
            let ffn_unfused = |k: &mut Kernels, tiled: bool| -> Result<Vec<Op>> {
                let mut ops = vec![norm_op(k, &s.x, &ffn_norm, &s.xb)];
                for (i, dst) in [&s.hb, &s.hb2].into_iter().enumerate() {
                    let (m, rows) = gate_up.seg(i);
                    let a = MatvecArgs {
                        tiled,
                        ..MatvecArgs::plain(&s.xb, dst, &s.step, ff, false)
                    };
                    ops.extend(matvec_ops(&gpu, k, m, rows, &a)?);
                }
                ops.push(Op {
                    bind: kernels::bind(
                        &gpu,
                        &k.silu_mul(&gpu),
                        &[(0, &s.hb), (1, &s.hb2), (2, &ew_ff), (3, &s.step)],
                    ),
                    pipeline: k.silu_mul(&gpu),
                    shape: Shape::Flat(ff as u32),
                    label: "silu_mul",
                });
                Ok(ops)
            };
            // Fused: norm (tiled: separate), gate and up, silu * up.
            let ffn_fused = |k: &mut Kernels, m: &GpuMatrix, tiled: bool| -> Result<Vec<Op>> {
                let a = MatvecArgs {
                    mv: Mv::Silu,
                    label: "gate_up",
                    norm: (!tiled).then_some((&ffn_norm, c.norm_eps)),
                    split: ff,
                    tiled,
                    ..MatvecArgs::plain(if tiled { &s.xb } else { &s.x }, &s.hb, &s.step, ff, false)
                };
                let mut ops = Vec::new();
                if tiled {
                    ops.push(norm_op(k, &s.x, &ffn_norm, &s.xb));
                }
                ops.extend(matvec_ops(&gpu, k, m, 0..m.rows, &a)?);
                Ok(ops)
            };
            // Decode past SPLIT_KEYS keys: the keys in splits, each split in
            // its own workgroups (splits past the context exit at once), then
            // the merge; `chunked` alone serializes every key of a kv head.
            let attention_long = split_attention.then(|| {
                let sp = k.attention_entry(&gpu, c.head_dim, group, "split");
                let mp = k.attention_entry(&gpu, c.head_dim, group, "merge");
                vec![
                    Op {
                        bind: kernels::bind(
                            &gpu,
                            &sp,
                            &[
                                (8, &s.q),
                                (2, &kc),
                                (3, &vc),
                                (4, &att_p),
                                (5, &s.step),
                                (9, &s.att_part),
                            ],
                        ),
                        pipeline: sp,
                        shape: Shape::Fixed([att_wgs, splits as u32, 1]),
                        label: "attention",
                    },
                    Op {
                        bind: kernels::bind(
                            &gpu,
                            &mp,
                            &[(9, &s.att_part), (4, &att_p), (5, &s.step), (6, &s.xo)],
                        ),
                        pipeline: mp,
                        shape: Shape::Fixed([c.n_heads as u32, 1, 1]),
                        label: "attention_merge",
                    },
                ]
            });
            // (one token, the list, its attention)
            let mut lists = vec![
                (true, &mut layers_one, vec![attention.clone()]),
                (false, &mut layers, vec![attention]),
            ];
            if let Some(ops) = attention_long {
                lists.push((true, &mut layers_long, ops));
            }
            for (one, list, attention) in lists {
                let tiled = !one && opts.tuning.tiled_prefill;
                list.extend(match qkv.fused().filter(|_| quads) {
                    Some(m) => qkv_fused(&mut k, m, tiled)?,
                    None => qkv_unfused(&mut k, tiled)?,
                });
                list.extend(attention);
                list.extend(plain(&mut k, &wo, &s.xo, tiled)?);
                list.extend(match gate_up.fused() {
                    Some(m) => ffn_fused(&mut k, m, tiled)?,
                    None => ffn_unfused(&mut k, tiled)?,
                });
                list.extend(plain(&mut k, &wd, &s.hb, tiled)?);
            }
            keep.extend(qkv_bias);
            mats.extend(qkv.mats);
            mats.extend(gate_up.mats);
            mats.extend([wo, wd]);
            keep.extend([attn_norm, ffn_norm, kc, vc]);
            progress((l + 1) as f64 / w.layers.len() as f64);
        }

        let out_norm = gpu.upload_f32("output_norm", &w.output_norm);
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
            Some(GpuMatrix::from_weights(
                &gpu, "output", w, &w.output, limit,
            )?)
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
        let am_p = gpu.params([groups as u32, vocab as u32, 0, 0, 0, 0, 0, 0]);
        let argmax = vec![Op {
            bind: kernels::bind(
                &gpu,
                &k.argmax_pairs(&gpu),
                &[(3, &s.partials), (1, &s.argmax), (2, &am_p)],
            ),
            pipeline: k.argmax_pairs(&gpu),
            shape: Shape::Fixed([1, 1, 1]),
            label: "argmax",
        }];
        keep.extend([ff_buf, out_norm]);
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
            head,
            argmax,
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
