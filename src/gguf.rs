//! GGUF container: header, metadata and the tensor table, parsed from an
//! in-memory byte slice (no filesystem, so the same code serves wasm).
//!
//! Tensor data are never copied here: a `TensorInfo` records where its bytes
//! lie in the file (a `u64` offset: a streamed file may be larger than the
//! address space, wasm32's 4 GiB), and every range is validated against the
//! file's length before anyone may slice or read it.

use std::collections::HashMap;
use std::io::Cursor;

use gguf_rs_lib::reader::file_reader::{GGUFFileReader, GGUFReaderConfig};
use gguf_rs_lib::GGUFError;

use crate::error::{Error, Result};
use crate::quant::GgmlType;

pub use gguf_rs_lib::format::metadata::MetadataValue as Value;

pub mod write;

/// The keys llama.cpp's gguf-split writes into every file of a split model:
/// the file's 0-based index (u16), the number of files (u16) and the
/// number of tensors over all of them (i32). The first file also carries
/// all the model's metadata; the others carry just these three keys.
pub const SPLIT_NO: &str = "split.no";
pub const SPLIT_COUNT: &str = "split.count";
pub const SPLIT_TENSORS_COUNT: &str = "split.tensors.count";

/// Largest tensor rank GGUF allows.
const MAX_DIMS: usize = 4;

/// One tensor's shape, type and byte range inside the file.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub ty: GgmlType,
    /// ggml order: dims[0] is the contiguous (row) length.
    pub dims: Vec<usize>,
    /// Absolute byte offset of the data in the file (a file may exceed
    /// the address space: a streamed load never holds it in memory).
    pub offset: u64,
    /// Exact byte size of the data (one tensor is held whole, in memory
    /// or in one GPU buffer's parts, so it fits the address space).
    pub size: usize,
}

impl TensorInfo {
    pub fn n_elements(&self) -> usize {
        self.dims.iter().product()
    }
    /// The tensor's bytes; `buf` must be the buffer this table was parsed
    /// from (the whole file in memory, so every offset in it fits `usize`).
    pub fn bytes<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let start = usize::try_from(self.offset)
            .expect("a tensor of a buffer in memory lies inside the address space");
        &buf[start..start + self.size]
    }
}

/// A parsed GGUF file: metadata plus a validated tensor table.
#[derive(Debug, Clone)]
pub struct Gguf {
    pub version: u32,
    pub metadata: HashMap<String, Value>,
    pub tensors: Vec<TensorInfo>,
    /// Total length of the file the table was validated against.
    pub file_len: u64,
    /// Where the tensor data begin (the header's end, aligned).
    pub data_start: u64,
}

/// Where the files of a model lie when they are laid end to end, in one
/// buffer or one `Source`: one file (`Parts::one()`), or the files of a
/// split model in order. `names` (optional, may be empty) only label the
/// files in error messages.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parts {
    /// The offset where each file begins; the first is 0.
    pub starts: Vec<u64>,
    pub names: Vec<String>,
}

impl Parts {
    /// A single file.
    pub fn one() -> Parts {
        Parts {
            starts: vec![0],
            names: Vec::new(),
        }
    }

    /// Files of these lengths, laid end to end.
    pub fn of_lens(lens: &[u64], names: Vec<String>) -> Parts {
        let mut at = 0u64;
        let starts = lens
            .iter()
            .map(|&l| {
                let s = at;
                at = at.saturating_add(l);
                s
            })
            .collect();
        Parts { starts, names }
    }

    /// How the file at `i` is named in messages: its name if given, else
    /// its position.
    pub fn label(&self, i: usize) -> String {
        match self.names.get(i) {
            Some(n) => n.clone(),
            None if self.starts.len() <= 1 => "the model file".into(),
            None => format!("file {} of the {} given", i + 1, self.starts.len()),
        }
    }

    /// Each file's byte range in a concatenation of `total` bytes, checked:
    /// the first starts at 0, and they lie in order inside it (an empty one
    /// fails later, as a truncated file).
    pub fn ranges(&self, total: u64) -> Result<Vec<(u64, u64)>> {
        let bad = |why: String| Err(Error::InvalidArgument(format!("split model parts: {why}")));
        if self.starts.first() != Some(&0) {
            return bad(format!(
                "the first part must start at 0, not {:?}",
                self.starts.first()
            ));
        }
        if !self.names.is_empty() && self.names.len() != self.starts.len() {
            return bad(format!(
                "{} names for {} parts",
                self.names.len(),
                self.starts.len()
            ));
        }
        let mut out = Vec::with_capacity(self.starts.len());
        for (i, &s) in self.starts.iter().enumerate() {
            let end = self.starts.get(i + 1).copied().unwrap_or(total);
            if end < s || end > total {
                return bad(format!(
                    "part {} would span bytes {s}..{end} of {total}",
                    i + 1
                ));
            }
            out.push((s, end));
        }
        Ok(out)
    }
}

/// What `Gguf::parse_prefix` makes of the first bytes of a file.
#[derive(Debug)]
pub enum Header {
    /// The whole header was in the prefix.
    Parsed(Gguf),
    /// The header runs on past the prefix: read at least this many bytes
    /// from the start of the file and parse again.
    Need(usize),
}

impl Gguf {
    /// Parse `buf` (a whole GGUF file). Checks magic and version first so the
    /// most common user mistakes get the most specific message.
    pub fn parse(buf: &[u8]) -> Result<Gguf> {
        match Gguf::parse_prefix(buf, buf.len() as u64)? {
            Header::Parsed(g) => Ok(g),
            // The whole file is here: a header that runs past it is caught
            // as truncation by the walk, so this cannot happen.
            Header::Need(n) => Err(Error::Truncated(format!(
                "the header needs {n} bytes but the file has {}",
                buf.len()
            ))),
        }
    }

    /// Parse the header from `prefix`, the first bytes of a file of
    /// `file_len` bytes, without its tensor data: a loader reads a small
    /// prefix first and more only if the header (a large vocabulary) runs on.
    /// Every count, length and tensor range is checked against `file_len`,
    /// so a wild field fails here, before anything is sized by it. Only the
    /// header must fit in memory: the file may be larger than the address
    /// space (a streamed load never holds it).
    pub fn parse_prefix(prefix: &[u8], file_len: u64) -> Result<Header> {
        let len = file_len;
        if prefix.len() as u64 > len {
            return Err(Error::InvalidArgument(format!(
                "a prefix of {} bytes is longer than the file's {len}",
                prefix.len()
            )));
        }
        if len < 8 {
            return Err(Error::Truncated(format!(
                "{len} bytes, too short for a GGUF header"
            )));
        }
        // Both below 24, so they fit `usize`.
        let first = 24.min(len) as usize;
        if prefix.len() < first {
            return Ok(Header::Need(first));
        }
        let buf = prefix;
        let magic = [buf[0], buf[1], buf[2], buf[3]];
        if &magic != b"GGUF" {
            return Err(Error::BadMagic(magic));
        }
        let version = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
        if version != 3 {
            return Err(Error::UnsupportedVersion(version));
        }
        if len < 24 {
            return Err(Error::Truncated("header ends early".into()));
        }
        // Walk the whole header first, checking every count and length against
        // the bytes that remain, so that a wild count fails here, fast and with
        // a precise message, before the parser sizes anything by it.
        let header_end = match prescan(buf, len)? {
            Scan::Done(end) => end,
            Scan::Need(n) => return Ok(Header::Need(n)),
        };

        // We validate tensor ranges ourselves so the error can name the tensor.
        let config = GGUFReaderConfig {
            validate_integrity: false,
            ..GGUFReaderConfig::default()
        };
        let prefix = PrefixReader {
            buf: Cursor::new(&buf[..header_end]),
            len,
        };
        let reader = GGUFFileReader::with_config(prefix, config).map_err(map_lib_error)?;
        let data_start = reader.tensor_data_offset();
        let alignment = reader.tensor_alignment() as u64;

        let mut tensors = Vec::with_capacity(reader.tensor_infos().len());
        for info in reader.tensor_infos() {
            let name = info.name().to_string();
            let type_id = info.tensor_type() as u32;
            let ty = GgmlType::from_id(type_id).ok_or_else(|| Error::UnsupportedTensorType {
                tensor: name.clone(),
                type_name: format!("{:?} (ggml type id {type_id})", info.tensor_type()),
            })?;
            let raw_dims = info.shape().dims();
            if raw_dims.is_empty() || raw_dims.len() > MAX_DIMS {
                return Err(Error::Malformed(format!(
                    "tensor '{name}' has {} dimensions",
                    raw_dims.len()
                )));
            }
            let mut dims = Vec::with_capacity(raw_dims.len());
            let mut n: usize = 1;
            for &d in raw_dims {
                let d = usize::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                    Error::Malformed(format!("tensor '{name}' has dimension {d}"))
                })?;
                // The product fits u64 (`prescan`): where it overflows
                // `usize`, the tensor is larger than this platform holds.
                n = n.checked_mul(d).ok_or_else(|| {
                    Error::Unsupported(format!(
                        "tensor '{name}' has more elements than this platform's address space"
                    ))
                })?;
                dims.push(d);
            }
            if dims[0] % ty.block_len() != 0 {
                return Err(Error::Malformed(format!(
                    "tensor '{name}': row length {} is not a multiple of the {} block size {}",
                    dims[0],
                    ty.name(),
                    ty.block_len()
                )));
            }
            let size = ty
                .row_bytes(dims[0])
                .and_then(|r| (r as u64).checked_mul((n / dims[0]) as u64))
                .ok_or_else(|| Error::Malformed(format!("tensor '{name}' size overflows")))?;
            // One tensor is held whole (in memory, or in one GPU buffer's
            // parts): it must fit the address space, though the file need not.
            let size = usize::try_from(size).map_err(|_| {
                Error::Unsupported(format!(
                    "tensor '{name}' of {size} bytes is larger than this platform's address space"
                ))
            })?;
            let rel = info.data_offset();
            if alignment > 0 && rel % alignment != 0 {
                return Err(Error::TensorOutOfBounds(format!(
                    "tensor '{name}' offset {rel} is not aligned to {alignment} bytes"
                )));
            }
            let offset = data_start
                .checked_add(rel)
                .filter(|&o| o.checked_add(size as u64).is_some_and(|end| end <= len))
                .ok_or_else(|| {
                    Error::TensorOutOfBounds(format!(
                        "tensor '{name}' needs bytes {}..{} but the file has {} bytes",
                        data_start.saturating_add(rel),
                        data_start.saturating_add(rel).saturating_add(size as u64),
                        len
                    ))
                })?;
            tensors.push(TensorInfo {
                name,
                ty,
                dims,
                offset,
                size,
            });
        }

        let mut by_start: Vec<&TensorInfo> = tensors.iter().collect();
        by_start.sort_by_key(|t| t.offset);
        for w in by_start.windows(2) {
            if w[0].offset + w[0].size as u64 > w[1].offset {
                return Err(Error::TensorOutOfBounds(format!(
                    "tensors '{}' and '{}' overlap",
                    w[0].name, w[1].name
                )));
            }
        }

        let metadata = reader.metadata().data.clone();
        Ok(Header::Parsed(Gguf {
            version,
            metadata,
            tensors,
            file_len: len,
            data_start,
        }))
    }

    /// Parse a model held in memory as one or more whole GGUF files laid
    /// end to end (`parts`; `Parts::one()` for a single file), and merge
    /// their headers (`Gguf::merge`): tensor offsets index `buf`.
    pub fn parse_parts(buf: &[u8], parts: &Parts) -> Result<Gguf> {
        let ranges = parts.ranges(buf.len() as u64)?;
        let mut each = Vec::with_capacity(ranges.len());
        for (i, &(s, e)) in ranges.iter().enumerate() {
            let g =
                Gguf::parse(&buf[s as usize..e as usize]).map_err(|err| in_part(err, parts, i))?;
            each.push(g);
        }
        Gguf::merge(each, parts, buf.len() as u64)
    }

    /// One table for a model whose files (`each`, parsed one by one) lie
    /// end to end as `parts` says, `total` bytes in all: the metadata of
    /// the first, the tensors of all with offsets into the concatenation.
    ///
    /// A single file passes unchanged unless it is one file of a split
    /// model (`split.count` above 1), which is an error. The files of a
    /// split model must each say `split.no` = their position and
    /// `split.count` = the number of files, hold `split.tensors.count`
    /// tensors together, and name no tensor twice.
    pub fn merge(each: Vec<Gguf>, parts: &Parts, total: u64) -> Result<Gguf> {
        let ranges = parts.ranges(total)?;
        if each.len() != ranges.len() {
            return Err(Error::InvalidArgument(format!(
                "{} parsed headers for {} parts",
                each.len(),
                ranges.len()
            )));
        }
        for (i, (g, &(s, e))) in each.iter().zip(&ranges).enumerate() {
            if g.file_len != e - s {
                return Err(Error::InvalidArgument(format!(
                    "{} was parsed as {} bytes but spans {}",
                    parts.label(i),
                    g.file_len,
                    e - s
                )));
            }
        }
        let n = each.len();
        let split = |err: String| Err(Error::Split(err));
        let int = |g: &Gguf, i: usize, key: &str| -> Result<Option<u64>> {
            match g.get(key) {
                None => Ok(None),
                Some(_) => g.get_u64(key).map(Some).ok_or_else(|| {
                    Error::Split(format!(
                        "{}: metadata key '{key}' is not a non-negative integer",
                        parts.label(i)
                    ))
                }),
            }
        };
        // llama.cpp's merge writes split.count 0 into its output: 0, 1 and
        // absent all mean one whole file.
        let count0 = int(&each[0], 0, SPLIT_COUNT)?.unwrap_or(0);
        if n == 1 {
            if count0 > 1 {
                let no = int(&each[0], 0, SPLIT_NO)?.unwrap_or(0);
                return split(format!(
                    "{} is file {} of a model split into {count0} files; 1 given \
                     (load all {count0} together, in order: NAME-00001-of-{count0:05}.gguf \
                     to NAME-{count0:05}-of-{count0:05}.gguf)",
                    parts.label(0),
                    no + 1
                ));
            }
            let mut each = each;
            return Ok(each.remove(0));
        }
        for (i, g) in each.iter().enumerate() {
            let count = int(g, i, SPLIT_COUNT)?.unwrap_or(0);
            if count <= 1 {
                return split(format!(
                    "{} is not a file of a split model (it has no {SPLIT_COUNT} above 1), \
                     but {n} files were given",
                    parts.label(i)
                ));
            }
            if count != n as u64 {
                return split(format!(
                    "{} is split into {count} files; {n} given",
                    parts.label(i)
                ));
            }
            let no = int(g, i, SPLIT_NO)?
                .ok_or_else(|| Error::Split(format!("{} has no {SPLIT_NO}", parts.label(i))))?;
            if no != i as u64 {
                return split(format!(
                    "{} is file {} of {count} ({SPLIT_NO} = {no}) but was given as file {} \
                     (give the files in order, each once)",
                    parts.label(i),
                    no + 1,
                    i + 1
                ));
            }
        }
        let held: usize = each.iter().map(|g| g.tensors.len()).sum();
        let promised = int(&each[0], 0, SPLIT_TENSORS_COUNT)?.ok_or_else(|| {
            Error::Split(format!("{} has no {SPLIT_TENSORS_COUNT}", parts.label(0)))
        })?;
        for (i, g) in each.iter().enumerate().skip(1) {
            if let Some(t) = int(g, i, SPLIT_TENSORS_COUNT)? {
                if t != promised {
                    return split(format!(
                        "{} says {SPLIT_TENSORS_COUNT} = {t} but {} says {promised}",
                        parts.label(i),
                        parts.label(0)
                    ));
                }
            }
        }
        if held as u64 != promised {
            return split(format!(
                "the {n} files hold {held} tensors but {SPLIT_TENSORS_COUNT} is {promised}"
            ));
        }
        let mut seen = std::collections::HashMap::new();
        let mut tensors = Vec::with_capacity(held);
        let mut each = each.into_iter();
        let first = each.next().expect("n > 1");
        let all = std::iter::once(first.tensors).chain(each.map(|g| g.tensors));
        for (i, (ts, &(start, _))) in all.zip(&ranges).enumerate() {
            for mut t in ts {
                if let Some(j) = seen.insert(t.name.clone(), i) {
                    return split(format!(
                        "tensor '{}' is in both {} and {}",
                        t.name,
                        parts.label(j),
                        parts.label(i)
                    ));
                }
                // Inside the concatenation: the part's range was checked
                // against `total` and the tensor against the part.
                t.offset += start;
                tensors.push(t);
            }
        }
        Ok(Gguf {
            version: first.version,
            metadata: first.metadata,
            tensors,
            file_len: total,
            data_start: first.data_start,
        })
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// Integer of any width and signedness, if non-negative.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            Value::U8(v) => Some(*v as u64),
            Value::U16(v) => Some(*v as u64),
            Value::U32(v) => Some(*v as u64),
            Value::U64(v) => Some(*v),
            Value::I8(v) => u64::try_from(*v).ok(),
            Value::I16(v) => u64::try_from(*v).ok(),
            Value::I32(v) => u64::try_from(*v).ok(),
            Value::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    pub fn get_usize(&self, key: &str) -> Option<usize> {
        self.get_u64(key).and_then(|v| usize::try_from(v).ok())
    }

    pub fn get_f32(&self, key: &str) -> Option<f32> {
        match self.get(key)? {
            Value::F32(v) => Some(*v),
            Value::F64(v) => Some(*v as f32),
            _ => None,
        }
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    pub fn get_array(&self, key: &str) -> Option<&[Value]> {
        match self.get(key)? {
            Value::Array(a) => Some(&a.values),
            _ => None,
        }
    }

    /// A string array, or `None` if absent or not all strings.
    pub fn get_str_array(&self, key: &str) -> Option<Vec<&str>> {
        self.get_array(key)?.iter().map(|v| v.as_str()).collect()
    }

    /// A numeric array converted to f32, or `None` if absent or non-numeric.
    pub fn get_f32_array(&self, key: &str) -> Option<Vec<f32>> {
        self.get_array(key)?
            .iter()
            .map(|v| match v {
                Value::F32(x) => Some(*x),
                Value::F64(x) => Some(*x as f32),
                other => other.as_i64().map(|i| i as f32),
            })
            .collect()
    }

    /// A numeric array converted to i64, or `None` if absent or non-integer.
    pub fn get_i64_array(&self, key: &str) -> Option<Vec<i64>> {
        self.get_array(key)?.iter().map(|v| v.as_i64()).collect()
    }
}

/// The header bytes read so far, seen by the parser as a file of `len`
/// bytes (it checks the data offset against the file's size, found by
/// seeking to the end); reads past the prefix end there.
struct PrefixReader<'a> {
    buf: Cursor<&'a [u8]>,
    len: u64,
}

impl std::io::Read for PrefixReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.buf.read(out)
    }
}

impl std::io::Seek for PrefixReader<'_> {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        match to {
            std::io::SeekFrom::End(d) => {
                let at = self.len.checked_add_signed(d).ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before 0")
                })?;
                self.buf.set_position(at);
                Ok(at)
            }
            other => self.buf.seek(other),
        }
    }
}

/// Smallest encoding of a metadata entry: key length, a one-byte key, the
/// type tag and a one-byte value.
const MIN_KV_BYTES: u64 = 8 + 1 + 4 + 1;
/// Smallest tensor record: name length, a one-byte name, the dimension count,
/// one dimension, the type and the offset.
const MIN_TENSOR_BYTES: u64 = 8 + 1 + 4 + 8 + 4 + 8;
/// Nesting limit for arrays of arrays (the parser allows 64).
const MAX_ARRAY_DEPTH: usize = 16;

/// A cursor that refuses to read past the end of the buffer, naming the
/// structure it was reading when the bytes ran out.
struct Walk<'a> {
    /// The bytes read so far: the file, or a prefix of it.
    buf: &'a [u8],
    /// The whole file's length, which every count is checked against
    /// (it may exceed the address space; the header read does not).
    len: u64,
    pos: usize,
    /// Set when a structure runs past `buf` but not past the file: how many
    /// bytes from the start the walk needs to go on.
    need: Option<usize>,
}

impl<'a> Walk<'a> {
    /// Bytes left in the file (not just in the prefix).
    fn remaining(&self) -> u64 {
        self.len - self.pos as u64
    }

    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated(format!(
                "{} needs {n} bytes at offset {} but the file has {} bytes",
                what(),
                self.pos,
                self.len
            )));
        }
        // Fits the file (n <= remaining, so this does not overflow u64).
        let end = self.pos as u64 + n;
        if end > self.buf.len() as u64 {
            // The header itself is read into memory: it must fit.
            let end = usize::try_from(end).map_err(|_| {
                Error::Unsupported(format!(
                    "{} ends at byte {end}, beyond this platform's address space",
                    what()
                ))
            })?;
            self.need = Some(end);
            return Err(Error::Truncated(format!(
                "{} runs past the {} bytes read so far",
                what(),
                self.buf.len()
            )));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.buf[start..self.pos])
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A length-prefixed string's bytes.
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        let len = self.u64(what)?;
        if len > self.remaining() {
            return Err(Error::Truncated(format!(
                "{}: string length {len} runs past the end of the file ({} bytes left at offset {})",
                what(),
                self.remaining(),
                self.pos
            )));
        }
        self.take(len, what)
    }

    /// Skip one metadata value of type `ty`.
    fn value(&mut self, ty: u32, depth: usize, what: &dyn Fn() -> String) -> Result<()> {
        let fixed = |ty: u32| -> Option<u64> {
            match ty {
                0 | 1 | 7 => Some(1),
                2 | 3 => Some(2),
                4..=6 => Some(4),
                10..=12 => Some(8),
                _ => None,
            }
        };
        if let Some(n) = fixed(ty) {
            self.take(n, what)?;
            return Ok(());
        }
        match ty {
            8 => {
                self.string(what)?;
            }
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(Error::Malformed(format!(
                        "{}: arrays nested deeper than {MAX_ARRAY_DEPTH}",
                        what()
                    )));
                }
                let elem = self.u32(what)?;
                let count = self.u64(what)?;
                let min = match elem {
                    8 => 8,
                    9 => 12,
                    e => fixed(e).ok_or_else(|| {
                        Error::Malformed(format!("{}: array of unknown value type {e}", what()))
                    })?,
                };
                if count.checked_mul(min).is_none_or(|n| n > self.remaining()) {
                    return Err(Error::Truncated(format!(
                        "{}: array of {count} elements runs past the end of the file ({} bytes left)",
                        what(),
                        self.remaining()
                    )));
                }
                if elem == 8 || elem == 9 {
                    for _ in 0..count {
                        self.value(elem, depth + 1, what)?;
                    }
                } else {
                    self.take(count * min, what)?;
                }
            }
            other => {
                return Err(Error::Malformed(format!(
                    "{}: unknown value type {other}",
                    what()
                )))
            }
        }
        Ok(())
    }
}

/// How far `prescan` got in a prefix.
enum Scan {
    /// The header and tensor table end at this offset.
    Done(usize),
    /// They run past the prefix: this many bytes are needed to go on.
    Need(usize),
}

/// Check the header, metadata and tensor table for lengths and counts that
/// do not fit the file of `len` bytes, misaligned offsets and overflowing
/// shapes. Reads no tensor data and allocates nothing sized by the file.
fn prescan(buf: &[u8], len: u64) -> Result<Scan> {
    let mut w = Walk {
        buf,
        len,
        pos: 8,
        need: None,
    };
    match (walk(&mut w), w.need) {
        (Ok(()), _) => Ok(Scan::Done(w.pos)),
        (Err(_), Some(n)) => Ok(Scan::Need(n)),
        (Err(e), None) => Err(e),
    }
}

fn walk(w: &mut Walk) -> Result<()> {
    let buf = w.buf;
    let n_tensors = w.u64(&|| "tensor count".into())?;
    let n_kv = w.u64(&|| "metadata count".into())?;
    let need = n_kv
        .checked_mul(MIN_KV_BYTES)
        .and_then(|m| n_tensors.checked_mul(MIN_TENSOR_BYTES)?.checked_add(m));
    if need.is_none_or(|n| n > w.remaining()) {
        return Err(Error::Truncated(format!(
            "the header promises {n_kv} metadata entries and {n_tensors} tensors, \
             more than the {} bytes that follow can hold",
            w.remaining()
        )));
    }
    let mut alignment: u64 = 32;
    for i in 0..n_kv {
        let key = w.string(&|| format!("metadata key #{i}"))?;
        let key = String::from_utf8_lossy(key);
        let what = || format!("metadata value '{key}'");
        let ty = w.u32(&what)?;
        let at = w.pos;
        w.value(ty, 0, &what)?;
        if key == "general.alignment" && ty == 4 {
            alignment = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as u64;
        }
    }
    for i in 0..n_tensors {
        let name = w.string(&|| format!("tensor #{i} name"))?;
        let name = String::from_utf8_lossy(name);
        let what = || format!("tensor '{name}'");
        let nd = w.u32(&what)?;
        if nd == 0 || nd as usize > MAX_DIMS {
            return Err(Error::Malformed(format!(
                "tensor '{name}' has {nd} dimensions"
            )));
        }
        let mut dims = [0u64; MAX_DIMS];
        for d in dims.iter_mut().take(nd as usize) {
            *d = w.u64(&what)?;
        }
        let dims = &dims[..nd as usize];
        if dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .is_none()
        {
            return Err(Error::Malformed(format!(
                "tensor '{name}' dimensions {dims:?} overflow: their product exceeds 2^64"
            )));
        }
        w.u32(&what)?;
        let offset = w.u64(&what)?;
        if alignment > 0 && offset % alignment != 0 {
            return Err(Error::TensorOutOfBounds(format!(
                "tensor '{name}' offset {offset} is not aligned to {alignment} bytes"
            )));
        }
    }
    Ok(())
}

/// An error in one file of a split model, saying which (a single file's
/// errors stay as they are).
pub(crate) fn in_part(e: Error, parts: &Parts, i: usize) -> Error {
    if parts.starts.len() <= 1 {
        return e;
    }
    let at = parts.label(i);
    match e {
        Error::Truncated(w) => Error::Truncated(format!("{at}: {w}")),
        Error::Malformed(w) => Error::Malformed(format!("{at}: {w}")),
        Error::TensorOutOfBounds(w) => Error::TensorOutOfBounds(format!("{at}: {w}")),
        other => other,
    }
}

/// Translate the parser's errors into ours. The parser reports truncation as
/// either `UnexpectedEof` or an I/O error of that kind.
fn map_lib_error(e: GGUFError) -> Error {
    match e {
        GGUFError::InvalidMagic { found, .. } => Error::BadMagic(found.to_le_bytes()),
        GGUFError::UnsupportedVersion(v) => Error::UnsupportedVersion(v),
        GGUFError::UnexpectedEof => Error::Truncated("the file ends inside the header".into()),
        GGUFError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            Error::Truncated("the file ends inside the metadata or tensor table".into())
        }
        GGUFError::Format(msg) if msg.contains("Unknown GGUF tensor type") => {
            Error::UnsupportedTensorType {
                tensor: "(in tensor table)".into(),
                type_name: msg,
            }
        }
        other => Error::Malformed(other.to_string()),
    }
}
