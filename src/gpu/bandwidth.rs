//! Memory bandwidth through compute kernels (shaders/bandwidth.wgsl): a
//! read that folds every word of a buffer, and a copy, each timed like
//! `Gpu::copy_bandwidth`. The copy engine's figure is no ceiling (on an
//! H100 it sees about a quarter of the HBM's peak); the model's products
//! are compute kernels reading storage buffers, as these are, so a
//! roofline should divide by these.

use super::kernels::{self, Op, Shape};
use super::stamps::Stamps;
use super::Gpu;
use crate::error::{Error, Result};

pub(super) const SRC: &str = include_str!("../../shaders/bandwidth.wgsl");
const SHAPES_SRC: &str = include_str!("../../shaders/bandwidth_shapes.wgsl");

/// Bytes of the `vec4<u32>` word both kernels move.
pub const WORD: u64 = 16;
/// bandwidth.wgsl's WG and UNROLL: threads per workgroup, loads per turn.
const WG: u64 = 256;
const UNROLL: u64 = 8;
/// Enough workgroups for several waves on the largest GPUs (an H100 holds
/// about a thousand of 256 threads at once), so that the last partial wave
/// is a small part of the time; past that each thread loops.
const MAX_GROUPS: u64 = 8192;

/// The workgroups a dispatch over `words` words launches: about one turn
/// of UNROLL loads per thread, up to MAX_GROUPS.
pub fn groups_for(words: u64) -> u32 {
    words.div_ceil(WG * UNROLL).clamp(1, MAX_GROUPS) as u32
}

fn op(gpu: &Gpu, entry: &'static str, bufs: &[(u32, &wgpu::Buffer)], groups: u32) -> Op {
    let pipeline = kernels::pipeline(gpu, "bandwidth", SRC, entry);
    Op {
        bind: kernels::bind(gpu, &pipeline, bufs),
        pipeline,
        shape: Shape::Fixed([groups, 1, 1]),
        label: entry,
    }
}

/// `read_sum` over all of `src`, its per-workgroup sums in `out` (`groups`
/// words at least).
pub fn read_op(gpu: &Gpu, src: &wgpu::Buffer, out: &wgpu::Buffer, groups: u32) -> Op {
    op(gpu, "read_sum", &[(0, src), (2, out)], groups)
}

/// `copy` of `src` into `dst`, as many words as both hold.
pub fn copy_op(gpu: &Gpu, src: &wgpu::Buffer, dst: &wgpu::Buffer, groups: u32) -> Op {
    op(gpu, "copy", &[(0, src), (1, dst)], groups)
}

/// The GPU is kept busy this long before a timing (see `time_reps`), in
/// batches of the timing's own reads, at most WARM_MAX of them.
const WARM_BUSY_MS: f64 = 500.0;
const WARM_MAX: usize = 10_000;

/// How a bandwidth figure was timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// The pass's GPU timestamps.
    Gpu,
    /// From the submit until the queue is idle (no timestamp queries).
    Wall,
}

impl Timer {
    pub fn name(self) -> &'static str {
        match self {
            Timer::Gpu => "gpu timestamps",
            Timer::Wall => "wall clock, submit to idle",
        }
    }
}

/// Which words a turn of bandwidth_shapes.wgsl's loads take (its ORDER;
/// the shader's header draws each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Words t + k*T: read_sum's order.
    GridStride = 0,
    /// A contiguous span of words per workgroup.
    Spans = 1,
    /// LOADS consecutive words per thread a turn.
    Runs = 2,
    /// Not a bandwidth_shapes.wgsl order: bandwidth.wgsl's read_sum
    /// itself, at `groups_for`'s workgroups (`--shapes sum`), so that the
    /// two kernels can be timed on one buffer, interleaved.
    ReadSum = 3,
}

/// One shape of `read_shaped` (`gpu-bandwidth --shapes`): `wg` threads a
/// workgroup, `loads` loads a turn, in `order`, with about `turns` turns a
/// thread (which sets the workgroups launched, up to the device's limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadShape {
    pub order: Order,
    pub wg: u32,
    pub loads: u32,
    pub turns: u32,
}

impl ReadShape {
    /// read_sum's shape (256 threads, 8 loads, grid-stride), which
    /// `groups_for` gives about 4 turns a thread on 1 GiB.
    pub const READ_SUM: ReadShape = ReadShape {
        order: Order::GridStride,
        wg: 256,
        loads: 8,
        turns: 4,
    };

    /// `gpu-bandwidth --shapes all`: every order with 128 to 1,024
    /// threads, 1 to 16 loads, 1 to 16 turns.
    pub fn all() -> Vec<ReadShape> {
        let mut v = Vec::new();
        for order in [Order::GridStride, Order::Spans, Order::Runs] {
            for wg in [128, 256, 512, 1024] {
                for loads in [1, 2, 4, 8, 16] {
                    for turns in [1, 4, 16] {
                        v.push(ReadShape {
                            order,
                            wg,
                            loads,
                            turns,
                        });
                    }
                }
            }
        }
        v
    }

    /// `ORDER:WG:LOADS:TURNS`, e.g. `0:256:8:4`, or `sum` (read_sum).
    pub fn parse(s: &str) -> Result<ReadShape> {
        if s.trim() == "sum" {
            return Ok(ReadShape {
                order: Order::ReadSum,
                ..Self::READ_SUM
            });
        }
        let bad = || {
            Error::InvalidArgument(format!(
                "read shape {s:?}: want `sum` or ORDER:WG:LOADS:TURNS, ORDER 0 (grid-stride), \
                 1 (spans) or 2 (runs), WG a power of two from 32 to 1024, LOADS 1 to 16, \
                 TURNS from 1"
            ))
        };
        let f: Vec<u32> = s
            .split(':')
            .map(|x| x.trim().parse().map_err(|_| bad()))
            .collect::<Result<_>>()?;
        let [o, wg, loads, turns] = f[..] else {
            return Err(bad());
        };
        let order = match o {
            0 => Order::GridStride,
            1 => Order::Spans,
            2 => Order::Runs,
            _ => return Err(bad()),
        };
        let shape = ReadShape {
            order,
            wg,
            loads,
            turns,
        };
        let fits = wg.is_power_of_two() && (32..=1024).contains(&wg) && (1..=16).contains(&loads);
        if !fits || turns == 0 {
            return Err(bad());
        }
        Ok(shape)
    }

    /// The workgroups for `words`: about `turns` turns a thread, at least
    /// one, at most `max_groups`.
    pub fn groups(&self, words: u64, max_groups: u32) -> u32 {
        if self.order == Order::ReadSum {
            return groups_for(words);
        }
        let per_group = self.wg as u64 * self.loads as u64 * self.turns as u64;
        words.div_ceil(per_group).clamp(1, max_groups.max(1) as u64) as u32
    }
}

/// `read_shaped` in `shape` over all of `src`, its per-workgroup sums in
/// `out` (`groups` words at least).
pub fn read_shaped_op(
    gpu: &Gpu,
    shape: ReadShape,
    src: &wgpu::Buffer,
    out: &wgpu::Buffer,
    groups: u32,
) -> Op {
    if shape.order == Order::ReadSum {
        return read_op(gpu, src, out, groups);
    }
    gpu.note_shader("bandwidth_shapes", "read_shaped", SHAPES_SRC);
    let module = gpu.shader_module("bandwidth_shapes", SHAPES_SRC);
    let constants = [
        ("WG", shape.wg as f64),
        ("LOADS", shape.loads as f64),
        ("ORDER", shape.order as u32 as f64),
    ];
    let pipeline = std::rc::Rc::new(gpu.device.create_compute_pipeline(
        &wgpu::ComputePipelineDescriptor {
            label: Some("bandwidth_shapes"),
            layout: None,
            module: &module,
            entry_point: Some("read_shaped"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                ..Default::default()
            },
            cache: None,
        },
    ));
    Op {
        bind: kernels::bind(gpu, &pipeline, &[(0, src), (2, out)]),
        pipeline,
        shape: Shape::Fixed([groups, 1, 1]),
        label: "read_shaped",
    }
}

/// The per-lane wrapping sums of `read_sum`'s output: what the whole buffer
/// adds up to, lane by lane.
pub fn fold(sums: &[u8]) -> [u32; 4] {
    let mut acc = [0u32; 4];
    for w in sums.chunks_exact(WORD as usize) {
        for (l, a) in acc.iter_mut().enumerate() {
            *a = a.wrapping_add(u32::from_le_bytes(w[4 * l..4 * l + 4].try_into().unwrap()));
        }
    }
    acc
}

/// The 32-bit word at index `i` of the test data. Each step is a bijection,
/// so the words of a binding are distinct; the xor-shifts break up the
/// arithmetic series a plain multiple would make, whose sums over
/// power-of-two sizes (and halves of them) are often 0 and would not tell
/// a kernel that skips words from one that reads them.
fn pattern(i: usize) -> u32 {
    let mut v = (i as u32).wrapping_mul(0x9E37_79B1);
    v ^= v >> 16;
    v = v.wrapping_mul(0x85EB_CA6B);
    v ^ (v >> 13)
}

impl Gpu {
    /// The bytes a kernel bandwidth test of `bytes` uses: whole words, at
    /// most one storage binding (lavapipe's is far below 1 GiB).
    pub fn kernel_bandwidth_size(&self, bytes: u64) -> u64 {
        bytes.min(self.binding_limit()) / WORD * WORD
    }

    fn bandwidth_size(&self, bytes: u64, reps: usize) -> Result<u64> {
        let size = self.kernel_bandwidth_size(bytes);
        if size == 0 || reps == 0 {
            return Err(Error::InvalidArgument(
                "bandwidth test needs a positive size and repetition count".into(),
            ));
        }
        Ok(size)
    }

    /// A storage buffer of `size` bytes filled with `pattern`, and its
    /// per-lane sums.
    fn patterned(&self, size: u64) -> Result<(wgpu::Buffer, [u32; 4])> {
        let buf = self.buffer(&wgpu::BufferDescriptor {
            label: Some("bandwidth source"),
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: true,
        });
        let mut sums = [0u32; 4];
        {
            let mut view = buf
                .slice(..)
                .get_mapped_range_mut()
                .map_err(|e| Error::Gpu(format!("mapping the bandwidth buffer failed: {e}")))?;
            // A mapping is write-only: fill a chunk here, copy it over.
            const CHUNK: usize = 1 << 20;
            let mut chunk = vec![0u8; CHUNK];
            for at in (0..view.len()).step_by(CHUNK) {
                let len = CHUNK.min(view.len() - at);
                for (j, w) in chunk[..len].chunks_exact_mut(4).enumerate() {
                    let i = at / 4 + j;
                    let v = pattern(i);
                    w.copy_from_slice(&v.to_le_bytes());
                    sums[i % 4] = sums[i % 4].wrapping_add(v);
                }
                view.slice(at..at + len).copy_from_slice(&chunk[..len]);
            }
        }
        buf.unmap();
        Ok((buf, sums))
    }

    /// Check that `read_sum` left sums adding up to `want` in `out`.
    async fn check_sums(&self, out: &wgpu::Buffer, groups: u32, want: [u32; 4]) -> Result<()> {
        let bytes = groups as u64 * WORD;
        let rb = self.readback_buffer(bytes);
        self.run(&[], 0, &[(out, &rb, bytes)]);
        let got = fold(&self.read(&rb, bytes).await?);
        if got != want {
            return Err(Error::Gpu(format!(
                "the bandwidth read kernel's sums {got:08x?} are not the data's {want:08x?}"
            )));
        }
        Ok(())
    }

    /// Seconds that `reps` runs of `op`, recorded into one pass and one
    /// submit, take: the pass's GPU time where the device has timestamp
    /// queries, else from the submit until the queue is idle. Before it,
    /// the same batch again and again until the GPU has been busy for
    /// WARM_BUSY: timed from a cold start, read_sum's 10 or 20 reads of
    /// 1 GiB measured 2.5-2.95 TB/s on H100s that it reads at 3.17-3.21
    /// once busy, as fast as CUDA's sum there (BENCHMARKS.md, 2026-12-07i).
    async fn time_reps(&self, op: &Op, reps: usize, clock: fn() -> f64) -> Result<(f64, Timer)> {
        let ops = vec![op.clone(); reps];
        let from = clock();
        let mut warm = 0;
        while warm < WARM_MAX && (warm == 0 || clock() - from < WARM_BUSY_MS) {
            let cmd = self.encode(&[], &[&ops], (1, None), &[], None);
            self.queue.submit([cmd]);
            self.wait_idle().await?;
            warm += 1;
        }
        if let Some(stamps) = Stamps::new(self, 2) {
            let cmd = self.encode(&[], &[&ops], (1, None), &[], Some(stamps.writes(0)));
            self.queue.submit([cmd]);
            let us = stamps.durations(self).await?[0];
            // A device that writes no real timestamps reads 0.
            if us > 0.0 {
                return Ok((us / 1e6, Timer::Gpu));
            }
        }
        let cmd = self.encode(&[], &[&ops], (1, None), &[], None);
        let t0 = clock();
        self.queue.submit([cmd]);
        self.wait_idle().await?;
        Ok(((clock() - t0) / 1000.0, Timer::Wall))
    }

    /// Device memory bandwidth as a compute kernel reading 16-byte words
    /// sees it: `reps` reads of a `bytes` buffer (capped at one storage
    /// binding), each folded into sums the host checks. Returns (bytes
    /// actually used, GB/s counting each byte read once, how it was
    /// timed).
    pub async fn read_bandwidth(
        &self,
        bytes: u64,
        reps: usize,
        clock: fn() -> f64,
    ) -> Result<(u64, f64, Timer)> {
        let size = self.bandwidth_size(bytes, reps)?;
        let groups = groups_for(size / WORD);
        let (src, want, out) = self
            .scoped("allocating the bandwidth buffers", || {
                let (src, want) = self.patterned(size)?;
                let out = self.storage("bandwidth sums", groups as u64 * WORD)?;
                Ok((src, want, out))
            })
            .await?;
        let (secs, timer) = self
            .time_reps(&read_op(self, &src, &out, groups), reps, clock)
            .await?;
        self.check_sums(&out, groups, want).await?;
        Ok((size, size as f64 * reps as f64 / secs / 1e9, timer))
    }

    /// `read_bandwidth` for each of `shapes` (bandwidth_shapes.wgsl), on one
    /// buffer: per shape, the workgroups launched, GB/s and how it was
    /// timed. Each shape's sums are checked; a shape the device cannot run
    /// (more threads than it allows a workgroup, or along x) is an error
    /// naming it.
    pub async fn read_bandwidth_shapes(
        &self,
        bytes: u64,
        reps: usize,
        shapes: &[ReadShape],
        clock: fn() -> f64,
    ) -> Result<(u64, Vec<(u32, f64, Timer)>)> {
        let size = self.bandwidth_size(bytes, reps)?;
        let words = size / WORD;
        let most = self.limits.max_compute_workgroups_per_dimension;
        let threads = self
            .limits
            .max_compute_invocations_per_workgroup
            .min(self.limits.max_compute_workgroup_size_x);
        if let Some(s) = shapes.iter().find(|s| s.wg > threads) {
            return Err(Error::DeviceLimit(format!(
                "read shape {s:?}: {} threads a workgroup, the device allows {threads}",
                s.wg
            )));
        }
        let groups_max = shapes.iter().map(|s| s.groups(words, most)).max();
        let (src, want, out) = self
            .scoped("allocating the bandwidth buffers", || {
                let (src, want) = self.patterned(size)?;
                let out = self.storage("bandwidth sums", groups_max.unwrap_or(1) as u64 * WORD)?;
                Ok((src, want, out))
            })
            .await?;
        let mut res = Vec::with_capacity(shapes.len());
        for &shape in shapes {
            let groups = shape.groups(words, most);
            // Poisoned first, so that sums a workgroup failed to write
            // cannot be an earlier shape's.
            self.queue
                .write_buffer(&out, 0, &vec![0xff; groups as usize * WORD as usize]);
            let op = read_shaped_op(self, shape, &src, &out, groups);
            let (secs, timer) = self.time_reps(&op, reps, clock).await?;
            self.check_sums(&out, groups, want)
                .await
                .map_err(|e| Error::Gpu(format!("read shape {shape:?}: {e}")))?;
            res.push((groups, size as f64 * reps as f64 / secs / 1e9, timer));
        }
        Ok((size, res))
    }

    /// Device memory bandwidth as a compute kernel copying 16-byte words
    /// sees it: `reps` copies of a `bytes` buffer (capped at one storage
    /// binding) into another, the copy checked after by `read_sum`. Returns
    /// (bytes actually used, GB/s counting each byte read and each byte
    /// written, i.e. 2 x bytes per copy, how it was timed).
    pub async fn kernel_copy_bandwidth(
        &self,
        bytes: u64,
        reps: usize,
        clock: fn() -> f64,
    ) -> Result<(u64, f64, Timer)> {
        let size = self.bandwidth_size(bytes, reps)?;
        let groups = groups_for(size / WORD);
        let (src, want, dst, out) = self
            .scoped("allocating the bandwidth buffers", || {
                let (src, want) = self.patterned(size)?;
                let dst = self.storage("bandwidth copy", size)?;
                let out = self.storage("bandwidth sums", groups as u64 * WORD)?;
                Ok((src, want, dst, out))
            })
            .await?;
        let (secs, timer) = self
            .time_reps(&copy_op(self, &src, &dst, groups), reps, clock)
            .await?;
        self.run(&[&[read_op(self, &dst, &out, groups)]], 1, &[]);
        self.check_sums(&out, groups, want).await?;
        Ok((size, 2.0 * size as f64 * reps as f64 / secs / 1e9, timer))
    }
}
