//! Writing GGUF files: the header (metadata and tensor table) of a file
//! whose tensor data the caller lays out at the offsets it is given. The
//! synthetic models (synthetic.rs) and split files (`split`) are written
//! with it.

use gguf_rs_lib::format::metadata::MetadataArray;
use gguf_rs_lib::format::types::GGUFValueType;

use super::{Gguf, Value, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT};
use crate::error::{Error, Result};
use crate::quant::GgmlType;

/// GGUF's alignment of tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;

/// A GGUF v3 header under construction: metadata first, then tensors,
/// each placed at the next aligned offset of the data section.
#[derive(Debug, Clone)]
pub struct Writer {
    kv: Vec<u8>,
    n_kv: u64,
    records: Vec<u8>,
    n_tensors: u64,
    /// End of the last tensor in the data section (a file may be larger
    /// than the address space: only its header is written here).
    data_len: u64,
    alignment: usize,
}

impl Default for Writer {
    fn default() -> Writer {
        Writer::new()
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

/// An array value of one element type.
pub fn array(element_type: GGUFValueType, values: Vec<Value>) -> Value {
    Value::Array(Box::new(MetadataArray {
        element_type,
        length: values.len() as u64,
        values,
    }))
}

impl Writer {
    pub fn new() -> Writer {
        Writer {
            kv: Vec::new(),
            n_kv: 0,
            records: Vec::new(),
            n_tensors: 0,
            data_len: 0,
            alignment: DEFAULT_ALIGNMENT,
        }
    }

    /// Add a metadata entry. `general.alignment` (a u32) sets the data's
    /// alignment, so it must come before the first tensor.
    pub fn kv(&mut self, key: &str, v: &Value) -> Result<()> {
        if key == "general.alignment" {
            let a = match v {
                Value::U32(a) if *a > 0 && a % 8 == 0 => *a as usize,
                other => {
                    return Err(Error::InvalidArgument(format!(
                        "general.alignment must be a positive u32 multiple of 8, not {other:?}"
                    )))
                }
            };
            if self.n_tensors > 0 {
                return Err(Error::InvalidArgument(
                    "general.alignment must be written before the tensors".into(),
                ));
            }
            self.alignment = a;
        }
        let mut b = Vec::new();
        put_str(&mut b, key);
        b.extend((v.value_type() as u32).to_le_bytes());
        v.write_to(&mut b)
            .map_err(|e| Error::InvalidArgument(format!("metadata value '{key}': {e}")))?;
        self.kv.extend(b);
        self.n_kv += 1;
        Ok(())
    }

    /// Add a tensor record; returns where its bytes go in the data section
    /// and how many there are.
    pub fn tensor(&mut self, name: &str, ty: GgmlType, dims: &[usize]) -> Result<(u64, usize)> {
        let bad = || Error::InvalidArgument(format!("tensor '{name}' of shape {dims:?}"));
        let first = *dims.first().ok_or_else(bad)?;
        let rows = dims[1..]
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(bad)?;
        let bytes = ty
            .row_bytes(first)
            .and_then(|r| r.checked_mul(rows))
            .ok_or_else(bad)?;
        let offset = self.data_len.next_multiple_of(self.alignment as u64);
        let end = offset.checked_add(bytes as u64).ok_or_else(bad)?;
        put_str(&mut self.records, name);
        self.records.extend((dims.len() as u32).to_le_bytes());
        for &d in dims {
            self.records.extend((d as u64).to_le_bytes());
        }
        self.records.extend(ty.id().to_le_bytes());
        self.records.extend(offset.to_le_bytes());
        self.n_tensors += 1;
        self.data_len = end;
        Ok((offset, bytes))
    }

    /// The end of the last tensor's bytes in the data section.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// The header: magic, version, counts, metadata and tensor records,
    /// padded to the alignment (the data section starts right after).
    pub fn header(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(24 + self.kv.len() + self.records.len() + self.alignment);
        b.extend(b"GGUF");
        b.extend(3u32.to_le_bytes());
        b.extend(self.n_tensors.to_le_bytes());
        b.extend(self.n_kv.to_le_bytes());
        b.extend(&self.kv);
        b.extend(&self.records);
        b.resize(b.len().next_multiple_of(self.alignment), 0);
        b
    }
}

/// Split the whole GGUF file `file` (parsed as `g`) the way llama.cpp's
/// gguf-split does: consecutive runs of at most `max_tensors` tensors of
/// its table, one file each, written `NAME-00001-of-0000N.gguf` and on
/// (`split_name`). The first file carries all the metadata, every file the
/// split keys (`SPLIT_NO`, `SPLIT_COUNT`, `SPLIT_TENSORS_COUNT`).
pub fn split(g: &Gguf, file: &[u8], max_tensors: usize) -> Result<Vec<Vec<u8>>> {
    if max_tensors == 0 {
        return Err(Error::InvalidArgument(
            "a split file must hold at least one tensor".into(),
        ));
    }
    if file.len() as u64 != g.file_len {
        return Err(Error::InvalidArgument(
            "the file differs from the parsed header".into(),
        ));
    }
    if g.get_u64(SPLIT_COUNT).is_some_and(|c| c > 1) {
        return Err(Error::Split(
            "this file is already one file of a split model".into(),
        ));
    }
    let groups: Vec<_> = g.tensors.chunks(max_tensors).collect();
    let n = groups.len().max(1);
    let count = u16::try_from(n).map_err(|_| {
        Error::InvalidArgument(format!(
            "{n} files is more than a split's u16 count allows; raise the tensors per file"
        ))
    })?;
    let total = i32::try_from(g.tensors.len())
        .map_err(|_| Error::InvalidArgument("too many tensors for split.tensors.count".into()))?;
    // Sorted keys, so that the same file always splits into the same bytes.
    let mut keys: Vec<&String> = g
        .metadata
        .keys()
        .filter(|k| !k.starts_with("split."))
        .collect();
    keys.sort_by_key(|k| (k.as_str() != "general.alignment", k.as_str()));
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut w = Writer::new();
        if i == 0 {
            for k in &keys {
                w.kv(k, &g.metadata[k.as_str()])?;
            }
        }
        w.kv(SPLIT_NO, &Value::U16(i as u16))?;
        w.kv(SPLIT_COUNT, &Value::U16(count))?;
        w.kv(SPLIT_TENSORS_COUNT, &Value::I32(total))?;
        let tensors = groups.get(i).copied().unwrap_or(&[]);
        let mut at = Vec::with_capacity(tensors.len());
        for t in tensors {
            let (offset, size) = w.tensor(&t.name, t.ty, &t.dims)?;
            debug_assert_eq!(size, t.size);
            at.push(offset);
        }
        let mut b = w.header();
        let data = b.len();
        // Each file is built in memory: it must fit the address space,
        // and then so does every offset in it.
        let data_len = usize::try_from(w.data_len()).map_err(|_| {
            Error::Unsupported(format!(
                "a split file of {} bytes is larger than this platform's address space",
                w.data_len()
            ))
        })?;
        b.resize(data + data_len, 0);
        for (t, off) in tensors.iter().zip(at) {
            let off = data + off as usize;
            b[off..off + t.size].copy_from_slice(t.bytes(file));
        }
        out.push(b);
    }
    Ok(out)
}

/// The name of file `i` (0-based) of `n` of a split model: llama.cpp's
/// `PREFIX-%05d-of-%05d.gguf`, numbered from 1.
pub fn split_name(prefix: &str, i: usize, n: usize) -> String {
    format!("{prefix}-{:05}-of-{n:05}.gguf", i + 1)
}

/// The reverse of `split_name`: the prefix, the 0-based index and the
/// count of a file named like a split model's, or `None`.
pub fn parse_split_name(name: &str) -> Option<(&str, usize, usize)> {
    let stem = name.strip_suffix(".gguf")?;
    let (rest, of) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() >= 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(of) || prefix.is_empty() {
        return None;
    }
    let (no, of): (usize, usize) = (no.parse().ok()?, of.parse().ok()?);
    (no >= 1 && no <= of).then_some((prefix, no - 1, of))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::{Parts, TensorInfo};
    use crate::synthetic::{self, Shape};

    #[test]
    fn a_merged_split_has_the_unsplit_table_but_for_offsets() {
        let shape = Shape {
            name: "unit",
            dim: 64,
            n_layers: 2,
            n_heads: 4,
            n_kv_heads: 2,
            ffn_dim: 128,
            vocab: 300,
            context: 64,
            ..synthetic::SMOLLM2_135M
        };
        let whole = synthetic::build(&shape, GgmlType::Q8_0, 1).unwrap();
        let g = Gguf::parse(&whole).unwrap();
        let files = split(&g, &whole, 8).unwrap();
        assert_eq!(files.len(), g.tensors.len().div_ceil(8));
        let lens: Vec<u64> = files.iter().map(|f| f.len() as u64).collect();
        let bytes = files.concat();
        let m = Gguf::parse_parts(&bytes, &Parts::of_lens(&lens, Vec::new())).unwrap();
        assert_eq!(m.file_len, bytes.len() as u64);
        assert_eq!(m.tensors.len(), g.tensors.len());
        for (a, b) in g.tensors.iter().zip(&m.tensors) {
            let strip = |t: &TensorInfo| TensorInfo {
                offset: 0,
                ..t.clone()
            };
            assert_eq!(strip(a), strip(b));
            assert_eq!(a.bytes(&whole), b.bytes(&bytes), "{}", a.name);
        }
        let mut meta = m.metadata.clone();
        for k in [SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS_COUNT] {
            assert!(meta.remove(k).is_some(), "{k}");
        }
        assert_eq!(meta, g.metadata);
    }

    #[test]
    fn split_names_round_trip() {
        assert_eq!(split_name("a/m", 0, 3), "a/m-00001-of-00003.gguf");
        assert_eq!(
            parse_split_name("a/m-00002-of-00003.gguf"),
            Some(("a/m", 1, 3))
        );
        assert_eq!(parse_split_name("m-00004-of-00003.gguf"), None);
        assert_eq!(parse_split_name("m-00000-of-00003.gguf"), None);
        assert_eq!(parse_split_name("m.gguf"), None);
        assert_eq!(parse_split_name("-00001-of-00003.gguf"), None);
        assert_eq!(parse_split_name("m-1-of-3.gguf"), None);
    }
}
