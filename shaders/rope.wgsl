// Rotary position embedding, in place, for every head of every token:
// pairs (2i, 2i+1) (llama) or (i, i + rope_dim/2) (neox) of a head's first
// rope_dim dims rotate by angle freq_scale * theta_i / ff[i], with
// theta_i = (pos + t) * theta_scale^i stepped by repeated multiplication.
// Bindings: 0 V (f32, [tokens][heads * head_dim]), 1 FF (frequency
//   divisors; a 1-element dummy when absent), 2 P (Params), 3 S (Step).
// Dispatch: (ceil(heads * rope_dim / 2 / 64), tokens, 1) workgroups of 64.
//   The host appends rope_pair.wgsl (the rotation itself).

struct Params {
    heads: u32,
    head_dim: u32,
    rope_dim: u32,
    neox: u32,
    theta_scale: f32,
    freq_scale: f32,
    has_ff: u32,
    _p0: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read_write> V: array<f32>;
@group(0) @binding(1) var<storage, read> FF: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
@group(0) @binding(3) var<uniform> S: Step;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let half = P.rope_dim / 2u;
    let t = gid.y;
    if gid.x >= P.heads * half || t >= S.n {
        return;
    }
    let head = gid.x / half;
    let i = gid.x % half;
    var ff = 1.0;
    if P.has_ff != 0u {
        ff = FF[i];
    }
    let base = (t * P.heads + head) * P.head_dim;
    var a = base + 2u * i;
    var b = a + 1u;
    if P.neox != 0u {
        a = base + i;
        b = a + half;
    }
    let r = rope_pair(V[a], V[b], i, S.pos + t, P.theta_scale, P.freq_scale, ff);
    V[a] = r.x;
    V[b] = r.y;
}
