//! The CPU forward pass, llama2.c style: one function that reads top to
//! bottom like the paper, over preallocated run state.
//!
//! Numerics follow llama.cpp's CPU backend where it matters for matching its
//! logits: activations are quantized to the weight's dot-product format,
//! the KV cache holds f16, queries are rounded to f16 before the Q·K dot, and
//! norms/softmax sum in f64.

use crate::error::{Error, Result};
use crate::model::{Activation, Config, LayerSpec, Matrix, RopeStyle, Weights, MAX_HEAD_DIM};
use crate::quant::{self, GgmlType};

/// Fork-join parallelism, injected by the shell: a thread pool natively, a
/// serial loop in wasm. The engine never spawns threads itself.
pub trait Parallel: Sync {
    fn threads(&self) -> usize;
    /// Run `f(i)` for every `i in 0..n`, possibly concurrently; returns when all are done.
    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync));
}

pub struct Serial;

impl Parallel for Serial {
    fn threads(&self) -> usize {
        1
    }
    fn for_each(&self, n: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..n).for_each(f)
    }
}

/// A raw pointer that tasks share to write disjoint parts of one buffer.
#[derive(Clone, Copy)]
struct SharedMut<T>(*mut T);
unsafe impl<T> Send for SharedMut<T> {}
unsafe impl<T> Sync for SharedMut<T> {}
impl<T> SharedMut<T> {
    /// SAFETY: callers guarantee `start..start+len` is in bounds and that no
    /// two concurrent tasks touch overlapping ranges.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        std::slice::from_raw_parts_mut(self.0.add(start), len)
    }
}

/// Buffers for one forward pass over up to `max_batch` tokens, plus the KV cache.
pub struct RunState {
    pub max_batch: usize,
    pub ctx: usize,
    /// Residual stream, [batch][dim].
    x: Vec<f32>,
    /// Normed input of a sublayer, [batch][dim].
    xb: Vec<f32>,
    /// Attention output before the output projection, [batch][q_dim].
    xo: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    /// Sublayer output to add into the residual, [batch][dim].
    delta: Vec<f32>,
    hb: Vec<f32>,
    hb2: Vec<f32>,
    /// Matmul result in weight-row-major order, [rows][batch].
    mm: Vec<f32>,
    /// Activations encoded for the dot products, [batch][row bytes].
    act: Vec<u8>,
    act_ty: Option<GgmlType>,
    /// The final normed hidden state of the last token.
    xlast: Vec<f32>,
    logits: Vec<f32>,
    /// Caches, [layer][position][kv_dim]. They hold f16 values (llama.cpp's
    /// cache type, whose rounding the references carry) widened to f32, so
    /// the attention loops need no conversions.
    key_cache: Vec<f32>,
    value_cache: Vec<f32>,
}

impl RunState {
    pub fn logits_mut(&mut self) -> &mut [f32] {
        &mut self.logits
    }

    pub fn new(c: &Config, ctx: usize, max_batch: usize) -> Result<RunState> {
        let n = Lens::new(c, ctx, max_batch)?;
        Ok(RunState {
            max_batch: n.max_batch,
            ctx: n.ctx,
            x: vec![0.0; n.x],
            xb: vec![0.0; n.x],
            xo: vec![0.0; n.q],
            q: vec![0.0; n.q],
            k: vec![0.0; n.kv],
            v: vec![0.0; n.kv],
            delta: vec![0.0; n.x],
            hb: vec![0.0; n.ff],
            hb2: vec![0.0; n.ff],
            mm: vec![0.0; n.mm],
            act: vec![0; n.act],
            act_ty: None,
            xlast: vec![0.0; c.dim],
            logits: vec![0.0; c.vocab_size],
            key_cache: zeroed(n.cache, n.ctx)?,
            value_cache: zeroed(n.cache, n.ctx)?,
        })
    }

    /// Bytes `new(c, ctx, max_batch)` allocates: (KV cache, the rest). The
    /// memory plan (`gpu::plan_memory`) reports them.
    pub fn footprint(c: &Config, ctx: usize, max_batch: usize) -> (u64, u64) {
        let Ok(n) = Lens::new(c, ctx, max_batch) else {
            return (u64::MAX, 0);
        };
        let f32s = 3 * n.x + 2 * n.q + 2 * n.kv + 2 * n.ff + n.mm + c.dim + c.vocab_size;
        (2 * n.cache as u64 * 4, f32s as u64 * 4 + n.act as u64)
    }
}

/// Element counts of `RunState`'s buffers.
struct Lens {
    max_batch: usize,
    ctx: usize,
    /// [batch][dim]: x, xb, delta.
    x: usize,
    /// [batch][q_dim]: q, xo.
    q: usize,
    kv: usize,
    ff: usize,
    mm: usize,
    act: usize,
    /// Each cache.
    cache: usize,
}

impl Lens {
    fn new(c: &Config, ctx: usize, max_batch: usize) -> Result<Lens> {
        let ctx = ctx.max(1);
        let max_batch = max_batch.clamp(1, ctx);
        let cache = c
            .n_layers
            .checked_mul(ctx)
            .and_then(|v| v.checked_mul(c.kv_dim()))
            .ok_or_else(|| Error::InvalidArgument(format!("context {ctx} is too large")))?;
        let widest = c.dim.max(c.q_dim()).max(c.ffn_dim);
        let max_rows = widest.max(c.vocab_size);
        // Fused matmuls write Q, K and V, or gate and up, together.
        let fused = widest.max(c.q_dim() + 2 * c.kv_dim()).max(2 * c.ffn_dim);
        // Q8_K is the largest activation encoding per element (292 bytes / 256).
        let act_row = (widest / 256 + 1) * 292 + widest * 4;
        Ok(Lens {
            max_batch,
            ctx,
            x: max_batch * c.dim,
            q: max_batch * c.q_dim(),
            kv: max_batch * c.kv_dim(),
            ff: max_batch * c.ffn_dim,
            mm: max_rows.max(max_batch * fused),
            act: max_batch * act_row,
            cache,
        })
    }
}

/// A zero-filled cache, or a clear error (rather than an abort) when the
/// context asked for does not fit in memory.
fn zeroed(n: usize, ctx: usize) -> Result<Vec<f32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::InvalidArgument(format!(
            "a KV cache for a context of {ctx} needs {} MiB, which cannot be allocated",
            n / (1 << 18)
        ))
    })?;
    v.resize(n, 0.0);
    Ok(v)
}

/// Run `tokens` at positions `pos..` through the model and return the logits
/// that follow the last one.
pub fn forward<'s>(
    c: &Config,
    w: &Weights,
    s: &'s mut RunState,
    par: &dyn Parallel,
    tokens: &[u32],
    pos: usize,
) -> Result<&'s [f32]> {
    let n = tokens.len();
    if n == 0 || n > s.max_batch {
        return Err(Error::InvalidArgument(format!(
            "batch of {n} tokens (1..={} allowed)",
            s.max_batch
        )));
    }
    if pos + n > s.ctx {
        return Err(Error::ContextOverflow {
            needed: pos + n,
            context: s.ctx,
        });
    }
    if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= c.vocab_size) {
        return Err(Error::BadToken {
            id: bad,
            vocab: c.vocab_size,
        });
    }
    let (dim, qd, kvd, ff) = (c.dim, c.q_dim(), c.kv_dim(), c.ffn_dim);

    // Token embeddings, scaled where the architecture says (Gemma).
    for (t, &tok) in tokens.iter().enumerate() {
        let row = w.token_embd.row(&w.data, tok as usize);
        let x = &mut s.x[t * dim..(t + 1) * dim];
        quant::dequantize_row(w.token_embd.ty, row, x);
        if let Some(scale) = c.spec.embed_scale {
            x.iter_mut().for_each(|v| *v *= scale);
        }
    }

    for (l, (layer, spec)) in w.layers.iter().zip(&c.spec.layers).enumerate() {
        // Attention: x += [postnorm] Wo · attn(q, k, v), where
        // q = rope([qnorm] Wq·xb + bq), k likewise, v = Wv·xb + bv, xb = rmsnorm(x).
        rmsnorm(
            &mut s.xb[..n * dim],
            &s.x[..n * dim],
            &layer.attn_norm,
            c.norm_eps,
        );
        s.act_ty = None;
        let qkv = [
            (&layer.wq, Dst::Q),
            (&layer.wk, Dst::K),
            (&layer.wv, Dst::V),
        ];
        matmul(s, par, &w.data, &qkv, Src::Xb, n);
        for t in 0..n {
            let q = &mut s.q[t * qd..(t + 1) * qd];
            let k = &mut s.k[t * kvd..(t + 1) * kvd];
            let v = &mut s.v[t * kvd..(t + 1) * kvd];
            for (x, b) in [
                (&mut *q, &layer.bq),
                (&mut *k, &layer.bk),
                (&mut *v, &layer.bv),
            ] {
                if let Some(b) = b {
                    add(x, b);
                }
            }
            if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
                rmsnorm_in_place(q, qn, c.norm_eps);
                rmsnorm_in_place(k, kn, c.norm_eps);
            }
            let p = pos + t;
            rope(c, spec, w.rope_freqs.as_deref(), q, p);
            rope(c, spec, w.rope_freqs.as_deref(), k, p);
            let at = (l * s.ctx + p) * kvd;
            quant::round_f16(k, &mut s.key_cache[at..at + kvd]);
            quant::round_f16(v, &mut s.value_cache[at..at + kvd]);
        }
        attention(c, s, par, l, spec.window, pos, n);
        s.act_ty = None;
        matmul(s, par, &w.data, &[(&layer.wo, Dst::Delta)], Src::Xo, n);
        if let Some(g) = &layer.post_attn_norm {
            rmsnorm_in_place(&mut s.delta[..n * dim], g, c.norm_eps);
        }
        add(&mut s.x[..n * dim], &s.delta[..n * dim]);

        // Feed-forward: x += [postnorm] Wdown · (act(Wgate·xb) * Wup·xb), xb = rmsnorm(x).
        rmsnorm(
            &mut s.xb[..n * dim],
            &s.x[..n * dim],
            &layer.ffn_norm,
            c.norm_eps,
        );
        s.act_ty = None;
        let gate_up = [(&layer.w_gate, Dst::Hb), (&layer.w_up, Dst::Hb2)];
        matmul(s, par, &w.data, &gate_up, Src::Xb, n);
        let (gate, up) = (&mut s.hb[..n * ff], &s.hb2[..n * ff]);
        match c.spec.activation {
            Activation::Silu => gate.iter_mut().zip(up).for_each(|(g, u)| *g = silu(*g) * u),
            Activation::GeluTanh => gate
                .iter_mut()
                .zip(up)
                .for_each(|(g, u)| *g = gelu_mul(*g, *u)),
        }
        s.act_ty = None;
        matmul(s, par, &w.data, &[(&layer.w_down, Dst::Delta)], Src::Hb, n);
        if let Some(g) = &layer.post_ffn_norm {
            rmsnorm_in_place(&mut s.delta[..n * dim], g, c.norm_eps);
        }
        add(&mut s.x[..n * dim], &s.delta[..n * dim]);
    }

    // Final norm and LM head, for the last token only.
    let last = (n - 1) * dim;
    rmsnorm(
        &mut s.xlast,
        &s.x[last..last + dim],
        &w.output_norm,
        c.norm_eps,
    );
    s.act_ty = None;
    matmul(s, par, &w.data, &[(&w.output, Dst::Logits)], Src::Xlast, 1);
    Ok(&s.logits)
}

/// Each `weight.len()`-long row of `x`, RMS-normalised and scaled by
/// `weight`, into `out` (the sum of squares in f64, as ggml does).
fn rmsnorm(out: &mut [f32], x: &[f32], weight: &[f32], eps: f32) {
    let dim = weight.len();
    for (o, xr) in out.chunks_exact_mut(dim).zip(x.chunks_exact(dim)) {
        let ss: f64 = xr.iter().map(|&v| (v * v) as f64).sum();
        let mean = (ss / dim as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        for ((o, &v), &g) in o.iter_mut().zip(xr).zip(weight) {
            *o = (v * scale) * g;
        }
    }
}

/// `rmsnorm` of each `weight.len()`-long row of `x`, in place (per-head q/k
/// norms, post-norms).
fn rmsnorm_in_place(x: &mut [f32], weight: &[f32], eps: f32) {
    let dim = weight.len();
    for row in x.chunks_exact_mut(dim) {
        let ss: f64 = row.iter().map(|&v| (v * v) as f64).sum();
        let mean = (ss / dim as f64) as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        for (v, &g) in row.iter_mut().zip(weight) {
            *v = (*v * scale) * g;
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// `gelu(gate) * up` as llama.cpp's CPU computes it, which the F32
/// references carry: beyond |gate| >= 10 GELU is 0 or the identity;
/// inside, the gate is rounded to f16 and GELU (tanh form, in f32) is read
/// from a table of f16 values, i.e. rounded to f16 again.
pub fn gelu_mul(gate: f32, up: f32) -> f32 {
    if gate <= -10.0 {
        0.0
    } else if gate >= 10.0 {
        gate * up
    } else {
        let x = half::f16::from_f32(gate).to_f32();
        half::f16::from_f32(gelu_tanh(x)).to_f32() * up
    }
}

/// GELU, tanh approximation, evaluated in f32 in the usual order.
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    const COEF_A: f32 = 0.044715;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + COEF_A * x * x)).tanh())
}

/// Rotate each head's leading `rope_dim` dims by position-dependent angles.
/// The angle is stepped by repeated multiplication, as ggml does, so that
/// rounding matches its cache.
fn rope(c: &Config, l: &LayerSpec, freq_factors: Option<&[f32]>, v: &mut [f32], pos: usize) {
    let hd = c.head_dim;
    let half = c.rope_dim / 2;
    let theta_scale = l.theta_scale(c.rope_dim);
    for head in v.chunks_exact_mut(hd) {
        let mut theta = pos as f32;
        for i in 0..half {
            let ff = freq_factors.map_or(1.0, |f| f[i]);
            let angle = l.rope_freq_scale * theta / ff;
            let (sin, cos) = angle.sin_cos();
            let (a, b) = match c.spec.rope_style {
                RopeStyle::Adjacent => (2 * i, 2 * i + 1),
                RopeStyle::Neox => (i, i + half),
            };
            let (x0, x1) = (head[a], head[b]);
            head[a] = x0 * cos - x1 * sin;
            head[b] = x0 * sin + x1 * cos;
            theta *= theta_scale;
        }
    }
}

/// Q·K as llama.cpp's f16 dot computes it: short heads (under one 64-wide
/// SIMD step) are summed in f64, longer ones in 16 f32 lanes.
fn qk_dot(q: &[f32], k: &[f32]) -> f32 {
    if !q.len().is_multiple_of(16) || q.len() < 64 {
        return q.iter().zip(k).map(|(a, b)| (a * b) as f64).sum::<f64>() as f32;
    }
    quant::dot_f32_lanes16(q, k)
}

/// Causal grouped-query attention of the batch's queries over the cache,
/// one task per head. Online softmax with an f16 accumulator, in llama.cpp's
/// flash-attention order: its rounding is what the references carry.
/// With `window`, a query at position p sees only keys p - window + 1 ..= p.
fn attention(
    c: &Config,
    s: &mut RunState,
    par: &dyn Parallel,
    layer: usize,
    window: Option<usize>,
    pos: usize,
    n: usize,
) {
    let (hd, qd, kvd, ctx) = (c.head_dim, c.q_dim(), c.kv_dim(), s.ctx);
    let group = c.n_heads / c.n_kv_heads;
    let scale = c.spec.attn_scale;
    let kc = &s.key_cache[layer * ctx * kvd..(layer + 1) * ctx * kvd];
    let vc = &s.value_cache[layer * ctx * kvd..(layer + 1) * ctx * kvd];
    let q = &s.q;
    let xo = SharedMut(s.xo.as_mut_ptr());
    let hs = Heads {
        hd,
        qd,
        kvd,
        group,
        scale,
        pos,
        window: window.unwrap_or(usize::MAX),
    };
    // Tasks are (head, run of tokens): with only a few heads, one task per
    // head would leave a thread idle for most of a long prefill.
    let chunks = n.div_ceil(ATTN_TOKENS);
    par.for_each(c.n_heads * chunks, &|i| {
        let (h, chunk) = (i / chunks, i % chunks);
        let ts = chunk * ATTN_TOKENS..((chunk + 1) * ATTN_TOKENS).min(n);
        // Task (h, ts) owns head h's slices of xo's rows ts.
        quant::with_round_f16(Head {
            hs: &hs,
            h,
            ts,
            q,
            kc,
            vc,
            xo,
        });
    });
}

/// Query tokens per attention task.
const ATTN_TOKENS: usize = 16;

/// The shape of one attention call.
struct Heads {
    hd: usize,
    qd: usize,
    kvd: usize,
    group: usize,
    scale: f32,
    pos: usize,
    /// Keys a query sees, itself included (usize::MAX: all).
    window: usize,
}

/// One attention task: head `h` for the query tokens `ts`.
struct Head<'a> {
    hs: &'a Heads,
    h: usize,
    ts: std::ops::Range<usize>,
    q: &'a [f32],
    kc: &'a [f32],
    vc: &'a [f32],
    xo: SharedMut<f32>,
}

impl quant::WithRoundF16 for Head<'_> {
    type Out = ();

    /// `round` is the f16 rounding of the accumulator after every key, in
    /// bulk (F16C or simd128 where present), rounding to nearest even exactly
    /// as the portable conversion does.
    #[inline(always)]
    fn run<R: Fn(&mut [f32]) + Copy>(self, round: R) {
        let Head {
            hs,
            h,
            ts,
            q,
            kc,
            vc,
            xo,
        } = self;
        let Heads {
            hd,
            qd,
            kvd,
            group,
            scale,
            pos,
            window,
        } = *hs;
        let kvh = (h / group) * hd;
        let mut qh = [0f32; MAX_HEAD_DIM];
        let mut acc = [0f32; MAX_HEAD_DIM];
        let (qh, acc) = (&mut qh[..hd], &mut acc[..hd]);
        for t in ts {
            let len = pos + t + 1;
            qh.copy_from_slice(&q[t * qd + h * hd..t * qd + (h + 1) * hd]);
            round(qh);
            acc.fill(0.0);
            let (mut max, mut sum) = (f32::NEG_INFINITY, 0f32);
            // llama.cpp's mask skips keys outside the window entirely.
            for j in len.saturating_sub(window)..len {
                let row = j * kvd + kvh;
                let score = qk_dot(qh, &kc[row..row + hd]) * scale;
                let (mut rescale, mut weight) = (1f32, 1f32);
                if score > max {
                    rescale = (max - score).exp();
                    max = score;
                    for a in acc.iter_mut() {
                        *a *= rescale;
                    }
                    round(acc);
                } else {
                    weight = (score - max).exp();
                }
                for (a, v) in acc.iter_mut().zip(&vc[row..row + hd]) {
                    *a += v * weight;
                }
                round(acc);
                sum = sum * rescale + weight;
            }
            // SAFETY: head h owns this slice of row t.
            let out = unsafe { xo.slice(t * qd + h * hd, hd) };
            let inv = 1.0 / sum;
            for (o, a) in out.iter_mut().zip(acc.iter()) {
                *o = a * inv;
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Src {
    Xb,
    Xo,
    Hb,
    Xlast,
}

#[derive(Clone, Copy)]
enum Dst {
    Q,
    K,
    V,
    Delta,
    Hb,
    Hb2,
    Logits,
}

/// dst[t] = W · src[t] for the batch's `n` tokens, for each `(W, dst)` of
/// `ms`: matrices of one weight format and width share one parallel region
/// (fork/join costs microseconds, a decode matvec tens). The source is
/// encoded once per weight format and reused by the following matmuls that
/// read the same input (callers reset `act_ty` when the input changes).
fn matmul(
    s: &mut RunState,
    par: &dyn Parallel,
    data: &[u8],
    ms: &[(&Matrix, Dst)],
    src: Src,
    n: usize,
) {
    let m0 = ms[0].0;
    if ms.iter().any(|(m, _)| m.ty != m0.ty || m.cols != m0.cols) {
        for &one in ms {
            matmul(s, par, data, &[one], src, n);
        }
        return;
    }
    let act_ty = m0.ty.vec_dot_type();
    let act_row = act_ty
        .row_bytes(m0.cols)
        .expect("weight row length is a multiple of its activation block");
    if s.act_ty != Some(act_ty) {
        let x: &[f32] = match src {
            Src::Xb => &s.xb,
            Src::Xo => &s.xo,
            Src::Hb => &s.hb,
            Src::Xlast => &s.xlast,
        };
        // In prefill this is a few percent of the work: share it out.
        let cols = m0.cols;
        let act = SharedMut(s.act.as_mut_ptr());
        let per = n.div_ceil(par.threads());
        par.for_each(n.div_ceil(per), &|i| {
            for t in i * per..((i + 1) * per).min(n) {
                // SAFETY: each task encodes its own activation rows.
                let dst = unsafe { act.slice(t * act_row, act_row) };
                quant::quantize_row(act_ty, &x[t * cols..(t + 1) * cols], dst);
            }
        });
        s.act_ty = Some(act_ty);
    }
    let act = &s.act[..n * act_row];

    // Split each matrix's rows into chunks of about `per` rows; each task
    // computes its rows for every token into its part of `mm` ([rows][n],
    // the matrices one after another), then scatters them to its `out`
    // ([n][rows]).
    const MAX: usize = 4;
    assert!(ms.len() <= MAX);
    let total: usize = ms.iter().map(|(m, _)| m.rows).sum();
    assert!(total * n <= s.mm.len());
    let per = total.div_ceil((total / 16).clamp(1, par.threads() * 8));
    let mut first_task = [0usize; MAX + 1];
    let mut first_row = [0usize; MAX];
    let mut dsts = [SharedMut(std::ptr::null_mut::<f32>()); MAX];
    for (j, &(m, dst)) in ms.iter().enumerate() {
        first_task[j + 1] = first_task[j] + m.rows.div_ceil(per);
        if j + 1 < ms.len() {
            first_row[j + 1] = first_row[j] + m.rows;
        }
        let out: &mut [f32] = match dst {
            Dst::Q => &mut s.q,
            Dst::K => &mut s.k,
            Dst::V => &mut s.v,
            Dst::Delta => &mut s.delta,
            Dst::Hb => &mut s.hb,
            Dst::Hb2 => &mut s.hb2,
            Dst::Logits => &mut s.logits,
        };
        assert!(m.rows * n <= out.len());
        dsts[j] = SharedMut(out.as_mut_ptr());
    }
    let tasks = first_task[ms.len()];
    let mm = SharedMut(s.mm.as_mut_ptr());
    par.for_each(tasks, &|i| {
        let j = (0..ms.len())
            .find(|&j| i < first_task[j + 1])
            .expect("task in range");
        let m = ms[j].0;
        let rows = m.rows;
        let r0 = (i - first_task[j]) * per;
        let r1 = (r0 + per).min(rows);
        let weights = m.bytes(data);
        // SAFETY: tasks own disjoint row ranges of mm and of every out row.
        let tile = unsafe { mm.slice((first_row[j] + r0) * n, (r1 - r0) * n) };
        quant::gemm(
            m.ty,
            m.cols,
            &weights[r0 * m.row_bytes..r1 * m.row_bytes],
            act,
            n,
            tile,
        );
        for t in 0..n {
            let o = unsafe { dsts[j].slice(t * rows + r0, r1 - r0) };
            for (k, v) in o.iter_mut().enumerate() {
                *v = tile[k * n + t];
            }
        }
    });
}
