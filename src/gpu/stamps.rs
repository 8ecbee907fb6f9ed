//! GPU timestamp queries (where the device has TIMESTAMP_QUERY): the
//! begin and end of compute passes, read back as durations. Used by
//! gpu-profile (a pass per kernel) and gpu-bandwidth (one pass of every
//! repetition), so that their times leave out submission and the wait.

use super::Gpu;
use crate::error::Result;

/// Timestamp queries: a set, a resolve buffer and the tick length.
pub(super) struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
    n: u32,
    period_ns: f64,
}

impl Stamps {
    pub(super) fn new(gpu: &Gpu, n: u32) -> Option<Stamps> {
        if !gpu.features.contains(wgpu::Features::TIMESTAMP_QUERY) || n == 0 {
            return None;
        }
        let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile"),
            ty: wgpu::QueryType::Timestamp,
            count: n,
        });
        let resolve = gpu.buffer(&wgpu::BufferDescriptor {
            label: Some("resolve"),
            size: n as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Some(Stamps {
            set,
            resolve,
            read: gpu.readback_buffer(n as u64 * 8),
            n,
            period_ns: gpu.queue.get_timestamp_period() as f64,
        })
    }

    pub(super) fn writes(&self, i: u32) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        }
    }

    /// Resolve every query and return the (end - start) of each pair in µs.
    pub(super) async fn durations(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        let mut enc = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        enc.resolve_query_set(&self.set, 0..self.n, &self.resolve, 0);
        enc.copy_buffer_to_buffer(&self.resolve, 0, &self.read, 0, self.n as u64 * 8);
        gpu.queue.submit([enc.finish()]);
        let b = gpu.read(&self.read, self.n as u64 * 8).await?;
        let t: Vec<u64> = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        Ok(t.chunks_exact(2)
            .map(|p| p[1].wrapping_sub(p[0]) as f64 * self.period_ns / 1000.0)
            .collect())
    }
}
