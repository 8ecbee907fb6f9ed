// round_f16_z(x, zero): x rounded to the nearest f16, ties to even, as an
// f32, by the device's own conversion: pack2x16float and back. A snippet
// (no bindings, no entry) that the host appends to few.wgsl in place of
// round_z_hand.wgsl where the load-time check (src/gpu/probe.rs,
// round_z_probe.wgsl) found this exact on every value that can decide a
// rounding; `zero` must be 0, read from a buffer.
// Why the zero: the H200's Vulkan driver folds the round trip, with
// pack2x16float as with f32(f16(x)), to x, so that nothing is rounded
// (BENCHMARKS.md, 2026-11-30b); an xor with a value it cannot see keeps
// the conversions. Three operations instead of round_f16's dozen: in
// few.wgsl's serial f16 replay, 8B decode +1.1%, 1B +2.7% on the H200
// (BENCHMARKS.md, 2026-12-01).
// WGSL lets the conversion round either way (SwiftShader and lavapipe
// differ, 2026-11-27), hence the check, not a guess per vendor.

fn round_f16_z(x: f32, zero: u32) -> f32 {
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0)) ^ zero).x;
}
