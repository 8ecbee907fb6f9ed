// Load-time probe of the f32 -> f16 conversion: D[i] = f32(f16(D[i])).
// The host compares the results with round-to-nearest-even, ties included,
// and uses the hardware conversion for the kernels' f16 rounding only if
// every value matches (WGSL lets an implementation round either way).
// Bindings: 0 D (f32, read_write; finite values within f16's range).
// Dispatch: (ceil(len / 64), 1, 1) workgroups of 64 threads.
enable f16;

@group(0) @binding(0) var<storage, read_write> D: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i < arrayLength(&D) {
        D[i] = f32(f16(D[i]));
    }
}
