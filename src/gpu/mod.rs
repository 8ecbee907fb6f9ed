//! The WebGPU backend: the same forward pass as `cpu`, as compute shaders.
//!
//! Weights stay in their block format on the GPU and are decoded inside the
//! matrix kernels; dot products are f32 throughout (no activation
//! quantization), the KV cache is f16. Everything is allocated and every
//! bind group recorded at load; a token costs one command encoder, one
//! submit, and a 4-byte readback of the sampled id.

pub mod kernels;
// Native only: they block on the device with pollster.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use wgpu::util::DeviceExt;

use crate::engine::{context_for, Backend, Engine, EngineOptions, Loaded, LocalFuture};
use crate::error::{Error, Result};
use crate::model::{Config, Matrix, RopeStyle, Weights};
use crate::quant::GgmlType;
use crate::sampler::Sampler;

pub use kernels::{Kernels, Op, Shape};

#[derive(Debug, Clone, Copy)]
pub struct GpuOptions {
    /// Largest prefill batch on the GPU (also capped by the engine's).
    pub max_batch: usize,
    /// Split weight matrices into parts of at most this many bytes instead
    /// of the device's storage-binding limit (tests force tiny values).
    pub max_binding: Option<u64>,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            max_batch: 64,
            max_binding: None,
        }
    }
}

#[derive(Default)]
struct Status {
    lost: Option<String>,
    error: Option<String>,
}

/// An open device and queue, with what the adapter reported about itself.
#[derive(Clone)]
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    pub features: wgpu::Features,
    status: Arc<Mutex<Status>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves plain data behind.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gpu {
    /// Open the best adapter with its own limits and the optional features
    /// it has (f16, subgroups and timestamps are used only when present).
    pub async fn new() -> Result<Gpu> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::Gpu(format!("no GPU adapter found: {e}")))?;
        let wanted =
            wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        let features = adapter.features() & wanted;
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webgguf"),
                required_features: features,
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| Error::Gpu(format!("could not open the GPU device: {e}")))?;
        let status = Arc::new(Mutex::new(Status::default()));
        let s = status.clone();
        device.set_device_lost_callback(move |reason, msg| {
            lock(&s).lost = Some(format!("{reason:?}: {msg}"));
        });
        let s = status.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut st = lock(&s);
            if st.error.is_none() {
                st.error = Some(e.to_string());
            }
        }));
        Ok(Gpu {
            device,
            queue,
            adapter: adapter.get_info(),
            limits,
            features,
            status,
        })
    }

    /// Whether the adapter is a software rasterizer (lavapipe, SwiftShader,
    /// WARP): it works, but the CPU engine is faster on the same cores.
    pub fn is_software(&self) -> bool {
        self.adapter.device_type == wgpu::DeviceType::Cpu
    }

    /// One paragraph for `webgguf info --backend gpu`.
    pub fn summary(&self) -> String {
        let l = &self.limits;
        format!(
            "{} ({:?}, {:?}, driver {} {}); max_storage_buffer_binding_size {} MiB, \
             max_buffer_size {} MiB, max_compute_workgroup_storage_size {} B, \
             max_compute_invocations_per_workgroup {}, max_compute_workgroups_per_dimension {}; \
             features: {:?}",
            self.adapter.name,
            self.adapter.backend,
            self.adapter.device_type,
            self.adapter.driver,
            self.adapter.driver_info,
            l.max_storage_buffer_binding_size >> 20,
            l.max_buffer_size >> 20,
            l.max_compute_workgroup_storage_size,
            l.max_compute_invocations_per_workgroup,
            l.max_compute_workgroups_per_dimension,
            self.features
        )
    }

    /// The first asynchronous error since the last check, if any.
    pub fn check(&self) -> Result<()> {
        let mut st = lock(&self.status);
        if let Some(lost) = &st.lost {
            return Err(Error::DeviceLost(lost.clone()));
        }
        match st.error.take() {
            Some(e) => Err(Error::Gpu(e)),
            None => Ok(()),
        }
    }

    /// Largest buffer one binding may see.
    pub fn binding_limit(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
        .union(wgpu::BufferUsages::COPY_DST)
        .union(wgpu::BufferUsages::COPY_SRC);

    /// A zeroed storage buffer of at least `bytes` (rounded up to 4).
    pub fn storage(&self, label: &str, bytes: u64) -> Result<wgpu::Buffer> {
        let size = bytes.max(4).next_multiple_of(4);
        if size > self.binding_limit() {
            return Err(Error::DeviceLimit(format!(
                "{label} needs {size} bytes but a storage binding holds at most {}",
                self.binding_limit()
            )));
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: Self::USAGE,
            mapped_at_creation: false,
        }))
    }

    /// A storage buffer holding `data`, zero-padded to a multiple of 4 bytes.
    pub fn upload(&self, label: &str, data: &[u8]) -> wgpu::Buffer {
        let padded;
        let contents = if data.len().is_multiple_of(4) && !data.is_empty() {
            data
        } else {
            let mut v = data.to_vec();
            v.resize(data.len().max(1).next_multiple_of(4), 0);
            padded = v;
            &padded
        };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: Self::USAGE,
            })
    }

    pub fn upload_f32(&self, label: &str, data: &[f32]) -> wgpu::Buffer {
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.upload(label, &bytes)
    }

    /// A uniform block of eight 32-bit words (every kernel's `Params`).
    pub fn params(&self, words: [u32; 8]) -> wgpu::Buffer {
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: &bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    pub fn step_buffer(&self) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("step"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    pub fn readback_buffer(&self, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes.max(4).next_multiple_of(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// The position and token count every per-token kernel reads.
    pub fn write_step(&self, step: &wgpu::Buffer, pos: u32, n: u32) {
        let bytes: Vec<u8> = [pos, n, 0, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        self.queue.write_buffer(step, 0, &bytes);
    }

    /// Record `ops` for `n` tokens into one pass, then `copies`, and submit.
    pub fn run(&self, ops: &[&[Op]], n: u32, copies: &[(&wgpu::Buffer, &wgpu::Buffer, u64)]) {
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: None,
            });
            for o in ops {
                kernels::encode(&mut pass, o, n);
            }
        }
        for &(src, dst, bytes) in copies {
            enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
        }
        self.queue.submit([enc.finish()]);
    }

    /// Block (natively) or yield (on the web) until the queue is idle.
    pub async fn wait_idle(&self) -> Result<()> {
        let (tx, rx) = oneshot();
        self.queue.on_submitted_work_done(move || tx(()));
        self.poll_native()?;
        rx.await;
        self.check()
    }

    fn poll_native(&self) -> Result<()> {
        // Natively nothing drives callbacks but a poll; in the browser the
        // event loop does, and blocking is not allowed.
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Gpu(format!("waiting for the GPU failed: {e}")))?;
        Ok(())
    }

    /// Map `buf` (a readback buffer whose copy is submitted) and return its
    /// first `bytes` bytes.
    pub async fn read(&self, buf: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let (tx, rx) = oneshot();
        buf.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            tx(r.map_err(|e| e.to_string()))
        });
        self.poll_native()?;
        rx.await
            .map_err(|e| Error::Gpu(format!("reading back from the GPU failed: {e}")))?;
        self.check()?;
        let data = buf
            .slice(..bytes)
            .get_mapped_range()
            .map_err(|e| Error::Gpu(format!("mapping a readback buffer failed: {e}")))?
            .to_vec();
        buf.unmap();
        Ok(data)
    }

    /// Device memory bandwidth as the copy engine sees it: `reps` copies of a
    /// `bytes` buffer into another, timed from the first submit until the
    /// queue is idle. Returns (bytes actually used, GB/s counting each byte
    /// read and each byte written, i.e. 2 x bytes per copy).
    pub async fn copy_bandwidth(
        &self,
        bytes: u64,
        reps: usize,
        clock: fn() -> f64,
    ) -> Result<(u64, f64)> {
        let size = bytes.min(self.limits.max_buffer_size) & !3;
        if size == 0 || reps == 0 {
            return Err(Error::InvalidArgument(
                "bandwidth test needs a positive size and repetition count".into(),
            ));
        }
        let make = |label| {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let (a, b) = self
            .scoped("allocating the bandwidth buffers", || {
                Ok((make("a"), make("b")))
            })
            .await?;
        let copy = |n: usize| {
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            for _ in 0..n {
                enc.copy_buffer_to_buffer(&a, 0, &b, 0, size);
            }
            self.queue.submit([enc.finish()]);
        };
        // The first copy pays for wgpu's lazy zeroing of both buffers.
        copy(1);
        self.wait_idle().await?;
        let t0 = clock();
        copy(reps);
        self.wait_idle().await?;
        let secs = (clock() - t0) / 1000.0;
        Ok((size, 2.0 * size as f64 * reps as f64 / secs / 1e9))
    }

    /// Turn validation and out-of-memory errors from `f` into `Error`s.
    pub async fn scoped<T>(&self, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let r = f();
        let v = val.pop().await;
        let o = oom.pop().await;
        let r = r?;
        if let Some(e) = o {
            return Err(Error::DeviceLimit(format!(
                "{what}: out of GPU memory: {e}"
            )));
        }
        if let Some(e) = v {
            return Err(Error::Gpu(format!("{what}: {e}")));
        }
        self.check()?;
        Ok(r)
    }
}

/// A value handed from a wgpu callback to an awaiting task.
struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

struct Receiver<T>(Arc<Mutex<Slot<T>>>);

impl<T> Future for Receiver<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut s = lock(&self.0);
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

fn oneshot<T: Send + 'static>() -> (impl FnOnce(T) + Send + 'static, Receiver<T>) {
    let slot = Arc::new(Mutex::new(Slot {
        value: None,
        waker: None,
    }));
    let s = slot.clone();
    let send = move |v: T| {
        let mut g = lock(&s);
        g.value = Some(v);
        if let Some(w) = g.waker.take() {
            w.wake();
        }
    };
    (send, Receiver(slot))
}

/// One part of a weight matrix: consecutive rows in one storage buffer.
pub struct Part {
    pub buf: wgpu::Buffer,
    pub row_off: usize,
    pub rows: usize,
}

/// A weight matrix in its block format, split by rows where one binding
/// cannot hold it.
pub struct GpuMatrix {
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    pub row_bytes: usize,
    pub parts: Vec<Part>,
}

impl GpuMatrix {
    /// Upload `bytes` (`rows` rows of `row_bytes`) in parts of at most `limit` bytes.
    pub fn upload(
        gpu: &Gpu,
        label: &str,
        ty: GgmlType,
        rows: usize,
        cols: usize,
        bytes: &[u8],
        limit: u64,
    ) -> Result<GpuMatrix> {
        if !kernels::supported(ty) {
            return Err(Error::UnsupportedTensorType {
                tensor: label.into(),
                type_name: ty.name().into(),
            });
        }
        let row_bytes = ty
            .row_bytes(cols)
            .filter(|&rb| rb * rows == bytes.len())
            .ok_or_else(|| {
                Error::ShapeMismatch(format!(
                    "{label}: {} bytes for {rows}x{cols} {ty}",
                    bytes.len()
                ))
            })?;
        let per = ((limit & !3) / row_bytes.max(1) as u64) as usize;
        if per == 0 {
            return Err(Error::DeviceLimit(format!(
                "{label}: one row takes {row_bytes} bytes, more than a storage binding's {limit}"
            )));
        }
        // Byte offsets inside a part are u32 in the shaders.
        let per = per.min((u32::MAX as usize) / row_bytes.max(1));
        let mut parts = Vec::new();
        let mut r = 0;
        while r < rows {
            let n = per.min(rows - r);
            let buf = gpu.upload(label, &bytes[r * row_bytes..(r + n) * row_bytes]);
            parts.push(Part {
                buf,
                row_off: r,
                rows: n,
            });
            r += n;
        }
        Ok(GpuMatrix {
            ty,
            rows,
            cols,
            row_bytes,
            parts,
        })
    }

    pub fn from_weights(
        gpu: &Gpu,
        label: &str,
        w: &Weights,
        m: &Matrix,
        limit: u64,
    ) -> Result<GpuMatrix> {
        GpuMatrix::upload(gpu, label, m.ty, m.rows, m.cols, m.bytes(&w.data), limit)
    }
}

/// Dispatches for `y[t][..rows] (+)= m . x[t]`, one per part; with
/// `per_token` the batch runs along z, otherwise only token 0.
pub fn matvec_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    x: &wgpu::Buffer,
    y: &wgpu::Buffer,
    accumulate: bool,
    per_token: bool,
) -> Result<Vec<Op>> {
    let pipeline = k.matvec(gpu, m.ty)?;
    let mut ops = Vec::new();
    for p in &m.parts {
        let nx = (p.rows as u32).min(kernels::NX);
        let ny = (p.rows as u32).div_ceil(nx);
        let params = gpu.params([
            p.rows as u32,
            m.cols as u32,
            p.row_off as u32,
            m.rows as u32,
            m.row_bytes as u32,
            accumulate as u32,
            nx,
            0,
        ]);
        let bind = kernels::bind(gpu, &pipeline, &[(0, &p.buf), (1, x), (2, y), (3, &params)]);
        let shape = if per_token {
            Shape::PerToken([nx, ny, 1], 2)
        } else {
            Shape::Fixed([nx, ny, 1])
        };
        ops.push(Op {
            pipeline: pipeline.clone(),
            bind,
            shape,
        });
    }
    Ok(ops)
}

/// Dispatches that gather the rows `tokens` names into `x`, one per part.
pub fn embed_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    tokens: &wgpu::Buffer,
    x: &wgpu::Buffer,
) -> Result<Vec<Op>> {
    let pipeline = k.embed(gpu, m.ty)?;
    let mut ops = Vec::new();
    for p in &m.parts {
        let params = gpu.params([
            p.rows as u32,
            m.cols as u32,
            p.row_off as u32,
            m.row_bytes as u32,
            0,
            0,
            0,
            0,
        ]);
        let bind = kernels::bind(
            gpu,
            &pipeline,
            &[(0, &p.buf), (1, tokens), (2, x), (3, &params)],
        );
        ops.push(Op {
            pipeline: pipeline.clone(),
            bind,
            shape: Shape::PerToken([(m.cols as u32).div_ceil(64), 1, 1], 1),
        });
    }
    Ok(ops)
}

/// Activations for up to `batch` tokens, reused by every layer.
struct Scratch {
    x: wgpu::Buffer,
    xb: wgpu::Buffer,
    q: wgpu::Buffer,
    k: wgpu::Buffer,
    v: wgpu::Buffer,
    xo: wgpu::Buffer,
    hb: wgpu::Buffer,
    hb2: wgpu::Buffer,
    scores: wgpu::Buffer,
    xlast: wgpu::Buffer,
    logits: wgpu::Buffer,
    tokens: wgpu::Buffer,
    step: wgpu::Buffer,
    argmax: wgpu::Buffer,
    read_id: wgpu::Buffer,
    read_logits: wgpu::Buffer,
}

pub struct GpuBackend {
    gpu: Gpu,
    vocab: usize,
    ctx: usize,
    max_batch: usize,
    s: Scratch,
    embed: Vec<Op>,
    layers: Vec<Op>,
    head: Vec<Op>,
    argmax: Vec<Op>,
    logits: Vec<f32>,
    /// Keeps uploads alive for the bind groups that name them.
    _keep: Vec<wgpu::Buffer>,
    _matrices: Vec<GpuMatrix>,
}

fn f(v: f32) -> u32 {
    v.to_bits()
}

impl GpuBackend {
    pub async fn new(
        gpu: Gpu,
        c: &Config,
        w: &Weights,
        ctx: usize,
        max_batch: usize,
        opts: GpuOptions,
    ) -> Result<GpuBackend> {
        let g = gpu.clone();
        gpu.scoped("loading the model onto the GPU", move || {
            Self::build(g, c, w, ctx, max_batch, opts)
        })
        .await
    }

    fn build(
        gpu: Gpu,
        c: &Config,
        w: &Weights,
        ctx: usize,
        max_batch: usize,
        opts: GpuOptions,
    ) -> Result<GpuBackend> {
        let ctx = ctx.max(1);
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
        let score_cap = gpu.binding_limit().min(256 << 20);
        while batch > 1 && (batch * c.n_heads * ctx * 4) as u64 > score_cap {
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
            scores: gpu.storage("attention scores", b * (c.n_heads * ctx) as u64 * 4)?,
            xlast: gpu.storage("xlast", dim as u64 * 4)?,
            logits: gpu.storage("logits", vocab as u64 * 4)?,
            tokens: gpu.storage("tokens", b * 4)?,
            step: gpu.step_buffer(),
            argmax: gpu.storage("argmax", 4)?,
            read_id: gpu.readback_buffer(4),
            read_logits: gpu.readback_buffer(vocab as u64 * 4),
        };
        let mut k = Kernels::new(&gpu);
        let mut keep = Vec::new();
        let mut mats = Vec::new();

        let embd = GpuMatrix::from_weights(&gpu, "token_embd", w, &w.token_embd, limit)?;
        let embed = embed_ops(&gpu, &mut k, &embd, &s.tokens, &s.x)?;

        let ff_buf = match &w.rope_freqs {
            Some(v) => gpu.upload_f32("rope_freqs", v),
            None => gpu.upload_f32("rope_freqs", &[1.0]),
        };
        let theta_scale = c.rope_base.powf(-2.0 / c.rope_dim as f32);
        let neox = (c.rope_style == RopeStyle::Neox) as u32;
        let rope_params = |heads: usize| {
            gpu.params([
                heads as u32,
                c.head_dim as u32,
                c.rope_dim as u32,
                neox,
                f(theta_scale),
                f(c.rope_freq_scale),
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
            0,
            0,
        ]);
        let ew = |width: usize| gpu.params([width as u32, kernels::NX, 0, 0, 0, 0, 0, 0]);
        let (ew_q, ew_kv, ew_ff) = (ew(qd), ew(kvd), ew(ff));

        let mut layers = Vec::new();
        let norm_op = |k: &Kernels, x: &wgpu::Buffer, g: &wgpu::Buffer, out: &wgpu::Buffer| Op {
            bind: kernels::bind(
                &gpu,
                &k.rmsnorm,
                &[(0, x), (1, g), (2, out), (3, &norm_p), (4, &s.step)],
            ),
            pipeline: k.rmsnorm.clone(),
            shape: Shape::PerToken([1, 1, 1], 0),
        };
        for (l, layer) in w.layers.iter().enumerate() {
            let mat = |m: &Matrix, name: &str| {
                GpuMatrix::from_weights(&gpu, &format!("blk.{l}.{name}"), w, m, limit)
            };
            let wq = mat(&layer.wq, "attn_q")?;
            let wk = mat(&layer.wk, "attn_k")?;
            let wv = mat(&layer.wv, "attn_v")?;
            let wo = mat(&layer.wo, "attn_output")?;
            let wg = mat(&layer.w_gate, "ffn_gate")?;
            let wu = mat(&layer.w_up, "ffn_up")?;
            let wd = mat(&layer.w_down, "ffn_down")?;
            let attn_norm = gpu.upload_f32("attn_norm", &layer.attn_norm);
            let ffn_norm = gpu.upload_f32("ffn_norm", &layer.ffn_norm);
            let kc = gpu.storage("key cache", (ctx * kvd * 2) as u64)?;
            let vc = gpu.storage("value cache", (ctx * kvd * 2) as u64)?;

            layers.push(norm_op(&k, &s.x, &attn_norm, &s.xb));
            layers.extend(matvec_ops(&gpu, &mut k, &wq, &s.xb, &s.q, false, true)?);
            layers.extend(matvec_ops(&gpu, &mut k, &wk, &s.xb, &s.k, false, true)?);
            layers.extend(matvec_ops(&gpu, &mut k, &wv, &s.xb, &s.v, false, true)?);
            for (bias, dst, p, width) in [
                (&layer.bq, &s.q, &ew_q, qd),
                (&layer.bk, &s.k, &ew_kv, kvd),
                (&layer.bv, &s.v, &ew_kv, kvd),
            ] {
                if let Some(bias) = bias {
                    let bb = gpu.upload_f32("bias", bias);
                    layers.push(Op {
                        bind: kernels::bind(
                            &gpu,
                            &k.add_bias,
                            &[(0, dst), (1, &bb), (2, p), (3, &s.step)],
                        ),
                        pipeline: k.add_bias.clone(),
                        shape: Shape::Flat(width as u32),
                    });
                    keep.push(bb);
                }
            }
            for (buf, p, heads) in [(&s.q, &rope_q, c.n_heads), (&s.k, &rope_k, c.n_kv_heads)] {
                layers.push(Op {
                    bind: kernels::bind(
                        &gpu,
                        &k.rope,
                        &[(0, buf), (1, &ff_buf), (2, p), (3, &s.step)],
                    ),
                    pipeline: k.rope.clone(),
                    shape: Shape::PerToken(
                        [((heads * c.rope_dim / 2) as u32).div_ceil(64), 1, 1],
                        1,
                    ),
                });
            }
            layers.push(Op {
                bind: kernels::bind(
                    &gpu,
                    &k.kv_store,
                    &[
                        (0, &s.k),
                        (1, &s.v),
                        (2, &kc),
                        (3, &vc),
                        (4, &att_p),
                        (5, &s.step),
                    ],
                ),
                pipeline: k.kv_store.clone(),
                shape: Shape::PerToken([((kvd / 2) as u32).div_ceil(64), 1, 1], 1),
            });
            layers.push(Op {
                bind: kernels::bind(
                    &gpu,
                    &k.attention,
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
                pipeline: k.attention.clone(),
                shape: Shape::PerToken([c.n_heads as u32, 1, 1], 1),
            });
            layers.extend(matvec_ops(&gpu, &mut k, &wo, &s.xo, &s.x, true, true)?);
            layers.push(norm_op(&k, &s.x, &ffn_norm, &s.xb));
            layers.extend(matvec_ops(&gpu, &mut k, &wg, &s.xb, &s.hb, false, true)?);
            layers.extend(matvec_ops(&gpu, &mut k, &wu, &s.xb, &s.hb2, false, true)?);
            layers.push(Op {
                bind: kernels::bind(
                    &gpu,
                    &k.silu_mul,
                    &[(0, &s.hb), (1, &s.hb2), (2, &ew_ff), (3, &s.step)],
                ),
                pipeline: k.silu_mul.clone(),
                shape: Shape::Flat(ff as u32),
            });
            layers.extend(matvec_ops(&gpu, &mut k, &wd, &s.hb, &s.x, true, true)?);
            mats.extend([wq, wk, wv, wo, wg, wu, wd]);
            keep.extend([attn_norm, ffn_norm, kc, vc]);
        }

        let out_norm = gpu.upload_f32("output_norm", &w.output_norm);
        let last_p = gpu.params([dim as u32, f(c.norm_eps), 1, 0, 0, 0, 0, 0]);
        let mut head = vec![Op {
            bind: kernels::bind(
                &gpu,
                &k.rmsnorm,
                &[
                    (0, &s.x),
                    (1, &out_norm),
                    (2, &s.xlast),
                    (3, &last_p),
                    (4, &s.step),
                ],
            ),
            pipeline: k.rmsnorm.clone(),
            shape: Shape::Fixed([1, 1, 1]),
        }];
        if w.output == w.token_embd {
            head.extend(matvec_ops(
                &gpu, &mut k, &embd, &s.xlast, &s.logits, false, false,
            )?);
        } else {
            let out = GpuMatrix::from_weights(&gpu, "output", w, &w.output, limit)?;
            head.extend(matvec_ops(
                &gpu, &mut k, &out, &s.xlast, &s.logits, false, false,
            )?);
            mats.push(out);
        }
        mats.push(embd);
        let am_p = gpu.params([vocab as u32, 0, 0, 0, 0, 0, 0, 0]);
        let argmax = vec![Op {
            bind: kernels::bind(
                &gpu,
                &k.argmax,
                &[(0, &s.logits), (1, &s.argmax), (2, &am_p)],
            ),
            pipeline: k.argmax.clone(),
            shape: Shape::Fixed([1, 1, 1]),
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
            head,
            argmax,
            logits: vec![0.0; vocab],
            _keep: keep,
            _matrices: mats,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    fn validate(&self, tokens: &[u32], pos: usize) -> Result<()> {
        let n = tokens.len();
        if n == 0 || n > self.max_batch {
            return Err(Error::InvalidArgument(format!(
                "batch of {n} tokens (1..={} allowed)",
                self.max_batch
            )));
        }
        if pos + n > self.ctx {
            return Err(Error::ContextOverflow {
                needed: pos + n,
                context: self.ctx,
            });
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.vocab) {
            return Err(Error::BadToken {
                id: bad,
                vocab: self.vocab,
            });
        }
        self.gpu.check()
    }

    /// Submit the layers for `tokens` and, with `tail`, the LM head and what
    /// follows it, copying `copy` back for reading.
    fn submit(&self, tokens: &[u32], pos: usize, tail: Tail) -> Result<()> {
        self.validate(tokens, pos)?;
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        self.gpu.queue.write_buffer(&self.s.tokens, 0, &bytes);
        self.gpu
            .write_step(&self.s.step, pos as u32, tokens.len() as u32);
        let n = tokens.len() as u32;
        let body: [&[Op]; 2] = [&self.embed, &self.layers];
        match tail {
            Tail::None => self.gpu.run(&body, n, &[]),
            Tail::Logits => self.gpu.run(
                &[&self.embed, &self.layers, &self.head],
                n,
                &[(&self.s.logits, &self.s.read_logits, self.vocab as u64 * 4)],
            ),
            Tail::Argmax => self.gpu.run(
                &[&self.embed, &self.layers, &self.head, &self.argmax],
                n,
                &[(&self.s.argmax, &self.s.read_id, 4)],
            ),
        }
        Ok(())
    }

    async fn logits_after(&mut self, tokens: &[u32], pos: usize) -> Result<()> {
        self.submit(tokens, pos, Tail::Logits)?;
        let bytes = self
            .gpu
            .read(&self.s.read_logits, self.vocab as u64 * 4)
            .await?;
        for (o, c) in self.logits.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Tail {
    None,
    Logits,
    Argmax,
}

impl Backend for GpuBackend {
    fn name(&self) -> &'static str {
        "gpu"
    }
    fn max_batch(&self) -> usize {
        self.max_batch
    }
    fn context_len(&self) -> usize {
        self.ctx
    }
    fn forward(&mut self, tokens: &[u32], pos: usize) -> Result<()> {
        self.submit(tokens, pos, Tail::None)
    }
    fn forward_sample<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
        sampler: &'a mut Sampler,
        history: &'a [u32],
    ) -> LocalFuture<'a, Result<u32>> {
        Box::pin(async move {
            let p = sampler.params();
            if p.temperature <= 0.0 && p.repeat_penalty == 1.0 {
                self.submit(tokens, pos, Tail::Argmax)?;
                let b = self.gpu.read(&self.s.read_id, 4).await?;
                return Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            }
            // TODO: sample on the GPU (penalty, top-k, top-p, min-p,
            // temperature) so that only the id comes back; for now the
            // logits are read back and the CPU sampler picks.
            self.logits_after(tokens, pos).await?;
            Ok(sampler.sample(&mut self.logits, history))
        })
    }
    fn forward_logits<'a>(
        &'a mut self,
        tokens: &'a [u32],
        pos: usize,
    ) -> LocalFuture<'a, Result<&'a [f32]>> {
        Box::pin(async move {
            self.logits_after(tokens, pos).await?;
            Ok(&self.logits[..])
        })
    }
    fn sync(&mut self) -> LocalFuture<'_, Result<()>> {
        Box::pin(async move { self.gpu.wait_idle().await })
    }
    fn device(&self) -> Option<String> {
        Some(self.gpu.summary())
    }
}

/// Load a GGUF file held in memory onto `gpu` and wrap it in an engine.
pub async fn load_engine(
    gpu: Gpu,
    bytes: Vec<u8>,
    opts: EngineOptions,
    gpu_opts: GpuOptions,
    clock: fn() -> f64,
) -> Result<Engine> {
    let Loaded {
        config,
        tokenizer,
        info,
        weights,
    } = Loaded::from_bytes(bytes, opts.load)?;
    let ctx = context_for(&config, &opts);
    let backend = GpuBackend::new(gpu, &config, &weights, ctx, opts.max_batch, gpu_opts).await?;
    // The GPU holds its own copy; the file bytes are released here.
    drop(weights);
    Ok(Engine::with_backend(
        config,
        tokenizer,
        info,
        Box::new(backend),
        clock,
    ))
}
