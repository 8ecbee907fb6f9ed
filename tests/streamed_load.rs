//! The streamed GPU load (`gpu::load_engine_from`): header from a prefix,
//! small tensors next, then each matrix from the source into its GPU
//! buffer in bounded chunks. It must give the same model as the in-memory
//! load, bit for bit, reading no chunk larger than asked.
#![cfg(all(not(target_arch = "wasm32"), feature = "gpu"))]

mod common;

use std::cell::Cell;

use webgguf::engine::{EngineOptions, LocalFuture};
use webgguf::gpu::{self, GpuOptions};
use webgguf::quant::GgmlType;
use webgguf::source::{Source, FIRST_READ};
use webgguf::synthetic::{self, Shape};

/// A source in memory that counts its reads.
struct Counting {
    bytes: Vec<u8>,
    reads: Cell<usize>,
    read_bytes: Cell<u64>,
    largest: Cell<usize>,
}

impl Source for Counting {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, webgguf::Result<Vec<u8>>> {
        self.reads.set(self.reads.get() + 1);
        self.read_bytes.set(self.read_bytes.get() + len as u64);
        self.largest.set(self.largest.get().max(len));
        self.bytes[..].read(offset, len)
    }
}

/// Q4_0 rows of 32 columns are 18 bytes: tensors and fused members of
/// sizes that are not multiples of 4, so writes start and end inside words.
const ODD: Shape = Shape {
    name: "odd",
    arch: "llama",
    dim: 32,
    n_layers: 2,
    n_heads: 2,
    n_kv_heads: 1,
    ffn_dim: 96,
    vocab: 301,
    tied: false,
    rope_base: 10000.0,
    context: 64,
    head_dim: 0,
    window: 0,
};

/// Q3_K, whose 110-byte blocks the GPU holds padded to 112
/// (`gpu::upload::block_pad`): its streamed reads are whole blocks, each
/// padded as it arrives, and fused members start past padded ones.
const K256: Shape = Shape {
    name: "k256",
    dim: 256,
    ffn_dim: 512,
    ..ODD
};

#[test]
fn a_streamed_gpu_load_equals_the_in_memory_one() {
    let Some(gpu) = common::gpu() else { return };
    let mut files = vec![
        (
            "synthetic odd-sized Q4_0".to_string(),
            synthetic::build(&ODD, GgmlType::Q4_0, 9).unwrap(),
        ),
        (
            "synthetic Q3_K".to_string(),
            synthetic::build(&K256, GgmlType::Q3_K, 9).unwrap(),
        ),
    ];
    if let Some(shared) = common::shared() {
        for f in [
            "stories260K.Q8_0.gguf",
            "synthqwen2.Q4_0.gguf",
            "synthphi3.Q8_0.gguf",
            "synthgemma3.Q4_K_S.gguf",
        ] {
            files.push((
                f.into(),
                std::fs::read(shared.join("models").join(f)).unwrap(),
            ));
        }
    }
    let opts = EngineOptions {
        context: 64,
        ..EngineOptions::default()
    };
    for (name, bytes) in files {
        let mut whole = pollster::block_on(gpu::load_engine(
            gpu.clone(),
            bytes.clone(),
            opts,
            GpuOptions::default(),
            common::now_ms,
            &|_| {},
        ))
        .unwrap();
        // An odd chunk (rounded down to a multiple of 4 inside) so that
        // matrices arrive in several pieces.
        let chunk = 1001;
        let src = Counting {
            bytes: bytes.clone(),
            reads: Cell::new(0),
            read_bytes: Cell::new(0),
            largest: Cell::new(0),
        };
        let reports = Cell::new((0u64, 0u64));
        let mut streamed = pollster::block_on(gpu::load_engine_from(
            gpu.clone(),
            &src,
            opts,
            GpuOptions {
                chunk,
                ..GpuOptions::default()
            },
            common::now_ms,
            &|done, total| {
                assert!(done >= reports.get().0, "progress goes forward");
                reports.set((done, total));
            },
        ))
        .unwrap();
        let (done, total) = reports.get();
        assert!(done == total && total > 0, "{name}: {done} of {total}");
        // The header's reads (each at least doubling), the merged small
        // tensors (here small files, where they span little), then chunks.
        let header = webgguf::gguf::Gguf::parse(&bytes).unwrap().data_start as usize;
        assert!(
            src.largest.get()
                <= FIRST_READ
                    .max(chunk)
                    .max(2 * header)
                    .max(small_span(&bytes)),
            "{name}: a read of {}",
            src.largest.get()
        );
        assert!(
            // The header's read may take the whole of a small file, and the
            // small tensors' merged ranges their gaps; the matrices once.
            src.read_bytes.get() <= 2 * bytes.len() as u64 + FIRST_READ as u64,
            "{name}: read {} bytes of a {}-byte file in {} reads",
            src.read_bytes.get(),
            bytes.len(),
            src.reads.get()
        );
        let toks: Vec<u32> = whole
            .prompt_ids("Once upon a time, there")
            .into_iter()
            .collect();
        let a = pollster::block_on(whole.logits_at(&toks, 1, 10)).unwrap();
        let b = pollster::block_on(streamed.logits_at(&toks, 1, 10)).unwrap();
        assert_eq!(a, b, "{name}: logits differ after a streamed load");
        eprintln!(
            "{name}: {} bytes in {} reads, the largest {}",
            src.read_bytes.get(),
            src.reads.get(),
            src.largest.get()
        );
    }
}

/// The bytes from the first small (1-D) tensor to the last: in these tiny
/// files the gaps between norms are under `read_small`'s merge distance,
/// so their one read may span that much (in real models, where matrices
/// are megabytes, it does not).
fn small_span(bytes: &[u8]) -> usize {
    let g = webgguf::gguf::Gguf::parse(bytes).unwrap();
    let small = webgguf::model::Weights::small_tensors(&g);
    let lo = small.iter().map(|t| t.offset).min().unwrap_or(0);
    let hi = small
        .iter()
        .map(|t| t.offset + t.size as u64)
        .max()
        .unwrap_or(0);
    (hi - lo) as usize
}
