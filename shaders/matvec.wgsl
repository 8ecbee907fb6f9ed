// Matrix-vector products with a block-format weight matrix: R rows per
// workgroup of WG threads. The row's 8-element units (units.wgsl) are dealt
// round-robin to the threads; each thread decodes the x values of a unit
// once and uses them for all R rows, then the workgroup sums the R partial
// sums (shared-memory tree, or subgroupAdd where the host enables it) and
// an epilogue writes them. Decode-sized matrices make this latency-bound:
// loads are grouped so that each thread waits for few round trips.
//
// x[t] = X row t, or with flag NORM rmsnorm(X row t) * G computed in every
// workgroup exactly as rmsnorm.wgsl does; with flag LAST the one token read
// is S.n - 1 and it writes token 0 (the LM head). Weight row of logical row
// L: w_row0 + phys(L), phys depending on the entry:
// Entry `main`: phys(L) = L; Y[t][out_off + L] (= or += with ACC) the dot.
// Entry `silu`: gate/up concatenated (up starts at weight row `split`):
//   phys(L) = (L & 1) * split + L / 2; Y[t][out_off + L / 2] =
//   silu(gate) * up, as elementwise.wgsl's silu_mul. R is even.
// Entry `qkv`: [Wq; Wk; Wv] concatenated (q rows: split, k and v rows: kvd),
//   logical rows in quads that hold two adjacent-dim pairs of one head
//   (a, a + 1), (b, b + 1): b = a + 2, or for neox inside the rotated dims
//   a = e / 2, b = a + rope_dim / 2 for the quad's head dim e. Epilogue:
//   + bias (flag BIAS), rope on q and k exactly as rope.wgsl, then q to Y
//   (f32, [t][split]) and k, v as f16 pairs into KC, VC at position
//   S.pos + t, as attention.wgsl's `store`. R is a multiple of 4.
// Bindings: 0 W (array<u32>), 1 X (f32, [tokens][cols]), 2 Y (f32), 3 P
//   (Params), 4 G (norm gains; any buffer without NORM), 5 S (Step);
//   `qkv` also 6 KC, 7 VC (u32), 8 B (bias, like the concatenated rows),
//   9 FF (rope frequency divisors).
// Dispatch: (nx, ceil(groups / nx), tokens) workgroups of WG threads,
//   groups = ceil(rows / R), group = wid.x + wid.y * nx; (nx, ny, 1) with
//   LAST. The host prepends `const R`, `WG` (64, 128 or 256) and `RW` (R *
//   WG) and appends dequant.wgsl, units.wgsl, the format's aliases, the
//   generated `dot_rows` and one of the two `reduce` functions.

struct Params {
    rows: u32,
    cols: u32,
    w_row0: u32,
    out_off: u32,
    out_stride: u32,
    row_bytes: u32,
    flags: u32,
    nx: u32,
    eps: f32,
    split: u32,
    kvd: u32,
    head_dim: u32,
    rope_dim: u32,
    theta_scale: f32,
    freq_scale: f32,
    _pad: u32,
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

const F_ACC: u32 = 1u;
const F_NORM: u32 = 2u;
const F_LAST: u32 = 4u;
const F_BIAS: u32 = 8u;
const F_NEOX: u32 = 16u;
const F_FF: u32 = 32u;

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<storage, read> G: array<f32>;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(6) var<storage, read_write> KC: array<u32>;
@group(0) @binding(7) var<storage, read_write> VC: array<u32>;
@group(0) @binding(8) var<storage, read> B: array<f32>;
@group(0) @binding(9) var<storage, read> FF: array<f32>;

var<workgroup> red: array<f32, RW>;
var<private> SGL: u32;
var<private> SGS: u32;

// x[k], or 0 past the row's end (the index is clamped into the row).
fn xload(xb: u32, k: u32) -> f32 {
    return select(0.0, X[xb + min(k, P.cols - 1u)], k < P.cols);
}

// The rmsnorm scale of X[xb ..][..cols]. Eight loads per thread are issued
// before any is used: GPU compilers do not overlap the loads of successive
// loop iterations, and each round trip costs about half a microsecond.
fn norm_scale(lid: u32, xb: u32) -> f32 {
    var ss = 0.0;
    for (var k = lid; k < P.cols; k += 8u * WG) {
        let v0 = xload(xb, k);
        let v1 = xload(xb, k + WG);
        let v2 = xload(xb, k + 2u * WG);
        let v3 = xload(xb, k + 3u * WG);
        let v4 = xload(xb, k + 4u * WG);
        let v5 = xload(xb, k + 5u * WG);
        let v6 = xload(xb, k + 6u * WG);
        let v7 = xload(xb, k + 7u * WG);
        ss += ((v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)) + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7));
    }
    red[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(red[0] / f32(P.cols) + P.eps);
    workgroupBarrier();
    return scale;
}

fn xval(xb: u32, k: u32, scale: f32, norm: bool) -> f32 {
    let v = X[xb + k];
    if norm {
        return (v * scale) * G[k];
    }
    return v;
}

fn xvec(xb: u32, k: u32, scale: f32, norm: bool) -> vec4<f32> {
    let v = vec4<f32>(X[xb + k], X[xb + k + 1u], X[xb + k + 2u], X[xb + k + 3u]);
    if norm {
        return (v * scale) * vec4<f32>(G[k], G[k + 1u], G[k + 2u], G[k + 3u]);
    }
    return v;
}

// fn dot_rows(lid, xb, scale, norm, rb: array<u32, R>) -> array<f32, R>:
// this thread's partial sums for the R rows starting at bytes rb[r]. The
// host generates it with the loop over rows and two units per iteration
// written out, so that every load of an iteration is issued up front.

// The token this workgroup reads (x) and writes.
fn src_token(z: u32) -> u32 {
    return select(z, S.n - 1u, (P.flags & F_LAST) != 0u);
}

fn dst_token(z: u32) -> u32 {
    return select(z, 0u, (P.flags & F_LAST) != 0u);
}

struct Pro {
    xb: u32,
    scale: f32,
}

fn prologue(lid: u32, z: u32) -> Pro {
    let xb = src_token(z) * P.cols;
    var scale = 1.0;
    if (P.flags & F_NORM) != 0u {
        scale = norm_scale(lid, xb);
    }
    return Pro(xb, scale);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let pr = prologue(lid, wid.z);
    var rb: array<u32, R>;
    for (var r = 0u; r < R; r++) {
        rb[r] = (P.w_row0 + min(g * R + r, P.rows - 1u)) * P.row_bytes;
    }
    reduce(lid, dot_rows(lid, pr.xb, pr.scale, (P.flags & F_NORM) != 0u, rb));
    let L = g * R + lid;
    if lid < R && L < P.rows {
        let o = dst_token(wid.z) * P.out_stride + P.out_off + L;
        var v = red[lid * WG];
        if (P.flags & F_ACC) != 0u {
            v += Y[o];
        }
        Y[o] = v;
    }
}

@compute @workgroup_size(WG)
fn silu(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let pr = prologue(lid, wid.z);
    var rb: array<u32, R>;
    for (var r = 0u; r < R; r++) {
        let L = min(g * R + r, P.rows - 1u);
        rb[r] = (P.w_row0 + (L & 1u) * P.split + (L >> 1u)) * P.row_bytes;
    }
    reduce(lid, dot_rows(lid, pr.xb, pr.scale, (P.flags & F_NORM) != 0u, rb));
    let L = g * R + 2u * lid;
    if lid < R / 2u && L < P.rows {
        let gt = red[2u * lid * WG];
        let up = red[(2u * lid + 1u) * WG];
        Y[dst_token(wid.z) * P.out_stride + P.out_off + (L >> 1u)] = gt / (1.0 + exp(-gt)) * up;
    }
}

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

fn rope_pair(x0: f32, x1: f32, i: u32, pos: u32) -> vec2<f32> {
    var theta = f32(pos);
    for (var j = 0u; j < i; j++) {
        theta *= P.theta_scale;
    }
    var ff = 1.0;
    if (P.flags & F_FF) != 0u {
        ff = FF[i];
    }
    let angle = P.freq_scale * theta / ff;
    let c = cos(angle);
    let s = sin(angle);
    return vec2<f32>(x0 * c - x1 * s, x0 * s + x1 * c);
}

@compute @workgroup_size(WG)
fn qkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let pr = prologue(lid, wid.z);
    var rb: array<u32, R>;
    for (var r = 0u; r < R; r++) {
        rb[r] = (P.w_row0 + qkv_row(min(g * R + r, P.rows - 1u))) * P.row_bytes;
    }
    reduce(lid, dot_rows(lid, pr.xb, pr.scale, (P.flags & F_NORM) != 0u, rb));
    let l0 = g * R + 4u * lid;
    if lid < R / 4u && l0 < P.rows {
        let q = qkv_quad(l0);
        let ra = q.base + q.a;
        let rbb = q.base + q.b;
        var v = vec4<f32>(red[4u * lid * WG], red[(4u * lid + 1u) * WG],
            red[(4u * lid + 2u) * WG], red[(4u * lid + 3u) * WG]);
        if (P.flags & F_BIAS) != 0u {
            v += vec4<f32>(B[ra], B[ra + 1u], B[rbb], B[rbb + 1u]);
        }
        let t = dst_token(wid.z);
        let pos = S.pos + t;
        if q.sec < 2u && q.e < P.rope_dim {
            if (P.flags & F_NEOX) != 0u {
                let p0 = rope_pair(v.x, v.z, q.a, pos);
                let p1 = rope_pair(v.y, v.w, q.a + 1u, pos);
                v = vec4<f32>(p0.x, p1.x, p0.y, p1.y);
            } else {
                let p0 = rope_pair(v.x, v.y, q.a / 2u, pos);
                let p1 = rope_pair(v.z, v.w, q.a / 2u + 1u, pos);
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
            let wa = pack2x16float(v.xy);
            let wb = pack2x16float(v.zw);
            if q.sec == 1u {
                KC[o + q.a / 2u] = wa;
                KC[o + q.b / 2u] = wb;
            } else {
                VC[o + q.a / 2u] = wa;
                VC[o + q.b / 2u] = wb;
            }
        }
    }
}
