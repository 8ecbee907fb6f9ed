//! Where a model's bytes come from: a `Source` reads byte ranges of one
//! GGUF file, wherever it lies (memory here; a `Blob` or a URL with HTTP
//! range requests in the browser, see web.rs; a file natively). Loaders
//! read the header from a prefix (`read_header`), the small tensors next
//! (`read_small`), and stream the matrices in bounded chunks.
//!
//! A model split into several files (llama.cpp's gguf-split,
//! `NAME-00001-of-00003.gguf`...) is one source whose bytes are its files
//! laid end to end, and which says where each begins (`part_starts`;
//! `Concat` builds one from a source per file): `read_header` then gives
//! one table over all of them, and everything above sees one file.

use std::collections::HashMap;

use crate::engine::LocalFuture;
use crate::error::{Error, Result};
use crate::gguf::{in_part, Gguf, Header, Parts, TensorInfo};

/// Random access to the bytes of one file, or of a split model's files
/// laid end to end.
pub trait Source {
    /// The total length in bytes.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes `offset..offset + len`, which lie inside the source (across
    /// the boundary of two files of a split model too).
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>>;
    /// Where each file begins: `[0]` for one file; for a split model's
    /// files, in order, the offset of each (the first is 0, the last ends
    /// at `len()`).
    fn part_starts(&self) -> Vec<u64> {
        vec![0]
    }
    /// The files' names, for error messages (empty: they are numbered).
    fn part_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A file held in memory as a vector.
impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>> {
        self.as_slice().read(offset, len)
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn len(&self) -> u64 {
        (**self).len()
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>> {
        (**self).read(offset, len)
    }
    fn part_starts(&self) -> Vec<u64> {
        (**self).part_starts()
    }
    fn part_names(&self) -> Vec<String> {
        (**self).part_names()
    }
}

/// Several files as one source: the files of a split model, in order
/// (each a whole GGUF file, e.g. a `Blob` or a URL per file).
pub struct Concat<S> {
    parts: Vec<S>,
    starts: Vec<u64>,
    names: Vec<String>,
    len: u64,
}

impl<S: Source> Concat<S> {
    /// The files in order; at least one.
    pub fn new(parts: Vec<S>) -> Result<Concat<S>> {
        if parts.is_empty() {
            return Err(Error::InvalidArgument("no model files given".into()));
        }
        let mut starts = Vec::with_capacity(parts.len());
        let mut len = 0u64;
        for p in &parts {
            starts.push(len);
            len = len
                .checked_add(p.len())
                .ok_or_else(|| Error::InvalidArgument("the files' sizes overflow".into()))?;
        }
        Ok(Concat {
            parts,
            starts,
            names: Vec::new(),
            len,
        })
    }

    /// The files, in order.
    pub fn parts(&self) -> &[S] {
        &self.parts
    }

    /// Name the files (one name each) in error messages.
    pub fn with_names(mut self, names: Vec<String>) -> Concat<S> {
        self.names = names;
        self
    }
}

impl<S: Source> Source for Concat<S> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>> {
        let Some(end) = offset.checked_add(len as u64).filter(|&e| e <= self.len) else {
            return Box::pin(std::future::ready(Err(Error::InvalidArgument(format!(
                "bytes {offset}+{len} lie outside a source of {}",
                self.len
            )))));
        };
        // Each file's piece is asked for now, not when the result is
        // awaited: a loader keeps several reads in flight (a URL's range
        // requests run in parallel).
        let mut pieces = Vec::new();
        // The last file starting at or before `offset`.
        let mut i = self.starts.partition_point(|&s| s <= offset).max(1) - 1;
        let mut at = offset;
        while at < end {
            let (s, p) = (self.starts[i], &self.parts[i]);
            let n = (end.min(s + p.len()) - at) as usize;
            if n > 0 {
                pieces.push((at - s, n, p.read(at - s, n)));
                at += n as u64;
            }
            i += 1;
        }
        Box::pin(async move {
            let mut out = Vec::with_capacity(len);
            for (at, n, read) in pieces {
                let bytes = read.await?;
                if bytes.len() != n {
                    return Err(Error::Truncated(format!(
                        "the source gave {} bytes of the {n} asked for at offset {at}",
                        bytes.len()
                    )));
                }
                out.extend_from_slice(&bytes);
            }
            Ok(out)
        })
    }
    fn part_starts(&self) -> Vec<u64> {
        self.starts.clone()
    }
    fn part_names(&self) -> Vec<String> {
        self.names.clone()
    }
}

/// A file held in memory (the CLI's, the tests').
impl Source for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>> {
        let r = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(len)?))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "bytes {offset}+{len} lie outside a source of {}",
                    self.len()
                ))
            });
        Box::pin(std::future::ready(r))
    }
}

/// The first read for the header: most headers fit (SmolLM2's is 1.6 MB
/// with its 49k-token vocabulary, Gemma 3's about 6 MB); a longer one costs
/// a few more reads, each at least doubling.
pub const FIRST_READ: usize = 1 << 20;

/// The first read of the header of a split model's later files, which
/// hold only the split keys and their tensors' records.
const FIRST_READ_LATER: usize = 64 << 10;

/// Parse the header from prefixes of `src`, reading more while it runs on.
/// A split model's source (`part_starts`) has each file's header read and
/// the tables merged into one (`Gguf::merge`). Returns the table and how
/// many bytes were read.
pub async fn read_header(src: &dyn Source) -> Result<(Gguf, usize)> {
    let total = src.len();
    let parts = Parts {
        starts: src.part_starts(),
        names: src.part_names(),
    };
    let ranges = parts.ranges(total)?;
    let mut each = Vec::with_capacity(ranges.len());
    let mut read = 0;
    for (i, &(start, end)) in ranges.iter().enumerate() {
        let first = if i == 0 { FIRST_READ } else { FIRST_READ_LATER };
        let (g, n) = read_one_header(src, start, end - start, first)
            .await
            .map_err(|e| in_part(e, &parts, i))?;
        each.push(g);
        read += n;
    }
    Ok((Gguf::merge(each, &parts, total)?, read))
}

/// The header of the file at `start..start + total` of `src`.
async fn read_one_header(
    src: &dyn Source,
    start: u64,
    total: u64,
    first: usize,
) -> Result<(Gguf, usize)> {
    let cap = usize::try_from(total).unwrap_or(usize::MAX);
    let mut buf = src.read(start, first.min(cap)).await?;
    loop {
        match Gguf::parse_prefix(&buf, total)? {
            Header::Parsed(g) => return Ok((g, buf.len())),
            Header::Need(n) => {
                // parse_prefix checked n against the file's length.
                let want = n.max(buf.len().saturating_mul(2)).min(cap);
                let more = src.read(start + buf.len() as u64, want - buf.len()).await?;
                buf.extend_from_slice(&more);
            }
        }
    }
}

/// Ranges closer than this are read as one (the gap is read and dropped),
/// so that a model's norms take a few reads, not one per tensor.
const MERGE_GAP: u64 = 256 << 10;

/// The bytes of `tensors` (small ones: `Weights::small_tensors`) by file
/// offset, read in as few ranges as `MERGE_GAP` allows.
pub async fn read_small(
    src: &dyn Source,
    tensors: &[&TensorInfo],
) -> Result<HashMap<u64, Vec<u8>>> {
    let mut ts: Vec<&TensorInfo> = tensors.to_vec();
    ts.sort_by_key(|t| t.offset);
    let end_of = |t: &TensorInfo| t.offset + t.size as u64;
    let mut out = HashMap::new();
    let mut i = 0;
    while i < ts.len() {
        let start = ts[i].offset;
        let mut end = end_of(ts[i]);
        let mut j = i + 1;
        while j < ts.len() && ts[j].offset <= end + MERGE_GAP {
            end = end.max(end_of(ts[j]));
            j += 1;
        }
        // One read is held in memory: it must fit the address space.
        let n = usize::try_from(end - start).map_err(|_| {
            Error::Unsupported(format!(
                "a read of {} bytes at offset {start} is larger than this platform's address space",
                end - start
            ))
        })?;
        let bytes = src.read(start, n).await?;
        if bytes.len() != n {
            return Err(Error::Truncated(format!(
                "the source gave {} bytes of the {n} asked for at offset {start}",
                bytes.len()
            )));
        }
        for t in &ts[i..j] {
            // Inside this read, so below `n`.
            let at = (t.offset - start) as usize;
            out.insert(t.offset, bytes[at..at + t.size].to_vec());
        }
        i = j;
    }
    Ok(out)
}
