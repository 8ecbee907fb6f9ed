// Causal grouped-query attention over an f16 KV cache (two halves per u32).
// Entry `store`: KC/VC[(pos + t) * kvd + i] = f16(K/V[t][i]).
//   Bindings: 0 K, 1 V (f32, [tokens][kvd]), 2 KC, 3 VC (u32, [ctx][kvd/2]),
//   4 P, 5 S. Dispatch: (ceil(kvd / 2 / 64), tokens, 1) workgroups of 64.
// Entry `main`: for head h of token t (at position pos + t), with the query
//   rounded to f16, softmax(q . K[j] * scale) over j <= pos + t, then the
//   weighted sum of V[j] in llama.cpp's flash-attention order with an f16
//   accumulator; kv head = h / (heads / kv_heads).
//   Bindings: 8 Q (f32, [tokens][heads * head_dim]), 2 KC, 3 VC, 4 P, 5 S,
//   6 Out (f32, like Q), 7 Scores (f32, [tokens][heads][ctx] scratch).
//   Dispatch: (heads, tokens, 1) workgroups of 64 threads.

struct Params {
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    ctx: u32,
    scale: f32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

@group(0) @binding(0) var<storage, read> K: array<f32>;
@group(0) @binding(1) var<storage, read> V: array<f32>;
@group(0) @binding(2) var<storage, read_write> KC: array<u32>;
@group(0) @binding(3) var<storage, read_write> VC: array<u32>;
@group(0) @binding(4) var<uniform> P: Params;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(7) var<storage, read_write> Scores: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;

@compute @workgroup_size(64)
fn store(@builtin(global_invocation_id) gid: vec3<u32>) {
    let kvd = P.kv_heads * P.head_dim;
    let i = gid.x;
    let t = gid.y;
    if i >= kvd / 2u || t >= S.n {
        return;
    }
    let src = t * kvd + 2u * i;
    let dst = (S.pos + t) * (kvd / 2u) + i;
    KC[dst] = pack2x16float(vec2<f32>(round_f16(K[src]), round_f16(K[src + 1u])));
    VC[dst] = pack2x16float(vec2<f32>(round_f16(V[src]), round_f16(V[src + 1u])));
}

const WG: u32 = 64u;
var<workgroup> qs: array<f32, 512>;

// x rounded to the nearest f16 (ties to even), returned as f32.
// pack2x16float may round either way (WGSL leaves it to the implementation;
// SwiftShader and lavapipe differ), and at a near-tie in the references one
// f16 ulp decides the greedy token, so the rounding is done by hand: packing
// an exactly representable value is then exact everywhere.
fn round_f16(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    let a = b & 0x7fffffffu;
    if a >= 0x7f800000u {
        return x; // inf, NaN
    }
    if a < 0x38800000u {
        // Below f16's normal range: a multiple of 2^-24; scaling by powers
        // of two is exact and round() breaks ties to even.
        return round(x * 16777216.0) * (1.0 / 16777216.0);
    }
    // Drop 13 of f32's 23 mantissa bits, rounding to nearest even.
    let r = (a + 0xfffu + ((a >> 13u) & 1u)) & 0xffffe000u;
    if r > 0x477fe000u {
        return bitcast<f32>((b & 0x80000000u) | 0x7f800000u); // past f16's max: inf
    }
    return bitcast<f32>((b & 0x80000000u) | r);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let hd = P.head_dim;
    let qd = P.heads * hd;
    let kvw = P.kv_heads * hd / 2u;
    let kvh = (h / (P.heads / P.kv_heads)) * hd / 2u;
    let len = S.pos + t + 1u;
    let sb = (t * P.heads + h) * P.ctx;
    for (var d = lid; d < hd; d += WG) {
        qs[d] = round_f16(Q[t * qd + h * hd + d]);
    }
    workgroupBarrier();

    // A zero the compiler cannot see: `a * b + Z` may become fma(a, b, Z),
    // which still rounds the product, so `acc + (a * b + Z)` is never fused
    // into one fma(a, b, acc) (SwiftShader fuses; the CPU and llama.cpp do not).
    let Z = bitcast<f32>(P._p0);
    for (var j = lid; j < len; j += WG) {
        let kb = j * kvw + kvh;
        var dot = 0.0;
        for (var d = 0u; d < hd; d += 2u) {
            let kk = unpack2x16float(KC[kb + d / 2u]);
            dot += qs[d] * kk.x + Z;
            dot += qs[d + 1u] * kk.y + Z;
        }
        Scores[sb + j] = dot * P.scale;
    }
    storageBarrier();

    // Each thread owns one output dimension and replays the online softmax
    // over the scores in order, rounding its accumulator to f16 at every
    // step as llama.cpp's flash attention does (the references carry it).
    for (var d = lid; d < hd; d += WG) {
        var acc = 0.0;
        var mx = -3.0e38;
        var total = 0.0;
        for (var j = 0u; j < len; j++) {
            let s = Scores[sb + j];
            var rescale = 1.0;
            var weight = 1.0;
            if s > mx {
                rescale = exp(mx - s);
                mx = s;
                acc = round_f16(acc * rescale);
            } else {
                weight = exp(s - mx);
            }
            let vv = unpack2x16float(VC[j * kvw + kvh + d / 2u]);
            acc = round_f16(acc + (select(vv.x, vv.y, (d & 1u) == 1u) * weight + Z));
            total = total * rescale + weight;
        }
        Out[t * qd + h * hd + d] = acc * (1.0 / total);
    }
}
