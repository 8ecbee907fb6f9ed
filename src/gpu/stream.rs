//! The streamed load: a weight plan's matrices go from the source into
//! their GPU buffers in bounded chunks with `queue.writeBuffer`, in file
//! order, so that memory holds one chunk at a time, never the model.

use std::collections::HashMap;

use super::device::{Deferred, Gpu};
use super::upload::BlockPad;
use crate::error::{Error, Result};
use crate::source::Source;

/// The most bytes read from the source at once.
pub const CHUNK: usize = 8 << 20;

/// Natively `write_buffer` stages its bytes until the next submit; an empty
/// submit this often keeps the staging (RAM) bounded.
const FLUSH_EVERY: u64 = 64 << 20;

/// Write every deferred piece (`Gpu::defer`) from `src` in file order,
/// in reads of at most `chunk` bytes with `ahead` of them in flight,
/// reporting (bytes written, bytes in all) to `progress`.
pub async fn write_deferred(
    gpu: &Gpu,
    d: Deferred,
    src: &dyn Source,
    chunk: usize,
    ahead: usize,
    progress: &dyn Fn(u64, u64),
) -> Result<()> {
    let Deferred { bufs, mut writes } = d;
    writes.sort_by_key(|w| w.2);
    let total: u64 = writes.iter().map(|w| w.3).sum();
    // (buffer, offset in it, file offset, length, padding) of each read. A
    // padded format's reads are whole blocks, each padded as it arrives.
    let chunk = (chunk.max(4) & !3) as u64;
    let mut reads = Vec::new();
    for &(b, dst, at, len, pad) in &writes {
        let step = pad.map_or(chunk, |p| (chunk / p.from).max(1) * p.from);
        let mut off = 0;
        while off < len {
            let n = step.min(len - off);
            reads.push((b, dst + BlockPad::len_of(pad, off), at + off, n, pad));
            off += n;
        }
    }
    // writeBuffer takes 4-byte-aligned offsets and sizes; a fused member
    // or a tensor of odd size leaves partial words, completed here when
    // their neighbours arrive (or, at the end, with the buffer's zero
    // padding).
    let mut words = Words::default();
    let (mut done, mut since_flush) = (0u64, 0u64);
    // Reads start when made (a URL's range requests run in parallel);
    // their bytes are taken in order.
    let mut pending = std::collections::VecDeque::new();
    let mut next = reads.iter();
    loop {
        while pending.len() < ahead.max(1) {
            let Some(&(b, dst, at, n, pad)) = next.next() else {
                break;
            };
            pending.push_back((b, dst, at, n, pad, src.read(at, n as usize)));
        }
        let Some((b, dst, at, n, pad, read)) = pending.pop_front() else {
            break;
        };
        let bytes = read.await?;
        if bytes.len() as u64 != n {
            return Err(Error::Truncated(format!(
                "the source gave {} bytes of the {n} asked for at offset {at}",
                bytes.len()
            )));
        }
        match pad {
            Some(p) => words.put(gpu, &bufs, b, dst, &p.apply(&bytes)),
            None => words.put(gpu, &bufs, b, dst, &bytes),
        }
        done += n;
        since_flush += n;
        if since_flush >= FLUSH_EVERY {
            gpu.queue.submit([]);
            since_flush = 0;
        }
        progress(done, total);
    }
    words.flush(gpu, &bufs);
    gpu.queue.submit([]);
    Ok(())
}

/// 4-byte words of which some bytes are known: (buffer, word offset) ->
/// (bytes, mask of the known ones).
#[derive(Default)]
struct Words(HashMap<(usize, u64), ([u8; 4], u8)>);

impl Words {
    fn put(&mut self, gpu: &Gpu, bufs: &[wgpu::Buffer], b: usize, dst: u64, bytes: &[u8]) {
        let len = bytes.len() as u64;
        let head = ((4 - dst % 4) % 4).min(len);
        let mid = (len - head) & !3;
        for i in 0..head {
            self.byte(gpu, bufs, b, dst + i, bytes[i as usize]);
        }
        if mid > 0 {
            let s = head as usize;
            gpu.queue
                .write_buffer(&bufs[b], dst + head, &bytes[s..s + mid as usize]);
        }
        for i in head + mid..len {
            self.byte(gpu, bufs, b, dst + i, bytes[i as usize]);
        }
    }

    fn byte(&mut self, gpu: &Gpu, bufs: &[wgpu::Buffer], b: usize, at: u64, v: u8) {
        let key = (b, at & !3);
        let w = self.0.entry(key).or_insert(([0; 4], 0));
        w.0[(at % 4) as usize] = v;
        w.1 |= 1 << (at % 4);
        if w.1 == 0xF {
            gpu.queue.write_buffer(&bufs[b], key.1, &w.0);
            self.0.remove(&key);
        }
    }

    /// The words no later piece completes: their other bytes are padding.
    fn flush(&mut self, gpu: &Gpu, bufs: &[wgpu::Buffer]) {
        for ((b, at), (w, _)) in self.0.drain() {
            gpu.queue.write_buffer(&bufs[b], at, &w);
        }
    }
}
