//! The WebGPU backend: the same forward pass as `cpu`, as compute shaders.
//!
//! Weights stay in their block format on the GPU and are decoded inside the
//! matrix kernels; dot products are f32 throughout (no activation
//! quantization), the KV cache is f16. Everything is allocated and every
//! bind group recorded at load; a token costs one command encoder (recorded
//! while the previous token runs), one submit, and a 4-byte readback of the
//! sampled id (greedy or sampled on the GPU).
//!
//! Two layer lists: for one token (decode) 5 dispatches per layer, with the
//! rmsnorm folded into the q/k/v and gate/up products and rope, the KV
//! store and silu·mul in their epilogues (matvec.wgsl); for a batch
//! (prefill) tiled products (matmul.wgsl) with the same epilogues after a
//! separate rmsnorm. Matrices that share a format are concatenated at load
//! ([Wq; Wk; Wv], [Wgate; Wup]); otherwise both lists fall back to separate
//! products and the rope, KV store, bias and silu·mul kernels.

pub mod kernels;
#[cfg(not(target_arch = "wasm32"))]
pub mod profile;
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
use crate::sampler::{Sampler, SamplerParams};

pub use kernels::{Kernels, Mv, Op, Shape};

/// A buffer-to-buffer copy after a pass: (source, destination, bytes).
pub type Copy<'a> = (&'a wgpu::Buffer, &'a wgpu::Buffer, u64);

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
            max_batch: std::env::var("WEBGGUF_GPU_BATCH")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(512),
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
             max_compute_invocations_per_workgroup {}, max_compute_workgroups_per_dimension {}, \
             max_storage_buffers_per_shader_stage {}; \
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
            l.max_storage_buffers_per_shader_stage,
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

    /// A uniform block of eight 32-bit words (most kernels' `Params`).
    pub fn params(&self, words: [u32; 8]) -> wgpu::Buffer {
        self.params_words(&words)
    }

    /// A uniform block of 32-bit words.
    pub fn params_words(&self, words: &[u32]) -> wgpu::Buffer {
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
    pub fn run(&self, ops: &[&[Op]], n: u32, copies: &[Copy]) {
        self.queue.submit([self.encode(&[], ops, n, copies, None)]);
    }

    /// Record the copies `before`, then `ops` for `n` tokens in one pass
    /// (with `timestamps` written at its start and end), then `copies`.
    pub fn encode(
        &self,
        before: &[Copy],
        ops: &[&[Op]],
        n: u32,
        copies: &[Copy],
        timestamps: Option<wgpu::ComputePassTimestampWrites>,
    ) -> wgpu::CommandBuffer {
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for &(src, dst, bytes) in before {
            enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
        }
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: timestamps,
            });
            for o in ops {
                kernels::encode(&mut pass, o, n);
            }
        }
        for &(src, dst, bytes) in copies {
            enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
        }
        enc.finish()
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
        self.poll_until(None)
    }

    /// Block natively until submission `sub` (None: all work) is done.
    fn poll_until(&self, sub: Option<wgpu::SubmissionIndex>) -> Result<()> {
        // Natively nothing drives callbacks but a poll; in the browser the
        // event loop does, and blocking is not allowed.
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: sub,
                timeout: None,
            })
            .map_err(|e| Error::Gpu(format!("waiting for the GPU failed: {e}")))?;
        #[cfg(target_arch = "wasm32")]
        let _ = sub;
        Ok(())
    }

    /// Map `buf` (a readback buffer whose copy is submitted) and return its
    /// first `bytes` bytes.
    pub async fn read(&self, buf: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let pending = self.start_read(buf, bytes);
        self.finish_read(pending, None).await
    }

    /// Ask for `buf`'s first `bytes` bytes (a readback buffer whose copy is
    /// submitted) before more work is submitted: the browser completes a
    /// map once the work submitted before the request is done, so work
    /// submitted after it does not delay the read.
    pub fn start_read<'b>(&self, buf: &'b wgpu::Buffer, bytes: u64) -> PendingRead<'b> {
        let (tx, rx) = oneshot();
        buf.slice(..bytes).map_async(wgpu::MapMode::Read, move |r| {
            tx(r.map_err(|e| e.to_string()))
        });
        PendingRead { buf, bytes, rx }
    }

    /// The bytes `start_read` asked for; natively this blocks until
    /// submission `sub` (the one that made the copy; None: all work) is done.
    pub async fn finish_read(
        &self,
        p: PendingRead<'_>,
        sub: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<u8>> {
        let PendingRead { buf, bytes, rx } = p;
        self.poll_until(sub)?;
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
/// A readback in flight (`Gpu::start_read`).
pub struct PendingRead<'b> {
    buf: &'b wgpu::Buffer,
    bytes: u64,
    rx: Receiver<std::result::Result<(), String>>,
}

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

/// Matrices that a fused kernel reads as one: concatenated by rows into one
/// buffer where they share a format and width and fit one binding (and
/// WEBGGUF_GPU_FUSE is not "0"), else uploaded apart.
pub struct MatGroup {
    pub mats: Vec<GpuMatrix>,
    /// (index into `mats`, rows) of each member, in the order given.
    pub segs: Vec<(usize, std::ops::Range<usize>)>,
}

/// Whether fused kernels may be used (WEBGGUF_GPU_FUSE=0 turns them off for
/// comparisons; the unfused path is also the fallback for odd shapes).
pub fn fusion_enabled() -> bool {
    !std::env::var("WEBGGUF_GPU_FUSE").is_ok_and(|v| v == "0")
}

impl MatGroup {
    pub fn upload(
        gpu: &Gpu,
        label: &str,
        w: &Weights,
        members: &[(&str, &Matrix)],
        limit: u64,
    ) -> Result<MatGroup> {
        let first = members[0].1;
        let total: usize = members.iter().map(|(_, m)| m.size()).sum();
        let same = members
            .iter()
            .all(|(_, m)| m.ty == first.ty && m.cols == first.cols);
        if fusion_enabled()
            && same
            && kernels::supported(first.ty)
            && (total as u64) <= (limit & !3)
            && total <= u32::MAX as usize
        {
            let mut bytes = Vec::with_capacity(total);
            let mut segs = Vec::new();
            let mut row = 0;
            for (_, m) in members {
                bytes.extend_from_slice(m.bytes(&w.data));
                segs.push((0, row..row + m.rows));
                row += m.rows;
            }
            let m = GpuMatrix::upload(gpu, label, first.ty, row, first.cols, &bytes, limit)?;
            return Ok(MatGroup {
                mats: vec![m],
                segs,
            });
        }
        let mut mats = Vec::new();
        let mut segs = Vec::new();
        for (i, (name, m)) in members.iter().enumerate() {
            mats.push(GpuMatrix::from_weights(gpu, name, w, m, limit)?);
            segs.push((i, 0..m.rows));
        }
        Ok(MatGroup { mats, segs })
    }

    /// The one matrix that holds every member, if they were concatenated.
    pub fn fused(&self) -> Option<&GpuMatrix> {
        (self.mats.len() == 1 && self.segs.len() > 1 && self.mats[0].parts.len() == 1)
            .then(|| &self.mats[0])
    }

    pub fn seg(&self, i: usize) -> (&GpuMatrix, std::ops::Range<usize>) {
        let (m, r) = &self.segs[i];
        (&self.mats[*m], r.clone())
    }
}

/// The rope and KV-cache side of `Mv::Qkv`.
pub struct QkvArgs<'a> {
    pub kc: &'a wgpu::Buffer,
    pub vc: &'a wgpu::Buffer,
    /// q, k and v biases concatenated like the rows, if any.
    pub bias: Option<&'a wgpu::Buffer>,
    /// Rope frequency divisors (a 1-element dummy without `has_ff`).
    pub ff: &'a wgpu::Buffer,
    pub has_ff: bool,
    pub kvd: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub neox: bool,
    pub theta_scale: f32,
    pub freq_scale: f32,
}

/// What one matvec computes (see matvec.wgsl).
pub struct MatvecArgs<'a> {
    pub mv: Mv,
    pub label: &'static str,
    pub x: &'a wgpu::Buffer,
    pub y: &'a wgpu::Buffer,
    pub step: &'a wgpu::Buffer,
    /// Output element of the first computed row, and the stride between tokens.
    pub out_off: usize,
    pub out_stride: usize,
    pub accumulate: bool,
    /// Fold rmsnorm(x) * gains (with eps) into the product.
    pub norm: Option<(&'a wgpu::Buffer, f32)>,
    /// Read token S.n - 1 only and write token 0 (the LM head).
    pub last: bool,
    /// Rows per workgroup (a multiple of 4 for `Mv::Qkv`, of 2 for
    /// `Mv::Silu`); 0 picks one from the shape (`auto_rows`).
    pub rows_per_group: u32,
    /// `Mv::Head`: where the argmax partials go.
    pub partials: Option<&'a wgpu::Buffer>,
    /// `Mv::Silu`: the first up row; `Mv::Qkv`: the number of q rows.
    pub split: usize,
    pub qkv: Option<QkvArgs<'a>>,
    /// Use the tiled kernel (matmul.wgsl) where it applies: a batch of
    /// tokens, columns a multiple of 32, no norm, not `last`.
    pub tiled: bool,
}

impl<'a> MatvecArgs<'a> {
    /// A plain `y[t] (+)= m x[t]` over [tokens][rows] buffers.
    pub fn plain(
        x: &'a wgpu::Buffer,
        y: &'a wgpu::Buffer,
        step: &'a wgpu::Buffer,
        out_stride: usize,
        accumulate: bool,
    ) -> MatvecArgs<'a> {
        MatvecArgs {
            mv: Mv::Main,
            label: "matvec",
            x,
            y,
            step,
            out_off: 0,
            out_stride,
            accumulate,
            norm: None,
            last: false,
            rows_per_group: matvec_rows(),
            partials: None,
            split: 0,
            qkv: None,
            tiled: false,
        }
    }
}

/// Whether prefill uses the tiled matrix kernel (WEBGGUF_GPU_TILED=0 runs
/// the matvec kernels per token instead, for comparisons).
pub fn tiled_prefill() -> bool {
    !std::env::var("WEBGGUF_GPU_TILED").is_ok_and(|v| v == "0")
}

/// Whether attention uses the chunked kernel where it applies
/// (WEBGGUF_GPU_ATTENTION=simple keeps the one-key-at-a-time kernel).
pub fn chunked_attention() -> bool {
    !std::env::var("WEBGGUF_GPU_ATTENTION").is_ok_and(|v| v == "simple")
}

/// Rows per matvec workgroup: 0, the default, lets `auto_rows` pick from
/// the shape; WEBGGUF_GPU_MV_ROWS (1, 2, 4, 8 or 16) fixes it for
/// experiments.
pub fn matvec_rows() -> u32 {
    match std::env::var("WEBGGUF_GPU_MV_ROWS").as_deref() {
        Ok("1") => 1,
        Ok("2") => 2,
        Ok("4") => 4,
        Ok("8") => 8,
        Ok("16") => 16,
        _ => 0,
    }
}

/// Rows per matvec workgroup: 2 for plain products, 4 for the fused q/k/v
/// (quads) and gate/up kernels and for the LM head, the best measured on
/// the H100 (larger groups were slower: fewer threads, each waiting for
/// more round trips; the head with 2 rows leaves 4x more argmax partials).
/// WEBGGUF_GPU_HEAD_ROWS (2, 8 or 16) overrides the head's for experiments.
pub fn auto_rows(_rows: usize, mv: Mv) -> u32 {
    match mv {
        Mv::Qkv | Mv::Silu | Mv::Gelu => 4,
        Mv::Head => match std::env::var("WEBGGUF_GPU_HEAD_ROWS").as_deref() {
            Ok("2") => 2,
            Ok("8") => 8,
            Ok("16") => 16,
            _ => 4,
        },
        Mv::Main => 2,
    }
}

/// Dispatches for rows `rows` of `m` as `a` describes, one per part that
/// holds some of them; the batch runs along z unless `a.last`.
pub fn matvec_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    rows: std::ops::Range<usize>,
    a: &MatvecArgs,
) -> Result<Vec<Op>> {
    let r = match (a.rows_per_group, a.mv) {
        (0, mv) => auto_rows(rows.len(), mv),
        (r, Mv::Qkv) => r.max(4),
        (r, Mv::Silu | Mv::Gelu) => r.max(2),
        (r, _) => r,
    };
    if !matches!(a.mv, Mv::Main | Mv::Head) && (m.parts.len() != 1 || rows != (0..m.rows)) {
        return Err(Error::Gpu(
            "a fused matvec needs the whole matrix in one binding".into(),
        ));
    }
    let tiled = a.tiled && m.cols.is_multiple_of(32) && a.norm.is_none() && !a.last;
    let pipeline = if tiled {
        k.matmul(gpu, m.ty, a.mv)?
    } else {
        k.matvec(gpu, m.ty, a.mv, r, m.cols)?
    };
    let mut ops = Vec::new();
    let mut part_base = 0;
    for p in &m.parts {
        let lo = rows.start.max(p.row_off);
        let hi = rows.end.min(p.row_off + p.rows);
        if lo >= hi {
            continue;
        }
        let n = (hi - lo) as u32;
        let groups = n.div_ceil(r);
        let nx = groups.min(kernels::NX);
        let ny = groups.div_ceil(nx);
        let q = a.qkv.as_ref();
        let flags = a.accumulate as u32
            | (a.norm.is_some() as u32) << 1
            | (a.last as u32) << 2
            | (q.is_some_and(|q| q.bias.is_some()) as u32) << 3
            | (q.is_some_and(|q| q.neox) as u32) << 4
            | (q.is_some_and(|q| q.has_ff) as u32) << 5;
        let params = gpu.params_words(&[
            n,
            m.cols as u32,
            (lo - p.row_off) as u32,
            (a.out_off + lo - rows.start) as u32,
            a.out_stride as u32,
            m.row_bytes as u32,
            flags,
            nx,
            f(a.norm.map_or(0.0, |n| n.1)),
            a.split as u32,
            q.map_or(0, |q| q.kvd as u32),
            q.map_or(0, |q| q.head_dim as u32),
            q.map_or(0, |q| q.rope_dim as u32),
            f(q.map_or(0.0, |q| q.theta_scale)),
            f(q.map_or(0.0, |q| q.freq_scale)),
            part_base,
        ]);
        part_base += groups;
        let g = a.norm.map_or(a.x, |n| n.0);
        // The tiled kernel reads x only through its vec4 alias when it has one.
        let x_binding = if tiled && k.vector_x { 11 } else { 1 };
        let mut entries = vec![
            (0, &p.buf),
            (x_binding, a.x),
            (2, a.y),
            (3, &params),
            (5, a.step),
        ];
        if !tiled {
            entries.push((4, g));
            if k.matvec_vx(m.cols, a.mv) {
                entries.extend([(11, a.x), (12, g)]);
            }
        }
        if a.mv == Mv::Head {
            let part = a
                .partials
                .ok_or_else(|| Error::Gpu("LM head without partials".into()))?;
            entries.push((10, part));
        }
        if let Some(q) = q {
            entries.extend([(6, q.kc), (7, q.vc), (8, q.bias.unwrap_or(a.x)), (9, q.ff)]);
        }
        let bind = kernels::bind(gpu, &pipeline, &entries);
        let shape = if tiled {
            Shape::TokenTiles(n.div_ceil(k.tile.rows), k.tile.tokens)
        } else if a.last {
            Shape::Fixed([nx, ny, 1])
        } else {
            Shape::PerToken([nx, ny, 1], 2)
        };
        ops.push(Op {
            pipeline: pipeline.clone(),
            bind,
            shape,
            label: if tiled { "matmul" } else { a.label },
        });
    }
    Ok(ops)
}

/// Dispatches that gather the rows `tokens` names into `x`, times `scale`,
/// one per part.
pub fn embed_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    tokens: &wgpu::Buffer,
    x: &wgpu::Buffer,
    scale: f32,
) -> Result<Vec<Op>> {
    let pipeline = k.embed(gpu, m.ty)?;
    let mut ops = Vec::new();
    for p in &m.parts {
        let params = gpu.params([
            p.rows as u32,
            m.cols as u32,
            p.row_off as u32,
            m.row_bytes as u32,
            scale.to_bits(),
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
            label: "embed",
        });
    }
    Ok(ops)
}

/// Most distinct tokens the GPU applies the repetition penalty to; a longer
/// window is sampled on the CPU.
pub const PEN_CAP: usize = 1024;

/// Buffers of the GPU sampler (sample.wgsl).
pub struct SampleBufs {
    /// The per-step `Sampling` uniform.
    pub params: wgpu::Buffer,
    /// Penalized tokens.
    pub pen: wgpu::Buffer,
    /// Candidate pairs between levels.
    pub cand: [wgpu::Buffer; 2],
    /// Per-chunk (max, sum of exp) of the first level.
    pub stat: wgpu::Buffer,
}

impl SampleBufs {
    pub fn new(gpu: &Gpu, vocab: usize) -> Result<SampleBufs> {
        let pairs = vocab.div_ceil(1024) as u64 * 128;
        Ok(SampleBufs {
            params: gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sampling"),
                size: 48,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            pen: gpu.storage("penalized tokens", PEN_CAP as u64 * 4)?,
            cand: [
                gpu.storage("candidates", pairs * 8)?,
                gpu.storage("candidates", pairs * 8)?,
            ],
            stat: gpu.storage("chunk stats", vocab.div_ceil(1024) as u64 * 8)?,
        })
    }

    /// Write one step's parameters: `pen` the penalized tokens (at most
    /// PEN_CAP), `r` the draw's random number; temperature 0 is greedy.
    pub fn write(&self, gpu: &Gpu, vocab: usize, p: &SamplerParams, pen: &[u32], r: f32) {
        if !pen.is_empty() {
            let b: Vec<u8> = pen.iter().flat_map(|t| t.to_le_bytes()).collect();
            gpu.queue.write_buffer(&self.pen, 0, &b);
        }
        let greedy = p.temperature <= 0.0;
        let words = [
            vocab as u32,
            p.top_k.min(u32::MAX as usize) as u32,
            f(p.top_p),
            f(p.min_p),
            f(if greedy { 1.0 } else { 1.0 / p.temperature }),
            f(p.repeat_penalty),
            pen.len() as u32,
            f(r),
            greedy as u32,
            0,
            0,
            0,
        ];
        let b: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        gpu.queue.write_buffer(&self.params, 0, &b);
    }
}

/// Dispatches that sample a token from `logits` (`vocab` of them) into
/// `out[0]` with the parameters last written to `b` (sample.wgsl).
pub fn sample_ops(
    gpu: &Gpu,
    k: &Kernels,
    logits: &wgpu::Buffer,
    out: &wgpu::Buffer,
    b: &SampleBufs,
    vocab: usize,
) -> Vec<Op> {
    let level = |n: usize| gpu.params_words(&[n as u32, 0, 0, 0]);
    let groups = vocab.div_ceil(1024);
    let mut ops = vec![Op {
        bind: kernels::bind(
            gpu,
            &k.sample_first,
            &[
                (0, logits),
                (2, &b.cand[0]),
                (4, &b.params),
                (6, &b.pen),
                (7, &b.stat),
            ],
        ),
        pipeline: k.sample_first.clone(),
        shape: Shape::Fixed([groups as u32, 1, 1]),
        label: "sample",
    }];
    let (mut n, mut cur) = (groups * 128, 0);
    while n > 1024 {
        let groups = n.div_ceil(1024);
        let l = level(n);
        ops.push(Op {
            bind: kernels::bind(
                gpu,
                &k.sample_merge,
                &[(1, &b.cand[cur]), (2, &b.cand[1 - cur]), (5, &l)],
            ),
            pipeline: k.sample_merge.clone(),
            shape: Shape::Fixed([groups as u32, 1, 1]),
            label: "sample",
        });
        n = groups * 128;
        cur = 1 - cur;
    }
    let l = level(n);
    ops.push(Op {
        bind: kernels::bind(
            gpu,
            &k.sample_last,
            &[
                (1, &b.cand[cur]),
                (3, out),
                (4, &b.params),
                (5, &l),
                (7, &b.stat),
            ],
        ),
        pipeline: k.sample_last.clone(),
        shape: Shape::Fixed([1, 1, 1]),
        label: "sample",
    });
    ops
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
    logits: wgpu::Buffer,
    tokens: wgpu::Buffer,
    step: wgpu::Buffer,
    argmax: wgpu::Buffer,
    /// The LM head's per-workgroup (logit, row) bests.
    partials: wgpu::Buffer,
    /// Two, so that a step fed ahead has its own while the one before it
    /// is read.
    read_id: [wgpu::Buffer; 2],
    read_logits: wgpu::Buffer,
    sample: SampleBufs,
    /// Split attention's partial results ([heads][splits][head_dim + 2]).
    att_part: wgpu::Buffer,
}

pub struct GpuBackend {
    gpu: Gpu,
    vocab: usize,
    ctx: usize,
    max_batch: usize,
    s: Scratch,
    embed: Vec<Op>,
    /// The layers for a batch of tokens (prefill), unfused.
    layers: Vec<Op>,
    /// The layers for one token (decode), fused where the shapes allow.
    layers_one: Vec<Op>,
    /// The same with attention in splits of SPLIT_KEYS keys merged after,
    /// for positions past the first SPLIT_KEYS (empty where the chunked
    /// kernel does not apply, or with WEBGGUF_GPU_SPLIT=0).
    layers_long: Vec<Op>,
    head: Vec<Op>,
    argmax: Vec<Op>,
    sample: Vec<Op>,
    logits: Vec<f32>,
    /// Record the next decode step while the GPU runs this one.
    pipeline: bool,
    /// That step's command buffer, recorded ahead, and what it runs.
    ahead: Option<(Recipe, wgpu::CommandBuffer)>,
    /// Greedy decoding feeds each pick back on the GPU: the step after it
    /// is submitted before the pick is read, so the GPU never waits for the
    /// CPU's round trip (WEBGGUF_GPU_FEED=0 turns that off).
    feed: bool,
    /// The step submitted that way and not yet asked for.
    fed: Option<Fed>,
    /// Keeps uploads alive for the bind groups that name them.
    _keep: Vec<wgpu::Buffer>,
    _matrices: Vec<GpuMatrix>,
}

impl Drop for GpuBackend {
    /// Free the GPU memory now. Natively wgpu does this when the handles
    /// drop; in the browser its handles drop without `GPUBuffer.destroy()`,
    /// leaving the memory to the JS garbage collector, so a freed model
    /// would hold its weights until some later collection.
    fn drop(&mut self) {
        let s = &self.s;
        for b in [
            &s.x,
            &s.xb,
            &s.q,
            &s.k,
            &s.v,
            &s.xo,
            &s.hb,
            &s.hb2,
            &s.scores,
            &s.logits,
            &s.tokens,
            &s.argmax,
            &s.partials,
            &s.sample.pen,
            &s.sample.stat,
            &s.att_part,
        ]
        .into_iter()
        .chain(&s.sample.cand)
        .chain(&self._keep)
        .chain(
            self._matrices
                .iter()
                .flat_map(|m| m.parts.iter().map(|p| &p.buf)),
        ) {
            b.destroy();
        }
    }
}

fn f(v: f32) -> u32 {
    v.to_bits()
}

impl GpuBackend {
    /// Upload `w` and build every pipeline and dispatch; `progress` hears
    /// the fraction of the layers uploaded so far.
    pub async fn new(
        gpu: Gpu,
        c: &Config,
        w: &Weights,
        ctx: usize,
        max_batch: usize,
        opts: GpuOptions,
        progress: &dyn Fn(f64),
    ) -> Result<GpuBackend> {
        let g = gpu.clone();
        gpu.scoped("loading the model onto the GPU", move || {
            Self::build(g, c, w, ctx, max_batch, opts, progress)
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
        progress: &dyn Fn(f64),
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
        // The one-key-at-a-time attention kernel needs a score scratch that
        // grows with batch x heads x context; the chunked one needs none.
        let simple_attention = c.head_dim > 256 || !chunked_attention();
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
        let mut k = Kernels::new(&gpu);
        let mut keep = Vec::new();
        let mut mats = Vec::new();

        let embd = GpuMatrix::from_weights(&gpu, "token_embd", w, &w.token_embd, limit)?;
        let embed = embed_ops(&gpu, &mut k, &embd, &s.tokens, &s.x, 1.0)?;

        let ff_buf = match &w.rope_freqs {
            Some(v) => gpu.upload_f32("rope_freqs", v),
            None => gpu.upload_f32("rope_freqs", &[1.0]),
        };
        let theta_scale = c.rope_base.powf(-2.0 / c.rope_dim as f32);
        let neox = c.rope_style == RopeStyle::Neox;
        let rope_params = |heads: usize| {
            gpu.params([
                heads as u32,
                c.head_dim as u32,
                c.rope_dim as u32,
                neox as u32,
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
        let split_attention =
            !simple_attention && !std::env::var("WEBGGUF_GPU_SPLIT").is_ok_and(|v| v == "0");
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
                &k.rmsnorm,
                &[(0, x), (1, g), (2, out), (3, &norm_p), (4, &s.step)],
            ),
            pipeline: k.rmsnorm.clone(),
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
                                &k.add_bias,
                                &[(0, dst), (1, &bb), (2, p), (3, &s.step)],
                            ),
                            pipeline: k.add_bias.clone(),
                            shape: Shape::Flat(width as u32),
                            label: "add_bias",
                        });
                    }
                }
                for (buf, p, heads) in [(&s.q, &rope_q, c.n_heads), (&s.k, &rope_k, c.n_kv_heads)] {
                    ops.push(Op {
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
                        label: "rope",
                    });
                }
                ops.push(Op {
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
                    rows_per_group: matvec_rows(),
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
                        freq_scale: c.rope_freq_scale,
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
                        &k.silu_mul,
                        &[(0, &s.hb), (1, &s.hb2), (2, &ew_ff), (3, &s.step)],
                    ),
                    pipeline: k.silu_mul.clone(),
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
                    rows_per_group: matvec_rows(),
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
                let tiled = !one && tiled_prefill();
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
                &k.argmax_pairs,
                &[(3, &s.partials), (1, &s.argmax), (2, &am_p)],
            ),
            pipeline: k.argmax_pairs.clone(),
            shape: Shape::Fixed([1, 1, 1]),
            label: "argmax",
        }];
        let sample = sample_ops(&gpu, &k, &s.logits, &s.argmax, &s.sample, vocab);
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
            sample,
            logits: vec![0.0; vocab],
            pipeline: !std::env::var("WEBGGUF_GPU_PIPELINE").is_ok_and(|v| v == "0"),
            ahead: None,
            feed: !std::env::var("WEBGGUF_GPU_FEED").is_ok_and(|v| v == "0"),
            fed: None,
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

    /// Whether one token at `pos` attends in splits (`layers_long`).
    fn long(&self, n: usize, pos: usize) -> bool {
        n == 1 && pos >= kernels::SPLIT_KEYS && !self.layers_long.is_empty()
    }

    /// The op lists for `n` tokens (`long`: in `layers_long`) and `tail`,
    /// and the copy that follows (an id goes to readback buffer `slot`).
    fn plan(&self, n: u32, long: bool, tail: Tail, slot: usize) -> (Vec<&[Op]>, Vec<Copy<'_>>) {
        let layers: &[Op] = match (n, long) {
            (1, true) => &self.layers_long,
            (1, false) => &self.layers_one,
            _ => &self.layers,
        };
        let mut ops: Vec<&[Op]> = vec![&self.embed, layers];
        let mut copies = Vec::new();
        match tail {
            Tail::None => {}
            Tail::Logits => {
                ops.push(&self.head);
                copies.push((&self.s.logits, &self.s.read_logits, self.vocab as u64 * 4));
            }
            Tail::Argmax => {
                ops.extend([&self.head[..], &self.argmax[..]]);
                copies.push((&self.s.argmax, &self.s.read_id[slot], 4));
            }
            Tail::Sample => {
                ops.extend([&self.head[..], &self.sample[..]]);
                copies.push((&self.s.argmax, &self.s.read_id[slot], 4));
            }
        }
        (ops, copies)
    }

    /// One command buffer for `r`; it reads the tokens and the position
    /// from buffers written just before its submit (a fed step copies its
    /// token from the previous step's pick first), so it can be recorded
    /// ahead of time.
    fn encode(&self, r: Recipe) -> wgpu::CommandBuffer {
        let (ops, copies) = self.plan(r.n, r.long, r.tail, r.slot);
        let feed: &[Copy] = if r.fed {
            &[(&self.s.argmax, &self.s.tokens, 4)]
        } else {
            &[]
        };
        self.gpu.encode(feed, &ops, r.n, &copies, None)
    }

    /// `r`'s command buffer: the one recorded ahead if it matches.
    fn command_buffer(&mut self, r: Recipe) -> wgpu::CommandBuffer {
        match self.ahead.take() {
            Some((a, cb)) if a == r => cb,
            _ => self.encode(r),
        }
    }

    /// Write the tokens and position for the next submit.
    fn write_inputs(&self, tokens: &[u32], pos: usize) -> Result<()> {
        self.validate(tokens, pos)?;
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        self.gpu.queue.write_buffer(&self.s.tokens, 0, &bytes);
        self.gpu
            .write_step(&self.s.step, pos as u32, tokens.len() as u32);
        Ok(())
    }

    /// Submit the layers for `tokens` and, with `tail`, the LM head and what
    /// follows it (an id to readback buffer 0). A single-token sampling step
    /// uses the command buffer recorded during the previous one, if any,
    /// and records the next while the GPU runs (WEBGGUF_GPU_PIPELINE=0
    /// turns that off). Anything submitted here ends a fed step's claim.
    fn submit(&mut self, tokens: &[u32], pos: usize, tail: Tail) -> Result<wgpu::SubmissionIndex> {
        self.fed = None;
        self.write_inputs(tokens, pos)?;
        let r = Recipe {
            n: tokens.len() as u32,
            long: self.long(tokens.len(), pos),
            tail,
            fed: false,
            slot: 0,
        };
        let cb = self.command_buffer(r);
        let sub = self.gpu.queue.submit([cb]);
        if self.pipeline && r.n == 1 && matches!(tail, Tail::Argmax | Tail::Sample) {
            let next = Recipe {
                long: self.long(1, pos + 1),
                ..r
            };
            self.ahead = Some((next, self.encode(next)));
        }
        Ok(sub)
    }

    /// Submit the step at `pos` (ending in `tail`, for `sampler`) whose
    /// token is the pick of the step just submitted (into readback buffer
    /// `slot`), and record the one after it (back to the other slot) while
    /// the GPU runs.
    fn submit_fed(
        &mut self,
        pos: usize,
        slot: usize,
        tail: Tail,
        sampler: Option<(u64, SamplerParams)>,
    ) -> Result<()> {
        self.gpu.check()?;
        self.gpu.write_step(&self.s.step, pos as u32, 1);
        let r = Recipe {
            n: 1,
            long: self.long(1, pos),
            tail,
            fed: true,
            slot,
        };
        let cb = self.command_buffer(r);
        let sub = self.gpu.queue.submit([cb]);
        self.fed = Some(Fed {
            pos,
            slot,
            sub,
            token: None,
            tail,
            sampler,
        });
        if self.pipeline {
            let next = Recipe {
                slot: 1 - slot,
                long: self.long(1, pos + 1),
                ..r
            };
            self.ahead = Some((next, self.encode(next)));
        }
        Ok(())
    }

    /// Write `sampler`'s parameters, the penalized ids and the step's
    /// random number for the next submitted sampling step.
    fn write_sample(&self, sampler: &mut Sampler, pen: &[u32]) {
        let p = sampler.params();
        // The CPU sampler draws only when not greedy; so does this.
        let r = if p.temperature > 0.0 {
            sampler.draw()
        } else {
            0.0
        };
        self.s.sample.write(&self.gpu, self.vocab, &p, pen, r);
    }

    /// A step whose pick depends on no history: `tokens` at `pos`, then the
    /// argmax, or with `sampler` (no penalty) the GPU sampler. When the fed
    /// step already submitted is exactly this one (same position, its token
    /// the pick it was fed, same tail, and for sampling the same sampler and
    /// parameters, whose random number it drew ahead, in order), it is not
    /// submitted again; with nothing else submitted in between, the GPU
    /// state it ran on is this call's.
    async fn picked(
        &mut self,
        tokens: &[u32],
        pos: usize,
        mut sampler: Option<&mut Sampler>,
    ) -> Result<u32> {
        let n = tokens.len();
        let tail = if sampler.is_some() {
            Tail::Sample
        } else {
            Tail::Argmax
        };
        let who = sampler.as_ref().map(|s| (s.id(), s.params()));
        let (slot, sub) = match self.fed.take() {
            Some(f)
                if n == 1
                    && f.pos == pos
                    && f.token == Some(tokens[0])
                    && f.tail == tail
                    && f.sampler == who =>
            {
                (f.slot, f.sub)
            }
            _ => {
                if let Some(s) = sampler.as_deref_mut() {
                    self.write_sample(s, &[]);
                }
                (0, self.submit(tokens, pos, tail)?)
            }
        };
        // The read is asked for before the fed step is submitted, so that it
        // completes with this step (see start_read); the fed step writes the
        // other readback buffer.
        let read_id = self.s.read_id[slot].clone();
        let pending = self.gpu.start_read(&read_id, 4);
        // Finish the read even if the fed step failed: a map left pending
        // would fail the buffer's next one.
        let fed = if self.feed && pos + n < self.ctx {
            if let Some(s) = sampler {
                self.write_sample(s, &[]);
            }
            self.submit_fed(pos + n, 1 - slot, tail, who)
        } else {
            Ok(())
        };
        let b = self.gpu.finish_read(pending, Some(sub)).await;
        fed?;
        let b = b?;
        let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if let Some(f) = &mut self.fed {
            f.token = Some(id);
        }
        Ok(id)
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

/// What a recorded command buffer runs: `n` tokens (`long`: attention in
/// splits) and `tail`, with the
/// token written by the host or (`fed`) the previous step's pick, and an id
/// copied to readback buffer `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Recipe {
    n: u32,
    long: bool,
    tail: Tail,
    fed: bool,
    slot: usize,
}

/// A step submitted before its token was known on the CPU: it runs at
/// `pos` on the pick of the step before, which is `token` once read, and
/// ends in `tail` (for sampling: with a random number drawn ahead from the
/// sampler with this id and these parameters).
struct Fed {
    pos: usize,
    slot: usize,
    sub: wgpu::SubmissionIndex,
    token: Option<u32>,
    tail: Tail,
    sampler: Option<(u64, SamplerParams)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tail {
    None,
    Logits,
    Argmax,
    /// The GPU sampler, with parameters written before the submit.
    Sample,
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
        self.submit(tokens, pos, Tail::None).map(drop)
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
            if p.repeat_penalty == 1.0 {
                // No penalty: a step depends on no history, so the next one
                // can be fed on the GPU (see `picked`).
                let s = (p.temperature > 0.0).then_some(sampler);
                return self.picked(tokens, pos, s).await;
            }
            let pen = sampler.penalized(history);
            if pen.len() > PEN_CAP {
                // Too long a penalty window for the GPU's list.
                self.logits_after(tokens, pos).await?;
                return Ok(sampler.sample(&mut self.logits, history));
            }
            self.write_sample(sampler, &pen);
            let sub = self.submit(tokens, pos, Tail::Sample)?;
            let pending = self.gpu.start_read(&self.s.read_id[0], 4);
            let b = self.gpu.finish_read(pending, Some(sub)).await?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
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

/// Load a GGUF file held in memory onto `gpu` and wrap it in an engine;
/// `progress` hears the fraction of the layers uploaded so far.
pub async fn load_engine(
    gpu: Gpu,
    bytes: Vec<u8>,
    opts: EngineOptions,
    gpu_opts: GpuOptions,
    clock: fn() -> f64,
    progress: &dyn Fn(f64),
) -> Result<Engine> {
    let Loaded {
        config,
        tokenizer,
        info,
        weights,
    } = Loaded::from_bytes(bytes, opts.load)?;
    let ctx = context_for(&config, &opts);
    let backend = GpuBackend::new(
        gpu,
        &config,
        &weights,
        ctx,
        opts.max_batch,
        gpu_opts,
        progress,
    )
    .await?;
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
