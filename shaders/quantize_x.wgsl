// The integer matvec's x: each token's row of X (with flag NORM first
// rmsnorm(x) * G, as matvec.wgsl's separate-norm pass computes it) cut
// into blocks of 32 elements, each stored as a scale d = amax / 127 (f32)
// and 32 int8 values q = round(x / d) (ties to even; 0 where amax is 0),
// four to a u32 word, element 4i + j in byte j of word i. The last block
// of a row whose length is not a multiple of 32 is padded with zeros.
// Token t's words start at XQ[t * nb * 8] and its scales at XD[t * nb],
// nb = ceil(cols / 32); with flag LAST only token S.n - 1 is quantized
// (into its own slot, which is where the matvec's LAST reads it).
// The matvec (units.wgsl's unit_idot_<fmt>, dot4I8Packed) then multiplies
// int8 weights by these in 32-bit integers and scales each 4-element sum
// by the weight's and the x block's scales in f32. The host appends
// row_norm.wgsl (the norm's sums, shared with own_x.wgsl) and
// int8_block.wgsl (the block arithmetic, shared with attention.wgsl).
// Bindings: the matvec's own: 1 X (f32, [tokens][cols]), 3 P (its Params:
//   only the fields up to eps are declared here, in matrix.wgsl's order),
//   4 G (norm gains; any buffer without NORM), 5 S (Step); and 13 XQ
//   (u32), 14 XD (f32), both written.
// Dispatch: (ceil(nb * 32 / 2048), 1, tokens) workgroups of 256 threads
//   ((.., 1, 1) with LAST): thread lid of workgroup x quantizes elements
//   8 (256 x + lid) .. + 7, four threads one block. With NORM every
//   workgroup first sums the squares of the whole row (as the matvec's
//   workgroups do): no second pass and no grid-wide sync.
// Why the shape of the NORM path: on the H100 this pass runs ~3 times a
// layer in decode, and its time is latency, not bandwidth (4096 floats):
// each global round trip and each barrier level counts.

// The leading fields of matrix.wgsl's Params (the same uniform block).
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
}

struct Step {
    pos: u32,
    n: u32,
    _p0: u32,
    _p1: u32,
}

const F_NORM: u32 = 2u;
const F_LAST: u32 = 4u;
const WG: u32 = 256u;

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<storage, read> G: array<f32>;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(13) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(14) var<storage, read_write> XD: array<f32>;

// Per-thread partial sums of squares (row_norm.wgsl's).
var<workgroup> red: array<f32, WG>;
// Each thread's largest magnitude, for its block's amax.
var<workgroup> mags: array<f32, WG>;

// x[k], or 0 past the row's end (the index is clamped into the row).
fn xload(xb: u32, k: u32) -> f32 {
    return select(0.0, X[xb + min(k, P.cols - 1u)], k < P.cols);
}

// x[k0 .. k0 + 7] (0 past the row's end) as two vec4.
fn xload8(xb: u32, k0: u32) -> mat2x4<f32> {
    return mat2x4<f32>(
        vec4<f32>(xload(xb, k0), xload(xb, k0 + 1u), xload(xb, k0 + 2u), xload(xb, k0 + 3u)),
        vec4<f32>(xload(xb, k0 + 4u), xload(xb, k0 + 5u), xload(xb, k0 + 6u), xload(xb, k0 + 7u)),
    );
}

// row_norm.wgsl's hooks.
const NQ: u32 = WG;

fn nq_x8(xb: u32, k0: u32) -> mat2x4<f32> {
    return xload8(xb, k0);
}

fn nq_put(i: u32, v: f32) {
    red[i] = v;
}

fn nq_get(i: u32) -> f32 {
    return red[i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let norm = (P.flags & F_NORM) != 0u;
    let t = select(wid.z, S.n - 1u, (P.flags & F_LAST) != 0u);
    let xb = t * P.cols;
    let nb = (P.cols + 31u) / 32u;
    let c = wid.x * WG + lid;
    let k0 = 8u * c;
    var v = mat2x4<f32>();
    if norm {
        // Gains past the row's end multiply zeros: clamp their index.
        // Loaded first, so that their round trip overlaps x's.
        let kg = vec4<u32>(k0, k0 + 1u, k0 + 2u, k0 + 3u);
        let last = vec4<u32>(P.cols - 1u);
        let ga = min(kg, last);
        let gb = min(kg + vec4<u32>(4u), last);
        let g = mat2x4<f32>(
            vec4<f32>(G[ga.x], G[ga.y], G[ga.z], G[ga.w]),
            vec4<f32>(G[gb.x], G[gb.y], G[gb.z], G[gb.w]),
        );
        // Every workgroup sums the squares of the whole row (row_norm.wgsl),
        // in the quantizing layout (chunk j of the row is what workgroup j
        // quantizes): each thread keeps its own chunk's values, so x is
        // read once.
        let rn = row_norm(lid, xb, wid.x);
        v = mat2x4<f32>((rn.v[0] * rn.scale) * g[0], (rn.v[1] * rn.scale) * g[1]);
    } else {
        v = xload8(xb, k0);
    }
    let a = v[0];
    let b = v[1];
    let m = max(abs(a), abs(b));
    mags[lid] = max(max(m.x, m.y), max(m.z, m.w));
    workgroupBarrier();
    let g0 = lid & ~3u;
    let amax = max(max(mags[g0], mags[g0 + 1u]), max(mags[g0 + 2u], mags[g0 + 3u]));
    let id = q8_inv(amax);
    if c < 4u * nb {
        let o = t * nb * 8u + 2u * c;
        XQ[o] = q8_pack(a, id);
        XQ[o + 1u] = q8_pack(b, id);
        if (lid & 3u) == 0u {
            XD[t * nb + (c >> 2u)] = q8_scale(amax);
        }
    }
}
