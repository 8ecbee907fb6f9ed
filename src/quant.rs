//! TEMPORARY stub so that gguf/model compile on main; replaced by the quant branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ4_NL,
    IQ4_XS,
}
impl GgmlType {
    pub fn from_id(id: u32) -> Option<GgmlType> {
        use GgmlType::*;
        Some(match id {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            9 => Q8_1,
            10 => Q2_K,
            11 => Q3_K,
            12 => Q4_K,
            13 => Q5_K,
            14 => Q6_K,
            15 => Q8_K,
            20 => IQ4_NL,
            23 => IQ4_XS,
            30 => BF16,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        "?"
    }
    pub fn block_len(self) -> usize {
        use GgmlType::*;
        match self {
            F32 | F16 | BF16 => 1,
            Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | Q8_1 | IQ4_NL => 32,
            _ => 256,
        }
    }
    pub fn block_bytes(self) -> usize {
        use GgmlType::*;
        match self {
            F32 => 4,
            F16 | BF16 => 2,
            Q4_0 => 18,
            Q4_1 => 20,
            Q5_0 => 22,
            Q5_1 => 24,
            Q8_0 => 34,
            Q8_1 => 36,
            Q2_K => 84,
            Q3_K => 110,
            Q4_K => 144,
            Q5_K => 176,
            Q6_K => 210,
            Q8_K => 292,
            IQ4_NL => 18,
            IQ4_XS => 136,
        }
    }
    pub fn row_bytes(self, n: usize) -> Option<usize> {
        if n % self.block_len() != 0 {
            return None;
        }
        (n / self.block_len()).checked_mul(self.block_bytes())
    }
    pub fn vec_dot_type(self) -> GgmlType {
        self
    }
}
pub fn dequantize_row(_ty: GgmlType, _src: &[u8], _dst: &mut [f32]) {
    unimplemented!()
}
pub fn quantize_row(_ty: GgmlType, _src: &[f32], _dst: &mut [u8]) {
    unimplemented!()
}
pub fn vec_dot(_ty: GgmlType, _n: usize, _w: &[u8], _act: &[u8]) -> f32 {
    unimplemented!()
}
pub fn gemm(_ty: GgmlType, _n: usize, _w: &[u8], _act: &[u8], _ntok: usize, _out: &mut [f32]) {
    unimplemented!()
}
