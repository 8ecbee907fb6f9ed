// The rotary embedding of one pair, shared by rope.wgsl and matrix.wgsl's
// q/k/v epilogue so that both rotate with the same operations: a snippet
// (no bindings, no entry) that the host appends to them.
// rope_pair(x0, x1, i, pos, theta_scale, freq_scale, ff): (x0, x1) rotated
// by angle freq_scale * theta / ff, theta = pos * theta_scale^i stepped by
// repeated f32 multiplication as the CPU engine and llama.cpp do.

fn rope_pair(x0: f32, x1: f32, i: u32, pos: u32, theta_scale: f32, freq_scale: f32, ff: f32) -> vec2<f32> {
    var theta = f32(pos);
    for (var j = 0u; j < i; j++) {
        theta *= theta_scale;
    }
    let angle = freq_scale * theta / ff;
    let c = cos(angle);
    let s = sin(angle);
    return vec2<f32>(x0 * c - x1 * s, x0 * s + x1 * c);
}
