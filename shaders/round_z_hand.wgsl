// round_f16_z(x, zero): f16.wgsl's round_f16(x), by hand; `zero` unused.
// A snippet (no bindings, no entry) that the host appends to few.wgsl
// beside f16.wgsl where round_z_pack.wgsl did not pass the load-time check
// (src/gpu/probe.rs) or `GpuTuning::round_pack` is off.

fn round_f16_z(x: f32, zero: u32) -> f32 {
    return round_f16(x);
}
