//! `webgguf gpu-profile`: where a decode step's time goes. Per token: CPU
//! time to record the command buffer, to submit it, and waiting for the id;
//! GPU time of the pass (timestamp queries) and of each kernel (one pass
//! per dispatch); the cost of a bare dispatch with and without a barrier;
//! and the readback round trip. Native only.

use std::time::Instant;

use serde_json::{json, Value};

use super::stamps::Stamps;
use super::*;
use crate::engine::median;

/// Trivial kernels for the dispatch-cost test: `rw` writes the buffer it
/// binds read_write (so wgpu puts a barrier between two of them), `ro` only
/// reads (no barrier). Bindings: 0 A (u32). Dispatch: (1, 1, 1) of 64.
const BARE: &str = "
@group(0) @binding(0) var<storage, read_write> A: array<u32>;
@compute @workgroup_size(64)
fn rw(@builtin(local_invocation_index) i: u32) {
    if i == 0u {
        A[0] = A[0] + 1u;
    }
}
";
const BARE_RO: &str = "
@group(0) @binding(0) var<storage, read> A: array<u32>;
@group(0) @binding(1) var<storage, read_write> O: array<u32>;
@compute @workgroup_size(64)
fn ro(@builtin(local_invocation_index) i: u32) {
    if A[i] == 12345u {
        O[0] = 1u;
    }
}
";

/// How long `profile_ops` keeps the GPU busy before it times (and at most
/// how many steps): long enough for a GPU's clocks to come back up from
/// idle (the H100's took up to ~0.7 s of work in nvidia-smi's samples,
/// 2026-12-07f; one 8B step is ~4 ms).
const WARM_BUSY: std::time::Duration = std::time::Duration::from_millis(1000);
const WARM_MAX: usize = 1000;

/// gpu-profile's `--touch`: `mib` MiB read after each layer's attention
/// (untimed), from `bufs` buffers in turn; 0 MiB: none. With `one`, the
/// `bufs` are slices of one buffer (`--touch-one`): whether the cost of
/// touching many distinct bytes (2026-12-07g) depends on how they are
/// allocated, one driver allocation or many.
#[derive(Debug, Clone, Copy, Default)]
pub struct Touch {
    pub mib: u64,
    pub bufs: usize,
    pub one: bool,
}

/// A layer's (first) attention dispatch, after which `--touch` reads.
fn is_attention(op: &Op) -> bool {
    op.label == "attention"
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

impl GpuBackend {
    fn lists(&self, fused: bool) -> Vec<&[Op]> {
        self.lists_at(if fused { 1 } else { 2 }, 0)
    }

    /// The lists a step of `n` tokens at position `pos` runs (as
    /// `GpuBackend::keys` picks them).
    fn lists_at(&self, n: usize, pos: usize) -> Vec<&[Op]> {
        let layers = self.layer_list(n, self.keys(n, pos));
        vec![&self.embed, layers, &self.head, &self.argmax]
    }

    /// Decode steps with the fused (decode) or unfused (prefill) layer list,
    /// each step instrumented.
    async fn profile_steps(&mut self, ids: &[u32], fused: bool) -> Result<Value> {
        let warm = 4;
        let n = ids.len();
        let stamps = Stamps::new(&self.gpu, 2 * n as u32);
        let (mut enc_us, mut sub_us, mut wait_us, mut tot_us) = (vec![], vec![], vec![], vec![]);
        let lists = self.lists(fused);
        let dispatches: usize = lists
            .iter()
            .map(|l| {
                l.iter()
                    .filter(|o| o.shape.groups(1).iter().all(|&g| g > 0))
                    .count()
            })
            .sum();
        for (i, &t) in ids.iter().enumerate() {
            let t0 = Instant::now();
            self.write_inputs(&[t], i)?;
            let ts = stamps
                .as_ref()
                .filter(|_| i >= warm)
                .map(|s| s.writes((i - warm) as u32));
            let cb = self.gpu.encode(
                &[],
                &lists,
                (1, Some(i as u32)),
                &[(&self.s.argmax, &self.s.read_id[0], 4)],
                ts,
            );
            let e = us(t0);
            let t1 = Instant::now();
            self.gpu.queue.submit([cb]);
            let sb = us(t1);
            let t2 = Instant::now();
            self.gpu.read(&self.s.read_id[0], 4).await?;
            let w = us(t2);
            if i >= warm {
                enc_us.push(e);
                sub_us.push(sb);
                wait_us.push(w);
                tot_us.push(us(t0));
            }
        }
        let gpu_us = match &stamps {
            Some(s) => s.durations(&self.gpu).await?[..n - warm].to_vec(),
            None => vec![],
        };
        Ok(json!({
            "layers": if fused { "decode (fused)" } else { "prefill (unfused)" },
            "dispatches_per_token": dispatches,
            "tokens": n - warm,
            "median_us": {
                "encode": median(&enc_us), "submit": median(&sub_us),
                "wait": median(&wait_us), "total": median(&tot_us),
                // null where the device has no timestamp queries.
                "gpu_pass": (!gpu_us.is_empty()).then(|| median(&gpu_us)),
            },
        }))
    }

    /// Wall time per greedy step through the real path, with and without
    /// recording the next step ahead.
    async fn profile_pipeline(&mut self, ids: &[u32]) -> Result<Value> {
        let mut out = serde_json::Map::new();
        let saved = self.pipeline;
        for on in [false, true] {
            self.pipeline = on;
            self.ahead = None;
            let mut v = Vec::new();
            for (i, &t) in ids.iter().enumerate() {
                let t0 = Instant::now();
                self.submit(&[t], i, Tail::Argmax)?;
                self.gpu.read(&self.s.read_id[0], 4).await?;
                if i >= 4 {
                    v.push(us(t0));
                }
            }
            out.insert(
                format!("pipeline_{on}"),
                json!({"median_us": median(&v), "mean_us": mean(&v)}),
            );
        }
        self.pipeline = saved;
        self.ahead = None;
        // The real greedy loop: each pick fed back (on the GPU as well,
        // unless `GpuTuning::feed` is off).
        let mut v = Vec::new();
        let mut t = ids[0];
        for i in 0..ids.len() {
            let t0 = Instant::now();
            t = self.picked(&[t], i, None).await?;
            if i >= 4 {
                v.push(us(t0));
            }
        }
        self.fed = None;
        self.gpu.wait_idle().await?;
        out.insert(
            format!("greedy_fed_{}", self.feed),
            json!({"median_us": median(&v), "mean_us": mean(&v)}),
        );
        Ok(Value::Object(out))
    }

    /// GPU time of every dispatch of one step of `n` tokens (1: the decode
    /// list, else the prefill list) at position `pos`, each in its own
    /// pass, summed by kernel, averaged over `reps` steps. The KV cache
    /// below `pos` holds whatever it holds (zeros after a load): attention
    /// reads all of it either way, so the time is a real step's.
    async fn profile_ops(&mut self, n_tok: usize, pos: usize, reps: usize) -> Result<Value> {
        self.profile_ops_touching(n_tok, pos, reps, Touch::default())
            .await
    }

    /// `profile_ops`, with an untimed read of `touch.mib` MiB after each
    /// layer's attention, from `touch.bufs` buffers in turn: what a deep
    /// step's attention reads, without attention (a test of whether the
    /// products slow after it for the bytes it reads, or for how many
    /// distinct ones).
    async fn profile_ops_touching(
        &mut self,
        n_tok: usize,
        pos: usize,
        reps: usize,
        touch: Touch,
    ) -> Result<Value> {
        let lists = self.lists_at(n_tok, pos);
        let ops: Vec<&Op> = lists
            .iter()
            .flat_map(|l| l.iter())
            .filter(|o| {
                o.shape
                    .groups_at(n_tok as u32, Some(pos as u32))
                    .iter()
                    .all(|&g| g > 0)
            })
            .collect();
        // The read kernel binds each buffer whole.
        let bytes = touch.mib.saturating_mul(1 << 20);
        let most = self.gpu.limits.max_storage_buffer_binding_size;
        if bytes > most {
            return Err(crate::error::Error::InvalidArgument(format!(
                "--touch {} MiB: past the device's storage binding of {} MiB",
                touch.mib,
                most >> 20
            )));
        }
        // A step reads one buffer after each layer's attention, so more
        // buffers than layers would never be read.
        let layers = ops.iter().filter(|o| is_attention(o)).count();
        let bufs = if touch.mib > 0 {
            touch.bufs.min(layers)
        } else {
            0
        };
        let groups = super::bandwidth::groups_for(bytes / super::bandwidth::WORD);
        let outs: Vec<wgpu::Buffer> = (0..bufs)
            .map(|_| {
                self.gpu
                    .storage("touch sums", groups as u64 * super::bandwidth::WORD)
            })
            .collect::<Result<_>>()?;
        let touch_ops: Vec<Op> = if touch.one && bufs > 0 {
            let total = bytes * bufs as u64;
            if total > self.gpu.limits.max_buffer_size {
                return Err(crate::error::Error::InvalidArgument(format!(
                    "--touch-one: {bufs} x {} MiB is past the device's buffer of {} MiB",
                    touch.mib,
                    self.gpu.limits.max_buffer_size >> 20
                )));
            }
            // MiB slices: their offsets are multiples of any storage
            // offset alignment.
            let src = self.gpu.buffer(&wgpu::BufferDescriptor {
                label: Some("touch"),
                size: total,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            });
            let pipeline =
                kernels::pipeline(&self.gpu, "bandwidth", super::bandwidth::SRC, "read_sum");
            outs.iter()
                .enumerate()
                .map(|(k, out)| {
                    let slice = wgpu::BufferBinding {
                        buffer: &src,
                        offset: k as u64 * bytes,
                        size: std::num::NonZeroU64::new(bytes),
                    };
                    let bind = self
                        .gpu
                        .device
                        .create_bind_group(&wgpu::BindGroupDescriptor {
                            label: None,
                            layout: &pipeline.get_bind_group_layout(0),
                            entries: &[
                                wgpu::BindGroupEntry {
                                    binding: 0,
                                    resource: wgpu::BindingResource::Buffer(slice),
                                },
                                wgpu::BindGroupEntry {
                                    binding: 2,
                                    resource: out.as_entire_binding(),
                                },
                            ],
                        });
                    Op {
                        pipeline: pipeline.clone(),
                        bind,
                        shape: kernels::Shape::Fixed([groups, 1, 1]),
                        label: "read_sum",
                    }
                })
                .collect()
        } else {
            // Each op's bind group keeps its buffer alive.
            outs.iter()
                .map(|out| {
                    let src = self.gpu.storage("touch", bytes)?;
                    Ok(super::bandwidth::read_op(&self.gpu, &src, out, groups))
                })
                .collect::<Result<_>>()?
        };
        let n = ops.len().min(2000);
        let Some(stamps) = Stamps::new(&self.gpu, 2 * n as u32) else {
            return Ok(json!("no timestamp queries"));
        };
        let mut sums: Vec<f64> = vec![0.0; n];
        let toks: Vec<u32> = (0..n_tok as u32).map(|i| i % self.vocab as u32).collect();
        // Untimed steps first, until the GPU has been kept busy for
        // WARM_BUSY: one was too few where the lists were just built (their
        // pipelines compiled while the GPU idled, and its clocks dropped).
        // On an H100 gpu-profile then timed every kernel of the 8B Q8_0's
        // depth half ~2.5x slow, the embedding and LM head included, and
        // nvidia-smi showed the SM clock at 375-525 MHz against 1,980 once
        // busy (BENCHMARKS.md, 2026-12-07f).
        let warm_from = Instant::now();
        let mut warm = 0;
        while warm == 0 || (warm < WARM_MAX && warm_from.elapsed() < WARM_BUSY) {
            self.write_inputs(&toks, pos)?;
            let at = (n_tok as u32, Some(pos as u32));
            let cb = self.gpu.encode(&[], &lists, at, &[], None);
            self.gpu.queue.submit([cb]);
            self.gpu.wait_idle().await?;
            warm += 1;
        }
        for _ in 0..reps {
            self.write_inputs(&toks, pos)?;
            let mut enc = self
                .gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            let mut k = 0;
            for (j, op) in ops[..n].iter().enumerate() {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(stamps.writes(j as u32)),
                });
                kernels::encode(
                    &mut pass,
                    std::slice::from_ref(*op),
                    n_tok as u32,
                    Some(pos as u32),
                );
                drop(pass);
                if is_attention(op) && !touch_ops.is_empty() {
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                    let t = &touch_ops[k % touch_ops.len()];
                    kernels::encode(&mut pass, std::slice::from_ref(t), 1, None);
                    k += 1;
                }
            }
            self.gpu.queue.submit([enc.finish()]);
            let d = stamps.durations(&self.gpu).await?;
            for (s, v) in sums.iter_mut().zip(&d) {
                *s += v / reps as f64;
            }
        }
        let mut by: Vec<(&str, usize, f64)> = Vec::new();
        for (op, &t) in ops[..n].iter().zip(&sums) {
            match by.iter_mut().find(|b| b.0 == op.label) {
                Some(b) => {
                    b.1 += 1;
                    b.2 += t;
                }
                None => by.push((op.label, 1, t)),
            }
        }
        let total: f64 = sums.iter().sum();
        Ok(json!({
            "tokens": n_tok,
            "position": pos,
            "touch_mib": touch.mib,
            "touch_bufs": bufs,
            "touch_one": touch.one,
            "sum_of_kernels_us": total,
            "by_kernel": by.iter().map(|(l, c, t)| json!({"kernel": l, "count": c, "us": t})).collect::<Vec<_>>(),
        }))
    }

    /// Read back 4 bytes after an otherwise empty submit.
    async fn profile_round_trip(&mut self) -> Result<Value> {
        let mut v = Vec::new();
        for _ in 0..20 {
            let t0 = Instant::now();
            self.gpu
                .run(&[], 0, &[(&self.s.argmax, &self.s.read_id[0], 4)]);
            self.gpu.read(&self.s.read_id[0], 4).await?;
            v.push(us(t0));
        }
        Ok(json!({"median_us": median(&v)}))
    }

    /// `count` bare dispatches in one pass, with and without barriers.
    async fn profile_bare(&mut self, count: u32) -> Result<Value> {
        let g = &self.gpu;
        let a = g.storage("bare", 256)?;
        let o = g.storage("bare out", 4)?;
        let mut out = serde_json::Map::new();
        for (name, src, entry) in [("read_write", BARE, "rw"), ("read_only", BARE_RO, "ro")] {
            let p = kernels::pipeline(g, name, src, entry);
            let bufs: Vec<(u32, &wgpu::Buffer)> = if entry == "rw" {
                vec![(0, &a)]
            } else {
                vec![(0, &a), (1, &o)]
            };
            let op = Op {
                bind: kernels::bind(g, &p, &bufs),
                pipeline: p,
                shape: Shape::Fixed([1, 1, 1]),
                label: "bare",
            };
            let ops = vec![op; count as usize];
            let stamps = Stamps::new(g, 2);
            let mut res = json!({});
            for rep in 0..2 {
                let t0 = Instant::now();
                let cb = g.encode(
                    &[],
                    &[&ops],
                    (1, None),
                    &[],
                    stamps.as_ref().map(|s| s.writes(0)),
                );
                let e = us(t0);
                let t1 = Instant::now();
                g.queue.submit([cb]);
                let sb = us(t1);
                g.wait_idle().await?;
                let total = us(t0);
                let gpu = match &stamps {
                    Some(s) => s.durations(g).await?[0],
                    None => f64::NAN,
                };
                if rep == 1 {
                    res = json!({
                        "dispatches": count,
                        "encode_us_per_dispatch": e / count as f64,
                        "submit_us": sb,
                        "total_us_per_dispatch": total / count as f64,
                        "gpu_us_per_dispatch": gpu / count as f64,
                    });
                }
            }
            out.insert(name.to_string(), res);
        }
        Ok(Value::Object(out))
    }

    /// Everything above, for `tokens` decode steps; with `depth` > 0 also
    /// the decode step's kernels at that position, and with `touch.mib` > 0
    /// at position 0 with the touch reads (`profile_ops_touching`).
    pub async fn profile(&mut self, tokens: usize, depth: usize, touch: Touch) -> Result<Value> {
        let mut rng = crate::sampler::Rng::new(1234);
        let ids: Vec<u32> = (0..tokens.max(8) + 4)
            .map(|_| (rng.next_u32() as u64 % self.vocab as u64) as u32)
            .collect();
        let ids = &ids[..ids.len().min(self.ctx)];
        let batch = self.max_batch.min(512).min(self.ctx);
        let at_depth = match depth {
            0 => Value::Null,
            d => self.profile_ops(1, d.min(self.ctx - 1), 5).await?,
        };
        Ok(json!({
            "device": self.gpu.adapter.name,
            "subgroups": self.kernels.subgroups,
            "steps": self.profile_steps(ids, true).await?,
            "wall_per_step": self.profile_pipeline(ids).await?,
            "kernels_decode": self.profile_ops(1, 0, 5).await?,
            "kernels_decode_at_depth": at_depth,
            "kernels_decode_touched": match touch.mib {
                0 => Value::Null,
                _ => self.profile_ops_touching(1, 0, 5, touch).await?,
            },
            "kernels_prefill": self.profile_ops(batch, 0, 3).await?,
            "round_trip": self.profile_round_trip().await?,
            "bare_dispatch": self.profile_bare(1000).await?,
        }))
    }
}

/// Load `bytes` onto `gpu` (with `gpu_opts`) and profile `tokens` decode
/// steps.
pub async fn profile_model(
    gpu: Gpu,
    bytes: Vec<u8>,
    opts: EngineOptions,
    gpu_opts: GpuOptions,
    tokens: usize,
    depth: usize,
    touch: Touch,
) -> Result<Value> {
    let Loaded {
        config, weights, ..
    } = Loaded::from_bytes(bytes, opts.load)?;
    let ctx = context_for(&config, &opts);
    let mut b = GpuBackend::new(
        gpu,
        &config,
        &weights,
        ctx,
        opts.max_batch,
        gpu_opts,
        &|_| {},
    )
    .await?;
    drop(weights);
    b.profile(tokens, depth, touch).await
}
