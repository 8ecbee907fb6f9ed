//! Bad input gives a typed error that names the problem, never a panic.
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use std::time::Instant;

use common::gguf_writer::{tiny_llama, tiny_llama_with, Val};
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

/// Byte position of metadata entry `key`'s value-type tag (the value follows).
fn kv_type_pos(bytes: &[u8], key: &str) -> usize {
    let mut needle = (key.len() as u64).to_le_bytes().to_vec();
    needle.extend(key.as_bytes());
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("no key {key}"));
    at + needle.len()
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Load, expecting an error; it must come back quickly (no huge allocation
/// or loop sized by a corrupt count).
fn load_err(bytes: Vec<u8>) -> Error {
    let t = Instant::now();
    let e = load(bytes).err().expect("the malformed file must not load");
    assert!(
        t.elapsed().as_secs_f64() < 2.0,
        "rejecting took {:?}",
        t.elapsed()
    );
    e
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
    // The message lists what does load.
    for a in ["llama", "qwen2", "qwen3", "gemma3", "phi3"] {
        assert!(e.to_string().contains(a), "{e}");
    }
}

/// A rope scaling type we do not implement is an `Unsupported` error that
/// names it, never silently run unscaled.
#[test]
fn unimplemented_rope_scaling_is_named() {
    for ty in ["yarn", "longrope", "something-new"] {
        let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
            kv.push(("llama.rope.scaling.type", Val::Str(ty.into())));
            kv.push(("llama.rope.scaling.factor", Val::F32(4.0)));
        });
        let e = load_err(bytes);
        assert_eq!(e.code(), "Unsupported", "{e}");
        assert!(e.to_string().contains(ty), "{e}");
    }
    // Linear scaling is implemented.
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
        kv.push(("llama.rope.scaling.type", Val::Str("linear".into())));
        kv.push(("llama.rope.scaling.factor", Val::F32(4.0)));
    });
    load(bytes).expect("linear rope scaling loads");
    // Phi-3's longrope arrives as factor tensors rather than a type.
    let (bytes, _) = tiny_llama_with("phi3", 4, |_, tensors| {
        tensors.push(common::gguf_writer::Tensor {
            name: "rope_factors_long.weight".into(),
            dims: vec![4],
            ty: 0,
            data: vec![0; 16],
        });
    });
    let e = load_err(bytes);
    assert_eq!(e.code(), "Unsupported", "{e}");
    assert!(e.to_string().contains("longrope"), "{e}");
}

/// Gemma 3 needs its window: without `sliding_window` it is not guessed.
#[test]
fn gemma3_without_its_window() {
    let (bytes, _) = tiny_llama_with("gemma3", 4, |_, _| {});
    let e = load_err(bytes);
    assert_eq!(
        e,
        Error::MissingKey("gemma3.attention.sliding_window".into())
    );
}

/// A head size over 512 derived as dim / heads (no key_length) is an error,
/// not a panic in the CPU attention's fixed per-head buffers. The tensors
/// match the shape, so nothing else stops the load.
#[test]
fn head_size_over_512_is_an_error() {
    let (dim, ff) = (1024u64, 32u64);
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, tensors| {
        for (k, v) in kv.iter_mut() {
            match *k {
                "llama.embedding_length" => *v = Val::U32(dim as u32),
                "llama.attention.head_count" => *v = Val::U32(1),
                "llama.feed_forward_length" => *v = Val::U32(ff as u32),
                _ => {}
            }
        }
        for t in tensors.iter_mut() {
            t.dims = t
                .dims
                .iter()
                .map(|&d| match d {
                    32 => dim,
                    64 => ff,
                    d => d,
                })
                .collect();
            t.data = vec![0; 4 * t.dims.iter().product::<u64>() as usize];
        }
    });
    let e = load_err(bytes);
    assert!(
        matches!(e, Error::Malformed(_)) && e.to_string().contains("head size 1024"),
        "{e}"
    );
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

#[test]
fn gguf_version_1() {
    let (mut bytes, _) = tiny_llama("llama", 4);
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    let e = load_err(bytes);
    assert_eq!(e, Error::UnsupportedVersion(1));
    assert!(e.to_string().contains("version 1"), "{e}");
}

#[test]
fn huge_metadata_array_count() {
    let (mut bytes, _) = tiny_llama("llama", 4);
    // type tag (array), element type (string), then the count.
    let at = kv_type_pos(&bytes, "tokenizer.ggml.tokens") + 8;
    for count in [1u64 << 60, u64::MAX, 1 << 20] {
        put_u64(&mut bytes, at, count);
        let e = load_err(bytes.clone());
        assert!(matches!(e, Error::Truncated(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("tokenizer.ggml.tokens"), "{msg}");
        assert!(msg.contains(&format!("{count} elements")), "{msg}");
    }
}

#[test]
fn metadata_string_past_the_end() {
    let (mut bytes, _) = tiny_llama("llama", 4);
    // The value string of general.architecture.
    let at = kv_type_pos(&bytes, "general.architecture") + 4;
    for len in [bytes.len() as u64, 1 << 40, u64::MAX] {
        put_u64(&mut bytes, at, len);
        let e = load_err(bytes.clone());
        assert!(matches!(e, Error::Truncated(_)), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains("'general.architecture'"), "{msg}");
        assert!(msg.contains(&format!("string length {len}")), "{msg}");
    }
    // A key's own length.
    let (mut bytes, _) = tiny_llama("llama", 4);
    put_u64(&mut bytes, 24, 1 << 50);
    let e = load_err(bytes);
    assert!(matches!(e, Error::Truncated(_)), "{e:?}");
    assert!(e.to_string().contains("metadata key #0"), "{e}");
}

#[test]
fn tensor_name_past_the_end() {
    let (mut bytes, records) = tiny_llama("llama", 4);
    put_u64(&mut bytes, records[3], 1 << 40);
    let e = load_err(bytes);
    assert!(matches!(e, Error::Truncated(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("tensor #3 name"), "{msg}");
    assert!(msg.contains("string length 1099511627776"), "{msg}");
}

#[test]
fn misaligned_tensor_offset() {
    let (mut bytes, records) = tiny_llama("llama", 4);
    let (_, off_at) = type_and_offset_pos(&bytes, records[2]);
    let off = u64::from_le_bytes(bytes[off_at..off_at + 8].try_into().unwrap());
    put_u64(&mut bytes, off_at, off + 4);
    let e = load_err(bytes);
    assert!(matches!(e, Error::TensorOutOfBounds(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("blk.0.attn_norm.weight"), "{msg}");
    assert!(msg.contains("not aligned to 32 bytes"), "{msg}");
}

#[test]
fn tensor_dimensions_overflow() {
    let (bytes, records) = tiny_llama("llama", 4);
    // token_embd.weight has two dimensions, just after its name.
    let name_len = u64::from_le_bytes(bytes[records[0]..records[0] + 8].try_into().unwrap());
    let dims_at = records[0] + 8 + name_len as usize + 4;
    // The element count overflows u64 ...
    let mut b = bytes.clone();
    put_u64(&mut b, dims_at, 1 << 32);
    put_u64(&mut b, dims_at + 8, 1 << 32);
    let e = load_err(b);
    assert!(matches!(e, Error::Malformed(_)), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("token_embd.weight"), "{msg}");
    assert!(msg.contains("overflow"), "{msg}");
    // ... or only the byte size does (2^62 f32 elements).
    let mut b = bytes;
    put_u64(&mut b, dims_at, 1 << 31);
    put_u64(&mut b, dims_at + 8, 1 << 31);
    let e = load_err(b);
    assert!(
        matches!(e, Error::Malformed(_) | Error::TensorOutOfBounds(_)),
        "{e:?}"
    );
    assert!(e.to_string().contains("overflow"), "{e}");
}

#[test]
fn missing_required_tensor() {
    let (bytes, _) = tiny_llama_with("llama", 4, |_, tensors| {
        tensors.retain(|t| t.name != "blk.0.ffn_up.weight")
    });
    let e = load_err(bytes);
    assert_eq!(e, Error::MissingTensor("blk.0.ffn_up.weight".into()));
    assert!(e.to_string().contains("'blk.0.ffn_up.weight'"), "{e}");
}

#[test]
fn missing_required_key() {
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
        kv.retain(|(k, _)| *k != "llama.block_count")
    });
    let e = load_err(bytes);
    assert_eq!(e, Error::MissingKey("llama.block_count".into()));
    assert!(e.to_string().contains("'llama.block_count'"), "{e}");
}

#[test]
fn required_key_of_the_wrong_type() {
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
        for (k, v) in kv.iter_mut() {
            if *k == "llama.block_count" {
                *v = Val::Str("one".into());
            }
        }
    });
    let e = load_err(bytes);
    assert_eq!(e, Error::MissingKey("llama.block_count".into()));
    assert!(e.to_string().contains("invalid metadata key"), "{e}");
    // A float where the architecture string belongs.
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
        for (k, v) in kv.iter_mut() {
            if *k == "general.architecture" {
                *v = Val::F32(1.0);
            }
        }
    });
    let e = load_err(bytes);
    assert_eq!(e, Error::MissingKey("general.architecture".into()));
    // The vocabulary as a number, not a string array.
    let (bytes, _) = tiny_llama_with("llama", 4, |kv, _| {
        for (k, v) in kv.iter_mut() {
            if *k == "tokenizer.ggml.tokens" {
                *v = Val::U32(4);
            }
        }
    });
    let e = load_err(bytes);
    assert!(matches!(e, Error::Tokenizer(_)), "{e:?}");
    assert!(e.to_string().contains("tokenizer.ggml.tokens"), "{e}");
}

#[test]
fn huge_counts_in_the_header() {
    let (bytes, _) = tiny_llama("llama", 4);
    for (at, what) in [(8, "tensors"), (16, "metadata entries")] {
        for count in [1u64 << 62, u64::MAX, 100_000] {
            let mut b = bytes.clone();
            put_u64(&mut b, at, count);
            let e = load_err(b);
            assert!(matches!(e, Error::Truncated(_)), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains(&format!("{count} {what}")), "{msg}");
        }
    }
}
