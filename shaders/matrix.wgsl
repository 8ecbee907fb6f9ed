// Declarations and epilogues shared by the matrix kernels (matvec.wgsl,
// matmul.wgsl): one Params layout, one set of bindings, and what happens to
// a computed row: plain (= or += with ACC), gate/up pairs (act(gate, up):
// silu(gate) * up, or f16.wgsl's geglu), q/k/v quads (bias, rope, q out, k
// and v into the f16 cache).
// Weight row w's first byte in W. A mixed group (members in different
// formats, one buffer) has sections, which the host's `w_sec(w)` names:
// q/k/v (0, 1, 2: rows from 0, split, split + kvd) or gate/up (0, 1: from
// 0, split); one-format matrices have section 0 alone (w_sec returns 0).
fn row_byte(w: u32) -> u32 {
    let s = w_sec(w);
    if s == 1u {
        return P.base1 + (w - P.split) * P.rb1;
    }
    if s == 2u {
        return P.base2 + (w - P.split - P.kvd) * P.rb2;
    }
    return P.w_byte0 + (P.w_row0 + w) * P.row_bytes;
}

// Logical row L of the dispatch reads weight row w_row0 + phys(L):
//   plain: L; gate/up (up rows from `split`): (L & 1) * split + L / 2;
//   q/k/v ([Wq; Wk; Wv], q rows `split`, k and v rows `kvd`): quads of two
//   adjacent-dim pairs (a, a + 1), (b, b + 1) of one head: b = a + 2, or
//   for neox inside the rotated dims a = e / 2, b = a + rope_dim / 2 for
//   the quad's head dim e, so that rope pairs lie in one quad.
// Bindings: 0 W (array<u32>), 1 X (f32, [tokens][cols]), 2 Y (f32), 3 P
//   (Params), 4 G (norm gains), 5 S (Step); q/k/v also 6 KC, 7 VC (u32),
//   8 BIAS (like the concatenated rows), 9 FF (rope frequency divisors);
//   the LM head's argmax partials 10 Part (vec2<u32>: logit bits, row).
// Params, Step and the flags F_* are matrix_params.wgsl's (which the host
// puts before this file, and before quantize_x.wgsl, which shares the
// uniform block).
// Dispatch: none (a library). Users append f16.wgsl and rope_pair.wgsl,
//   `fn act(gate: f32, up: f32) -> f32`, the gated activation picked
//   when the pipeline is built (silu(gate) * up or geglu(gate, up)), and
//   `fn w_sec(w: u32) -> u32`, weight row w's section (row_byte).


@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<storage, read> G: array<f32>;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(6) var<storage, read_write> KC: array<u32>;
@group(0) @binding(7) var<storage, read_write> VC: array<u32>;
@group(0) @binding(8) var<storage, read> BIAS: array<f32>;
@group(0) @binding(9) var<storage, read> FF: array<f32>;
@group(0) @binding(10) var<storage, read_write> Part: array<vec2<u32>>;

// (section 0/1/2 = q/k/v, first row of the section, first row of the
// head, head dim e of the quad's first logical row, then a and b).
struct Quad {
    sec: u32,
    start: u32,
    base: u32,
    e: u32,
    a: u32,
    b: u32,
}

fn qkv_quad(l0: u32) -> Quad {
    var q: Quad;
    q.sec = 0u;
    q.start = 0u;
    if l0 >= P.split {
        q.sec = 1u;
        q.start = P.split;
    }
    if l0 >= P.split + P.kvd {
        q.sec = 2u;
        q.start = P.split + P.kvd;
    }
    let j = l0 - q.start;
    q.e = j % P.head_dim;
    q.base = l0 - q.e;
    q.a = q.e;
    q.b = q.e + 2u;
    if (P.flags & F_NEOX) != 0u && q.e < P.rope_dim {
        q.a = q.e / 2u;
        q.b = q.a + P.rope_dim / 2u;
    }
    return q;
}

fn qkv_row(l: u32) -> u32 {
    let q = qkv_quad(l & ~3u);
    let i = l & 3u;
    return q.base + select(q.b, q.a, i < 2u) + (i & 1u);
}

// Rotation index i of the quad's pair at position pos (rope_pair.wgsl).
fn rope_at(x0: f32, x1: f32, i: u32, pos: u32) -> vec2<f32> {
    var ff = 1.0;
    if (P.flags & F_FF) != 0u {
        ff = FF[i];
    }
    return rope_pair(x0, x1, i, pos, P.theta_scale, P.freq_scale, ff);
}

// The act(gate, up) of logical rows l (gate) and l + 1 (up) of token t.
fn store_glu(t: u32, l: u32, gt: f32, up: f32) {
    Y[t * P.out_stride + P.out_off + (l >> 1u)] = act(gt, up);
}

fn glu_row(l: u32) -> u32 {
    return (l & 1u) * P.split + (l >> 1u);
}

// Logical row l of token t: Y (= or += with ACC).
fn store_row(t: u32, l: u32, v: f32) {
    let o = t * P.out_stride + P.out_off + l;
    var y = v;
    if (P.flags & F_ACC) != 0u {
        y += Y[o];
    }
    Y[o] = y;
}

// The quad at logical rows l0 .. l0 + 3 of token t: bias, rope exactly as
// rope.wgsl, then q to Y ([t][split]) or k, v as f16 pairs into KC, VC at
// position S.pos + t (rounded by hand with f16.wgsl's round_f16, as
// attention.wgsl's `store` does).
fn store_qkv(t: u32, l0: u32, vin: vec4<f32>) {
    let q = qkv_quad(l0);
    let ra = q.base + q.a;
    let rbb = q.base + q.b;
    var v = vin;
    if (P.flags & F_BIAS) != 0u {
        v += vec4<f32>(BIAS[ra], BIAS[ra + 1u], BIAS[rbb], BIAS[rbb + 1u]);
    }
    let pos = S.pos + t;
    if q.sec < 2u && q.e < P.rope_dim {
        if (P.flags & F_NEOX) != 0u {
            let p0 = rope_at(v.x, v.z, q.a, pos);
            let p1 = rope_at(v.y, v.w, q.a + 1u, pos);
            v = vec4<f32>(p0.x, p1.x, p0.y, p1.y);
        } else {
            let p0 = rope_at(v.x, v.y, q.a / 2u, pos);
            let p1 = rope_at(v.z, v.w, q.a / 2u + 1u, pos);
            v = vec4<f32>(p0, p1);
        }
    }
    if q.sec == 0u {
        let o = t * P.out_stride + P.out_off;
        Y[o + ra] = v.x;
        Y[o + ra + 1u] = v.y;
        Y[o + rbb] = v.z;
        Y[o + rbb + 1u] = v.w;
    } else {
        let o = pos * (P.kvd / 2u) + (q.base - q.start) / 2u;
        let wa = pack2x16float(vec2<f32>(round_f16(v.x), round_f16(v.y)));
        let wb = pack2x16float(vec2<f32>(round_f16(v.z), round_f16(v.w)));
        if q.sec == 1u {
            KC[o + q.a / 2u] = wa;
            KC[o + q.b / 2u] = wb;
        } else {
            VC[o + q.a / 2u] = wa;
            VC[o + q.b / 2u] = wb;
        }
    }
}
