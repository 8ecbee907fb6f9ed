//! The command line proper (see main.rs).

use std::io::Write;
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

use pollster::block_on;
use serde_json::json;
use webgguf::chat::TemplateOrigin as ChatTemplateOrigin;
use webgguf::cpu::Parallel;
use webgguf::engine::{Engine, EngineOptions, Generation};
use webgguf::gguf::write;
use webgguf::gguf::{Gguf, Parts};
use webgguf::gpu;
use webgguf::gpu::kernels::TeamShape;
use webgguf::gpu::ReadShape;
use webgguf::model::LoadOptions;
use webgguf::pool::ThreadPool;
use webgguf::sampler::SamplerParams;
use webgguf::source::Concat;
use webgguf::Error;

const USAGE: &str = "\
usage: webgguf <command> [options]

commands:
  generate -m MODEL -p PROMPT [-n N] [--temp T --top-k K --top-p P --min-p M
           --repeat-penalty R --seed S] [--json-schema FILE|object] [--json]
  logits   -m MODEL --tokens ID,ID,... --start S [--top K] --json
  tokenize -m MODEL --text T [--no-special] --json
  bench    -m MODEL [-p 512] [-n 128] [-r 3] [-d DEPTH[,DEPTH..]] [--json] [--temp T ...]
           (decode greedy unless --temp > 0: then the sampler options apply)
  info     -m MODEL [--context N] [--json]
           the model, and its memory plan made from the header alone (GPU
           weights / KV cache / scratch and largest buffer against WebGPU's
           default limits; the CPU engine against 4 GiB of wasm memory),
           then what the loaded backend holds (--json: the plan as JSON only)
  synth    PRESET:TYPE OUT.gguf
           write a synthetic model (random weights of a preset's shape) to a
           file, e.g. tinyllama-1.1b:F32 (4.4 GB: the browser's past-4-GB load)
  split    --max-tensors N IN.gguf OUT_PREFIX
           write IN as the files of a split model, OUT_PREFIX-00001-of-0000K.gguf
           and on, at most N tensors each (llama.cpp's gguf-split layout)
  gpu-bandwidth [--mib 1024] [-r 10] [--json] [--shapes all|sum|O:WG:LOADS:TURNS,..]
           device memory bandwidth: buffer-to-buffer copies, and compute
           kernels that copy and that read (buffers capped at the storage
           binding limit; the kernels timed by GPU timestamps where the device
           has them, after 0.5 s of the same work); the kernel read is the
           ceiling for rooflines.
           --shapes then times the read in other shapes, a line each: order
           O (0 grid-stride, 1 a span per workgroup, 2 runs per thread), WG
           threads a workgroup, LOADS loads a turn, about TURNS turns a thread;
           `sum` is the kernel read itself, on the same buffer
  gpu-profile -m MODEL [-n 64] [-d DEPTH] [--touch MIB [--touch-bufs 32] [--touch-one]] [--shaders DIR]
           where a GPU decode step's time goes (JSON): CPU encode/submit/wait,
           GPU time per step and per kernel, bare dispatch cost; -d: also the
           decode step's kernels at position DEPTH (context DEPTH + 1);
           --touch: also the kernels at position 0 with MIB MiB read after
           each layer's attention, untimed, from --touch-bufs buffers in turn
           (--touch-one: slices of one buffer);
           --shaders: write each compiled pipeline's WGSL into DIR (one file
           each, `index.tsv` naming its label and entry point), for
           tools/pipeline-stats

common options:
  -m, --model MODEL a GGUF file's path, or the name of a model scripts/setup.sh fetches
                    into .cache/; for a split model (NAME-00001-of-00003.gguf ...), any
                    of its files: all are loaded, found by that name pattern
                      smollm2      SmolLM2-135M-Instruct Q4_1 (the default)
                      gemma3-270m  Gemma 3 270M (base) Q4_K_M
                    (default: $WEBGGUF_MODEL, a path or a name, else smollm2; an existing
                    file of the same name as a model wins)
  --backend B       cpu | gpu | auto (default auto: a hardware GPU if there is one, else the CPU)
  --threads N       CPU threads (default: all cores)
  --ctx N           context window to allocate (default: the model's, at most 4096)
  --upcast-f16      store every quantized matrix as f16 at load
  --synthetic PRESET:TYPE
                    instead of -m: random weights of a named shape, built in memory
                    (presets smollm2-135m, tinyllama-1.1b, gemma3-270m, llama-3.2-1b,
                    llama-3.1-8b; types Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 F16 BF16 F32, and Q2_K
                    Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS as random bits)

environment (GPU backend, for comparisons): WEBGGUF_GPU_BATCH=N, and
  WEBGGUF_GPU_{FUSE,TILED,FEW,SPLIT,FLASH,PIPELINE,FEED,SUBGROUPS,VX,INT,WIDE,BOOK_SHUFFLE,INT_PREFILL,GLU_Q,ROUND_PACK}=0,
  WEBGGUF_GPU_GLU_Q_SHAPE=RxT, WEBGGUF_GPU_GLU_Q_MIN=N, WEBGGUF_GPU_GLU_Q_NARROW=N,
  WEBGGUF_GPU_GLU_Q_NARROW_SHAPE=RxT,
  WEBGGUF_GPU_OWN_X=N, WEBGGUF_GPU_WO_Q=0, WEBGGUF_GPU_WO_Q_SHAPE=RxT, WEBGGUF_GPU_WO_Q_MIN=N, WEBGGUF_GPU_DOWN_Q=0,
  WEBGGUF_GPU_{DEEP_KEYS,DEEP_FAR_KEYS,DEEP_FAR_CHUNKS,SPLIT_WGS,SPLIT_MAX,MV_WG}=N,
  WEBGGUF_GPU_MV_ROWS=Q,G,M,
  WEBGGUF_GPU_ATTENTION=simple, WEBGGUF_GPU_TILE=large, WEBGGUF_GPU_LOOP_BOUND=1 (see README.md)
";

/// The GPU backend's options, from the environment (for A/B comparisons;
/// unset variables keep the library's defaults, `GpuOptions::default()`):
///
/// - `WEBGGUF_GPU_BATCH=N`: largest prefill batch on the GPU (default 512).
/// - `WEBGGUF_GPU_FUSE=0`: no fused q/k/v and gate/up kernels (separate
///   products, rope, KV store, bias and silu·mul).
/// - `WEBGGUF_GPU_TILED=0`: prefill with the matvec kernels per token
///   instead of the tiled matrix kernel.
/// - `WEBGGUF_GPU_ATTENTION=simple`: the one-key-at-a-time attention kernel
///   instead of the chunked one.
/// - `WEBGGUF_GPU_FEW=0`: decode attention below 64 keys with the chunked
///   kernel instead of few.wgsl.
/// - `WEBGGUF_GPU_SPLIT=0`: decode attention in one serial pass instead of
///   splits of 64 keys merged after.
/// - `WEBGGUF_GPU_MID_KEYS=K`: decode attention from 64 keys up to K in one
///   dispatch (mid.wgsl; default 256, as far as the head size allows; 0:
///   never) before the splits take over.
/// - `WEBGGUF_GPU_FLASH=0`: prefill attention past 64 keys with the chunked
///   kernel (one token per workgroup, llama.cpp's f16 order) instead of the
///   tiled one (flash.wgsl).
/// - `WEBGGUF_GPU_PIPELINE=0`: do not record the next decode step while the
///   GPU runs this one.
/// - `WEBGGUF_GPU_FEED=0`: read each pick before submitting the next step
///   (no feeding on the GPU).
/// - `WEBGGUF_GPU_SUBGROUPS=0`: no subgroup operations in the matvec.
/// - `WEBGGUF_GPU_VX=0`: scalar instead of vec4 loads of x and the gains.
/// - `WEBGGUF_GPU_INT=0`: f32 decode products instead of int8 x and
///   integer dot products.
/// - `WEBGGUF_GPU_INT_MIN_MIB=M`: the integer path only for products of at
///   least M MiB of weights; `WEBGGUF_GPU_INT_MIN_Q8_MIB=M` the same for
///   all-Q8_0 products.
/// - `WEBGGUF_GPU_ATT_INT8=0`: Wo's int8 x from a quantize_x pass instead
///   of the attention kernel.
/// - `WEBGGUF_GPU_WIDE=0`: the integer path decodes 8 elements per call
///   (per-unit decoders) instead of 32 (the wide decoders).
/// - `WEBGGUF_GPU_BOOK_SHUFFLE=0`: the wide IQ4_XS/IQ4_NL decoders read
///   their code book from a workgroup-memory table instead of other
///   lanes' registers (subgroupShuffle).
/// - `WEBGGUF_GPU_INT_PREFILL=0`: prefill products of block formats in
///   f32 (matmul.wgsl) instead of int8 x and packed integer dot products
///   (matmul_int.wgsl) where no cooperative-matrix tile applies.
/// - `WEBGGUF_GPU_DEEP_KEYS=K`: decode steps at head size >= 128 take
///   split.wgsl's splits from K keys (default 512; 0: never);
///   `WEBGGUF_GPU_DEEP_KEYS_64=K` the same at head sizes 64-127 (default
///   1024);
///   `WEBGGUF_GPU_DEEP_SHAPE=LxT[xC]`: its splits of C chunks (default 1)
///   of L keys, T threads a key (default 64x4x1; a shape that does not fit
///   the heads is ignored); `WEBGGUF_GPU_DEEP_FAR_KEYS=K` and
///   `WEBGGUF_GPU_DEEP_FAR_CHUNKS=C`: from K keys (default 4096; 0: never)
///   at head size >= 128 its splits walk C chunks (default 2);
///   `WEBGGUF_GPU_DEEP_V_EARLY=1`: each chunk's V words loaded right after
///   its K dots (`DeepShape::v_early`; default 0: even on the H200).
/// - `WEBGGUF_GPU_MERGE_DIMS=D`: the merge of the splits in workgroups of D
///   dimensions of a head (default 32; 0, or D not a multiple of 32 that
///   divides the head: whole heads).
/// - `WEBGGUF_GPU_MV_WG=N`: threads per matvec workgroup;
///   `WEBGGUF_GPU_MV_ROWS=Q,G,M`: rows per workgroup for q/k/v, gate/up
///   and plain products (0: the default for that kind).
/// - `WEBGGUF_GPU_LOOP_BOUND=1`: compile with naga's loop counters, as
///   wgpu does by default (`GpuTuning::loop_bounding`).
/// - `WEBGGUF_GPU_ROUND_PACK=0`: few.wgsl's f16 replay rounds by hand even
///   where the device's conversion passed the load-time check
///   (`GpuTuning::round_pack`; the same bits either way).
/// - `WEBGGUF_GPU_GLU_Q=0`: a quantize_x pass before each down product
///   instead of the gate/up product writing its int8 x (`glu_q`);
///   `WEBGGUF_GPU_GLU_Q_SHAPE=RxT`: R rows a team of T threads (default
///   8x32); `WEBGGUF_GPU_GLU_Q_NARROW=N`: rows of at most N columns in
///   `WEBGGUF_GPU_GLU_Q_NARROW_SHAPE=RxT` instead (default 2048 and 2x32;
///   0 never); `WEBGGUF_GPU_GLU_Q_MIN=N`: only for FFNs of N or more outputs
///   (default 5632); `WEBGGUF_GPU_OWN_X=N`: that product quantizes its own
///   x where its rows are at most N long (`glu_own_x`, default 2048, 0
///   never).
/// - `WEBGGUF_GPU_WO_Q=0`: a quantize_x pass before each fused gate/up
///   product instead of the Wo product writing its int8 x (`wo_q`);
///   `WEBGGUF_GPU_WO_Q_SHAPE=RxT`: R rows a team of T threads (default
///   2x64); `WEBGGUF_GPU_WO_Q_MIN=N`: only for models N or more wide
///   (default 4096); `WEBGGUF_GPU_DOWN_Q=0`: a quantize_x pass before each
///   q/k/v product instead of the down product before it writing that int8
///   x the same way (`down_q`).
/// - `WEBGGUF_GPU_SPLIT_WGS=N`: decode splits as short as one chunk while
///   they keep at most N workgroups busy (default 320; 0: 64 keys always);
///   `WEBGGUF_GPU_SPLIT_MAX=K`: past that, splits up to K keys (default 64).
/// - `WEBGGUF_GPU_TILE=large`: the 128x64 prefill tile where the device's
///   workgroup memory allows.
/// - `WEBGGUF_GPU_COOP_LONG=0`: no 256-token tensor-core tiles for long
///   batches.
/// - `WEBGGUF_GPU_HALF_X=0`: the tensor-core tile reads x in f32 for every
///   product; `WEBGGUF_GPU_HALF_X_MIN=N`: in f16 (packed by a pass) for
///   products of N or more rows and columns (default 4096).
/// - `WEBGGUF_GPU_COOP=0`: no cooperative-matrix (tensor core) prefill;
///   `WEBGGUF_GPU_COOP=RxT` or `RxTxW`: one tile shape for every product
///   (rows x tokens, W threads: 256 unless given; `Tile::coop`) instead of
///   one picked by the product's rows.
fn gpu_options_from_env() -> gpu::GpuOptions {
    let var = |name: &str| std::env::var(name).ok();
    let off = |name: &str| var(name).as_deref() == Some("0");
    // A number from the environment, or the default where unset or unparsable.
    fn num<T: std::str::FromStr>(name: &str, default: T) -> T {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }
    let d = gpu::GpuOptions::default();
    gpu::GpuOptions {
        max_batch: num("WEBGGUF_GPU_BATCH", d.max_batch),
        tuning: gpu::GpuTuning {
            fuse: !off("WEBGGUF_GPU_FUSE"),
            tiled_prefill: !off("WEBGGUF_GPU_TILED"),
            chunked_attention: var("WEBGGUF_GPU_ATTENTION").as_deref() != Some("simple"),
            few_attention: !off("WEBGGUF_GPU_FEW"),
            split_attention: !off("WEBGGUF_GPU_SPLIT"),
            mid_keys: num("WEBGGUF_GPU_MID_KEYS", d.tuning.mid_keys),
            flash_prefill: !off("WEBGGUF_GPU_FLASH"),
            flash_coop: !off("WEBGGUF_GPU_FLASH_COOP"),
            pipeline: !off("WEBGGUF_GPU_PIPELINE"),
            feed: !off("WEBGGUF_GPU_FEED"),
            subgroups: !off("WEBGGUF_GPU_SUBGROUPS"),
            vector_x: !off("WEBGGUF_GPU_VX"),
            large_tile: var("WEBGGUF_GPU_TILE").as_deref() == Some("large"),
            int_dot: !off("WEBGGUF_GPU_INT"),
            int_min_bytes: var("WEBGGUF_GPU_INT_MIN_MIB")
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(gpu::INT_MIN_BYTES, |m| (m * 1048576.0) as u64),
            int_min_bytes_q8_0: var("WEBGGUF_GPU_INT_MIN_Q8_MIB")
                .and_then(|v| v.parse::<f64>().ok())
                .map_or(gpu::INT_MIN_BYTES_Q8_0, |m| (m * 1048576.0) as u64),
            coop_matrix: !off("WEBGGUF_GPU_COOP"),
            coop_shape: var("WEBGGUF_GPU_COOP")
                .and_then(|v| {
                    let mut it = v.split('x').map(|n| n.parse().ok());
                    let (r, t) = (it.next()??, it.next()??);
                    Some((r, t, it.next().unwrap_or(Some(256))?))
                })
                .or(d.tuning.coop_shape),
            coop_long: !off("WEBGGUF_GPU_COOP_LONG"),
            half_x_min: match var("WEBGGUF_GPU_HALF_X").as_deref() {
                Some("0") => usize::MAX,
                _ => num("WEBGGUF_GPU_HALF_X_MIN", d.tuning.half_x_min),
            },
            wide_int: !off("WEBGGUF_GPU_WIDE"),
            book_shuffle: !off("WEBGGUF_GPU_BOOK_SHUFFLE"),
            attention_int8: !off("WEBGGUF_GPU_ATT_INT8"),
            int_prefill: !off("WEBGGUF_GPU_INT_PREFILL"),
            deep_split_keys: num("WEBGGUF_GPU_DEEP_KEYS", d.tuning.deep_split_keys),
            deep_split_keys_64: num("WEBGGUF_GPU_DEEP_KEYS_64", d.tuning.deep_split_keys_64),
            deep_shape: {
                let sh = var("WEBGGUF_GPU_DEEP_SHAPE")
                    .and_then(|v| {
                        // LxT or LxTxC.
                        let mut n = v.split('x').map(|f| f.parse().ok());
                        let (keys, tpk) = (n.next()??, n.next()??);
                        let chunks = n.next().unwrap_or(Some(1))?;
                        n.next().is_none().then_some(gpu::DeepShape {
                            keys,
                            tpk,
                            chunks,
                            ..d.tuning.deep_shape
                        })
                    })
                    .unwrap_or(d.tuning.deep_shape);
                // 1 / 0: split.wgsl's V loads right after the K dots, or not.
                let v_early = match var("WEBGGUF_GPU_DEEP_V_EARLY").as_deref() {
                    Some("1") => true,
                    Some("0") => false,
                    _ => sh.v_early,
                };
                gpu::DeepShape { v_early, ..sh }
            },
            deep_far_keys: num("WEBGGUF_GPU_DEEP_FAR_KEYS", d.tuning.deep_far_keys),
            deep_far_chunks: num("WEBGGUF_GPU_DEEP_FAR_CHUNKS", d.tuning.deep_far_chunks),
            merge_dims: num("WEBGGUF_GPU_MERGE_DIMS", d.tuning.merge_dims),
            split_wgs: num("WEBGGUF_GPU_SPLIT_WGS", d.tuning.split_wgs),
            split_max: num("WEBGGUF_GPU_SPLIT_MAX", d.tuning.split_max),
            matvec_wg: num("WEBGGUF_GPU_MV_WG", d.tuning.matvec_wg),
            matvec_rows: var("WEBGGUF_GPU_MV_ROWS")
                .and_then(|v| {
                    let r: Vec<u32> = v
                        .split(',')
                        .map(|x| x.parse().ok())
                        .collect::<Option<_>>()?;
                    r.try_into().ok()
                })
                .unwrap_or(d.tuning.matvec_rows),
            loop_bounding: var("WEBGGUF_GPU_LOOP_BOUND").as_deref() == Some("1"),
            round_pack: !off("WEBGGUF_GPU_ROUND_PACK"),
            glu_q: !off("WEBGGUF_GPU_GLU_Q"),
            glu_q_min: num("WEBGGUF_GPU_GLU_Q_MIN", d.tuning.glu_q_min),
            glu_q_shape: team_shape("WEBGGUF_GPU_GLU_Q_SHAPE", d.tuning.glu_q_shape),
            glu_q_narrow_cols: num("WEBGGUF_GPU_GLU_Q_NARROW", d.tuning.glu_q_narrow_cols),
            glu_q_narrow_shape: team_shape(
                "WEBGGUF_GPU_GLU_Q_NARROW_SHAPE",
                d.tuning.glu_q_narrow_shape,
            ),
            glu_own_x: num("WEBGGUF_GPU_OWN_X", d.tuning.glu_own_x),
            wo_q: !off("WEBGGUF_GPU_WO_Q"),
            down_q: !off("WEBGGUF_GPU_DOWN_Q"),
            wo_q_min: num("WEBGGUF_GPU_WO_Q_MIN", d.tuning.wo_q_min),
            wo_q_shape: team_shape("WEBGGUF_GPU_WO_Q_SHAPE", d.tuning.wo_q_shape),
        },
        ..d
    }
}

/// A team shape "RxT" (rows a team and threads a team) from environment
/// variable `name`; `default` where it is unset or not two numbers.
fn team_shape<const B: u32>(name: &str, default: TeamShape<B>) -> TeamShape<B> {
    let parse = || {
        let v = std::env::var(name).ok()?;
        let mut n = v.split('x').map(|f| f.parse().ok());
        let (rows, threads) = (n.next()??, n.next()??);
        n.next().is_none().then_some(TeamShape { rows, threads })
    };
    parse().unwrap_or(default)
}

fn now_ms() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

/// The models scripts/setup.sh fetches into .cache/, by short name.
const NAMED_MODELS: &[(&str, &str)] = &[
    ("smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("gemma3-270m", "gemma-3-270m-q4_k_m.gguf"),
];

/// The file `-m`/`--model` (else $WEBGGUF_MODEL, else smollm2) names: a
/// short name from [`NAMED_MODELS`] becomes its .cache path, unless a file of
/// that name exists; anything else is a path.
fn model_path(args: &Args) -> String {
    let given = args
        .str(&["-m", "--model"])
        .map(str::to_string)
        .or_else(|| std::env::var("WEBGGUF_MODEL").ok())
        .unwrap_or_else(|| NAMED_MODELS[0].0.to_string());
    resolve_model(&given)
}

fn resolve_model(given: &str) -> String {
    match NAMED_MODELS.iter().find(|(name, _)| *name == given) {
        Some((_, file)) if !std::path::Path::new(given).exists() => {
            format!("{}/.cache/{file}", env!("CARGO_MANIFEST_DIR"))
        }
        _ => given.to_string(),
    }
}

/// The files of the model at `path`: itself, or, when it is named like a
/// file of a split model (`NAME-00001-of-00003.gguf`), all of that
/// model's files in order, which must all exist.
fn model_files(path: &str) -> Result<Vec<String>, Error> {
    let Some((prefix, _, n)) = write::parse_split_name(path) else {
        return Ok(vec![path.to_string()]);
    };
    let files: Vec<String> = (0..n).map(|i| write::split_name(prefix, i, n)).collect();
    let missing: Vec<&str> = files
        .iter()
        .filter(|f| !std::path::Path::new(f).is_file())
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(Error::Split(format!(
            "{path} names a model split into {n} files, but {} of them {} missing: {}",
            missing.len(),
            if missing.len() == 1 { "is" } else { "are" },
            missing.join(", ")
        )));
    }
    Ok(files)
}

/// The model at `path` read from disk as one source: its file, or all the
/// files of a split model.
fn model_source(path: &str) -> Result<Concat<FileSource>, Error> {
    let files = model_files(path)?;
    let sources = files
        .iter()
        .map(|f| FileSource::open(f))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Concat::new(sources)?.with_names(files))
}

/// The model at `path` in memory: its file, or all the files of a split
/// model laid end to end, with where each begins.
fn read_model_parts(path: &str) -> Result<(Vec<u8>, Parts), Error> {
    let files = model_files(path)?;
    if files.len() == 1 {
        let parts = Parts {
            names: files,
            ..Parts::one()
        };
        return Ok((read_model(path)?, parts));
    }
    let paths: Vec<&std::path::Path> = files.iter().map(std::path::Path::new).collect();
    let (bytes, lens) = webgguf::native::read_files(&paths)
        .map_err(|e| Error::Io(format!("cannot read model '{path}' (split): {e}")))?;
    Ok((bytes, Parts::of_lens(&lens, files)))
}

fn read_model(path: &str) -> Result<Vec<u8>, Error> {
    webgguf::native::read_file(std::path::Path::new(path)).map_err(|e| {
        let hint = if path.starts_with(concat!(env!("CARGO_MANIFEST_DIR"), "/.cache/")) {
            " (scripts/setup.sh fetches it)"
        } else {
            ""
        };
        Error::Io(format!("cannot read model '{path}': {e}{hint}"))
    })
}

/// Parsed `--flag value` pairs and bare flags.
struct Args {
    pairs: Vec<(String, Option<String>)>,
}

const BARE_FLAGS: &[&str] = &["--json", "--no-special", "--upcast-f16", "--touch-one"];

impl Args {
    fn parse(raw: &[String]) -> Result<Args, String> {
        let mut pairs = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let a = &raw[i];
            if !a.starts_with('-') {
                return Err(format!("unexpected argument '{a}'"));
            }
            if BARE_FLAGS.contains(&a.as_str()) {
                pairs.push((a.clone(), None));
                i += 1;
            } else {
                let v = raw
                    .get(i + 1)
                    .ok_or_else(|| format!("option {a} needs a value"))?;
                pairs.push((a.clone(), Some(v.clone())));
                i += 2;
            }
        }
        Ok(Args { pairs })
    }
    fn flag(&self, name: &str) -> bool {
        self.pairs.iter().any(|(k, _)| k == name)
    }
    fn str(&self, names: &[&str]) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| names.contains(&k.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }
    fn num<T: std::str::FromStr>(&self, names: &[&str], default: T) -> Result<T, String> {
        match self.str(names) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("{} expects a number, got '{v}'", names[0])),
        }
    }
    /// Reject options this command does not know, so typos are not silent.
    fn check(&self, allowed: &[&str]) -> Result<(), String> {
        for (k, _) in &self.pairs {
            if !allowed.contains(&k.as_str()) {
                return Err(format!("unknown option {k}"));
            }
        }
        Ok(())
    }
}

const COMMON: &[&str] = &[
    "-m",
    "--model",
    "--backend",
    "--threads",
    "--ctx",
    "--upcast-f16",
    "--synthetic",
    "--json",
];

pub fn main() -> ExitCode {
    // The Vulkan loader complains on every start without a runtime dir
    // (containers, CI); give it a private one before any thread starts.
    #[cfg(target_os = "linux")]
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        use std::os::unix::fs::DirBuilderExt;
        let dir = std::env::temp_dir().join("webgguf-xdg");
        let made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        if made.is_ok() || dir.is_dir() {
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
        }
    }
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = raw.first().cloned() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    if cmd == "-h" || cmd == "--help" || cmd == "help" {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match cmd.as_str() {
        "split" | "synth" => Ok(Args { pairs: Vec::new() }),
        _ => Args::parse(&raw[1..]),
    };
    let args = match args {
        Ok(a) => a,
        Err(e) => return usage_error(&e),
    };
    let result = match cmd.as_str() {
        "generate" => cmd_generate(&args),
        "logits" => cmd_logits(&args),
        "tokenize" => cmd_tokenize(&args),
        "bench" => cmd_bench(&args),
        "info" => cmd_info(&args),
        "split" => cmd_split(&raw[1..]),
        "synth" => cmd_synth(&raw[1..]),
        "gpu-bandwidth" => cmd_gpu_bandwidth(&args),
        "gpu-profile" => cmd_gpu_profile(&args),
        other => return usage_error(&format!("unknown command '{other}'")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(e)) => usage_error(&e),
        Err(CliError::Engine(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

enum CliError {
    Usage(String),
    Engine(Error),
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        CliError::Engine(e)
    }
}
impl From<String> for CliError {
    fn from(e: String) -> Self {
        CliError::Usage(e)
    }
}
impl From<&str> for CliError {
    fn from(e: &str) -> Self {
        CliError::Usage(e.to_string())
    }
}

type CliResult = Result<(), CliError>;

fn load(args: &Args) -> Result<Engine, CliError> {
    let path = model_path(args);
    let backend = args.str(&["--backend"]).unwrap_or("auto");
    if !matches!(backend, "cpu" | "gpu" | "auto") {
        return Err(CliError::Usage(format!(
            "--backend must be cpu, gpu or auto, not '{backend}'"
        )));
    }
    let threads = args.num(&["--threads", "-t"], ThreadPool::available())?;
    let synthetic = args.str(&["--synthetic"]);
    if synthetic.is_some() && args.str(&["-m", "--model"]).is_some() {
        return Err(CliError::Usage(
            "give either -m MODEL or --synthetic PRESET:TYPE, not both".into(),
        ));
    }
    let read = || match synthetic {
        Some(spec) => {
            let (shape, ty) = webgguf::synthetic::parse_spec(spec)?;
            let t0 = now_ms();
            let bytes = webgguf::synthetic::build(&shape, ty, 1)?;
            eprintln!(
                "[synthetic {spec}: {:.1} MB built in {:.2} s]",
                bytes.len() as f64 / 1e6,
                (now_ms() - t0) / 1000.0
            );
            Ok((bytes, Parts::one()))
        }
        None => read_model_parts(&path).map_err(CliError::Engine),
    };
    let opts = EngineOptions {
        context: args.num(&["--ctx", "--context"], 0)?,
        load: LoadOptions {
            upcast_f16: args.flag("--upcast-f16"),
        },
        ..EngineOptions::default()
    };
    if backend != "cpu" {
        // A model file streams from disk into GPU buffers in bounded
        // chunks (no copy of the file in RAM); a synthetic model, or one to
        // upcast, is built in memory first.
        let stream = synthetic.is_none() && !opts.load.upcast_f16;
        let (bytes, parts) = if stream {
            (Vec::new(), Parts::one())
        } else {
            read()?
        };
        let loaded = block_on(async {
            let g = gpu::Gpu::new().await?;
            // `auto` passes over software adapters: on the same cores the
            // CPU engine is several times faster than an emulated GPU.
            if backend == "auto" && g.is_software() {
                return Ok(None);
            }
            let gopts = gpu_options_from_env();
            if stream {
                // A split model's files stream as one source.
                let src = model_source(&path)?;
                return gpu::load_engine_from(g, &src, opts, gopts, now_ms, &|_, _| {})
                    .await
                    .map(Some);
            }
            gpu::load_engine_parts(g, bytes, &parts, opts, gopts, now_ms, &|_| {})
                .await
                .map(Some)
        });
        match loaded {
            Ok(Some(engine)) => return Ok(engine),
            Ok(None) => {}
            Err(e) if backend == "gpu" => return Err(CliError::Engine(e)),
            Err(e) => eprintln!("GPU unavailable ({e}); using the CPU"),
        }
    }
    let par: Box<dyn Parallel> = Box::new(ThreadPool::new(threads.max(1)));
    let (bytes, parts) = read()?;
    Ok(Engine::load_cpu_parts(bytes, &parts, opts, par, now_ms)?)
}

/// A model file read by ranges (the streamed GPU load).
struct FileSource {
    file: std::sync::Mutex<std::fs::File>,
    len: u64,
}

impl FileSource {
    fn open(path: &str) -> Result<FileSource, Error> {
        let io = |e: std::io::Error| Error::Io(format!("cannot read model '{path}': {e}"));
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Ok(FileSource {
            file: std::sync::Mutex::new(file),
            len,
        })
    }
}

impl webgguf::source::Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read(
        &self,
        offset: u64,
        len: usize,
    ) -> webgguf::engine::LocalFuture<'_, webgguf::Result<Vec<u8>>> {
        use std::io::{Read, Seek, SeekFrom};
        let r = (|| {
            let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
            f.seek(SeekFrom::Start(offset))?;
            let mut v = vec![0; len];
            f.read_exact(&mut v)?;
            Ok(v)
        })()
        .map_err(|e: std::io::Error| Error::Io(format!("reading the model at {offset}: {e}")));
        Box::pin(std::future::ready(r))
    }
}

fn sampler_params(args: &Args) -> Result<SamplerParams, String> {
    let d = SamplerParams::default();
    Ok(SamplerParams {
        temperature: args.num(&["--temp"], 0.0)?,
        top_k: args.num(&["--top-k"], d.top_k)?,
        top_p: args.num(&["--top-p"], d.top_p)?,
        min_p: args.num(&["--min-p"], d.min_p)?,
        repeat_penalty: args.num(&["--repeat-penalty"], d.repeat_penalty)?,
        repeat_last_n: d.repeat_last_n,
        seed: args.num(&["--seed"], d.seed)?,
    })
}

fn cmd_generate(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.extend([
        "-p",
        "--prompt",
        "-n",
        "--temp",
        "--top-k",
        "--top-p",
        "--min-p",
        "--repeat-penalty",
        "--seed",
        "--json-schema",
    ]);
    args.check(&allowed)?;
    // A JSON schema file (or `object` for any JSON object) constrains the
    // output through the grammar (src/grammar.rs).
    let grammar = match args.str(&["--json-schema"]) {
        None => None,
        Some("object") => Some(webgguf::grammar::GrammarSpec::JsonObject),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            let v = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
            Some(webgguf::grammar::GrammarSpec::JsonSchema(v))
        }
    };
    let prompt = args
        .str(&["-p", "--prompt"])
        .ok_or("generate needs -p PROMPT")?
        .to_string();
    let n: usize = args.num(&["-n"], 128)?;
    let params = sampler_params(args)?;
    let json = args.flag("--json");
    let mut engine = load(args)?;
    let ids = engine.prompt_ids(&prompt);
    let stdout = std::io::stdout();
    let print = |piece: &str| {
        if !json {
            let mut out = stdout.lock();
            let _ = out.write_all(piece.as_bytes());
            let _ = out.flush();
        }
    };
    let g: Generation = match &grammar {
        None => block_on(engine.generate(&ids, n, params, &mut |_, piece| {
            print(piece);
            true
        }))?,
        Some(spec) => {
            engine.begin(&ids, n, params)?;
            engine.constrain(spec)?;
            while let Some((_, piece)) = block_on(engine.next_token())? {
                print(&piece);
            }
            engine.finish()?
        }
    };
    if json {
        let v = json!({
            "prompt_ids": g.prompt_ids,
            "generated_ids": g.generated_ids,
            "text": g.text,
            "backend": engine.backend_name(),
            "prefill_tok_s": g.prefill_tok_s(),
            "decode_tok_s": g.decode_tok_s(),
            "grammar_ms": engine.last_grammar_ms,
        });
        println!("{v}");
    } else {
        println!();
        eprintln!(
            "[{} prompt tokens, {} generated, prefill {:.1} tok/s, decode {:.1} tok/s, backend {}, stop: {}]",
            g.prompt_ids.len(),
            g.generated_ids.len(),
            g.prefill_tok_s(),
            g.decode_tok_s(),
            engine.backend_name(),
            g.stop.as_str()
        );
    }
    Ok(())
}

fn parse_ids(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .map_err(|_| format!("--tokens: '{x}' is not a token id"))
        })
        .collect()
}

fn cmd_logits(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.extend(["--tokens", "--start", "--top"]);
    args.check(&allowed)?;
    let tokens = parse_ids(args.str(&["--tokens"]).ok_or("logits needs --tokens")?)?;
    let start: usize = args.num(&["--start"], 0)?;
    let top: usize = args.num(&["--top"], 10)?;
    let mut engine = load(args)?;
    let steps = block_on(engine.logits_at(&tokens, start, top))?;
    let steps: Vec<Vec<serde_json::Value>> = steps
        .iter()
        .map(|s| s.iter().map(|&(id, l)| json!([id, l])).collect())
        .collect();
    println!("{}", json!({ "steps": steps }));
    Ok(())
}

fn cmd_tokenize(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.extend(["--text", "--no-special"]);
    args.check(&allowed)?;
    let text = args.str(&["--text"]).ok_or("tokenize needs --text")?;
    let special = !args.flag("--no-special");
    let engine = load(args)?;
    let ids = engine.tokenizer.encode(text, special, special);
    if args.flag("--json") {
        println!("{}", json!({ "ids": ids }));
    } else {
        for id in ids {
            println!(
                "{id:>7} {:?}",
                engine.tokenizer.token_text(id).unwrap_or("")
            );
        }
    }
    Ok(())
}

fn cmd_bench(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.extend([
        "-p",
        "-n",
        "-r",
        "-d",
        "--temp",
        "--top-k",
        "--top-p",
        "--min-p",
        "--repeat-penalty",
        "--seed",
    ]);
    args.check(&allowed)?;
    let p: usize = args.num(&["-p"], 512)?;
    let n: usize = args.num(&["-n"], 128)?;
    let reps: usize = args.num(&["-r"], 3)?.max(1);
    // Like llama-bench, `-d` takes a comma list: one load, a run per depth.
    let depths = match args.str(&["-d"]) {
        Some(d) => parse_depths(d)?,
        None => vec![0],
    };
    let params = sampler_params(args)?;
    let mut engine = load(args)?;
    let json = args.flag("--json");
    if !json {
        println!("| model | backend | test | tok/s |");
        println!("| --- | --- | --- | ---: |");
    }
    for depth in depths {
        let b = block_on(engine.bench_sampled(p, n, reps, params, depth))?;
        if json {
            let (pp_med, tg_med) = b.median_tok_s(p, n);
            println!(
                "{}",
                json!({
                    "pp_tok_s": b.pp_tok_s, "tg_tok_s": b.tg_tok_s, "backend": engine.backend_name(),
                    "pp_rep_ms": b.pp_rep_ms, "tg_rep_ms": b.tg_rep_ms,
                    "pp_median_tok_s": pp_med, "tg_median_tok_s": tg_med,
                    "threads": args.num(&["--threads", "-t"], ThreadPool::available())?,
                    "pp": p, "tg": n, "depth": depth, "reps": reps, "temp": params.temperature,
                    "model": engine.info.name, "weight_bytes_per_token": engine.info.weight_bytes_per_token,
                })
            );
        } else {
            let name = engine.info.name.clone().unwrap_or_default();
            let be = engine.backend_name();
            println!("| {name} | {be} | pp{p} | {:.1} |", b.pp_tok_s);
            let at = if depth > 0 {
                format!(" @ d{depth}")
            } else {
                String::new()
            };
            println!("| {name} | {be} | tg{n}{at} | {:.1} |", b.tg_tok_s);
        }
    }
    Ok(())
}

/// `-d`'s value: one depth or a comma list of them.
fn parse_depths(s: &str) -> Result<Vec<usize>, String> {
    s.split(',')
        .map(|x| {
            x.trim().parse::<usize>().map_err(|_| {
                format!("-d: '{x}' is not a depth (a token count, or a comma list of them)")
            })
        })
        .collect()
}

fn cmd_gpu_profile(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.extend([
        "-n",
        "-d",
        "--shaders",
        "--touch",
        "--touch-bufs",
        "--touch-one",
    ]);
    args.check(&allowed)?;
    let n: usize = args.num(&["-n"], 64)?;
    let depth: usize = args.num(&["-d"], 0)?;
    let touch = gpu::profile::Touch {
        mib: args.num(&["--touch"], 0)?,
        bufs: args.num(&["--touch-bufs"], 32)?.max(1),
        one: args.flag("--touch-one"),
    };
    let shader_dir = args.str(&["--shaders"]).map(std::path::PathBuf::from);
    let bytes = match args.str(&["--synthetic"]) {
        Some(spec) => {
            let (shape, ty) = webgguf::synthetic::parse_spec(spec)?;
            webgguf::synthetic::build(&shape, ty, 1)?
        }
        None => read_model(&model_path(args))?,
    };
    let opts = EngineOptions {
        // A context that holds the depth, unless --ctx says otherwise.
        context: args.num(&["--ctx"], if depth > 0 { depth + 1 } else { 0 })?,
        ..EngineOptions::default()
    };
    let (v, shaders) = block_on(async {
        let (g, shaders) = gpu::Gpu::new().await?.recording_shaders();
        let v =
            gpu::profile::profile_model(g, bytes, opts, gpu_options_from_env(), n, depth, touch)
                .await?;
        Ok::<_, webgguf::Error>((v, shaders))
    })?;
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    if let Some(dir) = shader_dir {
        let list = shaders.lock().map(|l| l.clone()).unwrap_or_default();
        write_shaders(&dir, &list)?;
    }
    Ok(())
}

/// Each distinct (source, entry point) of `list` as DIR/NNN-LABEL.wgsl,
/// and DIR/index.tsv: file, label, entry point.
fn write_shaders(dir: &std::path::Path, list: &[gpu::ShaderRecord]) -> CliResult {
    let io = |e: std::io::Error| CliError::Usage(format!("--shaders {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut seen = std::collections::HashSet::new();
    let mut index = String::new();
    for r in list {
        if !seen.insert((r.source.as_str(), r.entry.as_str())) {
            continue;
        }
        let name: String = r
            .label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let file = format!("{:03}-{name}.wgsl", seen.len());
        std::fs::write(dir.join(&file), &r.source).map_err(io)?;
        index.push_str(&format!("{file}\t{}\t{}\n", r.label, r.entry));
    }
    std::fs::write(dir.join("index.tsv"), index).map_err(io)?;
    eprintln!("{} shaders written to {}", seen.len(), dir.display());
    Ok(())
}

fn cmd_info(args: &Args) -> CliResult {
    let mut allowed = COMMON.to_vec();
    allowed.push("--context");
    args.check(&allowed)?;
    // The plan first, from the header alone: it holds even where the load
    // below would not fit.
    let plan = match args.str(&["--synthetic"]) {
        Some(_) => None,
        None => Some(memory_plan(args)?),
    };
    if args.flag("--json") {
        let plan = plan.ok_or("--json prints the memory plan of a model file (-m)")?;
        println!(
            "{}",
            serde_json::to_string_pretty(&plan).unwrap_or_default()
        );
        return Ok(());
    }
    if let Some(p) = &plan {
        print_plan(p);
    }
    let engine = load(args)?;
    let c = &engine.config;
    let i = &engine.info;
    println!("name:          {}", i.name.as_deref().unwrap_or("?"));
    println!("architecture:  {}: {}", c.arch().name(), c.spec.summary());
    println!("parameters:    {:.1} M", i.n_params as f64 / 1e6);
    println!(
        "shape:         dim {}, {} layers, {} heads / {} kv heads (head {}), ffn {}, vocab {}",
        c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size
    );
    println!(
        "rope:          {} dims; norm eps {}; context {} (trained) / {} (allocated)",
        c.rope_dim,
        c.norm_eps,
        c.train_ctx,
        engine.context_len()
    );
    println!("tied embeddings: {}", c.tied_embeddings);
    println!(
        "weights read per decoded token: {:.1} MB",
        i.weight_bytes_per_token as f64 / 1e6
    );
    println!("tensor types:  {}", i.file_type);
    println!(
        "tokenizer:     {} (pre: {}), {} tokens, BOS {:?} (added: {}), EOS {:?}",
        i.tokenizer_model,
        i.tokenizer_pre.as_deref().unwrap_or("-"),
        engine.tokenizer.vocab_size(),
        engine.tokenizer.bos(),
        engine.tokenizer.add_bos(),
        engine.tokenizer.eos()
    );
    println!("backend:       {}", engine.backend_name());
    if let Some(d) = engine.backend_device() {
        println!("device:        {d}");
    }
    let held = engine.memory();
    if let Some(m) = held.gpu {
        println!("memory held:   GPU {}", gpu_line(&m));
    }
    if let Some(m) = held.cpu {
        println!("memory held:   CPU {}", cpu_line(&m));
    }
    println!(
        "chat template: {}\n{}",
        match i.chat_template_origin {
            ChatTemplateOrigin::File => "from the file",
            fallback => fallback.label(),
        },
        i.chat_template_source()
    );
    println!("tensors:");
    for (name, ty, dims) in &i.tensors {
        println!("  {name:<32} {ty:<7} {dims:?}");
    }
    Ok(())
}

/// `synth PRESET:TYPE OUT.gguf`: a synthetic model written to disk.
fn cmd_synth(raw: &[String]) -> CliResult {
    let [spec, out] = raw else {
        return Err("synth needs PRESET:TYPE and OUT.gguf".into());
    };
    let (shape, ty) = webgguf::synthetic::parse_spec(spec)?;
    let bytes = webgguf::synthetic::build(&shape, ty, 1)?;
    std::fs::write(out, &bytes).map_err(|e| Error::Io(format!("cannot write '{out}': {e}")))?;
    println!("{out}: {} bytes ({spec})", bytes.len());
    Ok(())
}

/// `split --max-tensors N IN.gguf OUT_PREFIX`: the positional arguments
/// do not fit `Args`, so this command reads its own.
fn cmd_split(raw: &[String]) -> CliResult {
    let mut max = None;
    let mut files = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        match raw[i].as_str() {
            "--max-tensors" => {
                let v = raw.get(i + 1).ok_or("--max-tensors needs a value")?;
                let n: usize = v
                    .parse()
                    .map_err(|_| format!("--max-tensors expects a number, got '{v}'"))?;
                max = Some(n);
                i += 2;
            }
            a if a.starts_with('-') => return Err(format!("unknown option {a}").into()),
            a => {
                files.push(a.to_string());
                i += 1;
            }
        }
    }
    let max = max.ok_or("split needs --max-tensors N")?;
    if max == 0 {
        return Err("--max-tensors must be at least 1".into());
    }
    let [input, prefix] = &files[..] else {
        return Err("split needs IN.gguf and OUT_PREFIX".into());
    };
    let bytes = read_model(input)?;
    let g = Gguf::parse(&bytes)?;
    let parts = write::split(&g, &bytes, max)?;
    let n = parts.len();
    for (i, part) in parts.iter().enumerate() {
        let name = write::split_name(prefix, i, n);
        std::fs::write(&name, part)
            .map_err(|e| Error::Io(format!("cannot write '{name}': {e}")))?;
        println!("{name}: {} bytes", part.len());
    }
    println!(
        "{} tensors in {n} files (at most {max} each)",
        g.tensors.len()
    );
    Ok(())
}

/// The memory plan of the model file `args` names, from its header, with
/// the options `load` would use, against WebGPU's default limits.
fn memory_plan(args: &Args) -> Result<gpu::MemoryPlan, CliError> {
    let path = model_path(args);
    let src = model_source(&path)?;
    let opts = gpu::PlanOptions {
        engine: EngineOptions {
            context: args.num(&["--ctx", "--context"], 0)?,
            ..EngineOptions::default()
        },
        gpu: gpu_options_from_env(),
        ..gpu::PlanOptions::default()
    };
    Ok(block_on(gpu::plan_from(&src, &opts))?)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

fn gpu_line(m: &webgguf::memory::GpuMemory) -> String {
    format!(
        "{} (weights {}, KV cache {}, scratch {}); largest buffer {}; {} buffers",
        mib(m.total),
        mib(m.weights),
        mib(m.kv_cache),
        mib(m.scratch),
        mib(m.largest_binding),
        m.buffers
    )
}

fn cpu_line(m: &webgguf::memory::CpuMemory) -> String {
    format!(
        "{} (file {}, KV cache {}, scratch {})",
        mib(m.total),
        mib(m.file),
        mib(m.kv_cache),
        mib(m.scratch)
    )
}

fn print_plan(p: &gpu::MemoryPlan) {
    let l = webgguf::memory::GpuLimits::WEBGPU_DEFAULT;
    println!(
        "memory plan:   context {}; against WebGPU's default limits (binding {}, buffer {})",
        p.context,
        mib(l.max_storage_buffer_binding_size),
        mib(l.max_buffer_size)
    );
    let verdict = |e: &Option<String>| match e {
        None => "fits".to_string(),
        Some(e) => format!("does not fit: {e}"),
    };
    match &p.gpu {
        Some(m) => println!("  GPU          {}: {}", gpu_line(m), verdict(&p.gpu_error)),
        None => println!("  GPU          {}", verdict(&p.gpu_error)),
    }
    println!(
        "  CPU (wasm)   {}: {}",
        cpu_line(&p.cpu),
        verdict(&p.cpu_error)
    );
}

fn cmd_gpu_bandwidth(args: &Args) -> CliResult {
    args.check(&["--mib", "-r", "--json", "--shapes"])?;
    let mib: u64 = args.num(&["--mib"], 1024)?;
    let reps: usize = args.num(&["-r"], 10)?;
    let bytes = mib << 20;
    let shapes: Vec<ReadShape> = match args.str(&["--shapes"]) {
        None => Vec::new(),
        Some("all") => ReadShape::all(),
        Some(list) => list
            .split(',')
            .map(ReadShape::parse)
            .collect::<Result<_, _>>()?,
    };
    let (copy, kernel_copy, read, shaped, gpu) = block_on(async {
        let gpu = gpu::Gpu::new().await?;
        let copy = gpu.copy_bandwidth(bytes, reps, now_ms).await?;
        let kernel_copy = gpu.kernel_copy_bandwidth(bytes, reps, now_ms).await?;
        let read = gpu.read_bandwidth(bytes, reps, now_ms).await?;
        let shaped = if shapes.is_empty() {
            (0, Vec::new())
        } else {
            gpu.read_bandwidth_shapes(bytes, reps, &shapes, now_ms)
                .await?
        };
        Ok::<_, Error>((copy, kernel_copy, read, shaped, gpu))
    })?;
    if args.flag("--json") {
        println!(
            "{}",
            json!({
                "adapter": gpu.adapter.name, "bytes": copy.0, "reps": reps,
                "gb_s_read_plus_write": copy.1,
                "kernel_bytes": read.0,
                "kernel_copy_gb_s_read_plus_write": kernel_copy.1,
                "kernel_read_gb_s": read.1,
                "kernel_copy_timed_by": kernel_copy.2.name(),
                "kernel_read_timed_by": read.2.name(),
                "shapes": shapes.iter().zip(&shaped.1).map(|(s, (groups, gb_s, t))| json!({
                    "order": s.order as u32, "wg": s.wg, "loads": s.loads, "turns": s.turns,
                    "groups": groups, "read_gb_s": gb_s, "timed_by": t.name(),
                })).collect::<Vec<_>>(),
            })
        );
    } else {
        let in_mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        println!("adapter: {}", gpu.summary());
        println!(
            "buffer copy: {reps} copies of {:.0} MiB: {:.1} GB/s (read + write: 2 x size per copy)",
            in_mib(copy.0),
            copy.1
        );
        println!(
            "kernel copy: {reps} copies of {:.0} MiB: {:.1} GB/s (read + write: 2 x size per copy; {}, after a warm-up)",
            in_mib(kernel_copy.0),
            kernel_copy.1,
            kernel_copy.2.name()
        );
        println!(
            "kernel read: {reps} reads of {:.0} MiB: {:.1} GB/s (bytes read, once per read; {}, after a warm-up)",
            in_mib(read.0),
            read.1,
            read.2.name()
        );
        if read.0 < bytes {
            println!(
                "the kernels' buffers are capped at the storage binding limit ({:.0} MiB, {mib} MiB asked)",
                in_mib(gpu.binding_limit())
            );
        }
        for (s, (groups, gb_s, _)) in shapes.iter().zip(&shaped.1) {
            let name = match s.order {
                gpu::ReadOrder::ReadSum => "sum (read_sum)".to_string(),
                o => format!("{}:{}:{}:{}", o as u32, s.wg, s.loads, s.turns),
            };
            println!("shaped read {name} ({groups} workgroups): {gb_s:.1} GB/s");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_resolve_to_setup_files_and_paths_stay_paths() {
        let cache = concat!(env!("CARGO_MANIFEST_DIR"), "/.cache/");
        assert_eq!(
            resolve_model("smollm2"),
            format!("{cache}SmolLM2-135M-Instruct.Q4_1.gguf")
        );
        assert_eq!(
            resolve_model("gemma3-270m"),
            format!("{cache}gemma-3-270m-q4_k_m.gguf")
        );
        assert_eq!(resolve_model("dir/m.gguf"), "dir/m.gguf");
        assert_eq!(resolve_model("gemma3"), "gemma3");
        let args = Args::parse(&["--model".into(), "gemma3-270m".into()]).unwrap();
        assert_eq!(model_path(&args), resolve_model("gemma3-270m"));
    }

    #[test]
    fn bench_depths_take_one_value_or_a_list() {
        assert_eq!(parse_depths("2048"), Ok(vec![2048]));
        assert_eq!(parse_depths("0, 512,8192"), Ok(vec![0, 512, 8192]));
        for bad in ["512,x", "", "1,,2", "-1"] {
            let e = parse_depths(bad).unwrap_err();
            assert!(e.starts_with("-d: '"), "{bad}: {e}");
        }
    }
}
