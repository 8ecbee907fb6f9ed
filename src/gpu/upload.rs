//! Weights onto the GPU: a matrix in its block format, split by rows
//! across bindings where one cannot hold it (`GpuMatrix`), and matrices
//! concatenated for the fused kernels (`MatGroup`).

use super::device::Gpu;
use super::kernels;
use crate::error::{Error, Result};
use crate::model::{Matrix, Weights};
use crate::quant::GgmlType;

/// One part of a weight matrix: consecutive rows in one storage buffer.
pub struct Part {
    pub buf: wgpu::Buffer,
    pub row_off: usize,
    pub rows: usize,
}

/// A weight matrix in its block format, split by rows where one binding
/// cannot hold it.
pub struct GpuMatrix {
    /// The format (of the first member, where `mixed`).
    pub ty: GgmlType,
    pub rows: usize,
    pub cols: usize,
    /// Bytes per row on the GPU (of the first member, where `mixed`): the
    /// file's, except for a padded format's (`block_pad`).
    pub row_bytes: usize,
    pub parts: Vec<Part>,
    /// A fused group whose members differ in format (one part): each
    /// member's rows in its own format; empty otherwise.
    pub mixed: Vec<Sec>,
}

/// One member of a mixed-format group: its rows of the group, format, and
/// first byte and row size in the group's buffer.
#[derive(Debug, Clone)]
pub struct Sec {
    pub ty: GgmlType,
    pub rows: std::ops::Range<usize>,
    pub byte0: usize,
    pub row_bytes: usize,
}

/// A format whose blocks the GPU holds padded: each `from`-byte block of
/// the file followed by `to - from` zero bytes. Q3_K's 110-byte blocks
/// take 112 (`block_pad`), so that every block starts on a 16-byte
/// boundary and the wide decoder reads its high bits, quants and scales
/// as 16-byte words: with 2- and 4-byte loads its 8B gate/up read 0.95
/// TB/s on the H200 (BENCHMARKS.md, 2026-11-29f). 2 bytes a block add
/// 1.8% to its bytes; Q6_K's padding to 224 (6.7%) measured slower
/// (2026-11-27f), and no other format needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPad {
    pub from: u64,
    pub to: u64,
}

impl BlockPad {
    /// Bytes on the GPU of `len` bytes of whole blocks in the file.
    pub fn gpu_len(self, len: u64) -> u64 {
        len / self.from * self.to
    }

    /// Bytes on the GPU of `len` bytes in the file padded by `pad`, or
    /// unpadded.
    pub fn len_of(pad: Option<BlockPad>, len: u64) -> u64 {
        pad.map_or(len, |p| p.gpu_len(len))
    }

    /// Each block of `bytes` (whole blocks, as in the file) with its
    /// offset on the GPU: the one definition of the padded layout, which
    /// `apply` and `Gpu::upload_pieces` write.
    pub fn placed(self, bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
        let (from, to) = (self.from as usize, self.to as usize);
        bytes
            .chunks_exact(from)
            .enumerate()
            .map(move |(i, b)| (i * to, b))
    }

    /// `bytes` (whole blocks, as in the file) as the GPU holds them.
    pub fn apply(self, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.gpu_len(bytes.len() as u64) as usize];
        for (at, b) in self.placed(bytes) {
            out[at..at + b.len()].copy_from_slice(b);
        }
        out
    }
}

/// `ty`'s block padding on the GPU (`BlockPad`), where it has one: Q3_K's
/// blocks rounded up to a 16-byte multiple.
pub fn block_pad(ty: GgmlType) -> Option<BlockPad> {
    (ty == GgmlType::Q3_K).then(|| {
        let from = ty.block_bytes() as u64;
        BlockPad {
            from,
            to: from.next_multiple_of(16),
        }
    })
}

/// Bytes on the GPU of `len` bytes of `ty` (whole blocks) in the file.
pub fn gpu_len(ty: GgmlType, len: usize) -> usize {
    BlockPad::len_of(block_pad(ty), len as u64) as usize
}

impl GpuMatrix {
    /// Upload `bytes` (`rows` rows of `row_bytes`) in parts of at most `limit` bytes.
    pub fn upload(
        gpu: &Gpu,
        label: &str,
        ty: GgmlType,
        rows: usize,
        cols: usize,
        bytes: &[u8],
        limit: u64,
    ) -> Result<GpuMatrix> {
        GpuMatrix::place(gpu, label, ty, rows, cols, Bytes::Here(bytes), limit)
    }

    /// `upload`, or for bytes still in the file, buffers of the same parts
    /// whose writes are deferred to the streamed load (`Gpu::defer`).
    fn place(
        gpu: &Gpu,
        label: &str,
        ty: GgmlType,
        rows: usize,
        cols: usize,
        bytes: Bytes,
        limit: u64,
    ) -> Result<GpuMatrix> {
        let (row_bytes, spans) = split_rows(label, ty, rows, cols, bytes.len(), limit)?;
        // split_rows checked the length: whole rows of whole blocks.
        let file_row = bytes.len() / rows.max(1);
        let mut parts = Vec::new();
        for (r, n) in spans {
            let (a, b) = (r * file_row, (r + n) * file_row);
            let buf = match bytes {
                Bytes::Here(data) => match block_pad(ty) {
                    Some(pad) => gpu.upload_pieces(label, &[(&data[a..b], Some(pad))])?,
                    None => gpu.upload(label, &data[a..b]),
                },
                Bytes::File { offset, .. } => {
                    let buf = gpu.storage(label, (n * row_bytes) as u64)?;
                    let piece = (0, offset + a as u64, (b - a) as u64, block_pad(ty));
                    gpu.defer(&buf, &[piece])?;
                    buf
                }
            };
            parts.push(Part {
                buf,
                row_off: r,
                rows: n,
            });
        }
        Ok(GpuMatrix {
            ty,
            rows,
            cols,
            row_bytes,
            parts,
            mixed: Vec::new(),
        })
    }

    /// The member of a mixed group that holds all of `rows`, if one does.
    pub fn member(&self, rows: &std::ops::Range<usize>) -> Option<&Sec> {
        self.mixed
            .iter()
            .find(|s| s.rows.start <= rows.start && rows.end <= s.rows.end)
    }

    pub fn from_weights(
        gpu: &Gpu,
        label: &str,
        w: &Weights,
        m: &Matrix,
        limit: u64,
    ) -> Result<GpuMatrix> {
        GpuMatrix::place(
            gpu,
            label,
            m.ty,
            m.rows,
            m.cols,
            Bytes::of(&w.data, w.resident, m),
            limit,
        )
    }
}

/// How `GpuMatrix` splits a matrix of `len` bytes in the file (`rows`
/// rows of `cols` in format `ty`) across buffers of at most `limit` bytes:
/// its row size on the GPU (`block_pad`) and each part's (first row,
/// rows). The memory plan uses it too.
pub fn split_rows(
    label: &str,
    ty: GgmlType,
    rows: usize,
    cols: usize,
    len: usize,
    limit: u64,
) -> Result<(usize, Vec<(usize, usize)>)> {
    if !kernels::supported(ty) {
        return Err(Error::UnsupportedTensorType {
            tensor: label.into(),
            type_name: ty.name().into(),
        });
    }
    let row_bytes = ty
        .row_bytes(cols)
        .filter(|&rb| rb * rows == len)
        .ok_or_else(|| {
            Error::ShapeMismatch(format!("{label}: {len} bytes for {rows}x{cols} {ty}"))
        })?;
    let row_bytes = gpu_len(ty, row_bytes);
    let per = ((limit & !3) / row_bytes.max(1) as u64) as usize;
    if per == 0 {
        return Err(Error::DeviceLimit(format!(
            "{label}: one row takes {row_bytes} bytes, more than a storage binding's {limit}"
        )));
    }
    // Byte offsets inside a part are u32 in the shaders.
    let per = per.min((u32::MAX as usize) / row_bytes.max(1));
    let mut spans = Vec::new();
    let mut r = 0;
    while r < rows {
        let n = per.min(rows - r);
        spans.push((r, n));
        r += n;
    }
    Ok((row_bytes, spans))
}

/// Whether `MatGroup` concatenates `members` into one buffer (with `fuse`,
/// under `limit`), and if so its bytes. The memory plan uses it too.
pub fn concat_bytes(members: &[&Matrix], limit: u64, fuse: bool) -> Option<usize> {
    let first = members[0];
    let same_ty = members.iter().all(|m| m.ty == first.ty);
    let same_cols = members.iter().all(|m| m.cols == first.cols);
    let fusable = if same_ty {
        kernels::supported(first.ty)
    } else {
        members.iter().all(|m| kernels::mixable(m.ty, m.cols))
    };
    let total: usize = members.iter().map(|m| member_bytes(m, same_ty)).sum();
    (fuse && same_cols && fusable && (total as u64) <= (limit & !3) && total <= u32::MAX as usize)
        .then_some(total)
}

/// A member's bytes in a concatenated group: members of a mixed group
/// start on 16-byte boundaries, so that the decoders' word reads stay
/// aligned and the wide integer path can read Q4_K/Q5_K blocks (16-byte
/// multiples) as vec4<u32> (a uniform group's rows follow each other as
/// in one matrix).
fn member_bytes(m: &Matrix, same_ty: bool) -> usize {
    let size = gpu_len(m.ty, m.size());
    if same_ty {
        size
    } else {
        size.next_multiple_of(16)
    }
}

/// A matrix's bytes: in memory, or still in the file (a weight plan).
#[derive(Clone, Copy)]
enum Bytes<'a> {
    Here(&'a [u8]),
    File { offset: u64, len: usize },
}

impl<'a> Bytes<'a> {
    /// `m`'s bytes: in `data` (the file's bytes) where `resident`, else
    /// still in the file.
    fn of(data: &'a [u8], resident: bool, m: &Matrix) -> Bytes<'a> {
        if resident {
            Bytes::Here(m.bytes(data))
        } else {
            Bytes::File {
                offset: m.offset,
                len: m.size(),
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Bytes::Here(b) => b.len(),
            Bytes::File { len, .. } => *len,
        }
    }
}

/// Matrices that a fused kernel reads as one: concatenated by rows into one
/// buffer where they share a width and fit one binding (and `fuse`,
/// `GpuTuning::fuse`, allows it), else uploaded apart. Members of different
/// formats are concatenated too (a "mixed" group: Q4_K_M files keep
/// attn_v in Q6_K beside a Q4_K q and k), each starting on a 16-byte
/// boundary, where every member's format has a unit decoder
/// (`kernels::mixable`); the fused kernels then read each member's rows in
/// its own format.
pub struct MatGroup {
    pub mats: Vec<GpuMatrix>,
    /// (index into `mats`, rows) of each member, in the order given.
    pub segs: Vec<(usize, std::ops::Range<usize>)>,
}

impl MatGroup {
    pub fn upload(
        gpu: &Gpu,
        label: &str,
        w: &Weights,
        members: &[(&str, &Matrix)],
        limit: u64,
        fuse: bool,
    ) -> Result<MatGroup> {
        Self::upload_from(gpu, label, &w.data, w.resident, members, limit, fuse)
    }

    /// `members` are matrices of the file whose bytes are `data` where
    /// `resident`, else a weight plan's (written later from the source).
    pub fn upload_from(
        gpu: &Gpu,
        label: &str,
        data: &[u8],
        resident: bool,
        members: &[(&str, &Matrix)],
        limit: u64,
        fuse: bool,
    ) -> Result<MatGroup> {
        let first = members[0].1;
        let same_ty = members.iter().all(|(_, m)| m.ty == first.ty);
        let mats: Vec<&Matrix> = members.iter().map(|(_, m)| *m).collect();
        if let Some(total) = concat_bytes(&mats, limit, fuse) {
            // One binding holds them all: each member is copied from the
            // file's bytes to its offset (phi3's fused tensors are already
            // adjacent views; separate tensors are not joined in RAM either).
            let mut segs = Vec::new();
            let mut mixed = Vec::new();
            const ZEROS: [u8; 15] = [0; 15];
            let (mut row, mut byte) = (0, 0);
            for (_, m) in members {
                segs.push((0, row..row + m.rows));
                mixed.push(Sec {
                    ty: m.ty,
                    rows: row..row + m.rows,
                    byte0: byte,
                    row_bytes: gpu_len(m.ty, m.row_bytes),
                });
                let size = member_bytes(m, same_ty);
                row += m.rows;
                byte += size;
            }
            let buf = if resident {
                let mut pieces = Vec::new();
                for (_, m) in members {
                    let gap = member_bytes(m, same_ty) - gpu_len(m.ty, m.size());
                    pieces.push((m.bytes(data), block_pad(m.ty)));
                    pieces.push((&ZEROS[..gap], None));
                }
                gpu.upload_pieces(label, &pieces)?
            } else {
                // Streamed: each member is written at its offset as its
                // bytes arrive (the padding stays as created, zero).
                let buf = gpu.storage(label, total as u64)?;
                let writes: Vec<_> = members
                    .iter()
                    .zip(&mixed)
                    .map(|((_, m), s)| (s.byte0 as u64, m.offset, m.size() as u64, block_pad(m.ty)))
                    .collect();
                gpu.defer(&buf, &writes)?;
                buf
            };
            let m = GpuMatrix {
                ty: first.ty,
                rows: row,
                cols: first.cols,
                row_bytes: gpu_len(first.ty, first.row_bytes),
                parts: vec![Part {
                    buf,
                    row_off: 0,
                    rows: row,
                }],
                mixed: if same_ty { Vec::new() } else { mixed },
            };
            return Ok(MatGroup {
                mats: vec![m],
                segs,
            });
        }
        let mut mats = Vec::new();
        let mut segs = Vec::new();
        for (i, (name, m)) in members.iter().enumerate() {
            let bytes = Bytes::of(data, resident, m);
            mats.push(GpuMatrix::place(
                gpu, name, m.ty, m.rows, m.cols, bytes, limit,
            )?);
            segs.push((i, 0..m.rows));
        }
        Ok(MatGroup { mats, segs })
    }

    /// The one matrix that holds every member, if they were concatenated.
    pub fn fused(&self) -> Option<&GpuMatrix> {
        (self.mats.len() == 1 && self.segs.len() > 1 && self.mats[0].parts.len() == 1)
            .then(|| &self.mats[0])
    }

    pub fn seg(&self, i: usize) -> (&GpuMatrix, std::ops::Range<usize>) {
        let (m, r) = &self.segs[i];
        (&self.mats[*m], r.clone())
    }
}
