// The integer matvec's x: each token's row of X (with flag NORM, x * G,
// the gains of the rmsnorm that the product finishes: below) cut into
// blocks of 32 elements, each stored as a scale d = amax / 127 (f32) and
// 32 int8 values q = round(x / d) (ties to even; 0 where amax is 0), four
// to a u32 word, element 4i + j in byte j of word i. The last block of a
// row whose length is not a multiple of 32 is padded with zeros.
// Token t's words start at XQ[t * nb * 8] and its scales at XD[t * nb],
// nb = ceil(cols / 32); with flag NORM each block's sum of squares of x
// (before the gains) also goes to XD[P.sq_base + t * nb + block], in one
// order: ((s0 + s1) + (s2 + s3)), s_i its i-th 8 elements' dot(a, a) +
// dot(b, b) over two vec4. With flag LAST only token S.n - 1 is quantized
// (into its own slot, which is where the matvec's LAST reads it).
// The matvec (units.wgsl's unit_idot_<fmt>, dot4I8Packed) then multiplies
// int8 weights by these in 32-bit integers and scales each 4-element sum
// by the weight's and the x block's scales in f32; with NORM it sums the
// blocks' squares with its rows and multiplies each output by the norm's
// scale 1 / sqrt(mean(x^2) + eps) (matvec.wgsl's row_scale).
// Why the norm's scale is left to the product: rmsnorm(x) * G = s (x * G)
// for one scalar s per row, and a block's int8 values and scale are the
// same up to rounding whether they are cut from s (x * G) or x * G (its
// scale then times s). Without s, nothing here needs the whole row: no
// row-wide sum, no barrier for it, each thread loading its own 8 elements
// only. The row-wide sum here (every workgroup summing the whole row)
// took an 8B's passes 535-555 us a step against 455-469 without it,
// timed alone; in the stream the products' reading of the sums takes
// back most of that: 8B IQ4_XS +0.9%, Q4_K even, the 1B +1.2-1.6%
// (BENCHMARKS.md, 2026-11-30).
// The host appends int8_block.wgsl (the block arithmetic, shared with
// attention.wgsl).
// The host puts matrix_params.wgsl (Params, Step, the flags) first.
// Bindings: the matvec's own: 1 X (f32, [tokens][cols]), 3 P (its
//   Params), 4 G (norm gains; any buffer without NORM), 5 S (Step); and
//   13 XQ (u32), 14 XD (f32), both written.
// Dispatch: (ceil(nb * 32 / 2048), 1, tokens) workgroups of 256 threads
//   ((.., 1, 1) with LAST): thread lid of workgroup x quantizes elements
//   8 (256 x + lid) .. + 7, four threads one block.
// Why this shape: in decode this pass runs before q/k/v and (past
// GpuTuning::glu_own_x columns) before gate/up, and its time is latency,
// not bandwidth (4096 floats): one round trip and one barrier.

const WG: u32 = 256u;

@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
@group(0) @binding(4) var<storage, read> G: array<f32>;
@group(0) @binding(5) var<uniform> S: Step;
@group(0) @binding(13) var<storage, read_write> XQ: array<u32>;
@group(0) @binding(14) var<storage, read_write> XD: array<f32>;

// Each thread's largest magnitude and its sum of squares, for its block's.
var<workgroup> mags: array<f32, WG>;
var<workgroup> sqs: array<f32, WG>;

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

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let norm = (P.flags & F_NORM) != 0u;
    let t = select(wid.z, S.n - 1u, (P.flags & F_LAST) != 0u);
    let xb = t * P.cols;
    let nb = (P.cols + 31u) / 32u;
    let c = wid.x * WG + lid;
    let k0 = 8u * c;
    // The gains, or 1 without NORM (x * 1 is x, bit for bit).
    var g = mat2x4<f32>(vec4<f32>(1.0), vec4<f32>(1.0));
    if norm {
        // Gains past the row's end multiply zeros: clamp their index.
        // Loaded first, so that their round trip overlaps x's.
        let kg = vec4<u32>(k0, k0 + 1u, k0 + 2u, k0 + 3u);
        let last = vec4<u32>(P.cols - 1u);
        let ga = min(kg, last);
        let gb = min(kg + vec4<u32>(4u), last);
        g = mat2x4<f32>(
            vec4<f32>(G[ga.x], G[ga.y], G[ga.z], G[ga.w]),
            vec4<f32>(G[gb.x], G[gb.y], G[gb.z], G[gb.w]),
        );
    }
    let x = xload8(xb, k0);
    sqs[lid] = dot(x[0], x[0]) + dot(x[1], x[1]);
    let a = x[0] * g[0];
    let b = x[1] * g[1];
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
            let blk = t * nb + (c >> 2u);
            XD[blk] = q8_scale(amax);
            if norm {
                XD[P.sq_base + blk] = (sqs[g0] + sqs[g0 + 1u]) + (sqs[g0 + 2u] + sqs[g0 + 3u]);
            }
        }
    }
}
