//! The GGUF header parsed from a prefix of the file (a loader's first small
//! read, then more while the header runs on) gives the same table as the
//! whole file, and the same errors: every count, length and tensor range is
//! checked against the file's total length, not against the bytes read.
#![cfg(not(target_arch = "wasm32"))] // native shells; the browser tests are tests/web.rs

mod common;

use common::gguf_writer::tiny_llama;
use webgguf::gguf::{Gguf, Header};
use webgguf::quant::GgmlType;
use webgguf::synthetic;
use webgguf::Error;

/// Parse as a streaming loader does: `first` bytes, then at least what the
/// parser asks for (doubling, so a long header takes few reads). Returns
/// the table and the bytes read.
fn parse_growing(file: &[u8], first: usize) -> Result<(Gguf, usize), Error> {
    let mut have = first.min(file.len());
    for _ in 0..64 {
        match Gguf::parse_prefix(&file[..have], file.len() as u64)? {
            Header::Parsed(g) => return Ok((g, have)),
            Header::Need(n) => {
                assert!(
                    n > have && n <= file.len(),
                    "asked {n} with {have} of {}",
                    file.len()
                );
                have = n.max(have * 2).min(file.len());
            }
        }
    }
    panic!("the header never completed");
}

fn same(a: &Gguf, b: &Gguf) {
    assert_eq!(a.tensors, b.tensors);
    assert_eq!(a.file_len, b.file_len);
    assert_eq!(a.data_start, b.data_start);
    assert_eq!(a.metadata.len(), b.metadata.len());
    for (k, v) in &a.metadata {
        assert_eq!(format!("{v:?}"), format!("{:?}", b.metadata[k]), "{k}");
    }
}

#[test]
fn a_prefix_gives_the_same_table_as_the_whole_file() {
    let mut files = vec![(
        "synthetic smollm2-shaped".to_string(),
        synthetic::build(
            &synthetic::parse_spec("smollm2-135m:Q4_0").unwrap().0,
            GgmlType::Q4_0,
            1,
        )
        .unwrap(),
    )];
    if let Some(shared) = common::shared() {
        for f in [
            "stories260K.Q8_0.gguf",
            "synthqwen2.Q4_K_S.gguf",
            "synthphi3.Q8_0.gguf",
        ] {
            files.push((
                f.into(),
                std::fs::read(shared.join("models").join(f)).unwrap(),
            ));
        }
    }
    for (name, file) in files {
        let whole = Gguf::parse(&file).unwrap();
        assert!(whole.data_start < file.len() as u64, "{name}");
        for first in [0, 8, 100, 4096, 1 << 20] {
            let (g, read) = parse_growing(&file, first).unwrap();
            same(&g, &whole);
            // Never more than twice the header (and the first read).
            assert!(
                read <= (2 * whole.data_start as usize).max(first).max(24),
                "{name}: read {read} for a header of {}",
                whole.data_start
            );
        }
    }
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Corruptions of tests/bad_input.rs: from any prefix the error is the
/// whole file's (same kind, same words), found before the tensor data.
#[test]
fn a_prefix_gives_the_whole_files_errors() {
    let (good, records) = tiny_llama("llama", 4);
    let mut bad: Vec<Vec<u8>> = Vec::new();
    for (at, count) in [(8, 1u64 << 62), (16, u64::MAX), (16, 100_000)] {
        let mut b = good.clone();
        put_u64(&mut b, at, count);
        bad.push(b);
    }
    // A key's length, a tensor name's length.
    let mut b = good.clone();
    put_u64(&mut b, 24, 1 << 50);
    bad.push(b);
    let mut b = good.clone();
    put_u64(&mut b, records[3], 1 << 40);
    bad.push(b);
    // A tensor's offset past the end of the file, and a misaligned one.
    for delta in [1u64 << 30, 4] {
        let mut b = good.clone();
        let name_len = u64::from_le_bytes(b[records[2]..records[2] + 8].try_into().unwrap());
        let nd_at = records[2] + 8 + name_len as usize;
        let nd = u32::from_le_bytes(b[nd_at..nd_at + 4].try_into().unwrap()) as usize;
        let off_at = nd_at + 4 + 8 * nd + 4;
        let off = u64::from_le_bytes(b[off_at..off_at + 8].try_into().unwrap());
        put_u64(&mut b, off_at, off + delta);
        bad.push(b);
    }
    // A file cut inside its tensor data.
    bad.push(good[..good.len() - 8].to_vec());
    for b in &bad {
        let whole = Gguf::parse(b).expect_err("corrupt");
        for first in [0, 24, 64, 200] {
            let e = parse_growing(b, first).expect_err("corrupt");
            assert_eq!(e, whole, "from {first} bytes");
        }
    }
}

#[test]
fn a_prefix_longer_than_the_file_is_an_argument_error() {
    let (good, _) = tiny_llama("llama", 4);
    let e = Gguf::parse_prefix(&good, 10).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = Gguf::parse_prefix(&good[..4], 4).unwrap_err();
    assert!(matches!(e, Error::Truncated(_)), "{e:?}");
}

/// A file larger than 4 GiB, from its header alone: offsets are u64 (a
/// wasm32 `usize` could not hold them), validated against the length the
/// loader gives, and nothing the size of the file is allocated.
#[test]
fn offsets_beyond_4_gib_parse_from_the_header_alone() {
    use webgguf::gguf::write::Writer;
    let mut w = Writer::new();
    w.kv("general.name", &webgguf::gguf::Value::String("big".into()))
        .unwrap();
    // 2^20 x 2^10 F32 weights: 4 GiB, so what follows starts past u32::MAX.
    let (big_at, big) = w.tensor("big", GgmlType::F32, &[1 << 20, 1 << 10]).unwrap();
    assert_eq!((big_at, big as u64), (0, 1 << 32));
    let (after_at, after) = w.tensor("after", GgmlType::F32, &[8]).unwrap();
    let (last_at, last) = w.tensor("last", GgmlType::Q8_0, &[64, 3]).unwrap();
    assert!(after_at >= 1 << 32 && last_at > after_at);
    let header = w.header();
    let data_start = header.len() as u64;
    let file_len = data_start + w.data_len();
    assert_eq!(w.data_len(), last_at + last as u64);
    assert!(file_len > u32::MAX as u64);

    let parsed = |prefix: &[u8], len: u64| match Gguf::parse_prefix(prefix, len) {
        Ok(Header::Parsed(g)) => Ok(g),
        Ok(Header::Need(n)) => panic!("the whole header was given, yet {n} bytes are asked"),
        Err(e) => Err(e),
    };
    let g = parsed(&header, file_len).unwrap();
    assert_eq!((g.file_len, g.data_start), (file_len, data_start));
    let at = |name: &str| g.tensor(name).unwrap();
    assert_eq!((at("big").offset, at("big").size), (data_start, big));
    assert_eq!(at("after").offset, data_start + after_at);
    assert_eq!(at("after").size, after);
    assert_eq!(at("last").offset, data_start + last_at);
    assert!(at("after").offset > u32::MAX as u64);
    assert!(at("last").offset > u32::MAX as u64);

    // The last tensor ends exactly at the end: one byte less is an error
    // that names it, and so is a length that ends inside `big`.
    for short in [file_len - 1, data_start + (1 << 31)] {
        let e = parsed(&header, short).unwrap_err();
        assert!(matches!(e, Error::TensorOutOfBounds(_)), "{short}: {e:?}");
    }
    let e = parsed(&header, file_len - 1).unwrap_err().to_string();
    assert!(
        e.contains("'last'") && e.contains(&(file_len - 1).to_string()),
        "{e}"
    );
    // Extra bytes past the last tensor are allowed (as in any file).
    assert!(parsed(&header, file_len + 4096).is_ok());

    // From a short prefix the parser asks for more, as for a small file:
    // the header's length, not the file's.
    let mut have = 24;
    loop {
        match Gguf::parse_prefix(&header[..have], file_len).unwrap() {
            Header::Parsed(g2) => {
                same(&g2, &g);
                break;
            }
            Header::Need(n) => {
                assert!(n > have && n <= header.len(), "asked {n} with {have}");
                have = n;
            }
        }
    }
}

/// A split model whose files each pass 4 GiB: the headers merge into one
/// table whose offsets index the concatenation, as u64 (the second file's
/// tensor starts past 4 GiB and ends past 8 GiB).
#[test]
fn a_split_model_past_4_gib_merges_from_its_headers() {
    use webgguf::gguf::write::Writer;
    use webgguf::gguf::{Parts, Value, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
    let file = |no: u16, name: &str| {
        let mut w = Writer::new();
        w.kv(SPLIT_NO, &Value::U16(no)).unwrap();
        w.kv(SPLIT_COUNT, &Value::U16(2)).unwrap();
        w.kv(SPLIT_TENSORS_COUNT, &Value::I32(2)).unwrap();
        // 2^31 F16 weights: 4 GiB.
        w.tensor(name, GgmlType::F16, &[1 << 21, 1 << 10]).unwrap();
        let header = w.header();
        let len = header.len() as u64 + w.data_len();
        match Gguf::parse_prefix(&header, len).unwrap() {
            Header::Parsed(g) => (g, len),
            Header::Need(n) => panic!("asked {n}"),
        }
    };
    let (a, a_len) = file(0, "a");
    let (b, b_len) = file(1, "b");
    assert!(a_len > 1 << 32 && b_len > 1 << 32);
    let b_start = b.data_start;
    let parts = Parts::of_lens(&[a_len, b_len], Vec::new());
    let g = Gguf::merge(vec![a, b], &parts, a_len + b_len).unwrap();
    assert_eq!(g.file_len, a_len + b_len);
    assert_eq!(g.tensor("b").unwrap().offset, a_len + b_start);
    let t = g.tensor("b").unwrap();
    assert!(t.offset > u32::MAX as u64);
    assert_eq!(t.size, 1 << 32);
    assert!(t.offset + t.size as u64 > 1 << 33);
}
