// Query head h's output row as the int8 blocks of 32 that the Wo
// product's integer path reads, for the decode attention kernels that
// write one head a workgroup (few.wgsl, mid.wgsl `main_q`): XQ[(h HD +
// e) / 4] and XD[(h HD + e) / 32] exactly as attention.wgsl's `store_q`
// writes them (int8_block.wgsl's functions on the same values, so the
// same bits). Four values a thread (threads lid < HD / 4), each block's
// scale by the thread of its first four.
// The including shader declares HD (a multiple of 32), the row `ob`
// (workgroup memory, HD values, written before a barrier that precedes
// the call) and the bindings XQ and XD, and appends int8_block.wgsl.
// Bindings: none of its own. Dispatch: none (a library the host appends).
fn put_head_q(h: u32, lid: u32) {
    let e = 4u * lid;
    if e < HD {
        let g = e & ~31u;
        var amax = 0.0;
        for (var i = 0u; i < 32u; i++) {
            amax = max(amax, abs(ob[g + i]));
        }
        let at = h * HD + e;
        let q = vec4<f32>(ob[e], ob[e + 1u], ob[e + 2u], ob[e + 3u]);
        XQ[at / 4u] = q8_pack(q, q8_inv(amax));
        if (e & 31u) == 0u {
            XD[at / 32u] = q8_scale(amax);
        }
    }
}
