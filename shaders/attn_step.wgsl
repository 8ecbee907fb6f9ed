// The attention kernels' parameters and step, which every one of them
// (attention.wgsl, few.wgsl, mid.wgsl, split.wgsl, flash.wgsl,
// flash_coop.wgsl) binds at the same places and reads alike, and the first
// key a query sees. Why a file of its own: WGSL has no includes, and six
// copies of these declarations had to be kept in step by hand.
// Computes: first_key(p).
// Bindings: 4 P (the layer's attention parameters), 5 S (the step: the
//   first token's position and the token count).
// Dispatch: none; the host appends it to each of those kernels' source.

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ctx: u32,
    scale: f32,
    _p0: u32,
    // Split slots per head in Part (decode's splits and their merge).
    splits: u32,
    // Sliding window: a query at position p sees keys j with p - j <
    // window (itself and the window - 1 before it); 0: no window.
    window: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;

// The first key a query at position p sees: with a sliding window of
// P.window keys (gemma3) the window's first, p + 1 - window, else 0.
fn first_key(p: u32) -> u32 {
    if P.window == 0u || p < P.window {
        return 0u;
    }
    return p + 1u - P.window;
}
