// IQ4_NL's code book in registers, for wide.wgsl's IQ4_XS and IQ4_NL
// decoders in a matvec that uses subgroups: lane l of a subgroup holds the
// value of nibble l % BOOK_LANES (and, with BOOK_LANES = 8, of nibble 8 +
// l % 8 too), once at each byte position, and a nibble's value is one
// subgroupShuffle from the lane of that number (two and a select with 8
// lanes). The host prepends `const BOOK_LANES` (16, or 8 where a subgroup
// may have fewer than 16 lanes; narrower subgroups take book_table.wgsl).
// Why: the table's 4 workgroup-memory reads a quant word collide in its
// banks (~3.5 deep for 32 random bytes), and they bound the IQ4_XS
// products; 8 shuffles a word collide in nothing, need no fill and no
// workgroup memory: the real-layout 8B IQ4_XS decodes 4.1% faster on the
// H200 (311 against 299 tok/s), the synthetic 1B IQ4_XS and 8B IQ4_NL 4%
// (BENCHMARKS.md, 2026-12-02d). The 16 nibble values in 32 copies in
// workgroup memory, the same 8 lookups without conflicts, had lost 12%
// (2026-11-29e): their addresses and fill cost more than these shuffles.
// Every lane of the subgroup must take part in each lookup (a lane that
// has left a loop returns nothing defined to the others), so the host's
// loop around the decoders runs the same trips in every lane
// (`dot_rows_wide_body`).
// Computes: iq4_lut_fill() sets this lane's registers (no barrier);
//   iq4_lut2(q) the int8 values of q's nibbles, as book_table.wgsl's.
// Bindings: none (uses matvec.wgsl's SGL and units.wgsl's iq4_bytes).
// Dispatch: none.

// Lane l's value of nibble l % BOOK_LANES at byte 0, 1, 2, 3 (.x .. .w),
// and of nibble 8 + l % 8 (BOOK_LANES = 8 only).
var<private> BOOK_LO: vec4<u32>;
var<private> BOOK_HI: vec4<u32>;

fn iq4_lut_fill() {
    let n = SGL % BOOK_LANES;
    let a = iq4_bytes(n) & 0xffu;
    BOOK_LO = vec4<u32>(a, a << 8u, a << 16u, a << 24u);
    // With 16 lanes every nibble is in BOOK_LO, and BOOK_HI stays unread.
    if BOOK_LANES < 16u {
        let b = iq4_bytes((n + 8u) & 15u) & 0xffu;
        BOOK_HI = vec4<u32>(b, b << 8u, b << 16u, b << 24u);
    }
}

// Nibble n's value (at the byte that lo and hi hold it at).
fn book(lo: u32, hi: u32, n: u32) -> u32 {
    if BOOK_LANES >= 16u {
        return subgroupShuffle(lo, n);
    }
    return select(subgroupShuffle(lo, n & 7u), subgroupShuffle(hi, n & 7u), n >= 8u);
}

// The IQ4_NL values of the 4 low nibbles (.x) and the 4 high nibbles (.y)
// of q as packed int8.
fn iq4_lut2(q: u32) -> vec2<u32> {
    let lo = (book(BOOK_LO.x, BOOK_HI.x, q & 15u) | book(BOOK_LO.y, BOOK_HI.y, (q >> 8u) & 15u))
        | (book(BOOK_LO.z, BOOK_HI.z, (q >> 16u) & 15u) | book(BOOK_LO.w, BOOK_HI.w, (q >> 24u) & 15u));
    let hi = (book(BOOK_LO.x, BOOK_HI.x, (q >> 4u) & 15u) | book(BOOK_LO.y, BOOK_HI.y, (q >> 12u) & 15u))
        | (book(BOOK_LO.z, BOOK_HI.z, (q >> 20u) & 15u) | book(BOOK_LO.w, BOOK_HI.w, q >> 28u));
    return vec2<u32>(lo, hi);
}
