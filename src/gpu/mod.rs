//! The WebGPU backend: the same forward pass as `cpu`, as compute shaders.
//!
//! Weights stay in their block format on the GPU and are decoded inside the
//! matrix kernels. Decode products of quantized weights quantize x to int8
//! blocks of 32 first and sum in integers (dot4I8Packed), as llama.cpp
//! does (`GpuTuning::int_dot`); float weights and the tiled prefill are
//! f32 throughout. The KV cache is f16. Everything is allocated and every
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
//! products and the rope, KV store, bias and silu·mul kernels. Past
//! SPLIT_KEYS keys each has a twin whose attention suits long contexts:
//! decode in one dispatch up to 128 or 256 keys (`layers_mid`, mid.wgsl),
//! in splits merged after past them (`layers_long`, `layers_deep`),
//! prefill in tiles (`layers_flash`, flash.wgsl); up to it decode attends
//! in few.wgsl and prefill in attention.wgsl's chunked kernel.
//!
//! This module holds the backend itself (`GpuBackend`, its options and
//! `GpuTuning`, the `Backend` impl, `load_engine`); the rest is split by
//! job: `device` (the device, buffers, passes, readback), `upload`
//! (weights onto the GPU), `kernels` (pipelines), `ops` (dispatches of the
//! products, embedding and sampler), `build` (the model as op lists),
//! `schedule` (submitting steps, recording ahead, feeding picks),
//! `bandwidth` (memory bandwidth through compute kernels), `stamps` (GPU
//! timestamp queries).

mod bandwidth;
pub mod kernels;
#[cfg(not(target_arch = "wasm32"))]
pub mod profile;
// Native only: they block on the device with pollster.
mod build;
mod device;
mod ops;
mod plan;
mod probe;
mod schedule;
mod stamps;
pub mod stream;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
mod upload;

use std::cell::OnceCell;

use crate::engine::{context_for, Backend, Engine, EngineOptions, Loaded, LocalFuture};
use crate::error::Result;
use crate::gguf::Parts;
use crate::memory::Memory;
use crate::model::{Config, Weights};
use crate::sampler::Sampler;
use crate::source::{read_header, read_small, Source};

pub use bandwidth::{Order as ReadOrder, ReadShape};
use build::Scratch;
pub use device::{Copy, Gpu, PendingRead, ShaderRecord};
pub use kernels::{DeepShape, GluQShape, Kernels, MainQShape, Mv, MvPath, Op, Shape};
pub use ops::{
    auto_rows, embed_ops, int_x_sizes, matvec_ops, sample_ops, IntX, MatvecArgs, QkvArgs,
    SampleBufs, PEN_CAP,
};
pub use plan::{gpu_memory, plan_memory, MemoryPlan, PlanOptions};
pub use schedule::Tail;
use schedule::{Fed, Recipe};
pub use upload::{GpuMatrix, MatGroup, Part, Sec};

#[derive(Debug, Clone, Copy)]
pub struct GpuOptions {
    /// Largest prefill batch on the GPU (also capped by the engine's).
    pub max_batch: usize,
    /// Split weight matrices into parts of at most this many bytes instead
    /// of the device's storage-binding limit (tests force tiny values).
    pub max_binding: Option<u64>,
    /// Which kernels and submission paths to use.
    pub tuning: GpuTuning,
    /// The most bytes a streamed load reads at once (`stream::CHUNK`;
    /// tests force odd small values).
    pub chunk: usize,
    /// Reads a streamed load keeps in flight (parallel range requests for
    /// a URL; the JS `connections` option).
    pub read_ahead: usize,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            max_batch: 512,
            max_binding: None,
            tuning: GpuTuning::default(),
            chunk: stream::CHUNK,
            read_ahead: 4,
        }
    }
}

/// Switches between equivalent implementations, kept for A/B comparisons
/// (BENCHMARKS.md) and for tests that force a path. `Default` is what
/// every load uses; only the CLI fills it from the environment
/// (`WEBGGUF_GPU_*`, see src/bin/webgguf/cli.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuTuning {
    /// Concatenate q/k/v and gate/up at load and use the fused kernels
    /// (else separate products and the rope, KV store, bias and silu·mul
    /// kernels, which are also the fallback for odd shapes).
    pub fuse: bool,
    /// Prefill with the tiled matrix kernel (else the matvec kernels per
    /// token).
    pub tiled_prefill: bool,
    /// Attention with the chunked kernel where it applies (else the
    /// one-key-at-a-time kernel and its score scratch).
    pub chunked_attention: bool,
    /// Decode below SPLIT_KEYS keys with few.wgsl (the chunked kernel's
    /// result, one workgroup per query head, its loads in one round trip)
    /// instead of the chunked kernel; with the chunked kernel only.
    pub few_attention: bool,
    /// Decode past SPLIT_KEYS keys attends in splits merged after (with
    /// the chunked kernel only; else one serial pass).
    pub split_attention: bool,
    /// Decode from SPLIT_KEYS keys up to this many (`kernels::mid_keys`
    /// rounds it to what the head size allows) attends in one dispatch,
    /// mid.wgsl, instead of splits and their merge; with
    /// `split_attention` only; 0: never. See `MID_KEYS`.
    pub mid_keys: usize,
    /// Prefill past SPLIT_KEYS keys attends in tiles (flash.wgsl: K and V
    /// staged once per tile of tokens x query heads, f32 online softmax;
    /// with the chunked kernel and head sizes 64, 128 and 256 only); else,
    /// and always up to SPLIT_KEYS keys, the chunked kernel's exact
    /// llama.cpp order, one token per workgroup.
    pub flash_prefill: bool,
    /// Those tiles on cooperative matrices (flash_coop.wgsl: tensor cores,
    /// f16 weights) where the device has them (`coop_matrix`), the head
    /// size is 64 or 128 and its workgroup memory fits. On the H100 it
    /// halved prefill attention (BENCHMARKS.md, 2026-11-27e).
    pub flash_coop: bool,
    /// Record the next decode step while the GPU runs this one.
    pub pipeline: bool,
    /// Feed each pick back on the GPU: the next step is submitted before
    /// the pick is read (greedy, and sampling without a penalty).
    pub feed: bool,
    /// Sum matvec partial dot products with subgroup operations where the
    /// adapter has them.
    pub subgroups: bool,
    /// Read x and the norm gains as vec4 where the rows allow.
    pub vector_x: bool,
    /// The 128x64 prefill tile where the workgroup memory allows (measured
    /// slower on the H100) instead of 64x64.
    pub large_tile: bool,
    /// Decode products with x quantized to int8 blocks of 32 and integer
    /// dot products (quantize_x.wgsl, units.wgsl's unit_idot decoders),
    /// as llama.cpp does, where every format of the product has an integer
    /// decoder; else (and for float weights, and the tiled prefill) f32.
    pub int_dot: bool,
    /// The integer path only for products of at least this many weight
    /// bytes (a fused group counts whole): each costs one more dispatch
    /// (quantize_x), which a small product's saving does not repay.
    pub int_min_bytes: u64,
    /// The same floor for products whose weights are all Q8_0: its f32
    /// decode is already a byte-to-float conversion per weight, so the
    /// integer path gains less and repays its dispatch only on larger
    /// products.
    pub int_min_bytes_q8_0: u64,
    /// Prefill on cooperative matrices (tensor cores; matmul_coop.wgsl)
    /// where the device has wgpu's experimental feature with 16 x 16 f16
    /// products (`Gpu::coop`; native Vulkan on recent NVIDIA and AMD),
    /// weights and x rounded to f16 (not for F32 and BF16 weights).
    pub coop_matrix: bool,
    /// The cooperative-matrix tile's rows, tokens and threads for every
    /// product (`Tile::coop`; a shape it does not take is ignored), else
    /// (None) picked per product by its entry and rows (`Tile::coop_for`).
    pub coop_shape: Option<(u32, u32, u32)>,
    /// Batches of more than `kernels::LONG_BATCH` tokens take 256-token
    /// cooperative-matrix tiles for the products where they measured
    /// faster (`Tile::coop_long`; not with `coop_shape`).
    pub coop_long: bool,
    /// Products of at least this many rows and columns read the tensor-core
    /// tile's x in f16, packed by a pass before them (`kernels::HALF_X_MIN`;
    /// usize::MAX: never).
    pub half_x_min: usize,
    /// Integer products (every block format has a wide decoder) decode 32
    /// elements per call (wide.wgsl: 16-byte quant loads, i32 sums, each
    /// scale applied once) instead of 8 (units.wgsl's unit_idot decoders).
    pub wide_int: bool,
    /// The wide IQ4_XS/IQ4_NL decoders look their code book up by
    /// subgroupShuffle from registers (book_shuffle.wgsl) in matvecs that
    /// use subgroups, where every subgroup has 8 lanes or more, instead of
    /// in a workgroup-memory table (book_table.wgsl): the real-layout 8B
    /// IQ4_XS +4.1% decode on the H200 (BENCHMARKS.md, 2026-12-02d).
    pub book_shuffle: bool,
    /// Where Wo takes the integer path, the chunked attention kernels
    /// (decode) also write their output as its int8 x (attention.wgsl
    /// `chunked_q`, `merge_q`) instead of a quantize_x pass after them.
    pub attention_int8: bool,
    /// Prefill products in int8 x and packed integer dot products
    /// (matmul_int.wgsl after a quantize_x.wgsl pass) where every format
    /// has an int8 staging decoder (the block formats) and no
    /// cooperative-matrix tile applies; else matmul.wgsl's f32. On by
    /// default: on the H100 with the tensor-core tile off (what a browser
    /// gets) it ran pp512 48-60% faster than the f32 tile on real-layout
    /// llama-3.2-1b and llama-3.1-8b Q4_K_M and Q4_0 files and 24-45% on
    /// synthetic SmolLM2 Q4_0 and 1B Q6_K (BENCHMARKS.md, 2026-11-26).
    pub int_prefill: bool,
    /// Decode steps attending at least this many keys take split.wgsl's
    /// splits instead of attention.wgsl's `split`, at head sizes of 128
    /// and more (`kernels::deep_keys`); 0: never. See `DEEP_SPLIT_KEYS`.
    pub deep_split_keys: usize,
    /// The same at head sizes 64-127. See `DEEP_SPLIT_KEYS_64`.
    pub deep_split_keys_64: usize,
    /// split.wgsl's keys per chunk, threads per key and chunks per split,
    /// where they fit the heads (`kernels::DeepShape::fits`; else the
    /// default).
    pub deep_shape: kernels::DeepShape,
    /// From this many keys, at head sizes of 128 and more, split.wgsl's
    /// splits walk `deep_far_chunks` chunks (`kernels::deep_tiers`); 0:
    /// never. See `DEEP_FAR_KEYS`.
    pub deep_far_keys: usize,
    /// Chunks per split past `deep_far_keys`. See `DEEP_FAR_KEYS`.
    pub deep_far_chunks: u32,
    /// Dimensions of a head per workgroup of attention.wgsl's merge, a
    /// multiple of 32 that divides the head (`kernels::merge_parts`; any
    /// other value, 0 included: the whole head in one workgroup). See
    /// `MERGE_DIMS`.
    pub merge_dims: usize,
    /// attention.wgsl's `split` takes splits as short as one chunk of its
    /// keys while they keep at most this many workgroups busy, longer ones
    /// (up to `split_max` keys) past that (`kernels::SplitRule`); 0:
    /// always `split_max` keys. See `SPLIT_WGS`.
    pub split_wgs: u32,
    /// The longest split of attention.wgsl's `split` in keys (a power of
    /// two, at least SPLIT_KEYS; `kernels::SplitRule`): past split_wgs
    /// the splits double up to this. See `SPLIT_MAX`.
    pub split_max: usize,
    /// Threads per matvec workgroup (0: by the row length,
    /// `Kernels::matvec_threads`).
    pub matvec_wg: u32,
    /// Rows per matvec workgroup for q/k/v, gate/up and plain products
    /// (0: `auto_rows`, and `wide_glu_rows` for gate/up on the wide
    /// integer path; q/k/v takes multiples of 4, gate/up of 2). Both are
    /// for sweeps: on the H100 (2026-11-26b, ab8.log) no other shape beat
    /// the defaults by more than the run-to-run noise (+1.4% at most) on
    /// synthetic 8B Q4_K, Q4_0 and F16, 1B Q4_K and TinyLlama Q4_0, and 256
    /// threads lost 5-30% everywhere; 2026-11-27f's sweep found gate/up's
    /// 2 rows (shape.log, glu2.log).
    pub matvec_rows: [u32; 3],
    /// Let naga add its loop counters to every loop (wgpu's default, which
    /// guards against endless loops in untrusted shaders). Off (the
    /// default): our own kernels, whose loops all end, compile without
    /// them (`Gpu::trusting_loops`); browsers ignore the setting. On the
    /// H100 that made decode 3.8% (8B Q4_K), 4.6% (1B Q4_K), 6.9% (8B
    /// IQ4_XS) and 9% (8B Q6_K) faster, and 6% at depth 2048: the
    /// counters hid the loops' trip counts from the driver's compiler
    /// (BENCHMARKS.md, 2026-11-27g).
    pub loop_bounding: bool,
    /// few.wgsl's f16 replay rounds through pack2x16float and back
    /// (round_z_pack.wgsl) where the device's conversion passed the
    /// load-time check (`Gpu::round_pack`): the same bits as the
    /// hand-made rounding, in three operations instead of a dozen (8B
    /// decode +1.1%, 1B +2.7% on the H200; BENCHMARKS.md, 2026-12-01).
    /// Off: by hand everywhere (tests cover both).
    pub round_pack: bool,
    /// Where the down product takes the integer path, the fused gate/up
    /// product writes its outputs as the down product's int8 x too
    /// (matvec.wgsl's `glu_q`: whole 32-element blocks a workgroup),
    /// instead of a quantize_x pass between the two: one dispatch fewer a
    /// layer (not where gate and up are Q3_K, nor Q8_0 outside 2-row teams:
    /// `kernels::glu_q_takes`).
    pub glu_q: bool,
    /// `glu_q`'s rows and threads a team (`kernels::GluQShape`; a shape it
    /// does not take turns `glu_q` off), for rows longer than
    /// `glu_q_narrow_cols` and where the device does not take the narrow
    /// shape.
    pub glu_q_shape: kernels::GluQShape,
    /// `glu_q` only for products of at least this many outputs (the FFN
    /// width). See `GLU_Q_MIN`.
    pub glu_q_min: usize,
    /// Gate/up rows of at most this many columns (the model's width) take
    /// glu_q in `glu_q_narrow_shape` instead, where the device allows it
    /// (`Kernels::glu_q_shape_for`); 0 for never. Measured on both sides:
    /// 2,048 gains, 4,096 loses (`kernels::GluQShape::NARROW`).
    pub glu_q_narrow_cols: usize,
    /// glu_q's team shape for those rows (default `GluQShape::NARROW`,
    /// 1,024 threads a workgroup).
    pub glu_q_narrow_shape: kernels::GluQShape,
    /// A `glu_q` gate/up product on the wide path whose rows are at most
    /// this long quantizes its own x (matvec.wgsl's OWN_X, own_x.wgsl:
    /// every workgroup from x and the FFN norm's gains) instead of a
    /// quantize_x pass before it, where the row fits its workgroup memory
    /// (`kernels::own_x_fits`); 0 for never. See `GLU_OWN_X`.
    pub glu_own_x: usize,
    /// Where the Wo product takes the integer path and the fused gate/up
    /// product would quantize its x in a pass of its own (decode and
    /// untiled batches, no post-attention norm), the Wo product writes
    /// that x itself (matvec.wgsl's `main_q`: whole 32-element blocks a
    /// workgroup, the FFN norm's gains applied and its scale left to
    /// gate/up, as the pass does): one dispatch fewer a layer. On the
    /// H200 (BENCHMARKS.md, 2026-12-02b, tg128, two rounds in opposite
    /// orders) the real-layout llama-3.1-8b IQ4_XS ran 281.7 / 281.6 ->
    /// 287.3 / 286.8 (+2.0%) and Q4_K_M 356.2 / 356.4 -> 366.9 / 367.2
    /// (+3.0%); synthetic 8B Q6_K +2.9% and Q4_0 +3.6% (tg64).
    pub wo_q: bool,
    /// `main_q`'s rows and threads a team (`kernels::MainQShape`; a shape
    /// the device does not take, as the default's 1,024 threads where a
    /// workgroup holds fewer, turns it off).
    pub wo_q_shape: kernels::MainQShape,
    /// `wo_q` only for products of at least this many outputs (the model's
    /// width): main_q runs one workgroup for 32 rows, so llama-3.2-1b's
    /// 2,048 are 64 workgroups; there it measured even (synthetic IQ4_XS
    /// and Q4_K, tg64: 1,025.4 against 1,027.0, 1,192.8 against 1,193.5;
    /// 2026-12-02b). Not measured between 2,048 and 4,096.
    pub wo_q_min: usize,
    /// With `wo_q`'s kernel, shape and floor, each layer's down product
    /// also writes the next layer's q/k/v int8 x (with its attn_norm's
    /// gains), where that product would quantize it in a pass: one more
    /// dispatch fewer a layer. Needs glu_q on that layer (down must read
    /// int_h, not the int_x it writes). Measured on the H200 (2026-12-02c,
    /// tg128, two rounds in opposite orders): real-layout 8B IQ4_XS
    /// 287.0 -> 299.8 (+4.5%), Q4_K_M 368.6 -> 393.0 (+6.6%); synthetic 8B
    /// Q4_K +5.4%, Q4_0 +3.7% (tg64); llama-3.2-1b even (below
    /// `wo_q_min`, so unchanged).
    pub down_q: bool,
}

/// `GpuTuning::glu_q_min`'s default: glu_q runs one workgroup for 32
/// outputs, so a narrow FFN gets few workgroups (TinyLlama's 5,632: 176,
/// for an H200's 132 SMs). Measured on the H200 from 8,192 outputs
/// (BENCHMARKS.md, 2026-11-29d: llama-3.2-1b +0.4-2.4%, llama-3.1-8b's
/// 14,336 +5-7% but IQ4_XS even) and, with gate/up quantizing its own x
/// too (`glu_own_x`), at TinyLlama's 5,632 (2026-11-29g, synthetic, tg64,
/// two rounds in opposite orders: Q4_0 +7.7%, Q4_K +3.8%, IQ4_XS +6.3%;
/// glu_q alone there had read within the noise, 2026-11-29e). Below that
/// not measured, so the quantize passes stay there (SmolLM2's products
/// take the f32 path anyway).
pub const GLU_Q_MIN: usize = 5632;

/// `GpuTuning::glu_own_x`'s default: on the H200 (BENCHMARKS.md,
/// 2026-11-29g, synthetic, tg64, two rounds in opposite orders) gate/up
/// quantizing its own x against the quantize pass ran llama-3.2-1b (2,048
/// columns) 2.2% faster on Q4_K and 2.8% on IQ4_XS (3.9% on Q4_K with
/// own_x.wgsl's lean loops), and the real-layout 1B files 3.2% (Q6_K) to
/// 6.3% (Q4_0) faster in tg128; but
/// llama-3.1-8b (4,096) ran 7% slower on Q4_K and Q4_0 and 1.4% on
/// IQ4_XS: timed alone its gate/up took 13.6 us a layer more on Q4_K (962
/// -> 1,398 us a step), more than the pass it saves (~6 us). Each of its
/// 448 workgroups reads 32 KiB of x and gains and waits through four
/// barriers before its first weight (not its registers: a variant without
/// that prologue, at the same 80 registers, ran as fast as the pass); the
/// 1B's 256 workgroups fit the GPU at once. Widths between the two not
/// measured.
pub const GLU_OWN_X: usize = 2048;

/// `GpuTuning::split_wgs`'s default, measured on the H100 (BENCHMARKS.md,
/// 2026-11-26b, synthetic shapes, tg32 after 64 .. 4096 keys, splits of
/// 16, 32 and 64 keys): the fastest split length at each depth was the
/// shortest that kept the split dispatch near 256-272 busy workgroups
/// (llama-3.1-8b, 16 per split: 16 keys at d256, 32 at d512, 64 at d1024;
/// llama-3.2-1b and TinyLlama, 8: 32 keys at d1024; Gemma 3 270M, 4: 16
/// keys at d1024), and 512 was too many: TinyLlama at d2048 in 32-key
/// splits lost 13% to 64-key ones. tg128 from 0 against 64-key splits:
/// +5.5% (8B), +3% (1B), +4% (TinyLlama), +6% (SmolLM2), +18% (Gemma 3).
pub const SPLIT_WGS: u32 = 320;

/// `GpuTuning::split_max`'s default: longer splits did not pay on the
/// H100 (BENCHMARKS.md, 2026-11-26b, `ab10.log`, synthetic, tg32 after d
/// keys, 64 / 256 / 1024): +3% at d2048 on llama-3.2-1b and TinyLlama,
/// but -4% to -8% at d8192 (1B 562 / 538 / 536, TinyLlama 456 / 421 /
/// 437): a split's workgroup walks its chunks one after another, so fewer,
/// longer splits trade idle workgroups for a longer walk.
pub const SPLIT_MAX: usize = 64;

/// `GpuTuning::mid_keys`'s default, measured on the H200 (BENCHMARKS.md,
/// 2026-11-27c, synthetic, two rounds): tg128 after 128 keys (steps of
/// 129-256 keys) with mid.wgsl against attention.wgsl's `split` and its
/// merge: llama-3.1-8b Q4_K 326.0 / 316.2, F16 181.0 / 177.8, llama-3.2-1b
/// Q4_K 1,064 / 969, SmolLM2 877 / 769. (Head size 256, Gemma 3's, stops at
/// 128: `kernels::mid_keys`.)
pub const MID_KEYS: usize = 256;

/// `GpuTuning::deep_split_keys`'s default, measured on the H100 once
/// split.wgsl loaded its K and V at once (BENCHMARKS.md, 2026-11-26e,
/// `sbs/res`; tg32 after 512 keys, split.wgsl from 512 keys against
/// 1024, two rounds): the real-layout llama-3.1-8b Q4_K_M 281 / 281
/// against 267 / 268 (+5%), synthetic Gemma 3 270M Q8_0 (one kv head)
/// 545 / 545 against 533 / 534 (+2%). Below 512 keys not measured.
pub const DEEP_SPLIT_KEYS: usize = 512;

/// `GpuTuning::deep_split_keys_64`'s default, measured on the H100 once
/// split.wgsl loaded its K and V at once (BENCHMARKS.md, 2026-11-26e,
/// `ab1.log`, `ab2.log`; synthetic, tg32 after d keys): llama-3.2-1b from
/// 1024 keys against 4096, d1024 907 / 872, d2048 873 / 778-789;
/// TinyLlama (8 query heads per kv head) from 512, 1024, 2048 and 4096:
/// d512 738 / 752 / 755 / 751, d1024 740 / 742 / 742 / 738, d2048 698 /
/// 692 / 700 / 662.
pub const DEEP_SPLIT_KEYS_64: usize = 1024;

/// `GpuTuning::deep_far_keys`'s default, with `deep_far_chunks` 2: on the
/// H200 (BENCHMARKS.md, 2026-11-29, synthetic Q4_K, tg64 after d keys,
/// four runs on two machines) split.wgsl's splits of two 64-key chunks
/// against one ran llama-3.1-8b 2.6-2.9% faster at 8192 keys and 0.7-1.3%
/// slower at 2048, and on the real-layout 8B Q4_K_M 280 against 273 at
/// 8192 and 313 against 316 at 2048; at head size 64 (llama-3.2-1b) two
/// chunks lost 1-7% at both depths, so the far tier is for 128 and more.
/// At 4096 keys one and two chunks measured even (2026-11-29b, four runs:
/// ratios 0.999-1.003); from 2048 two chunks lost 0.5-3.4% at 2048 keys.
pub const DEEP_FAR_KEYS: usize = 4096;

/// `GpuTuning::merge_dims`'s default: the merge of a head's splits in
/// workgroups of 32 dimensions each (4 a head at head size 128), so that
/// an 8B's 32 heads take 128 workgroups rather than 32 and each lane's
/// loads are one round at 128 splits rather than four. On the H200
/// (BENCHMARKS.md, 2026-11-29b, synthetic Q4_K, four interleaved runs on
/// two machines) against whole heads: llama-3.1-8b at 8192 keys +0.4-1.0%
/// in all four, at 2048 and 4096 and on llama-3.2-1b within the noise
/// (+-1-2%); timed alone the 8B's merge took 343 us a step against 354.
pub const MERGE_DIMS: usize = 32;

/// `GpuTuning::int_min_bytes`'s default, measured on the H100 with the wide
/// decoders (BENCHMARKS.md, 2026-11-25c, synthetic shapes, tg128 at floors
/// of 24, 4 and 0 MiB): 4 MiB against 24 gained 21% on llama-3.2-1b Q4_K,
/// 31% on IQ4_XS, 18% on Q4_0, 9% on TinyLlama Q4_0 and 7% on the 8B Q4_K,
/// and left SmolLM2 (whose products are under 4 MiB) alone; 0 lost 20% on
/// SmolLM2, where a quantize pass costs more than its tiny product saves.
pub const INT_MIN_BYTES: u64 = 4 << 20;

/// `GpuTuning::int_min_bytes_q8_0`'s default: in the same runs, all-Q8_0
/// products lost 2-6% with a 4 MiB floor (llama-3.2-1b, TinyLlama), while
/// 24 MiB kept the 8B's large products (26-125 MB) integer, where the
/// earlier run measured the gain. 16 MiB (2026-12-03, H200, synthetic
/// Q8_0, tg64 two rounds) adds the 8B's Wo and the 1B's down product
/// (17.8 MB each), and with them main_q and glu_q: 8B 292.6 -> 318.1,
/// 1B 1,011 -> 1,160 tok/s; TinyLlama's fused gate/up (23.4 MiB) takes
/// the integer path too, 847 -> 882 (+4.1%), and SmolLM2's products, all
/// under 16 MiB, do not move.
pub const INT_MIN_BYTES_Q8_0: u64 = 16 << 20;

impl Default for GpuTuning {
    fn default() -> Self {
        GpuTuning {
            fuse: true,
            tiled_prefill: true,
            chunked_attention: true,
            few_attention: true,
            split_attention: true,
            mid_keys: MID_KEYS,
            flash_prefill: true,
            flash_coop: true,
            pipeline: true,
            feed: true,
            subgroups: true,
            vector_x: true,
            large_tile: false,
            int_dot: true,
            int_min_bytes: INT_MIN_BYTES,
            int_min_bytes_q8_0: INT_MIN_BYTES_Q8_0,
            coop_matrix: true,
            coop_shape: None,
            coop_long: true,
            half_x_min: kernels::HALF_X_MIN,
            wide_int: true,
            book_shuffle: true,
            attention_int8: true,
            int_prefill: true,
            deep_split_keys: DEEP_SPLIT_KEYS,
            deep_split_keys_64: DEEP_SPLIT_KEYS_64,
            deep_shape: kernels::DeepShape::DEFAULT,
            deep_far_keys: DEEP_FAR_KEYS,
            deep_far_chunks: 2,
            merge_dims: MERGE_DIMS,
            split_wgs: SPLIT_WGS,
            split_max: SPLIT_MAX,
            matvec_wg: 0,
            matvec_rows: [0; 3],
            loop_bounding: false,
            round_pack: true,
            glu_q: true,
            glu_q_shape: kernels::GluQShape::DEFAULT,
            glu_q_min: GLU_Q_MIN,
            glu_q_narrow_cols: 2048,
            glu_q_narrow_shape: kernels::GluQShape::NARROW,
            glu_own_x: GLU_OWN_X,
            wo_q: true,
            wo_q_shape: kernels::MainQShape::DEFAULT,
            wo_q_min: 4096,
            down_q: true,
        }
    }
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
    /// kernel does not apply, or without `GpuTuning::split_attention`).
    layers_long: Vec<Op>,
    /// The same with mid.wgsl's one dispatch, for steps that attend more
    /// than SPLIT_KEYS keys: a list per tier (`kernels::mid_tiers`), with
    /// the most keys it attends (none where `kernels::mid_keys` is 0).
    layers_mid: Vec<(usize, Vec<Op>)>,
    /// The same with split.wgsl's splits: a list per tier
    /// (`kernels::deep_tiers`), with the fewest keys it attends (none
    /// where `kernels::deep_keys` is 0).
    layers_deep: Vec<(usize, Vec<Op>)>,
    /// The prefill layers with attention in tiles (flash.wgsl), for
    /// batches whose keys run past SPLIT_KEYS (empty without a tile for
    /// the head size, or without `GpuTuning::flash_prefill`).
    layers_flash: Vec<Op>,
    head: Vec<Op>,
    argmax: Vec<Op>,
    /// Greedy under a grammar's mask: argmax.wgsl's `masked` over the
    /// logits (with the mask in `s.sample.mask`).
    masked_argmax: Vec<Op>,
    /// The GPU sampler's ops, built on the first sampled step
    /// (`sampler_ops`), so that greedy use never compiles its pipelines.
    sample: OnceCell<Vec<Op>>,
    /// The pipelines built so far (the rest are built on first use).
    kernels: Kernels,
    logits: Vec<f32>,
    /// Record the next decode step while the GPU runs this one.
    pipeline: bool,
    /// That step's command buffer, recorded ahead, and what it runs.
    ahead: Option<(Recipe, wgpu::CommandBuffer)>,
    /// Greedy decoding feeds each pick back on the GPU: the step after it
    /// is submitted before the pick is read, so the GPU never waits for the
    /// CPU's round trip (`GpuTuning::feed`).
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
    /// would hold its weights until some later collection. `self.gpu` is a
    /// tracking handle (`Gpu::tracking`): every buffer the backend created,
    /// at load or later (the sampler's), is destroyed, not just a list kept
    /// by hand.
    fn drop(&mut self) {
        self.gpu.destroy_buffers();
    }
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
        // The f16 check before `tracking()`: its buffers are its own.
        let gpu = match opts.tuning.round_pack {
            true => gpu.checking_rounding().await,
            false => gpu,
        };
        let gpu = gpu.tracking().trusting_loops(!opts.tuning.loop_bounding);
        let g = gpu.clone();
        let r = gpu
            .scoped("loading the model onto the GPU", move || {
                Self::build(g, c, w, ctx, max_batch, opts, progress)
            })
            .await;
        if r.is_err() {
            // A load that fails part way (a device limit, out of memory)
            // leaves nothing allocated behind it either.
            gpu.destroy_buffers();
        }
        r
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }
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
            if sampler.extras.needs_logits() {
                // Logprobs, OpenAI's biases or penalties: the logits come
                // back and the CPU sampler picks (with the mask, if any).
                // Such a step is never fed ahead.
                self.logits_after(tokens, pos).await?;
                return Ok(sampler.sample(&mut self.logits, history));
            }
            let p = sampler.params();
            let masked = sampler.extras.mask.is_some();
            if p.repeat_penalty == 1.0 && !masked {
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
            if let Some(m) = &sampler.extras.mask {
                // A grammar's mask goes to the GPU, which treats the tokens
                // it leaves out as -inf; the step is not fed ahead, since
                // the next mask depends on this pick.
                self.s.sample.write_mask(&self.gpu, self.vocab, m);
            }
            let tail = if masked && p.temperature <= 0.0 && pen.is_empty() {
                Tail::MaskedArgmax
            } else {
                self.write_sample(sampler, &pen, masked);
                Tail::Sample
            };
            self.submit_read(tokens, pos, tail).await
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
    fn memory(&self) -> Memory {
        Memory {
            backend: "gpu",
            gpu: Some(self.gpu.memory()),
            cpu: None,
        }
    }
}

/// The memory plan of the model `src` holds, from its header alone (one
/// read for most files; see `read_header`): what a page asks before it
/// downloads a model. See `plan_memory`.
pub async fn plan_from(src: &dyn Source, opts: &PlanOptions) -> Result<MemoryPlan> {
    let (g, _) = read_header(src).await?;
    plan_memory(&g, opts)
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
    load_engine_parts(gpu, bytes, &Parts::one(), opts, gpu_opts, clock, progress).await
}

/// `load_engine` for a model held in memory as one or more whole GGUF
/// files laid end to end (a split model's files, in order; see
/// `Loaded::from_parts`).
pub async fn load_engine_parts(
    gpu: Gpu,
    bytes: Vec<u8>,
    parts: &Parts,
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
    } = Loaded::from_parts(bytes, parts, opts.load)?;
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

/// Load a GGUF file from `src` onto `gpu`, streamed: the header from a
/// prefix, the small tensors next, then each matrix straight into its GPU
/// buffer in chunks of `stream::CHUNK` bytes. Memory holds the tokenizer,
/// the metadata and one chunk, never the model. `progress` hears (bytes
/// written to the GPU, bytes in all).
pub async fn load_engine_from(
    gpu: Gpu,
    src: &dyn Source,
    opts: EngineOptions,
    gpu_opts: GpuOptions,
    clock: fn() -> f64,
    progress: &dyn Fn(u64, u64),
) -> Result<Engine> {
    let (g, _) = read_header(src).await?;
    let (config, tokenizer, mut info) = Loaded::describe(&g)?;
    let small = read_small(src, &Weights::small_tensors(&g)).await?;
    let weights = Weights::plan(&g, &config, &small)?;
    drop((g, small));
    info.weight_bytes_per_token = weights.bytes_per_token();
    let ctx = context_for(&config, &opts);
    let backend = GpuBackend::new(
        gpu,
        &config,
        &weights,
        ctx,
        opts.max_batch,
        gpu_opts,
        &|_| {},
    )
    .await?;
    // On an error below the backend drops, destroying its buffers.
    let deferred = backend.gpu.take_deferred();
    stream::write_deferred(
        &backend.gpu,
        deferred,
        src,
        gpu_opts.chunk,
        gpu_opts.read_ahead,
        progress,
    )
    .await?;
    backend.gpu.wait_idle().await?;
    Ok(Engine::with_backend(
        config,
        tokenizer,
        info,
        Box::new(backend),
        clock,
    ))
}
