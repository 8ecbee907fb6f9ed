//! x86_64 fast paths (placeholder).
use super::GgmlType;

pub(super) fn gemm(
    _ty: GgmlType,
    _n: usize,
    _w: &[u8],
    _a: &[u8],
    _ntok: usize,
    _out: &mut [f32],
) -> bool {
    false
}

pub(super) fn level_name() -> &'static str {
    "scalar"
}
