// Workgroup sums for matvec.wgsl with subgroup operations: red[r * WG] =
// the sum over the WG threads of acc[r], for r < RN. subgroupAdd within each
// subgroup, whose first lane stores its sum at slot lid / SGS; then thread r
// adds the WG / SGS slots of row r. This assumes subgroups are runs of
// consecutive local indices whose size divides 64, as on every 1-D compute
// workgroup of the drivers we know (NVIDIA, AMD, Intel, Mesa); the host
// enables it only when the adapter reports subgroup sizes dividing 64 (and so WG).
// Bindings: none (uses matvec.wgsl's `red`, `SGL`, `SGS`). Dispatch: none.

// The host writes one reduce_row call per r < RN (ACC_ROWS), with constant
// indices into acc (see matvec.wgsl's row_start).
fn reduce_row(r: u32, lid: u32, a: f32) {
    let v = subgroupAdd(a);
    if SGL == 0u {
        red[r * WG + lid / SGS] = v;
    }
}

fn reduce(lid: u32, acc: array<f32, RN>) {
ACC_ROWS
    workgroupBarrier();
    if lid < RN {
        var s = 0.0;
        for (var i = 0u; i < WG / SGS; i++) {
            s += red[lid * WG + i];
        }
        red[lid * WG] = s;
    }
    workgroupBarrier();
}
