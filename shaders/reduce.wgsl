// Team sums for matvec.wgsl: red[TB + r * WG] = the sum over the WG
// threads of this thread's team (the whole workgroup but in `glu_q`) of
// acc[r], for r < RN. Two versions; the host appends one.
// Bindings: none (uses matvec.wgsl's `red`, `TB`, `SGL`, `SGS`). Dispatch: none.

// A shared-memory tree, log2(WG) barriers, any adapter.
// The host writes one reduce_row call per r < RN (ACC_ROWS), with constant
// indices into acc (see matvec.wgsl's row_start).
fn reduce_row(r: u32, lid: u32, a: f32) {
    red[TB + r * WG + lid] = a;
}

fn reduce(lid: u32, acc: array<f32, RN>) {
ACC_ROWS
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            for (var r = 0u; r < RN; r++) {
                red[TB + r * WG + lid] += red[TB + r * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
}
