//! Memory a model holds or will need, by kind: on the GPU (`GpuMemory`:
//! weights, KV cache, scratch, and the largest single buffer, which every
//! storage binding sees whole), and in the CPU engine's memory
//! (`CpuMemory`: the file, its KV cache, its scratch).
//!
//! A loaded GPU backend counts what it holds where its buffers are created
//! (`gpu::Gpu`); `gpu::plan_memory` computes the same figures from a
//! file's header alone, without a device, through the same sizing code, so
//! that a page can ask whether a model fits before it downloads it.

use serde::{Deserialize, Serialize};

/// What a GPU buffer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemKind {
    /// Weight matrices, norms, biases, embeddings, rope factors.
    Weights,
    /// The per-layer key and value caches.
    KvCache,
    /// Everything else: activations, logits, uniforms, readback and
    /// sampling buffers.
    #[default]
    Scratch,
}

/// GPU bytes by kind, and the largest single buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuMemory {
    pub weights: u64,
    pub kv_cache: u64,
    pub scratch: u64,
    /// weights + kv_cache + scratch.
    pub total: u64,
    /// The largest single buffer (each storage buffer is bound whole, so
    /// this is also the largest binding).
    pub largest_binding: u64,
    /// How many buffers.
    pub buffers: u64,
}

impl GpuMemory {
    /// Count one buffer of `bytes` holding `kind`.
    pub fn add(&mut self, kind: MemKind, bytes: u64) {
        match kind {
            MemKind::Weights => self.weights += bytes,
            MemKind::KvCache => self.kv_cache += bytes,
            MemKind::Scratch => self.scratch += bytes,
        }
        self.total += bytes;
        self.largest_binding = self.largest_binding.max(bytes);
        self.buffers += 1;
    }

    /// Whether these buffers fit an adapter's `limits`: `Err` names the
    /// first limit exceeded, with the sizes.
    pub fn check(&self, limits: &GpuLimits) -> Result<(), String> {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        for (name, limit) in [
            (
                "max_storage_buffer_binding_size",
                limits.max_storage_buffer_binding_size,
            ),
            ("max_buffer_size", limits.max_buffer_size),
        ] {
            if self.largest_binding > limit {
                return Err(format!(
                    "the largest buffer is {} bytes ({:.1} MiB), over {name} {limit} ({:.1} MiB)",
                    self.largest_binding,
                    mib(self.largest_binding),
                    mib(limit)
                ));
            }
        }
        if let Some(total) = limits.total_memory {
            if self.total > total {
                return Err(format!(
                    "the model needs {} bytes ({:.1} MiB) of GPU memory, over the {} ({:.1} MiB) available",
                    self.total,
                    mib(self.total),
                    total,
                    mib(total)
                ));
            }
        }
        Ok(())
    }
}

/// The adapter limits a plan is checked against (WebGPU's names; from
/// JS, `{maxStorageBufferBindingSize, maxBufferSize, totalMemory?}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    /// GPU memory the caller believes it may use, if known (WebGPU does
    /// not say).
    #[serde(default)]
    pub total_memory: Option<u64>,
}

impl GpuLimits {
    /// WebGPU's default limits (what an adapter gives without asking).
    pub const WEBGPU_DEFAULT: GpuLimits = GpuLimits {
        max_storage_buffer_binding_size: 128 << 20,
        max_buffer_size: 256 << 20,
        total_memory: None,
    };

    /// The largest buffer one binding may see.
    pub fn binding_limit(&self) -> u64 {
        self.max_storage_buffer_binding_size
            .min(self.max_buffer_size)
    }
}

/// The CPU engine's memory: the whole file, its KV cache (f32) and its
/// scratch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuMemory {
    pub file: u64,
    pub kv_cache: u64,
    pub scratch: u64,
    /// file + kv_cache + scratch.
    pub total: u64,
}

impl CpuMemory {
    pub fn new(file: u64, kv_cache: u64, scratch: u64) -> CpuMemory {
        CpuMemory {
            file,
            kv_cache,
            scratch,
            total: file + kv_cache + scratch,
        }
    }

    /// Whether it fits `limit` bytes (wasm32: `WASM_LIMIT`); `Err` says by
    /// how much it does not.
    pub fn check(&self, limit: u64) -> Result<(), String> {
        if self.total > limit {
            let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
            return Err(format!(
                "the CPU engine needs {} bytes ({:.1} MiB: file {:.1}, KV cache {:.1}, scratch {:.1}), over the {} ({:.1} MiB) memory limit",
                self.total,
                mib(self.total),
                mib(self.file),
                mib(self.kv_cache),
                mib(self.scratch),
                limit,
                mib(limit)
            ));
        }
        Ok(())
    }
}

/// The most memory a wasm32 module can have: 4 GiB (65536 pages).
pub const WASM_LIMIT: u64 = 4 << 30;

/// What a loaded engine holds (`Engine::memory`): GPU bytes by kind for
/// the GPU backend, the CPU engine's bytes for the CPU one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    pub backend: &'static str,
    pub gpu: Option<GpuMemory>,
    pub cpu: Option<CpuMemory>,
}
