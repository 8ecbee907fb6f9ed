// The load-time check of a round_f16_z snippet (src/gpu/probe.rs): Out[i]
// is the bits of round_f16_z(X[i], Zero[0]), which the host compares with
// IEEE-754 round-to-nearest-even, value by value. The host appends the
// candidate snippet; Zero[0] is 0, read from a buffer as the kernels read
// theirs (few.wgsl: P._p0), so that the driver compiles the same
// conversions here as there.
// Bindings: 0 X (f32 inputs), 1 Out (u32, as many), 2 Zero (u32, [1]).
// Dispatch: (ceil(n / 64), 1, 1) workgroups of 64 threads.

@group(0) @binding(0) var<storage, read> X: array<f32>;
@group(0) @binding(1) var<storage, read_write> Out: array<u32>;
@group(0) @binding(2) var<storage, read> Zero: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i < arrayLength(&X) {
        Out[i] = bitcast<u32>(round_f16_z(X[i], Zero[0]));
    }
}
