//! The load-time check of what WGSL leaves to the implementation: whether
//! this device's conversion to f16 rounds as llama.cpp's CPU does.
//!
//! few.wgsl replays llama.cpp's f16 accumulator key by key, a serial chain
//! of roundings. By hand (f16.wgsl's round_f16) each is a dozen dependent
//! steps; pack2x16float and back is three (round_z_pack.wgsl). But WGSL
//! lets a conversion to f16 round to either neighbour (SwiftShader and
//! lavapipe differ), and at a near-tie in the references one f16 ulp
//! decides the greedy token. So the conversion is used only where it gives
//! `half`'s bits on every value that can decide a rounding.

use super::kernels::{self, Op, Shape};
use super::Gpu;
use crate::error::Result;

const PROBE: &str = include_str!("../../shaders/round_z_probe.wgsl");
const PACK: &str = include_str!("../../shaders/round_z_pack.wgsl");

/// The values the check rounds: `quant::f16_boundary_values` (every
/// finite f16 below the largest, the subnormals included, the midpoint to
/// the next and the f32s either side, both signs); then the largest finite
/// f16, the overflow threshold (65520, a tie that rounds to inf) and
/// either side of it, a value far past it, and zeros. A conversion that
/// passes rounds each tie to even and each near-tie to the nearer, keeps
/// f16's subnormals, and overflows where f16 does. 253,956 values, 1 MB.
pub fn cases() -> Vec<f32> {
    let mut xs = crate::quant::f16_boundary_values();
    for x in [65504.0f32, 65519.996, 65520.0, 65520.004, 1e6, 0.0] {
        xs.extend([x, -x]);
    }
    xs
}

/// Whether `got` (the bits a rounding gave for `xs`) is `half`'s
/// round-to-nearest-even on every value.
pub fn matches_half(xs: &[f32], got: &[u32]) -> bool {
    xs.len() == got.len()
        && xs
            .iter()
            .zip(got)
            .all(|(&x, &g)| half::f16::from_f32(x).to_f32().to_bits() == g)
}

/// What `snippet`'s round_f16_z gives on this device for each of `xs`
/// (round_z_probe.wgsl; its zero read from a buffer). Its buffers are
/// destroyed before it returns: in the browser dropping a handle does not
/// free the memory.
pub async fn run(gpu: &Gpu, snippet: &str, xs: &[f32]) -> Result<Vec<u32>> {
    let src = format!("{PROBE}\n{snippet}");
    let bytes = xs.len() as u64 * 4;
    let out = gpu.storage("probe out", bytes)?;
    let x = gpu.upload_f32("probe x", xs);
    let zero = gpu.upload("probe zero", &[0; 4]);
    let rb = gpu.readback_buffer(bytes);
    let data = check_run(gpu, &src, [&x, &out, &zero], &rb, xs.len()).await;
    for b in [x, zero, rb, out] {
        b.destroy();
    }
    Ok(data?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// The probe over `n` values: bindings X, Out, Zero, then Out read back
/// through `rb`.
async fn check_run(
    gpu: &Gpu,
    src: &str,
    [x, out, zero]: [&wgpu::Buffer; 3],
    rb: &wgpu::Buffer,
    n: usize,
) -> Result<Vec<u8>> {
    let op = gpu
        .scoped("checking the f16 rounding", || {
            let pipeline = kernels::pipeline(gpu, "round_f16_z probe", src, "main");
            Ok(Op {
                bind: kernels::bind(gpu, &pipeline, &[(0, x), (1, out), (2, zero)]),
                pipeline,
                shape: Shape::Fixed([n.div_ceil(64) as u32, 1, 1]),
                label: "round_f16_z probe",
            })
        })
        .await?;
    let bytes = n as u64 * 4;
    gpu.run(&[&[op]], 1, &[(out, rb, bytes)]);
    gpu.read(rb, bytes).await
}

/// Whether round_z_pack.wgsl rounds exactly as `half` on this device. A
/// failure to compile or run counts as no: the kernels then round by hand.
pub async fn pack_rounds_exactly(gpu: &Gpu) -> bool {
    let xs = cases();
    match run(gpu, PACK, &xs).await {
        Ok(got) => matches_half(&xs, &got),
        Err(_) => false,
    }
}
