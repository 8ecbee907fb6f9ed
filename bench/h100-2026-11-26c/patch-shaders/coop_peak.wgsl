// Tensor-core throughput through wgpu's cooperative matrices, for
// `webgguf gpu-bandwidth` (bandwidth.rs `coop_peak`): what a prefill
// product could reach on this device. Each subgroup runs ITER steps of 8
// independent 16 x 16 x 16 f16 products into f32 accumulators (2 A x 4 B
// blocks, matmul_coop.wgsl's 128 x 128 tile per subgroup share), the
// blocks
//   mma_regs: loaded once before the loop (the multiply-adds alone),
//   mma_shared: loaded each step from workgroup memory (no barriers: the
//     data never changes),
//   mma_global: loaded each step from a storage buffer small enough to
//     stay in L2,
// and stores its accumulators to Out so that nothing is optimised away.
// The values are whatever the buffers hold (zeros): only time matters.
// Bindings: 0 Src (f16, SRC_ELEMS), 1 Out (f32, OUT_ELEMS: 64 workgroups'
//   8 subgroups' 8 blocks; later workgroups overwrite the same slots).
// Dispatch: (groups, 1, 1) workgroups of 256 threads (8 subgroups of 32).
//   The host prepends `enable f16; enable wgpu_cooperative_matrix;` and
//   ITER, and appends the generated entry `main` (bandwidth.rs).

@group(0) @binding(0) var<storage, read> Src: array<f16>;
@group(0) @binding(1) var<storage, read_write> Out: array<f32>;

// Each subgroup's 6 blocks, rows of 40 f16 as matmul_coop.wgsl's.
var<workgroup> Sh: array<f16, 8u * 6u * 640u>;
