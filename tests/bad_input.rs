//! Bad input gives a typed error that names the problem, never a panic.

mod common;

use common::gguf_writer::tiny_llama;
use webgguf::cpu::Serial;
use webgguf::engine::{Engine, EngineOptions};
use webgguf::Error;

fn load(bytes: Vec<u8>) -> Result<Engine, Error> {
    Engine::load_cpu(
        bytes,
        EngineOptions::default(),
        Box::new(Serial),
        common::now_ms,
    )
}

/// Byte position of a tensor record's (type, offset) fields.
fn type_and_offset_pos(bytes: &[u8], record: usize) -> (usize, usize) {
    let name_len = u64::from_le_bytes(bytes[record..record + 8].try_into().unwrap()) as usize;
    let nd_at = record + 8 + name_len;
    let nd = u32::from_le_bytes(bytes[nd_at..nd_at + 4].try_into().unwrap()) as usize;
    let ty_at = nd_at + 4 + 8 * nd;
    (ty_at, ty_at + 4)
}

#[test]
fn the_tiny_model_itself_loads_and_runs() {
    let (bytes, _) = tiny_llama("llama", 4);
    let mut e = load(bytes).expect("the well-formed file loads");
    let g =
        pollster::block_on(e.generate(&[1, 3], 3, Default::default(), &mut |_, _| true)).unwrap();
    assert!(!g.generated_ids.is_empty());
}

#[test]
fn truncated_file() {
    let (bytes, _) = tiny_llama("llama", 4);
    for cut in [0, 5, 23, 40, 200, bytes.len() / 2, bytes.len() - 1] {
        match load(bytes[..cut].to_vec()) {
            Err(Error::Truncated(_)) | Err(Error::TensorOutOfBounds(_)) => {}
            other => panic!(
                "cut at {cut}: expected a truncation error, got {:?}",
                other.err()
            ),
        }
    }
    let e = load(bytes[..100].to_vec()).err().unwrap();
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn wrong_magic() {
    let (mut bytes, _) = tiny_llama("llama", 4);
    bytes[..4].copy_from_slice(b"GGML");
    let e = load(bytes).err().unwrap();
    assert!(matches!(e, Error::BadMagic(_)), "{e:?}");
    assert!(e.to_string().contains("not a GGUF file"), "{e}");
}

#[test]
fn old_gguf_version() {
    let (mut bytes, _) = tiny_llama("llama", 4);
    bytes[4..8].copy_from_slice(&2u32.to_le_bytes());
    let e = load(bytes).err().unwrap();
    assert_eq!(e, Error::UnsupportedVersion(2));
    assert!(e.to_string().contains("version 2"), "{e}");
}

#[test]
fn tensor_offset_past_the_end() {
    let (mut bytes, records) = tiny_llama("llama", 4);
    let (_, off_at) = type_and_offset_pos(&bytes, records[1]);
    bytes[off_at..off_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = load(bytes).err().unwrap();
    assert!(matches!(e, Error::TensorOutOfBounds(_)), "{e:?}");
    assert!(e.to_string().contains("output_norm.weight"), "{e}");
}

#[test]
fn overlapping_tensors() {
    let (mut bytes, records) = tiny_llama("llama", 4);
    let (_, off_at) = type_and_offset_pos(&bytes, records[1]);
    bytes[off_at..off_at + 8].copy_from_slice(&0u64.to_le_bytes());
    let e = load(bytes).err().unwrap();
    assert!(e.to_string().contains("overlap"), "{e}");
}

#[test]
fn unknown_architecture() {
    let (bytes, _) = tiny_llama("mamba", 4);
    let e = load(bytes).err().unwrap();
    assert_eq!(e, Error::UnknownArchitecture("mamba".into()));
    assert!(e.to_string().contains("'mamba'"), "{e}");
}

#[test]
fn unsupported_tensor_type() {
    let (mut bytes, records) = tiny_llama("llama", 4);
    // I8 (24): a real ggml type that we do not compute with.
    let (ty_at, _) = type_and_offset_pos(&bytes, records[0]);
    bytes[ty_at..ty_at + 4].copy_from_slice(&24u32.to_le_bytes());
    let e = load(bytes.clone()).err().unwrap();
    assert!(matches!(e, Error::UnsupportedTensorType { .. }), "{e:?}");
    assert!(e.to_string().contains("token_embd.weight"), "{e}");
    // An id ggml never defined.
    bytes[ty_at..ty_at + 4].copy_from_slice(&99u32.to_le_bytes());
    let e = load(bytes).err().unwrap();
    assert!(matches!(e, Error::UnsupportedTensorType { .. }), "{e:?}");
    assert!(e.to_string().contains("99"), "{e}");
}

#[test]
fn vocabulary_disagrees_with_embedding() {
    let (bytes, _) = tiny_llama("llama", 6);
    let e = load(bytes).err().unwrap();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e:?}");
    assert!(e.to_string().contains("tokenizer has 4 tokens"), "{e}");
}

#[test]
fn context_overflow_and_bad_token_ids() {
    let (bytes, _) = tiny_llama("llama", 4);
    let opts = EngineOptions {
        context: 8,
        ..EngineOptions::default()
    };
    let mut e = Engine::load_cpu(bytes, opts, Box::new(Serial), common::now_ms).unwrap();
    let err = pollster::block_on(e.generate(&[1; 9], 1, Default::default(), &mut |_, _| true))
        .err()
        .unwrap();
    assert_eq!(
        err,
        Error::ContextOverflow {
            needed: 9,
            context: 8
        }
    );
    let err = pollster::block_on(e.generate(&[1, 77], 1, Default::default(), &mut |_, _| true))
        .err()
        .unwrap();
    assert_eq!(err, Error::BadToken { id: 77, vocab: 4 });
    // Generation that reaches the end of the window stops cleanly.
    let g =
        pollster::block_on(e.generate(&[1, 3], 100, Default::default(), &mut |_, _| true)).unwrap();
    assert!(g.generated_ids.len() <= 7);
}
