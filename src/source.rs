//! Where a model's bytes come from: a `Source` reads byte ranges of one
//! GGUF file, wherever it lies (memory here; a `Blob` or a URL with HTTP
//! range requests in the browser, see web.rs; a file natively). Loaders
//! read the header from a prefix (`read_header`), the small tensors next
//! (`read_small`), and stream the matrices in bounded chunks.

use std::collections::HashMap;

use crate::engine::LocalFuture;
use crate::error::{Error, Result};
use crate::gguf::{Gguf, Header, TensorInfo};

/// Random access to the bytes of one file.
pub trait Source {
    /// The file's total length in bytes.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes `offset..offset + len`, which lie inside the file.
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>>;
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

/// Parse the header from prefixes of `src`, reading more while it runs on.
/// Returns the table and how many bytes were read.
pub async fn read_header(src: &dyn Source) -> Result<(Gguf, usize)> {
    let total = src.len();
    let cap = usize::try_from(total).unwrap_or(usize::MAX);
    let mut buf = src.read(0, FIRST_READ.min(cap)).await?;
    loop {
        match Gguf::parse_prefix(&buf, total)? {
            Header::Parsed(g) => return Ok((g, buf.len())),
            Header::Need(n) => {
                // parse_prefix checked n against the file's length.
                let want = n.max(buf.len().saturating_mul(2)).min(cap);
                let more = src.read(buf.len() as u64, want - buf.len()).await?;
                buf.extend_from_slice(&more);
            }
        }
    }
}

/// Ranges closer than this are read as one (the gap is read and dropped),
/// so that a model's norms take a few reads, not one per tensor.
const MERGE_GAP: usize = 256 << 10;

/// The bytes of `tensors` (small ones: `Weights::small_tensors`) by file
/// offset, read in as few ranges as `MERGE_GAP` allows.
pub async fn read_small(
    src: &dyn Source,
    tensors: &[&TensorInfo],
) -> Result<HashMap<usize, Vec<u8>>> {
    let mut ts: Vec<&TensorInfo> = tensors.to_vec();
    ts.sort_by_key(|t| t.offset);
    let mut out = HashMap::new();
    let mut i = 0;
    while i < ts.len() {
        let start = ts[i].offset;
        let mut end = start + ts[i].size;
        let mut j = i + 1;
        while j < ts.len() && ts[j].offset <= end + MERGE_GAP {
            end = end.max(ts[j].offset + ts[j].size);
            j += 1;
        }
        let bytes = src.read(start as u64, end - start).await?;
        if bytes.len() != end - start {
            return Err(Error::Truncated(format!(
                "the source gave {} bytes of the {} asked for at offset {start}",
                bytes.len(),
                end - start
            )));
        }
        for t in &ts[i..j] {
            let at = t.offset - start;
            out.insert(t.offset, bytes[at..at + t.size].to_vec());
        }
        i = j;
    }
    Ok(out)
}
