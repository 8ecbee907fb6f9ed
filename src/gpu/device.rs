//! The device: `Gpu` (an open device and queue with its limits), buffer
//! creation, recording and submitting passes, reading buffers back,
//! waiting for the queue, error scopes and the copy-bandwidth test; and the
//! one-shot channel that carries a wgpu callback's result to a task.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use wgpu::util::DeviceExt;

use super::kernels::{self, Op};
use super::upload::BlockPad;
use crate::error::{Error, Result};
use crate::memory::{GpuLimits, GpuMemory, MemKind};

/// A buffer-to-buffer copy after a pass: (source, destination, bytes).
pub type Copy<'a> = (&'a wgpu::Buffer, &'a wgpu::Buffer, u64);

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
    /// WGSL's dot4I8Packed and pack4xI8 (the language extension
    /// packed_4x8_integer_dot_product) compile here: natively always (naga
    /// emits the integer dot instruction where the device has it and an
    /// exact polyfill elsewhere); in a browser where it says so.
    pub int_dot: bool,
    /// matmul_coop.wgsl runs here: wgpu's experimental cooperative
    /// matrices (enabled on this device) with 16 x 16 x 16 f16 x f16 -> f32
    /// products, f16, and subgroups of exactly 32 (the kernel shares out
    /// its tiles and drains its blocks per 32 lanes). Native only: browsers
    /// have no cooperative matrices yet.
    pub coop: bool,
    status: Arc<Mutex<Status>>,
    /// Every buffer created through this handle (and its clones) since
    /// `tracking()`, so that the owner can destroy them all: in the browser a
    /// dropped wgpu handle does not free GPU memory, only `destroy()` does.
    owned: Option<Arc<Mutex<Owned>>>,
    /// What buffers created through this handle hold (`for_kind`).
    kind: MemKind,
    /// A streamed load's writes still to come from the source (`defer`).
    deferred: Option<Arc<Mutex<Deferred>>>,
    /// Bytes read back from the device through this handle and every
    /// handle cloned or derived from it (`bytes_read`).
    read_back: Arc<AtomicU64>,
    /// Every pipeline's WGSL as compiled, where `recording_shaders` asked
    /// for it (a development aid: `webgguf gpu-profile --shaders DIR`).
    shaders: Option<Arc<Mutex<Vec<ShaderRecord>>>>,
    /// A folder that every pipeline's WGSL is written to as it compiles,
    /// where `writing_shaders` asked (the kernel and whole-model tests, for
    /// tests/tint/check.mjs).
    shader_dir: Option<Arc<std::path::PathBuf>>,
    /// Compile without naga's loop counters (`shader_module`; on unless
    /// `GpuTuning::loop_bounding` asks for them).
    trust_loops: bool,
    /// Whether pack2x16float rounds an f32 to the nearest f16, ties to
    /// even, as `half` does, on every value the load-time check tries
    /// (`probe::pack_rounds_exactly`), with the round trip kept from the
    /// driver's folding as few.wgsl keeps it (round_z_pack.wgsl); None
    /// until `checking_rounding` (a model load) has run the check.
    pub round_pack: Option<bool>,
}

/// One compute pipeline's source as `kernels::pipeline` compiled it.
#[derive(Clone, Debug)]
pub struct ShaderRecord {
    pub label: String,
    pub entry: String,
    pub source: String,
}

/// A tracking handle's live buffers, and their bytes by kind.
#[derive(Default)]
struct Owned {
    /// Each buffer with the kind its bytes are counted under.
    bufs: Vec<(wgpu::Buffer, MemKind)>,
    memory: GpuMemory,
}

/// The size of a buffer made for `bytes` bytes: every storage, upload,
/// uniform and readback buffer is rounded up to a multiple of 4 bytes and
/// is at least 4 (wgpu's `create_buffer_init` pads the same way). The
/// memory plan (`gpu::plan_memory`) sizes buffers with it too.
pub fn padded(bytes: u64) -> u64 {
    bytes.max(4).next_multiple_of(4)
}

/// Bytes of the uniform block `params` makes (eight 32-bit words).
pub const PARAMS_BYTES: u64 = 32;
/// Bytes of the per-step uniform (`step_buffer`).
pub const STEP_BYTES: u64 = 16;

/// Weight bytes a streamed load writes into buffers that exist already.
#[derive(Default)]
pub struct Deferred {
    pub bufs: Vec<wgpu::Buffer>,
    /// (index into `bufs`, byte offset in it, file offset, length, the
    /// format's block padding on the GPU where it has one).
    pub writes: Vec<(usize, u64, u64, u64, Option<BlockPad>)>,
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
        let int_dot = instance
            .wgsl_language_features()
            .contains(wgpu::WgslLanguageFeatures::Packed4x8IntegerDotProduct);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::Gpu(format!("no GPU adapter found: {e}")))?;
        let info = adapter.get_info();
        let coop_needs = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP;
        let coop = adapter.features().contains(coop_needs)
            && info.subgroup_min_size == 32
            && info.subgroup_max_size == 32
            && adapter.cooperative_matrix_properties().iter().any(|p| {
                (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
                    && p.ab_type == wgpu::CooperativeScalarType::F16
                    && p.cr_type == wgpu::CooperativeScalarType::F32
            });
        let mut wanted =
            wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        if coop {
            wanted |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        }
        let features = adapter.features() & wanted;
        let limits = adapter.limits();
        let experimental_features = if coop {
            // SAFETY: wgpu asks callers of its experimental features to
            // accept that its implementation may still have bugs. Only
            // matmul_coop.wgsl uses the feature; it is tested against its CPU
            // twin on such a device (src/gpu/tests.rs), and
            // `GpuTuning::coop_matrix` turns its use off.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("webgguf"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features,
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
            adapter: info,
            limits,
            features,
            int_dot,
            coop,
            status,
            owned: None,
            kind: MemKind::Scratch,
            deferred: None,
            read_back: Arc::default(),
            shaders: None,
            shader_dir: None,
            trust_loops: true,
            round_pack: None,
        })
    }

    /// This handle with `round_pack` found by the load-time check, run
    /// once (a pipeline and a 1 MB round trip, its buffers destroyed).
    /// Not in `new`: a device opened only to be looked at, or passed over
    /// as a software adapter, does not pay for it.
    pub async fn checking_rounding(self) -> Gpu {
        if self.round_pack.is_some() {
            return self;
        }
        let exact = super::probe::pack_rounds_exactly(&self).await;
        Gpu {
            round_pack: Some(exact),
            ..self
        }
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
             max_storage_buffers_per_shader_stage {}; subgroups of {}-{} lanes; \
             cooperative matrices (16x16 f16->f32, subgroups of 32): {}; exact f16 rounding by pack2x16float: {}; features: {:?}",
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
            self.adapter.subgroup_min_size,
            self.adapter.subgroup_max_size,
            self.coop,
            match self.round_pack {
                Some(true) => "yes",
                Some(false) => "no",
                None => "not checked (a model load checks it)",
            },
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

    /// A handle on the same device (and its clones) that keeps the source
    /// of every pipeline compiled through it, in the list returned.
    pub fn recording_shaders(&self) -> (Gpu, Arc<Mutex<Vec<ShaderRecord>>>) {
        let list: Arc<Mutex<Vec<ShaderRecord>>> = Arc::default();
        let g = Gpu {
            shaders: Some(list.clone()),
            ..self.clone()
        };
        (g, list)
    }

    /// A handle on the same device whose pipelines compile without naga's
    /// loop counters where `trust` (see `shader_module`).
    pub fn trusting_loops(&self, trust: bool) -> Gpu {
        Gpu {
            trust_loops: trust,
            ..self.clone()
        }
    }

    /// A module of our own WGSL. wgpu's `create_shader_module` has naga add
    /// a counter to every loop, which ends it after 2^64 turns: it keeps a
    /// driver from treating an endless loop as unreachable, but the
    /// counter also hides each loop's trip count from the driver's
    /// compiler. Every loop of our kernels ends by its own bound, so where
    /// the handle trusts them the module compiles without the counters
    /// (bounds checks stay).
    pub fn shader_module(&self, label: &str, src: &str) -> wgpu::ShaderModule {
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(std::borrow::Cow::Borrowed(src)),
        };
        if !self.trust_loops {
            return self.device.create_shader_module(desc);
        }
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: the checks dropped guard against endless loops only, and
        // the sources are this crate's kernels, whose loops all have
        // bounds (their tests run every one to its end).
        unsafe { self.device.create_shader_module_trusted(desc, checks) }
    }

    /// Keep a pipeline's source where `recording_shaders` asked for it.
    pub fn note_shader(&self, label: &str, entry: &str, source: &str) {
        if let Some(dir) = &self.shader_dir {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            source.hash(&mut h);
            let name: String = label
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let path = dir.join(format!("{name}-{:016x}.wgsl", h.finish()));
            // A development aid: a folder that cannot be written is said,
            // and the check that reads it finds too few files.
            if let Err(e) = std::fs::write(&path, source) {
                eprintln!("writing {}: {e}", path.display());
            }
        }
        if let Some(list) = &self.shaders {
            lock(list).push(ShaderRecord {
                label: label.into(),
                entry: entry.into(),
                source: source.into(),
            });
        }
    }

    /// A handle on the same device (and its clones) that writes the source
    /// of every pipeline compiled through it into `dir`, one file for each
    /// distinct source (its label and a hash of it). The kernel tests and
    /// the whole-model tests do, so that tests/tint/check.mjs can hold
    /// every kernel they build to
    /// the WGSL compiler of Chrome (Tint) with subgroups and f16 on, which
    /// no browser of CI has (SwiftShader has no subgroups).
    pub fn writing_shaders(&self, dir: &std::path::Path) -> Gpu {
        Gpu {
            shader_dir: Some(Arc::new(dir.to_path_buf())),
            ..self.clone()
        }
    }

    /// A handle on the same device that records every buffer created
    /// through it (and its clones), for `destroy_buffers`. A backend takes
    /// one so that dropping it frees all that it allocated.
    pub fn tracking(&self) -> Gpu {
        Gpu {
            owned: Some(Arc::default()),
            deferred: Some(Arc::default()),
            ..self.clone()
        }
    }

    /// Record that `buf` gets `pieces` (offset in it, file offset, length
    /// in the file, block padding) from the source later (a tracking
    /// handle only).
    pub fn defer(
        &self,
        buf: &wgpu::Buffer,
        pieces: &[(u64, u64, u64, Option<BlockPad>)],
    ) -> Result<()> {
        let d = self.deferred.as_ref().ok_or_else(|| {
            Error::InvalidArgument("a weight plan is uploaded through a backend's handle".into())
        })?;
        let mut d = lock(d);
        let i = d.bufs.len();
        d.bufs.push(buf.clone());
        d.writes.extend(
            pieces
                .iter()
                .map(|&(dst, src, len, pad)| (i, dst, src, len, pad)),
        );
        Ok(())
    }

    /// The writes `defer` recorded, leaving none.
    pub fn take_deferred(&self) -> Deferred {
        self.deferred
            .as_ref()
            .map(|d| std::mem::take(&mut *lock(d)))
            .unwrap_or_default()
    }

    /// Bytes read back from the device so far by this handle and those
    /// sharing its device (clones, `tracking`): a decode step costs 4 (its
    /// id) unless its logits come back. Tests check which path ran.
    pub fn bytes_read(&self) -> u64 {
        self.read_back.load(Ordering::Relaxed)
    }

    /// Buffers created through this tracking handle and not yet destroyed.
    pub fn live_buffers(&self) -> usize {
        self.owned.as_ref().map_or(0, |o| lock(o).bufs.len())
    }

    /// The uniform buffers created through this tracking handle since it
    /// held `mark` buffers (`live_buffers`; none where it does not track),
    /// for `release`. Only uniforms:
    /// each belongs to the one dispatch it was made for, while a storage
    /// buffer made on the way (a lazily made scratch) may be shared.
    pub fn uniforms_since(&self, mark: usize) -> Vec<wgpu::Buffer> {
        self.owned.as_ref().map_or_else(Vec::new, |o| {
            let o = lock(o);
            o.bufs
                .get(mark..)
                .unwrap_or_default()
                .iter()
                .filter(|(b, _)| b.usage().contains(wgpu::BufferUsages::UNIFORM))
                .map(|(b, _)| b.clone())
                .collect()
        })
    }

    /// Destroy `bufs` (made through this tracking handle, for dispatches
    /// that were made again another way) and stop counting them, so that
    /// a load holds only what its ops use and its memory plan says.
    pub fn release(&self, bufs: &[wgpu::Buffer]) {
        if bufs.is_empty() {
            return;
        }
        if let Some(o) = &self.owned {
            let mut o = lock(o);
            o.bufs.retain(|(b, _)| !bufs.contains(b));
            let mut memory = GpuMemory::default();
            for (b, kind) in &o.bufs {
                memory.add(*kind, b.size());
            }
            o.memory = memory;
        }
        for b in bufs {
            b.destroy();
        }
    }

    /// The bytes of the buffers created through this tracking handle (and
    /// not yet destroyed), by kind, and the largest of them.
    pub fn memory(&self) -> GpuMemory {
        self.owned
            .as_ref()
            .map_or_else(GpuMemory::default, |o| lock(o).memory)
    }

    /// The same handle, counting the buffers created through it as `kind`
    /// (a plain handle's are `MemKind::Scratch`).
    pub fn for_kind(&self, kind: MemKind) -> Gpu {
        Gpu {
            kind,
            ..self.clone()
        }
    }

    /// Destroy every buffer created through this tracking handle.
    pub fn destroy_buffers(&self) {
        if let Some(o) = &self.owned {
            let mut o = lock(o);
            for (b, _) in o.bufs.drain(..) {
                b.destroy();
            }
            o.memory = GpuMemory::default();
        }
    }

    /// Every buffer passes here: a tracking handle keeps it (for
    /// `destroy_buffers`) and counts its bytes under the handle's kind.
    fn own(&self, b: wgpu::Buffer) -> wgpu::Buffer {
        if let Some(o) = &self.owned {
            let mut o = lock(o);
            o.memory.add(self.kind, b.size());
            o.bufs.push((b.clone(), self.kind));
        }
        b
    }

    /// Every buffer of the crate is made here or in `buffer_init` (a test
    /// checks the sources), so that a tracking handle sees them all.
    pub fn buffer(&self, desc: &wgpu::BufferDescriptor) -> wgpu::Buffer {
        self.own(self.device.create_buffer(desc))
    }

    pub fn buffer_init(&self, desc: &wgpu::util::BufferInitDescriptor) -> wgpu::Buffer {
        self.own(self.device.create_buffer_init(desc))
    }

    /// The limits a memory plan is checked against (`gpu::plan_memory`).
    pub fn plan_limits(&self) -> GpuLimits {
        GpuLimits {
            max_storage_buffer_binding_size: self.limits.max_storage_buffer_binding_size,
            max_buffer_size: self.limits.max_buffer_size,
            total_memory: None,
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
        let size = padded(bytes);
        if size > self.binding_limit() {
            return Err(Error::DeviceLimit(format!(
                "{label} needs {size} bytes but a storage binding holds at most {}",
                self.binding_limit()
            )));
        }
        Ok(self.buffer(&wgpu::BufferDescriptor {
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
        self.buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage: Self::USAGE,
        })
    }

    /// A storage buffer holding `pieces` one after another (zero-padded to
    /// a multiple of 4 bytes), each copied straight into the mapped buffer,
    /// block by block where it has a `BlockPad` (the padding stays zero):
    /// fused or padded weights are never copied in memory first.
    pub fn upload_pieces(
        &self,
        label: &str,
        pieces: &[(&[u8], Option<BlockPad>)],
    ) -> Result<wgpu::Buffer> {
        let len =
            |&(p, pad): &(&[u8], Option<BlockPad>)| BlockPad::len_of(pad, p.len() as u64) as usize;
        let total: usize = pieces.iter().map(len).sum();
        let buf = self.buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: padded(total as u64),
            usage: Self::USAGE,
            mapped_at_creation: true,
        });
        {
            let mut view = buf
                .slice(..)
                .get_mapped_range_mut()
                .map_err(|e| Error::Gpu(format!("mapping {label} for the upload failed: {e}")))?;
            let mut at = 0;
            for piece in pieces {
                match piece {
                    (p, None) => view.slice(at..at + p.len()).copy_from_slice(p),
                    (p, Some(d)) => {
                        for (o, blk) in d.placed(p) {
                            view.slice(at + o..at + o + blk.len()).copy_from_slice(blk);
                        }
                    }
                }
                at += len(piece);
            }
        }
        buf.unmap();
        Ok(buf)
    }

    pub fn upload_f32(&self, label: &str, data: &[f32]) -> wgpu::Buffer {
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.upload(label, &bytes)
    }

    /// A uniform block of eight 32-bit words (most kernels' `Params`).
    pub fn params(&self, words: [u32; PARAMS_BYTES as usize / 4]) -> wgpu::Buffer {
        self.params_words(&words)
    }

    /// A uniform block of 32-bit words.
    pub fn params_words(&self, words: &[u32]) -> wgpu::Buffer {
        let bytes: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        })
    }

    pub fn step_buffer(&self) -> wgpu::Buffer {
        self.buffer(&wgpu::BufferDescriptor {
            label: Some("step"),
            size: STEP_BYTES,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    pub fn readback_buffer(&self, bytes: u64) -> wgpu::Buffer {
        self.buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: padded(bytes),
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

    /// Record `ops` for `n` tokens (at any position) into one pass, then
    /// `copies`, and submit.
    pub fn run(&self, ops: &[&[Op]], n: u32, copies: &[Copy]) {
        self.queue
            .submit([self.encode(&[], ops, (n, None), copies, None)]);
    }

    /// Record the copies `before`, then `ops` for `n` tokens, the first at
    /// `pos` where known (`at`: decode's splits launch only those its keys
    /// need), in one pass (with `timestamps` written at its start and
    /// end), then `copies`.
    pub fn encode(
        &self,
        before: &[Copy],
        ops: &[&[Op]],
        at: (u32, Option<u32>),
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
                kernels::encode(&mut pass, o, at.0, at.1);
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
        self.read_back
            .fetch_add(data.len() as u64, Ordering::Relaxed);
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
            self.buffer(&wgpu::BufferDescriptor {
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
