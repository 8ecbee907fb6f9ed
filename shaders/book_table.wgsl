// IQ4_NL's code book in workgroup memory, for wide.wgsl's IQ4_XS and
// IQ4_NL decoders where the matvec does not use subgroups (or the device's
// subgroups are narrower than 8 lanes); book_shuffle.wgsl is the other.
// Computes: iq4_lut_fill() fills IQ4L (every thread its share, then a
//   workgroup barrier); iq4_lut2(q) the int8 values of q's nibbles.
// Bindings: none (uses matvec.wgsl's FLID, WG, TEAMS and units.wgsl's
//   iq4_bytes). Dispatch: none.
//
// IQ4_NL's code book by byte, for the wide IQ4_XS decoder: entry b holds
// the int8 values of b's low nibble (bits 0..7) and high nibble (bits
// 16..23). Why: iq4_bytes (selects per nibble) costs ~50 operations per 4
// elements, which held IQ4_XS matvecs far below the memory bandwidth
// (compute-bound: ~3 quant words per SM clock arrive at full bandwidth on
// an H100, which leaves ~40 operations per word); a table lookup per byte
// is 4 shared-memory reads and ~16 operations per word (8 elements).
// These reads bound IQ4_XS/IQ4_NL products: without them the same kernel
// reads 2.1 TB/s on the H100, with them 1.3-1.4, a third of the gap in
// bank conflicts; a two-half table that skips the byte regrouping, and
// mux-tree decoding without a table, measured slower (BENCHMARKS.md,
// 2026-11-28). So did, on the H200 (2026-11-29e): x regrouped once for
// all rows instead of the bytes per row (fewer operations: even), a
// second table shifted a byte (even), copies of the table by thread so
// that a subgroup's lookups never share a bank (4 to 32 copies, 4 to 32
// KiB: 17-72% slower, the fill and the memory outweigh the conflicts),
// and the 16 nibble values in 32 copies (no conflicts, 8 lookups a word:
// 12% slower). Filled by each workgroup that uses it (iq4_lut_fill); a
// workgroup variable that an entry point does not use takes no memory
// there.
var<workgroup> IQ4L: array<u32, 256>;

// Every thread fills its share of IQ4L, then the workgroup waits for all
// of it. Call in uniform control flow, before the first lookup. The
// shares are by matvec.wgsl's FLID, the index in the whole workgroup of
// TEAMS * WG threads (`glu_q`'s teams share one table).
fn iq4_lut_fill() {
    for (var b = FLID; b < 256u; b += WG * TEAMS) {
        IQ4L[b] = (iq4_bytes(b) & 0xffu) | ((iq4_bytes(b >> 4u) & 0xffu) << 16u);
    }
    workgroupBarrier();
}

// The IQ4_NL values of the 4 low nibbles (.x) and the 4 high nibbles (.y)
// of q as packed int8: bytes (L0, L1, H0, H1) and (L2, L3, H2, H3) from two
// pairs of lookups, then regrouped.
fn iq4_lut2(q: u32) -> vec2<u32> {
    let p01 = IQ4L[q & 255u] | (IQ4L[(q >> 8u) & 255u] << 8u);
    let p23 = IQ4L[(q >> 16u) & 255u] | (IQ4L[q >> 24u] << 8u);
    return vec2<u32>((p01 & 0xffffu) | (p23 << 16u), (p01 >> 16u) | (p23 & 0xffff0000u));
}
