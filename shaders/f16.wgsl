// f16 arithmetic done by hand, for devices without shader-f16: a snippet
// (no bindings, no entry) that the host appends to attention.wgsl,
// matrix.wgsl's users and elementwise.wgsl.
// round_f16(x): x rounded to the nearest f16 (ties to even), as f32.
// geglu(gate, up): gelu(gate) * up as llama.cpp's CPU computes it (its f16
//   gelu table), which the F32 reference ids depend on; tanh_f32(z): the
//   tanh it uses (see there why not the built-in).

// pack2x16float may round either way (WGSL leaves it to the implementation;
// SwiftShader and lavapipe differ), and at a near-tie in the references one
// f16 ulp decides the greedy token, so the rounding is done by hand: packing
// an exactly representable value is then exact everywhere.
// Every case is computed and one picked with select, not returned early:
// with branches on the value, each key of few.wgsl's f16 replay (a serial
// chain of these) took 270 ns instead of 150 on an H200's Vulkan driver,
// and the chunked kernel was slower too (BENCHMARKS.md, 2026-11-27b).
fn round_f16(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let a = b & 0x7fffffffu;
    // Below f16's normal range: a multiple of 2^-24; scaling by powers of
    // two is exact and round() breaks ties to even.
    let sub = round(x * 16777216.0) * (1.0 / 16777216.0);
    // Else drop 13 of f32's 23 mantissa bits, rounding to nearest even;
    // past f16's max: inf.
    let r = (a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u;
    let normal = bitcast<f32>((b & 0x80000000u) | select(r, 0x7f800000u, r > 0x477fe000u));
    // inf and NaN stay as they are.
    return select(select(normal, sub, a < 0x38800000u), x, a >= 0x7f800000u);
}

// llama.cpp's CPU gelu reads a table indexed by the f16 of its input, so
// the result is gelu of the f16-rounded gate, computed in f32 in the order
// 0.5 * x * (1 + tanh(sqrt(2/pi) * x * (1 + 0.044715 * x * x))) and rounded
// to f16; at or beyond +-10 it bypasses the table (0, or the gate itself).
fn geglu(gate: f32, up: f32) -> f32 {
    if gate <= -10.0 {
        return 0.0;
    }
    if gate >= 10.0 {
        return gate * up;
    }
    let x = round_f16(gate);
    let z = 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
    let g = round_f16(0.5 * x * (1.0 + tanh_f32(z)));
    return g * up;
}

// tanh as 1 - 2 / (e^(2|z|) + 1) with z's sign, instead of the built-in:
// for gates below about -3, 1 + tanh cancels to a few hundred f32 ulps of
// 1, so an ulp of tanh shows in gelu, and lavapipe's tanh (like any whose
// error is absolute, ~1e-7) then disagreed with libm's tanhf after the
// f16 rounding for ~5% of gates in [-12, 12]. Here the error of exp is
// relative to the small 2 / (e + 1), so the result is libm's correctly
// rounded value but near rounding ties (measured on lavapipe: geglu then
// differs from llama.cpp's for 5 of 300,003 random gates, by one f16 ulp,
// all with |gate| < 0.4, where the absolute error of 1 - 2 / (e + 1)
// remains).
// |z| is clamped to 10, where tanh is 1 in f32 (and e^20 cannot overflow).
fn tanh_f32(z: f32) -> f32 {
    let e = exp(2.0 * min(abs(z), 10.0));
    let t = 1.0 - 2.0 / (e + 1.0);
    return select(t, -t, z < 0.0);
}
