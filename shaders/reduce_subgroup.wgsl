// Team sums for matvec.wgsl with subgroup operations: red[TB + r * WG] =
// the sum over the WG threads of this thread's team (the whole workgroup
// but in `glu_q`) of acc[r], for r < RN. subgroupAdd within each
// subgroup, whose first lane stores its sum at slot lid / SGS; then thread r
// adds the WG / SGS slots of row r. This assumes subgroups are runs of
// consecutive local indices whose size divides 64, as on every 1-D compute
// workgroup of the drivers we know (NVIDIA, AMD, Intel, Mesa); the host
// enables it only when the adapter reports subgroup sizes dividing 64 (and
// so WG), and for `glu_q` only where they divide its team's WG threads
// (a subgroup must not span two teams).
// Bindings: none (uses matvec.wgsl's `red`, `TB`, `SGL`, `SGS`). Dispatch: none.

// The host writes one reduce_row call per r < RN (ACC_ROWS), with constant
// indices into acc (see matvec.wgsl's row_start).
fn reduce_row(r: u32, lid: u32, a: f32) {
    let v = subgroupAdd(a);
    if SGL == 0u {
        red[TB + r * WG + lid / SGS] = v;
    }
}

fn reduce(lid: u32, acc: array<f32, RN>) {
ACC_ROWS
    workgroupBarrier();
    if lid < RN {
        var s = 0.0;
        for (var i = 0u; i < WG / SGS; i++) {
            s += red[TB + lid * WG + i];
        }
        red[TB + lid * WG] = s;
    }
    workgroupBarrier();
}
