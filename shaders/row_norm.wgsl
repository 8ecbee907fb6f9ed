// The rmsnorm scale of one row, in one order: quantize_x.wgsl's pass and
// own_x.wgsl (the gate/up product quantizing its own x) both call it, so
// that the int8 x of the two is the same bit for bit. NQ threads (the
// includer's const, 256), thread lid loading 8 elements of each chunk of
// 8 NQ (two chunks a step: 16 loads in flight, one round trip for rows up
// to 4096), then the threads' sums added in two levels of 16 (two
// barriers rather than a tree of eight).
// The includer provides `const NQ`, `fn nq_x8(xb, k0) -> mat2x4<f32>` (x[k0
// .. k0 + 7] of the row at xb, 0 past its end) and `fn nq_put(i, v)` /
// `fn nq_get(i) -> f32` over NQ floats of its workgroup memory; Params
// with cols and eps. Call in uniform control flow.

var<workgroup> NQ16: array<f32, 16>;

const_assert NQ == 256u;

struct RowNorm {
    // 1 / sqrt(mean(x^2) + eps).
    scale: f32,
    // This thread's 8 values of chunk `keep` (zeros where it has none).
    v: mat2x4<f32>,
}

fn nq_sq8(v: mat2x4<f32>) -> f32 {
    return dot(v[0], v[0]) + dot(v[1], v[1]);
}

fn row_norm(lid: u32, xb: u32, keep: u32) -> RowNorm {
    let nb = (P.cols + 31u) / 32u;
    let nch = (nb * 32u + 8u * NQ - 1u) / (8u * NQ);
    var ss = 0.0;
    var v = mat2x4<f32>();
    for (var j = 0u; j < nch; j += 2u) {
        let p = nq_x8(xb, 8u * (j * NQ + lid));
        let q = nq_x8(xb, 8u * ((j + 1u) * NQ + lid));
        ss += nq_sq8(p) + nq_sq8(q);
        if j == keep {
            v = p;
        }
        if j + 1u == keep {
            v = q;
        }
    }
    nq_put(lid, ss);
    workgroupBarrier();
    if lid < 16u {
        var s = 0.0;
        for (var i = 0u; i < 16u; i++) {
            s += nq_get(16u * lid + i);
        }
        NQ16[lid] = s;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < 16u; i++) {
        total += NQ16[i];
    }
    return RowNorm(1.0 / sqrt(total / f32(P.cols) + P.eps), v);
}
