//! Compute pipelines, built once per device, and the recorded dispatches
//! ("ops") that the forward pass replays.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::quant::GgmlType;

use super::{Gpu, GpuTuning};

const DEQUANT: &str = include_str!("../../shaders/dequant.wgsl");
const UNITS: &str = include_str!("../../shaders/units.wgsl");
// matrix_params.wgsl (the uniform block that quantize_x.wgsl shares) first.
const MATRIX: &str = concat!(
    include_str!("../../shaders/matrix_params.wgsl"),
    include_str!("../../shaders/matrix.wgsl")
);
const MATRIX_PARAMS: &str = include_str!("../../shaders/matrix_params.wgsl");
const MATVEC: &str = include_str!("../../shaders/matvec.wgsl");
const MATMUL: &str = include_str!("../../shaders/matmul.wgsl");
const MATMUL_COOP: &str = include_str!("../../shaders/matmul_coop.wgsl");
const MATMUL_INT: &str = include_str!("../../shaders/matmul_int.wgsl");
const UNITS_Q: &str = include_str!("../../shaders/units_q.wgsl");
const TILE: &str = include_str!("../../shaders/tile.wgsl");
const REDUCE: &str = include_str!("../../shaders/reduce.wgsl");
const REDUCE_SUBGROUP: &str = include_str!("../../shaders/reduce_subgroup.wgsl");
const EMBED: &str = include_str!("../../shaders/embed.wgsl");
const RMSNORM: &str = include_str!("../../shaders/rmsnorm.wgsl");
const ROPE: &str = include_str!("../../shaders/rope.wgsl");
const ATTENTION: &str = include_str!("../../shaders/attention.wgsl");
const FLASH: &str = include_str!("../../shaders/flash.wgsl");
const FLASH_COOP: &str = include_str!("../../shaders/flash_coop.wgsl");
const ELEMENTWISE: &str = include_str!("../../shaders/elementwise.wgsl");
const ARGMAX: &str = include_str!("../../shaders/argmax.wgsl");
const SAMPLE: &str = include_str!("../../shaders/sample.wgsl");
const QUANTIZE_X: &str = include_str!("../../shaders/quantize_x.wgsl");
const OWN_X: &str = include_str!("../../shaders/own_x.wgsl");
const PACK_F16: &str = include_str!("../../shaders/pack_f16.wgsl");
const SPLIT: &str = include_str!("../../shaders/split.wgsl");
const FEW: &str = include_str!("../../shaders/few.wgsl");
const MID: &str = include_str!("../../shaders/mid.wgsl");
const ATTN_STEP: &str = include_str!("../../shaders/attn_step.wgsl");
const INT8_BLOCK: &str = include_str!("../../shaders/int8_block.wgsl");
const HEAD_Q: &str = include_str!("../../shaders/head_q.wgsl");
const WIDE: &str = include_str!("../../shaders/wide.wgsl");
const BOOK_TABLE: &str = include_str!("../../shaders/book_table.wgsl");
const BOOK_SHUFFLE: &str = include_str!("../../shaders/book_shuffle.wgsl");
/// Snippets (no bindings, no entry) appended to the kernels that use them.
const F16: &str = include_str!("../../shaders/f16.wgsl");
const ROUND_Z_PACK: &str = include_str!("../../shaders/round_z_pack.wgsl");
const ROUND_Z_HAND: &str = include_str!("../../shaders/round_z_hand.wgsl");
const ROPE_PAIR: &str = include_str!("../../shaders/rope_pair.wgsl");

/// Elements of x one quantize_x.wgsl workgroup quantizes (256 threads, 8
/// each).
pub const QUANTIZE_X_SPAN: usize = 2048;

/// Workgroups along x for flattened and row-indexed dispatches; kept under
/// WebGPU's guaranteed 65535 per dimension, the rest goes to y.
pub const NX: u32 = 32768;

/// The weight formats the kernels decode (all ggml weight formats we load).
pub fn supported(ty: GgmlType) -> bool {
    !matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K)
}

/// How many workgroups an op launches for a batch of `n` tokens.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Fixed([u32; 3]),
    /// Decode's splits: `[x, splits, 1]`, the splits the token's keys
    /// need where the step's position is known, else every slot.
    Splits(SplitGrid),
    /// The given dims with dimension `axis` replaced by the token count.
    PerToken([u32; 3], usize),
    /// `n * width` elements, 64 per workgroup, spread over x then y.
    Flat(u32),
    /// The given x, and the tokens in tiles of the given size along y.
    TokenTiles(u32, u32),
    /// `TokenTiles(x, tile)` for batches of `lo..=hi` tokens only, no
    /// dispatch for others: a product with one tile for short batches and
    /// another for long ones has an op for each (`Kernels::long_tile`).
    TokenTilesIn(u32, u32, u32, u32),
}

impl Shape {
    /// The workgroups for `n` tokens at an unknown position (decode's
    /// splits: every slot).
    pub fn groups(self, n: u32) -> [u32; 3] {
        self.groups_at(n, None)
    }

    /// The workgroups for `n` tokens, the first at `pos` where known.
    pub fn groups_at(self, n: u32, pos: Option<u32>) -> [u32; 3] {
        match self {
            Shape::Fixed(g) => g,
            Shape::Splits(s) => [s.x, pos.map_or(s.slots, |p| s.used(p)), 1],
            Shape::PerToken(mut g, axis) => {
                g[axis] = n;
                g
            }
            Shape::Flat(width) => {
                let groups = (n * width).div_ceil(64);
                [groups.min(NX), groups.div_ceil(NX), 1]
            }
            Shape::TokenTiles(x, tile) => [x, n.div_ceil(tile), 1],
            Shape::TokenTilesIn(x, tile, lo, hi) => {
                if (lo..=hi).contains(&n) {
                    [x, n.div_ceil(tile), 1]
                } else {
                    [0, 0, 0]
                }
            }
        }
    }
}

#[derive(Clone)]
pub struct Op {
    pub pipeline: Rc<wgpu::ComputePipeline>,
    pub bind: wgpu::BindGroup,
    pub shape: Shape,
    /// What the op is, for profiles.
    pub label: &'static str,
}

/// Record `ops` for `n` tokens, the first at `pos` where known (else
/// sized for any position).
pub fn encode(pass: &mut wgpu::ComputePass<'_>, ops: &[Op], n: u32, pos: Option<u32>) {
    for op in ops {
        let [x, y, z] = op.shape.groups_at(n, pos);
        if x == 0 || y == 0 || z == 0 {
            continue;
        }
        pass.set_pipeline(&op.pipeline);
        pass.set_bind_group(0, &op.bind, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

/// The entry points of matvec.wgsl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mv {
    /// `y (+)= W x`, optionally with the rmsnorm of x folded in.
    Main,
    /// Gate and up rows in one matrix: `y = silu(gate x) * (up x)`.
    Silu,
    /// The same with llama.cpp's GELU: `y = geglu(gate x, up x)` (f16.wgsl).
    Gelu,
    /// q, k and v rows in one matrix: bias, rope, q out, k and v to the cache.
    Qkv,
    /// `Main` plus per-workgroup argmax partials (the LM head).
    Head,
}

impl Mv {
    fn entry(self) -> &'static str {
        match self {
            Mv::Main => "main",
            Mv::Silu | Mv::Gelu => "glu",
            Mv::Qkv => "qkv",
            Mv::Head => "head",
        }
    }

    /// matrix.wgsl's gated activation `act` for this entry, fixed when the
    /// pipeline is built (the other entries never call it: silu there).
    fn act(self) -> &'static str {
        match self {
            Mv::Gelu => "fn act(gt: f32, up: f32) -> f32 {\n    return geglu(gt, up);\n}\n",
            _ => "fn act(gt: f32, up: f32) -> f32 {\n    return gt / (1.0 + exp(-gt)) * up;\n}\n",
        }
    }

    /// The pipeline's label.
    fn label(self) -> &'static str {
        match self {
            Mv::Main => "main",
            Mv::Silu => "silu",
            Mv::Gelu => "gelu",
            Mv::Qkv => "qkv",
            Mv::Head => "head",
        }
    }
}

/// The snippets every matrix kernel appends: matrix.wgsl's f16 rounding
/// and rope, and the entry's gated activation.
fn matrix_tail(mv: Mv) -> String {
    format!("{F16}\n{ROPE_PAIR}\n{}", mv.act())
}

/// The unit decoder of units.wgsl for `ty` and the matching column
/// grouping, when one exists whose alignment holds for `cols` columns
/// (block formats: always, rows are whole blocks). Every format has one
/// but the float ones with rows that are not whole units.
fn unit_decoder(ty: GgmlType, cols: usize) -> (&'static str, &'static str) {
    let whole = cols.is_multiple_of(8);
    match ty {
        GgmlType::Q4_0 => ("q4_0", "nib"),
        GgmlType::Q4_1 => ("q4_1", "nib"),
        GgmlType::Q5_0 => ("q5_0", "nib"),
        GgmlType::Q5_1 => ("q5_1", "nib"),
        GgmlType::IQ4_NL => ("iq4_nl", "nib"),
        GgmlType::IQ4_XS => ("iq4_xs", "nib"),
        GgmlType::Q8_0 => ("q8_0", "elem"),
        GgmlType::Q4_K => ("q4_k", "k64"),
        GgmlType::Q5_K => ("q5_k", "k64"),
        GgmlType::Q2_K => ("q2_k", "k64"),
        GgmlType::Q3_K => ("q3_k", "k64"),
        GgmlType::Q6_K => ("q6_k", "q6k"),
        GgmlType::F16 if whole => ("f16", "elem"),
        GgmlType::BF16 if whole => ("bf16", "elem"),
        GgmlType::F32 if whole => ("f32", "elem"),
        _ => ("elem", "elem"),
    }
}

/// The weight bytes from which a product of formats `fmts` takes the
/// integer path: `min_q8_0` where every format is Q8_0, else `min`
/// (`GpuTuning::int_min_bytes`, `int_min_bytes_q8_0`).
pub fn int_floor(fmts: impl IntoIterator<Item = GgmlType>, min: u64, min_q8_0: u64) -> u64 {
    let mut fmts = fmts.into_iter().peekable();
    let any = fmts.peek().is_some();
    if any && fmts.all(|t| t == GgmlType::Q8_0) {
        min_q8_0
    } else {
        min
    }
}

/// Whether `ty` rows of `cols` columns may join a mixed group (`Fmts`):
/// they have a unit decoder, as the mixed kernels decode only whole units.
pub fn mixable(ty: GgmlType, cols: usize) -> bool {
    supported(ty) && unit_decoder(ty, cols).0 != "elem"
}

/// The integer unit decoder (units.wgsl's `unit_idot_<fmt>`) for `ty`, with
/// the same grouping as `unit_decoder`'s, where one exists: every block
/// format (the float formats have none and keep the f32 path). Q2_K's and
/// Q3_K's are built on their unit_r decoders, whose 8 consecutive elements
/// are the tile's grouping (`tile_decoder`), not the matvec's `k64`.
pub fn int_decoder(ty: GgmlType) -> Option<(&'static str, &'static str)> {
    use GgmlType::*;
    match ty {
        Q2_K | Q3_K => Some(tile_decoder(ty)),
        Q8_0 | Q4_0 | Q4_1 | Q5_0 | Q5_1 | IQ4_NL | IQ4_XS | Q4_K | Q5_K | Q6_K => {
            Some(unit_decoder(ty, ty.block_len()))
        }
        _ => None,
    }
}

/// The wide integer decoder (wide.wgsl's `wide_idot_<fmt>`) for `ty` and
/// its x grouping (`wide_cols_<group>`), where one exists: the formats of
/// most files (Q4_K_M's Q4_K and Q6_K, Q5_K, IQ4_XS, Q8_0, Q4_0) and every
/// other block format (IQ4_NL, Q5_0, Q4_1, Q5_1, Q2_K, Q3_K). Every one has 32- or
/// 256-element blocks, so rows (whole blocks) are whole 32-element wide
/// units and the wide loop has no per-unit tail.
pub fn wide_decoder(ty: GgmlType) -> Option<(&'static str, &'static str)> {
    use GgmlType::*;
    Some(match ty {
        Q4_K => ("q4_k", "k64"),
        Q5_K => ("q5_k", "k64"),
        Q6_K => ("q6_k", "q6k"),
        IQ4_XS => ("iq4_xs", "b32"),
        IQ4_NL => ("iq4_nl", "b32"),
        Q8_0 => ("q8_0", "b32"),
        Q4_0 => ("q4_0", "b32"),
        Q5_0 => ("q5_0", "b32"),
        Q4_1 => ("q4_1", "b32"),
        Q5_1 => ("q5_1", "b32"),
        Q2_K => ("q2_k", "b32"),
        Q3_K => ("q3_k", "b32"),
        _ => return None,
    })
}

/// Whether `ty`'s values come from IQ4_NL's code book (IQ4_XS, IQ4_NL),
/// which the wide decoders look up in workgroup memory (wide.wgsl's IQ4L).
pub fn has_code_book(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::IQ4_XS | GgmlType::IQ4_NL)
}

/// Whether wide decoder `dec` (`wide_decoder`'s name) takes the sums of
/// its x groups: the formats with mins, which multiply the sum of x, and
/// those with a fixed offset, which sum their quants unsigned and take the
/// offset off as a multiple of the sum of x (once for all rows, instead
/// of per weight word in every row).
fn wide_sums(dec: &str) -> bool {
    matches!(
        dec,
        "q4_k" | "q5_k" | "q4_1" | "q5_1" | "q2_k" | "q4_0" | "q5_0" | "q3_k"
    )
}

/// Whether `ty`'s wide decoder reads its blocks through `wq4` (16-byte
/// words: Q4_K's and Q5_K's blocks are 16-byte multiples, and Q3_K's on
/// the GPU, `upload::block_pad`).
pub fn wide_vec(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q3_K)
}

/// Whether `glu_q` takes a gate/up group of formats `f` in team shape
/// `shape`: not where gate and up are both Q3_K (or one Q3_K and the
/// other Q8_0), and where both are Q8_0 only in teams of at most 2 rows
/// (`Kernels::glu_q_shape_for` gives them `glu_q_narrow_shape`, 2x32, at
/// any row length). In 8-row teams glu_q ran slower than the plain gate/up
/// product and the quantize pass together on the H200: synthetic 8B Q8_0
/// tg64 266.4 against 276.6 (BENCHMARKS.md, 2026-11-29e; 309.8 against
/// 314.4 with Wo on the integer path, 2026-12-03); synthetic 8B Q3_K
/// 258.8-259.1 against 278.9-279.3, its gate/up 1,729 us against 1,316
/// timed alone (2026-11-29f). In 2-row teams Q8_0 gains: 8B 318.1 against
/// 314.4, and 1B 1,160 against 1,038, where its down product (17.8 MB)
/// only now takes the integer path that glu_q writes for
/// (`INT_MIN_BYTES_Q8_0`; 2026-12-03). Every other integer format measured
/// gained from it.
pub fn glu_q_takes(f: Fmts, shape: GluQShape) -> bool {
    let slower = |t| matches!(t, GgmlType::Q8_0 | GgmlType::Q3_K);
    if !(slower(f[0]) && slower(f[1])) {
        return true;
    }
    f[0] == GgmlType::Q8_0 && f[1] == GgmlType::Q8_0 && shape.rows <= 2
}

/// The team shape of matvec.wgsl's `glu_q` (`GluQShape`) and `main_q`
/// (`MainQShape`): `rows` rows per team of `threads` threads, and as many
/// teams a workgroup as make its rows one 32-element block of the next
/// product's int8 x: BLOCK rows, 64 for glu_q (gate/up pairs, 32
/// outputs) and 32 for main_q.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TeamShape<const BLOCK: u32> {
    pub rows: u32,
    pub threads: u32,
}

/// `glu_q`'s: gate/up rows, rows / 2 outputs a team.
pub type GluQShape = TeamShape<64>;
/// `main_q`'s: plain rows.
pub type MainQShape = TeamShape<32>;

impl<const BLOCK: u32> TeamShape<BLOCK> {
    /// Teams a workgroup: its rows make one block.
    pub fn teams(self) -> u32 {
        BLOCK / self.rows.max(1)
    }

    /// Rows a power of two dividing BLOCK, at least BLOCK / 32 (glu_q's
    /// even: pairs), and teams of whole threads: a power of two from 8,
    /// with at most `max_threads` threads a workgroup (the device's
    /// limit; WebGPU guarantees 256).
    pub fn valid(self, max_threads: u32) -> bool {
        self.rows >= BLOCK / 32
            && self.rows <= BLOCK
            && self.rows.is_power_of_two()
            && self.threads >= 8
            && self.threads.is_power_of_two()
            && self.teams() * self.threads <= max_threads
    }
}

impl<const BLOCK: u32> std::fmt::Display for TeamShape<BLOCK> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.rows, self.threads)
    }
}

impl GluQShape {
    /// 8 rows for each of 8 teams of 32 threads: 256 threads a workgroup.
    /// On the H200 (BENCHMARKS.md, 2026-11-29d, synthetic, tg64, two
    /// interleaved rounds) glu_q in this shape against the quantize pass:
    /// llama-3.1-8b Q4_K +7.3%, Q4_0 +7.1%, IQ4_XS +0.5%, llama-3.2-1b
    /// Q4_K +2.4%; 16x64 and 4x16 lost 2.6-2.8% on IQ4_XS and gained
    /// less on the 8B Q4_K and Q4_0. Every glu_q shape measured so far
    /// had 256 threads (see `NARROW` for rows of at most 2,048).
    pub const DEFAULT: GluQShape = GluQShape {
        rows: 8,
        threads: 32,
    };

    /// 2 rows for each of 32 teams of 32 threads: 1,024 threads, for rows
    /// of at most `GpuTuning::glu_q_narrow_cols` (2,048). On the H200
    /// (BENCHMARKS.md, 2026-12-02c, two rounds in opposite orders) against
    /// `DEFAULT`: real-layout llama-3.2-1b Q4_K_M +4.8%, Q4_0 +1.9%, Q5_K_M
    /// +1.1%, Q6_K and IQ4_XS even (tg128); synthetic TinyLlama Q4_K
    /// +4.6%, Q4_0 +2.2% (tg64). At 4,096 columns it loses (synthetic
    /// llama-3.1-8b Q4_K -8.8%, Q4_0 -0.7%), so wider rows keep `DEFAULT`.
    pub const NARROW: GluQShape = GluQShape {
        rows: 2,
        threads: 32,
    };
}

/// Whether `glu_q` in `shape` over formats `f` may quantize its own x
/// (own_x.wgsl) from rows of `cols`: rows of whole 32-element blocks,
/// `red`'s R + 1 floats a thread room for two magnitudes and two sums of
/// squares a block, and its workgroup memory (`own_x_bytes`) within
/// WebGPU's guaranteed 16 KiB.
pub fn own_x_fits(shape: GluQShape, f: Fmts, cols: usize) -> bool {
    let threads = (shape.threads * shape.teams()) as usize;
    cols.is_multiple_of(32)
        && cols > 0
        && (shape.rows as usize + 1) * threads >= cols / 8
        && own_x_bytes(shape, f, cols) <= 16384
}

/// The workgroup memory of `glu_q` in `shape` over formats `f`:
/// matvec.wgsl's sums (`red`) and outputs (`hq`), the code book's table
/// where a member has one (`code_book_bytes`), and 64 bytes for any alignment
/// between the arrays. The host takes glu_q only where the device's limit
/// holds it: the sums grow with rows times threads, and 16x64 (18,560
/// bytes with the code book, 17,536 without) is past WebGPU's guaranteed
/// 16 KiB.
pub fn glu_q_bytes(shape: GluQShape, f: Fmts) -> usize {
    let (rows, threads, teams) = (
        shape.rows as usize,
        shape.threads as usize,
        shape.teams() as usize,
    );
    let red = 4 * (rows + 1) * threads * teams;
    let hq = 4 * (teams * rows / 2).max(1);
    red + hq + code_book_bytes(f) + 64
}

/// The workgroup memory of `glu_q` with its own x (`own_x_fits`):
/// `glu_q_bytes` and the int8 row with its scales.
pub fn own_x_bytes(shape: GluQShape, f: Fmts, cols: usize) -> usize {
    // XQ4 (a byte an element), XD (a scale and a sum of squares a block).
    glu_q_bytes(shape, f) + cols + cols / 4
}

impl MainQShape {
    /// 2 rows for each of 16 teams of 64 threads: 1,024 threads a
    /// workgroup, past WebGPU's guaranteed 256 (a device below it runs no
    /// main_q: `valid`). Each thread then holds as many rows and units as
    /// the plain product's (2 rows a workgroup of 64), and an H200 SM runs
    /// 32 warps of it; in 4 teams of 64 threads (8 rows each, 256 threads)
    /// the real-layout 8B IQ4_XS's Wo product took 637 us a step timed
    /// alone against 418 for the plain one, and tg128 lost 3% to the
    /// quantize pass (BENCHMARKS.md, 2026-12-02b: tg128 off 281.7 / 281.6,
    /// 8x64 273.6 / 273.5, 4x64 281.8 / 281.4, 4x128 283.6 / 283.8, 2x32
    /// 285.3 / 285.4, 1x32 287.4 / 287.0, 2x64 287.3 / 286.8).
    pub const DEFAULT: MainQShape = MainQShape {
        rows: 2,
        threads: 64,
    };
}

/// The workgroup memory of `main_q` in `shape` over formats `f`: the sums
/// (`red`), the outputs with their groups' magnitudes and squares (`hm`,
/// `mmag`, `msq`: 32 + 4 + 4 floats), the code book where the format has
/// one, and 64 bytes for alignment.
pub fn main_q_bytes(shape: MainQShape, f: Fmts) -> usize {
    let threads = (shape.threads * shape.teams()) as usize;
    let red = 4 * (shape.rows as usize + 1) * threads;
    red + 4 * 40 + code_book_bytes(f) + 64
}

/// The code book's workgroup memory where a member of `f` has one:
/// book_table.wgsl's IQ4L, 256 words. Counted for book_shuffle.wgsl's
/// kernels too, which hold none, so that the bounds above hold either way
/// without knowing the device.
fn code_book_bytes(f: Fmts) -> usize {
    if f.iter().any(|&t| has_code_book(t)) {
        1024
    } else {
        0
    }
}

/// How a matvec pipeline reads x and decodes its weights (part of its
/// cache key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MvPath {
    /// f32 x, units.wgsl's unit_dot decoders.
    F32,
    /// int8 x (quantize_x.wgsl), units.wgsl's unit_idot decoders: one
    /// 8-element unit per call.
    Int,
    /// int8 x, wide.wgsl's wide_idot decoders: 32 elements per call
    /// (`GpuTuning::wide_int`); `wq`: Q4_K/Q5_K blocks read through the
    /// vec4<u32> alias of W (binding 15), else 4 scalar loads per 16 bytes.
    Wide { wq: bool },
}

impl MvPath {
    /// x as int8 blocks (quantize_x.wgsl; bindings 13, 14).
    pub fn int(self) -> bool {
        self != MvPath::F32
    }

    /// Whether the pipeline for formats `f` reads W (binding 0): not when
    /// every format reads through the alias (then W is not in its layout).
    pub fn binds_w(self, f: Fmts) -> bool {
        self != (MvPath::Wide { wq: true }) || f.iter().any(|&t| !wide_vec(t))
    }

    /// Whether it reads the vec4 alias of W (binding 15).
    pub fn binds_wq(self) -> bool {
        self == (MvPath::Wide { wq: true })
    }
}

/// wide.wgsl's `wq4(i)` (16-byte word i of W): through the alias binding,
/// or as 4 loads of W.
const WQ_VEC4: &str = "@group(0) @binding(15) var<storage, read> WQ: array<vec4<u32>>;
fn wq4(i: u32) -> vec4<u32> {
    return WQ[i];
}
";
const WQ_SCALAR: &str = "fn wq4(i: u32) -> vec4<u32> {
    return vec4<u32>(W[4u * i], W[4u * i + 1u], W[4u * i + 2u], W[4u * i + 3u]);
}
";

/// The tiled kernel's `unit_w` decoder and grouping for `ty`: the same as
/// the matvec's except for the K-quants, whose `k64`/`q6k` units span 64
/// or 128 columns while a tile stages 32 at a time (units.wgsl); their
/// unit_w decoders read 8 consecutive elements (`elem`) instead.
fn tile_decoder(ty: GgmlType) -> (&'static str, &'static str) {
    match unit_decoder(ty, 32) {
        (dec, "k64" | "q6k") => (dec, "elem"),
        d => d,
    }
}

/// matvec.wgsl's `xv4` and `gv4` (four x values from element i, four gains
/// from column k): one 16-byte load each through vec4 aliases of X and G.
/// An L1 request serves a warp's 16-byte loads four times as fast as four
/// 4-byte ones, and x is read once per unit for every row of the group.
const X_VEC4: &str = "@group(0) @binding(11) var<storage, read> XV: array<vec4<f32>>;
fn xv4(i: u32) -> vec4<f32> {
    return XV[i >> 2u];
}
";
const G_VEC4: &str = "@group(0) @binding(12) var<storage, read> GV: array<vec4<f32>>;
fn gv4(k: u32) -> vec4<f32> {
    return GV[k >> 2u];
}
";

/// The same with scalar loads, for rows that are not a multiple of 4 long.
const X_SCALAR: &str = "fn xv4(i: u32) -> vec4<f32> {
    return vec4<f32>(X[i], X[i + 1u], X[i + 2u], X[i + 3u]);
}
";
const G_SCALAR: &str = "fn gv4(k: u32) -> vec4<f32> {
    return vec4<f32>(G[k], G[k + 1u], G[k + 2u], G[k + 3u]);
}
";

/// The end of a `dot_rows` iteration, shared by the float and integer
/// bodies: row j's unit sums d{j}_{i} added to acc[j], the units past the
/// row's end (not ok{i}) as 0.
fn acc_sums(r: u32, per: usize) -> String {
    let mut s = String::new();
    for j in 0..r {
        let terms: Vec<String> = (0..per)
            .map(|i| {
                if i == 0 {
                    format!("d{j}_0")
                } else {
                    format!("select(0.0, d{j}_{i}, ok{i})")
                }
            })
            .collect();
        s += &format!("        acc[{j}] += {};\n", terms.join(" + "));
    }
    s
}

/// One `dot_rows` body for `r` rows, row j decoded by `decs[j]` (a unit
/// decoder and its grouping, `unit_decoder`), named `name`: the row loop
/// and the units of an iteration written out (see matvec.wgsl): two units
/// per iteration up to 4 rows, one beyond, so that a thread waits for few
/// memory round trips. x is loaded once per unit for each distinct
/// grouping among the rows. (Four units per iteration with 2 rows measured
/// slower on the H100: 9.7 vs 8.7 us per SmolLM2 wo/down product.)
fn dot_rows_body(name: &str, r: u32, decs: &[(&'static str, &'static str)]) -> String {
    let per = if r <= 4 { 2 } else { 1 };
    let mut groups: Vec<&str> = Vec::new();
    for &(_, g) in decs {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = format!(
        "fn {name}(lid: u32, xb: u32, scale: f32, norm: bool, rb: array<u32, R>) -> array<f32, RN> {{
    var acc: array<f32, RN>;
    var ss = 0.0;
    let units = P.cols / 8u;
    for (var u0 = lid; u0 < units; u0 += {per}u * WG) {{
"
    );
    for i in 0..per {
        s += &format!(
            "        let ok{i} = u0 + {i}u * WG < units;
        let u{i} = select(u0, u0 + {i}u * WG, ok{i});
"
        );
        for (gi, g) in groups.iter().enumerate() {
            s += &format!(
                "        let k{i}_{gi} = unit_cols_{g}(u{i});
        let xa{i}_{gi} = xv4(xb + k{i}_{gi}.x);
        let xc{i}_{gi} = xv4(xb + k{i}_{gi}.y);
"
            );
        }
    }
    for i in 0..per {
        // Every grouping covers the same columns: the sum of squares
        // takes the first's.
        s += &format!(
            "        ss += select(0.0, dot(xa{i}_0, xa{i}_0) + dot(xc{i}_0, xc{i}_0), ok{i});
"
        );
        for gi in 0..groups.len() {
            s += &format!(
                "        let ya{i}_{gi} = xg(xa{i}_{gi}, k{i}_{gi}.x, scale, norm);
        let yc{i}_{gi} = xg(xc{i}_{gi}, k{i}_{gi}.y, scale, norm);
"
            );
        }
    }
    for (j, &(dec, g)) in decs.iter().enumerate() {
        let gi = groups.iter().position(|&h| h == g).unwrap_or(0);
        for i in 0..per {
            s += &format!(
                "        let d{j}_{i} = unit_dot_{dec}(rb[{j}], u{i}, ya{i}_{gi}, yc{i}_{gi});\n"
            );
        }
    }
    s += &acc_sums(r, per);
    s += "    }
    // Float formats whose rows are not whole units (never in mixed groups).
    for (var k = units * 8u + lid; k < P.cols; k += WG) {
        let xv = X[xb + k];
        ss += xv * xv;
        var yv = xv;
        if norm {
            yv = (xv * scale) * G[k];
        }
";
    for j in 0..r {
        s += &format!("        acc[{j}] += load_weight(rb[{j}], k) * yv;\n");
    }
    s += "    }\n    acc[R] = ss;\n    return acc;\n}\n";
    s
}

/// The integer path's bindings and x readers (matvec.wgsl's INT_X): x as
/// quantize_x.wgsl left it, token t's words from t * nb * 8 and scales
/// from t * nb (nb: 32-element blocks per row).
/// Its `xload` is never called (matvec.wgsl's separate norm pass is not
/// taken with INT_X) and reads no X, so that X is not bound.
const INT_X_SRC: &str = "@group(0) @binding(13) var<storage, read> XQ: array<u32>;
@group(0) @binding(14) var<storage, read> XD: array<f32>;
fn xload(xb: u32, k: u32) -> f32 {
    return 0.0;
}
";

/// matvec.wgsl's `x_sq` where a quantize_x.wgsl pass left the x (after
/// `INT_X_SRC` or `INT_X_WIDE_SRC`): block b's sum of squares of token t,
/// from `Params::sq_base`.
const X_SQ_XD: &str = "fn x_sq(t: u32, b: u32) -> f32 {
    return XD[P.sq_base + t * ((P.cols + 31u) / 32u) + b];
}
";

/// `INT_X_SRC` for the wide path: the same buffer at binding 13 viewed as
/// 16-byte words (XQ4), as the wide decoders read x 16 elements at a time
/// (16-byte aligned: a token's words start at a multiple of 8, groups at
/// multiples of 4); one binding either way.
const INT_X_WIDE_SRC: &str = "@group(0) @binding(13) var<storage, read> XQ4: array<vec4<u32>>;
@group(0) @binding(14) var<storage, read> XD: array<f32>;
fn xload(xb: u32, k: u32) -> f32 {
    return 0.0;
}
";

/// matvec.wgsl's `xload` for the f32 path: x[k], or 0 past the row's end
/// (the index is clamped into the row).
const X_LOAD: &str = "fn xload(xb: u32, k: u32) -> f32 {
    return select(0.0, X[xb + min(k, P.cols - 1u)], k < P.cols);
}
fn x_sq(t: u32, b: u32) -> f32 {
    return 0.0;
}
";

/// `dot_rows_body` for the integer path: the same loop, units dealt the
/// same way, but x read as one packed int8 word per 4-element group and
/// its block's scale (quantize_x.wgsl), and each row decoded by a
/// `unit_idot` decoder (`int_decoder`); the norm's sum of squares is not
/// taken from x here (matvec.wgsl's SQ adds the pass's block sums after
/// this loop). A unit of grouping `nib` or
/// `elem` lies in one 32-element block (one scale load); `k64` and `q6k`
/// groups lie 32 or 64 apart, in two blocks.
fn dot_rows_int_body(name: &str, r: u32, decs: &[(&'static str, &'static str)]) -> String {
    let per = if r <= 4 { 2 } else { 1 };
    let mut groups: Vec<&str> = Vec::new();
    for &(_, g) in decs {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = format!(
        "fn {name}(lid: u32, t: u32, rb: array<u32, R>) -> array<f32, RN> {{
    var acc: array<f32, RN>;
    let units = P.cols / 8u;
    let nb = (P.cols + 31u) / 32u;
    let qb = t * nb * 8u;
    let db = t * nb;
    for (var u0 = lid; u0 < units; u0 += {per}u * WG) {{
"
    );
    for i in 0..per {
        s += &format!(
            "        let ok{i} = u0 + {i}u * WG < units;
        let u{i} = select(u0, u0 + {i}u * WG, ok{i});
"
        );
        for (gi, g) in groups.iter().enumerate() {
            let dc = if matches!(*g, "nib" | "elem") {
                format!("da{i}_{gi}")
            } else {
                format!("XD[db + (k{i}_{gi}.y >> 5u)]")
            };
            s += &format!(
                "        let k{i}_{gi} = unit_cols_{g}(u{i});
        let xa{i}_{gi} = XQ[qb + (k{i}_{gi}.x >> 2u)];
        let xc{i}_{gi} = XQ[qb + (k{i}_{gi}.y >> 2u)];
        let da{i}_{gi} = XD[db + (k{i}_{gi}.x >> 5u)];
        let dc{i}_{gi} = {dc};
"
            );
        }
    }
    for (j, &(dec, g)) in decs.iter().enumerate() {
        let gi = groups.iter().position(|&h| h == g).unwrap_or(0);
        for i in 0..per {
            s += &format!(
                "        let d{j}_{i} = unit_idot_{dec}(rb[{j}], u{i}, xa{i}_{gi}, xc{i}_{gi}, da{i}_{gi}, dc{i}_{gi});\n"
            );
        }
    }
    s += &acc_sums(r, per);
    s + "    }\n    return acc;\n}\n"
}

/// `dot_rows_int_body` for the wide path: thread `lid` takes the wide units
/// (32 elements each, wide.wgsl) lid, lid + WG, ... of every row, one per
/// iteration (a wide unit is 4 per-unit iterations' worth of loads: 16
/// bytes of quants and more per row), reads each grouping's two 16-element
/// x groups as vec4<u32> words (XQ4: x's words viewed 16 bytes at a time;
/// every group starts on a multiple of 16 elements) with their blocks'
/// scales and, for formats with mins, their sums (once for all rows), and
/// decodes row j with `decs[j]` (`wide_decoder`). Rows are whole wide units
/// (`wide_decoder`), so there is no tail. `book`: some row's format looks
/// its values up in the code book (`has_code_book`), which the workgroup
/// fills first. `uniform` (the code book by subgroupShuffle): every lane
/// runs the loop's trips while any lane of its team has a unit left, a
/// lane past the row's end on its last unit again with the sums dropped
/// (the shuffles need every lane; a select, not a branch).
fn dot_rows_wide_body(
    name: &str,
    decs: &[(&'static str, &'static str)],
    book: bool,
    uniform: bool,
) -> String {
    let mut groups: Vec<&str> = Vec::new();
    for &(_, g) in decs {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    // The code book: book_table.wgsl's or book_shuffle.wgsl's.
    let lut = if book { "    iq4_lut_fill();\n" } else { "" };
    let head = if uniform {
        "    for (var v0 = 0u; v0 < nw; v0 += WG) {
        let live = v0 + lid < nw;
        let v = select(nw - 1u, v0 + lid, live);
"
    } else {
        "    for (var v = lid; v < nw; v += WG) {
"
    };
    let mut s = format!(
        "fn {name}(lid: u32, t: u32, rb: array<u32, R>) -> array<f32, RN> {{
{lut}    var acc: array<f32, RN>;
    let nw = P.cols / 32u;
    let qb = t * nw * 2u;
    let db = t * nw;
{head}"
    );
    for (gi, g) in groups.iter().enumerate() {
        // b32 groups lie in one x block.
        let dc = if *g == "b32" {
            format!("da_{gi}")
        } else {
            format!("XD[db + (c_{gi}.y >> 1u)]")
        };
        s += &format!(
            "        let c_{gi} = wide_cols_{g}(v);
        let xa_{gi} = XQ4[qb + c_{gi}.x];
        let xc_{gi} = XQ4[qb + c_{gi}.y];
        let da_{gi} = XD[db + (c_{gi}.x >> 1u)];
        let dc_{gi} = {dc};
"
        );
        // Only the formats with mins use the sums.
        if decs.iter().any(|&(d, h)| h == *g && wide_sums(d)) {
            s += &format!(
                "        let sa_{gi} = xsum4(xa_{gi});
        let sc_{gi} = xsum4(xc_{gi});
"
            );
        }
    }
    for (j, &(dec, g)) in decs.iter().enumerate() {
        let gi = groups.iter().position(|&h| h == g).unwrap_or(0);
        let (sa, sc) = if wide_sums(dec) {
            (format!("sa_{gi}"), format!("sc_{gi}"))
        } else {
            ("0".to_string(), "0".to_string())
        };
        let dot =
            format!("wide_idot_{dec}(rb[{j}], v, xa_{gi}, xc_{gi}, da_{gi}, dc_{gi}, {sa}, {sc})");
        s += &if uniform {
            format!("        acc[{j}] += select(0.0, {dot}, live);\n")
        } else {
            format!("        acc[{j}] += {dot};\n")
        };
    }
    s + "    }\n    return acc;\n}\n"
}

/// The formats of a matrix's sections for the matrix kernels: q, k, v (or
/// gate, up, and up again) of a mixed group (`upload::MatGroup`), or one
/// format three times.
pub type Fmts = [GgmlType; 3];

/// Whether `f` is a mixed group's formats.
fn is_mixed(f: Fmts) -> bool {
    f[1] != f[0] || f[2] != f[0]
}

/// matrix.wgsl's `w_sec` for entry `mv` over formats `f`: sections only in
/// mixed groups (q/k/v: 3, gate/up: 2).
fn w_sec_src(f: Fmts, mv: Mv) -> &'static str {
    match mv {
        Mv::Qkv if is_mixed(f) => {
            "fn w_sec(w: u32) -> u32 {\n    return select(0u, 1u, w >= P.split) + select(0u, 1u, w >= P.split + P.kvd);\n}\n"
        }
        Mv::Silu | Mv::Gelu if is_mixed(f) => {
            "fn w_sec(w: u32) -> u32 {\n    return select(0u, 1u, w >= P.split);\n}\n"
        }
        _ => "fn w_sec(w: u32) -> u32 {\n    return 0u;\n}\n",
    }
}

/// matvec.wgsl's `dot_rows` for `r` rows of formats `f` (`cols` columns)
/// and entry `mv`: one body for one format; gate/up rows alternate between
/// the two members' decoders; a mixed q/k/v group gets one body per
/// distinct format, picked by the group's section (uniform per workgroup).
/// `path`: the integer path's bodies (`dot_rows_int_body`, every format
/// having an `int_decoder`; `dot_rows_wide_body`, every format having a
/// `wide_decoder`) or the f32 ones.
fn dot_rows_src(r: u32, f: Fmts, cols: usize, mv: Mv, path: MvPath, shuffle: bool) -> String {
    let int = path.int();
    let dec = |ty| match path {
        MvPath::F32 => unit_decoder(ty, cols),
        MvPath::Int => {
            int_decoder(ty).expect("the integer path only for formats with an int decoder")
        }
        MvPath::Wide { .. } => {
            wide_decoder(ty).expect("the wide path only for formats with a wide decoder")
        }
    };
    // One body whose row j has format tys[j].
    let body = |name: &str, tys: &[GgmlType]| {
        let decs: Vec<_> = tys.iter().map(|&t| dec(t)).collect();
        match path {
            MvPath::F32 => dot_rows_body(name, r, &decs),
            MvPath::Int => dot_rows_int_body(name, r, &decs),
            MvPath::Wide { .. } => {
                let book = tys.iter().any(|&t| has_code_book(t));
                dot_rows_wide_body(name, &decs, book, book && shuffle)
            }
        }
    };
    let call = |name: &str| {
        if int {
            format!("    return {name}(lid, t, rb);\n")
        } else {
            format!("    return {name}(lid, xb, scale, norm, rb);\n")
        }
    };
    let head = "fn dot_rows(lid: u32, t: u32, xb: u32, scale: f32, norm: bool, rb: array<u32, R>, sec: u32) -> array<f32, RN> {\n";
    if !is_mixed(f) || matches!(mv, Mv::Main | Mv::Head) {
        let tys = vec![f[0]; r as usize];
        return body("dot_rows_0", &tys) + head + &call("dot_rows_0") + "}\n";
    }
    if matches!(mv, Mv::Silu | Mv::Gelu) {
        let tys: Vec<_> = (0..r as usize).map(|j| f[j & 1]).collect();
        return body("dot_rows_0", &tys) + head + &call("dot_rows_0") + "}\n";
    }
    let mut s = String::new();
    let mut dispatch = head.to_string();
    let mut done: Vec<GgmlType> = Vec::new();
    for (i, &ty) in f.iter().enumerate() {
        let at = match done.iter().position(|&t| t == ty) {
            Some(at) => at,
            None => {
                done.push(ty);
                s += &body(
                    &format!("dot_rows_{}", done.len() - 1),
                    &vec![ty; r as usize],
                );
                done.len() - 1
            }
        };
        dispatch += &format!(
            "    if sec == {i}u {{\n    {}    }}\n",
            call(&format!("dot_rows_{at}"))
        );
    }
    s + &dispatch + &call("dot_rows_0") + "}\n"
}

/// matmul.wgsl's `tile_cols` and `tile_w` for formats `f`: the format's
/// tiled decoder, or in a mixed group the row's section's.
fn tile_src(f: Fmts) -> String {
    let decs = f.map(tile_decoder);
    if !is_mixed(f) {
        let (dec, group) = decs[0];
        return format!(
            "fn tile_cols(s: u32, u: u32) -> vec2<u32> {{\n    return unit_cols_{group}(u);\n}}\n\
             fn tile_w(s: u32, rb: u32, u: u32) -> mat2x4<f32> {{\n    return unit_w_{dec}(rb, u);\n}}\n"
        );
    }
    let mut cols = String::from("fn tile_cols(s: u32, u: u32) -> vec2<u32> {\n");
    let mut w = String::from("fn tile_w(s: u32, rb: u32, u: u32) -> mat2x4<f32> {\n");
    for (i, (dec, group)) in decs.iter().enumerate().take(2) {
        cols += &format!("    if s == {i}u {{\n        return unit_cols_{group}(u);\n    }}\n");
        w += &format!("    if s == {i}u {{\n        return unit_w_{dec}(rb, u);\n    }}\n");
    }
    let (dec, group) = decs[2];
    cols += &format!("    return unit_cols_{group}(u);\n}}\n");
    w += &format!("    return unit_w_{dec}(rb, u);\n}}\n");
    cols + &w
}

/// The int8 staging decoder (units_q.wgsl's `unit_q_<fmt>`) for `ty` and
/// its grouping (the f32 tile's, `tile_decoder`), where one exists: every
/// block format but the float ones, which keep matmul.wgsl.
pub fn tile_q_decoder(ty: GgmlType) -> Option<(&'static str, &'static str)> {
    use GgmlType::*;
    matches!(
        ty,
        Q8_0 | Q4_0 | Q4_1 | Q5_0 | Q5_1 | IQ4_NL | IQ4_XS | Q4_K | Q5_K | Q6_K | Q2_K | Q3_K
    )
    .then(|| tile_decoder(ty))
}

/// matmul_int.wgsl's `tile_cols` and `tile_q` for formats `f` (each with a
/// `tile_q_decoder`): the format's, or in a mixed group the row's
/// section's.
fn tile_q_src(f: Fmts) -> String {
    let decs = f.map(|t| tile_q_decoder(t).unwrap_or(("q8_0", "elem")));
    let sec = |i: usize, ret: &str| {
        let (dec, group) = decs[i];
        match ret {
            "cols" => format!("unit_cols_{group}(u)"),
            _ => format!("unit_q_{dec}(rb, u)"),
        }
    };
    let mut cols = String::from("fn tile_cols(s: u32, u: u32) -> vec2<u32> {\n");
    let mut q = String::from("fn tile_q(s: u32, rb: u32, u: u32) -> UnitQ {\n");
    if is_mixed(f) {
        for i in 0..2 {
            cols += &format!(
                "    if s == {i}u {{\n        return {};\n    }}\n",
                sec(i, "cols")
            );
            q += &format!(
                "    if s == {i}u {{\n        return {};\n    }}\n",
                sec(i, "q")
            );
        }
    }
    let last = if is_mixed(f) { 2 } else { 0 };
    cols += &format!("    return {};\n}}\n", sec(last, "cols"));
    q += &format!("    return {};\n}}\n", sec(last, "q"));
    cols + &q
}

/// `GpuTuning::half_x_min`'s default: products of at least this many rows
/// and columns take their tensor-core tile's x in f16 from a pack pass
/// (pack_f16.wgsl, `Tile::half_x`). On the H100 (BENCHMARKS.md,
/// 2026-11-27d, synthetic pp512, two rounds each): on every product it ran
/// llama-3.1-8b Q4_K 8.5-10.7% faster (gate/up 37.0 -> 31.8 ms, wo + down
/// 32.0 -> 29.0, the passes 1.8) and its Q8_0, IQ4_XS and Q6_K within
/// 1-3%, but lost 2-13% on SmolLM2 and Gemma 3 (a pass's dispatch costs
/// more than their short rows save); on rows of 4096 columns and more it
/// still lost 1.0-1.6% on TinyLlama (down: 2048 x 5632), and the 1B (down:
/// 2048 x 8192) moved by +1.6% in one round. Every 8B product has 4096
/// rows and columns or more.
pub const HALF_X_MIN: usize = 4096;

/// Whether a tensor-core product of `rows` x `cols` reads its x in f16
/// under `GpuTuning::half_x_min` = `min`: the rule `Kernels::half_tile`
/// applies and `build::half_x_cols` sizes the f16 x by.
pub fn takes_half_x(rows: usize, cols: usize, min: usize) -> bool {
    rows.min(cols) >= min
}

/// Batches of more than this many tokens take `Tile::coop_long` where it
/// applies. From 385 to 512 tokens a 256-token tile multiplies as many
/// (padded) tokens as 128-token ones and decodes each weight half as
/// often. Shorter batches lose: at 129-256 tokens the 256-token tiles
/// launch half the workgroups (the 8B's q/k/v then 48), and synthetic
/// llama-3.1-8b pp200 on the H200 lost 2-7% with them (Q4_K 3,049 ->
/// 2,902, Q6_K 3,262 -> 3,041; BENCHMARKS.md, 2026-11-27d); at 257-384
/// they multiply a third more tokens.
pub const LONG_BATCH: u32 = 384;

/// The prefill tile: rows and tokens per workgroup and how they are shared
/// out. matmul.wgsl: each thread 4 * rv rows and 4 * xv tokens.
/// matmul_coop.wgsl (`coop`): each subgroup of 32 threads rv x xv blocks
/// of 16 x 16 outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    pub rows: u32,
    pub tokens: u32,
    pub rv: u32,
    pub xv: u32,
    pub coop: bool,
    /// A `coop` tile that reads x in f16 from `HalfX` (packed by a pass
    /// before the product) instead of f32 from X (`Kernels::half_tile`).
    pub half_x: bool,
}

impl Tile {
    /// 64 x 64, 4 x 4 per thread: 16 KiB of workgroup memory (WebGPU's
    /// guaranteed minimum).
    pub const SMALL: Tile = Tile {
        rows: 64,
        tokens: 64,
        rv: 1,
        xv: 1,
        coop: false,
        half_x: false,
    };
    /// 128 x 64, 8 x 8 per thread: 24 KiB; half the shared-memory reads
    /// per multiply-add.
    pub const LARGE: Tile = Tile {
        rows: 128,
        tokens: 64,
        rv: 2,
        xv: 2,
        coop: false,
        half_x: false,
    };
    /// The most workgroup memory a cooperative-matrix tile that
    /// `coop_for` picks declares (128 x 128: 28 KiB).
    pub const COOP_MAX_SHARED: u32 = 28 << 10;

    /// The cooperative-matrix tile for a product of entry `mv` and `rows`
    /// rows. Measured on the H100 per product with gpu-profile's prefill
    /// table (512 tokens; BENCHMARKS.md, 2026-11-26f): larger tiles decode
    /// each weight for more tokens but launch fewer workgroups, and the
    /// best trade differs by product. q/k/v (2560-6144 rows there) was
    /// fastest or within 6% of it at 64 x 64 on 128 threads; gate/up at
    /// 128 x 128 on 128 threads at 16384 and 28672 rows (the 1B, the 8B),
    /// on 256 threads at TinyLlama's 11264, and at 64 x 64 at SmolLM2's
    /// 3072; wo and down at 128 x 128 at 4096 rows (the 8B) and 64 x 64 at
    /// 2048. The thresholds sit between those measured row counts; other
    /// GPUs were not measured.
    pub fn coop_for(mv: Mv, rows: usize) -> Tile {
        let (r, t, w) = match (mv, rows) {
            (Mv::Qkv, _) => (64, 64, 128),
            (Mv::Silu | Mv::Gelu, 12288..) => (128, 128, 128),
            (Mv::Silu | Mv::Gelu, 8192..) => (128, 128, 256),
            (Mv::Main | Mv::Head, 4096..) => (128, 128, 256),
            _ => (64, 64, 256),
        };
        Tile::coop(r, t, w).expect("a shape Tile::coop takes")
    }

    /// The cooperative-matrix tile for batches of more than LONG_BATCH
    /// tokens, where it differs from `coop_for`'s: 256 tokens, so each
    /// weight is decoded once per 256 tokens instead of per 128. Measured
    /// on the H200 with gpu-profile's prefill table (512 tokens, synthetic
    /// Q4_K; BENCHMARKS.md, 2026-11-27d): gate/up 42.2 -> 38.5 ms on
    /// llama-3.1-8b (28672 rows) and 5.57 -> 4.75 on llama-3.2-1b (16384),
    /// q/k/v 15.6 -> 14.1 on the 8B (6144); the 1B's q/k/v (3072 rows) and
    /// every wo and down (2048-4096 rows: half the workgroups) lost.
    pub fn coop_long(mv: Mv, rows: usize) -> Option<Tile> {
        match (mv, rows) {
            (Mv::Qkv, 6144..) | (Mv::Silu | Mv::Gelu, 12288..) => Tile::coop(128, 256, 256),
            _ => None,
        }
    }

    /// A cooperative-matrix tile of `rows` x `tokens` for `threads` threads
    /// (`GpuTuning::coop_shape`): 256 threads as 4 x 2 subgroups (rows x
    /// tokens) or 128 as 2 x 2, rows 64, 128 or 256 and tokens 64, 128 or
    /// 256, at most 16 blocks of 16 x 16 accumulators a subgroup (every
    /// thread then stages at least one weight unit and one x group per
    /// step); None for other shapes.
    pub fn coop(rows: u32, tokens: u32, threads: u32) -> Option<Tile> {
        let sr = match threads {
            128 => 2,
            256 => 4,
            _ => return None,
        };
        let (rv, xv) = (rows / (16 * sr), tokens / 32);
        (matches!(rows, 64 | 128 | 256) && matches!(tokens, 64 | 128 | 256) && rv * xv <= 16)
            .then_some(Tile {
                rows,
                tokens,
                rv,
                xv,
                coop: true,
                half_x: false,
            })
    }

    fn threads(self) -> u32 {
        if self.coop {
            self.subgroup_rows() * (self.tokens / (16 * self.xv)) * 32
        } else {
            (self.rows / (4 * self.rv)) * (self.tokens / (4 * self.xv))
        }
    }

    /// Each thread's share of a step's staging: (UPT, XPT), the weight
    /// units and the x quads it fetches and stores.
    fn per_thread(self) -> (u32, u32) {
        let wgs = self.threads();
        (self.rows * 4 / wgs, self.tokens * 4 / wgs)
    }

    /// matmul_coop.wgsl's subgroups along the rows.
    fn subgroup_rows(self) -> u32 {
        self.rows / (16 * self.rv)
    }

    /// Bytes of workgroup memory the tile's kernel declares.
    pub fn shared_bytes(self) -> u32 {
        if self.coop {
            // Wh and Xh in f16 with 40-element rows, 1 KiB of Cs per subgroup.
            (self.rows + self.tokens) * 80 + self.threads() / 32 * 1024
        } else {
            32 * (self.rows + self.tokens) * 4
        }
    }
}

/// The tiled kernels' staging, shared by matmul.wgsl's and
/// matmul_coop.wgsl's entries: the first step's fetches into registers,
/// then the step loop's head, which stores them to shared memory
/// (`wstore`, `xstore`: each kernel's own layout) and waits. The caller
/// writes the step's products and the next step's fetches
/// (`prefetch`) in its own order, and closes the loop. `xf`: the x fetch
/// (tile.wgsl's `xfetch` of f32, or matmul_coop.wgsl's `xfetch_h` of
/// packed f16 or `xfetch_f`, f32 converted).
fn staging(upt: u32, xpt: u32, xf: &str) -> String {
    let mut s = String::new();
    for i in 0..upt {
        s += &format!("    var w{i} = wfetch(r0, 0u, lid, {i}u);\n");
    }
    for i in 0..xpt {
        s += &format!("    var x{i} = {xf}(t0, 0u, lid, {i}u);\n");
    }
    s += "    for (var k0 = 0u; k0 < P.cols; k0 += KS) {\n";
    for i in 0..upt {
        s += &format!("        wstore(r0, lid, {i}u, w{i});\n");
    }
    for i in 0..xpt {
        s += &format!("        xstore(lid, {i}u, x{i});\n");
    }
    s += "        workgroupBarrier();\n";
    s
}

/// The next step's fetches into the staging registers (see `staging`).
fn prefetch(upt: u32, xpt: u32, xf: &str) -> String {
    let mut s = "        if k0 + KS < P.cols {\n".to_string();
    for i in 0..upt {
        s += &format!("            w{i} = wfetch(r0, k0 + KS, lid, {i}u);\n");
    }
    for i in 0..xpt {
        s += &format!("            x{i} = {xf}(t0, k0 + KS, lid, {i}u);\n");
    }
    s += "        }\n";
    s
}

/// The tiled kernels' constants (matmul.wgsl's header names them) and
/// `body`, the kernel's own source.
fn tile_consts(t: Tile, body: &str) -> String {
    let wgs = t.threads();
    let (upt, xpt) = t.per_thread();
    format!(
        "const TM: u32 = {}u;\nconst TN: u32 = {}u;\nconst WGS: u32 = {wgs}u;\n\
         const UPT: u32 = {upt}u;\nconst XPT: u32 = {xpt}u;\n{body}\n",
        t.rows, t.tokens
    )
}

/// matmul.wgsl's or matmul_int.wgsl's (`body`) source up to the step
/// loop's products: the constants, the entry point's head (`tile_head`),
/// the staging and the next step's fetches.
fn tile_open(t: Tile, body: &str) -> String {
    let (upt, xpt) = t.per_thread();
    tile_consts(t, body)
        + &tile_head(t)
        + &staging(upt, xpt, "xfetch")
        + &prefetch(upt, xpt, "xfetch")
}

/// The entry point's head for matmul.wgsl and matmul_int.wgsl: the tile's
/// origin, the thread's place in it (ty: its 4 RV rows, tx: its 4 XV
/// tokens) and its accumulators a{row}_{token quad}, zeroed.
fn tile_head(t: Tile) -> String {
    let mut s = "@compute @workgroup_size(WGS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r0 = wid.x * TM;
    let t0 = wid.y * TN;
"
    .to_string();
    let tcols = t.tokens / (4 * t.xv);
    s += &format!("    let ty = lid / {tcols}u;\n    let tx = lid % {tcols}u;\n");
    for r in 0..4 * t.rv {
        for u in 0..t.xv {
            s += &format!("    var a{r}_{u} = vec4<f32>(0.0);\n");
        }
    }
    s
}

/// The entry point's end for matmul.wgsl and matmul_int.wgsl: each
/// accumulator through the epilogue, 4 rows of one token at a time,
/// skipping tokens and rows past the ends.
fn tile_tail(t: Tile) -> String {
    let (rv, xv) = (t.rv, t.xv);
    let mut s = format!("    let l0 = r0 + ty * {}u;\n", 4 * rv);
    for u in 0..xv {
        for (e, comp) in XYZW.iter().enumerate() {
            let tok = format!("t0 + tx * {}u + {}u", 4 * xv, 4 * u + e as u32);
            s += &format!("    if {tok} < S.n {{\n");
            for v in 0..rv {
                let parts: Vec<String> = (0..4)
                    .map(|c| format!("a{}_{u}.{comp}", 4 * v + c))
                    .collect();
                s += &format!(
                    "        if l0 + {o}u < P.rows {{\n            epilogue({tok}, l0 + {o}u, vec4<f32>({}));\n        }}\n",
                    parts.join(", "),
                    o = 4 * v
                );
            }
            s += "    }\n";
        }
    }
    s + "}\n"
}

const XYZW: [&str; 4] = ["x", "y", "z", "w"];

/// matmul.wgsl's constants and generated entry point for `t`: the
/// multiply-add loop written out per register.
fn matmul_src(t: Tile) -> String {
    let (rv, xv) = (t.rv, t.xv);
    let mut s = tile_open(t, MATMUL);
    s += "        for (var kk = 0u; kk < KS; kk++) {\n";
    for v in 0..rv {
        s += &format!("            let wv{v} = Ws[kk * (TM / 4u) + ty * {rv}u + {v}u];\n");
    }
    for u in 0..xv {
        s += &format!("            let xv{u} = Xs[kk * (TN / 4u) + tx * {xv}u + {u}u];\n");
    }
    for v in 0..rv {
        for (c, comp) in XYZW.iter().enumerate() {
            for u in 0..xv {
                s += &format!(
                    "            a{}_{u} += wv{v}.{comp} * xv{u};\n",
                    4 * v + c as u32
                );
            }
        }
    }
    s += "        }\n        workgroupBarrier();\n    }\n";
    s + &tile_tail(t)
}

/// matmul_int.wgsl's constants and generated entry point for `t` (a tile
/// matmul.wgsl takes): per 16-column half, the integer sums i{row}_{token
/// quad} of four words each and the tokens' x sums xs, then one scaling
/// into the f32 accumulators.
fn matmul_int_src(t: Tile) -> String {
    let (rv, xv) = (t.rv, t.xv);
    let mut s = tile_open(t, MATMUL_INT);
    s += "        for (var h = 0u; h < 2u; h++) {\n";
    for r in 0..4 * rv {
        for u in 0..xv {
            s += &format!("            var i{r}_{u} = vec4<i32>(0);\n");
        }
    }
    for u in 0..xv {
        s += &format!("            var xs{u} = vec4<i32>(0);\n");
    }
    s += "            for (var jj = 0u; jj < 4u; jj++) {\n                let j = 4u * h + jj;\n";
    for v in 0..rv {
        s += &format!("                let wv{v} = Wq[j * (TM / 4u) + ty * {rv}u + {v}u];\n");
    }
    for u in 0..xv {
        s += &format!("                let xv{u} = Xq[j * (TN / 4u) + tx * {xv}u + {u}u];\n");
        s += &format!("                xs{u} += dot4x(ONES, xv{u});\n");
    }
    for v in 0..rv {
        for (c, comp) in XYZW.iter().enumerate() {
            for u in 0..xv {
                s += &format!(
                    "                i{}_{u} += dot4x(wv{v}.{comp}, xv{u});\n",
                    4 * v + c as u32
                );
            }
        }
    }
    s += "            }\n";
    for u in 0..xv {
        s += &format!(
            "            let dx{u} = Xd[tx * {xv}u + {u}u];\n            let xm{u} = dx{u} * vec4<f32>(xs{u});\n"
        );
    }
    for v in 0..rv {
        s += &format!("            let s{v} = Wsm[2u * h * (TM / 4u) + ty * {rv}u + {v}u];\n");
        s += &format!(
            "            let m{v} = Wsm[(2u * h + 1u) * (TM / 4u) + ty * {rv}u + {v}u];\n"
        );
    }
    for v in 0..rv {
        for (c, comp) in XYZW.iter().enumerate() {
            for u in 0..xv {
                let r = 4 * v + c as u32;
                s += &format!(
                    "            a{r}_{u} += s{v}.{comp} * (dx{u} * vec4<f32>(i{r}_{u})) + m{v}.{comp} * xm{u};\n"
                );
            }
        }
    }
    s += "        }\n        workgroupBarrier();\n    }\n";
    s + &tile_tail(t)
}

/// matmul_coop.wgsl's directives, constants and generated entry point for
/// `t` (a `coop` tile): each subgroup's accumulators and its loads and
/// products per 16-column half written out.
fn matmul_coop_src(t: Tile) -> String {
    let wgs = t.threads();
    let (upt, xpt) = t.per_thread();
    let (mr, mt) = (t.rv, t.xv);
    let mut s = format!(
        "enable f16;\nenable wgpu_cooperative_matrix;\n\
         const TM: u32 = {}u;\nconst TN: u32 = {}u;\nconst WGS: u32 = {wgs}u;\n\
         const UPT: u32 = {upt}u;\nconst XPT: u32 = {xpt}u;\nconst SR: u32 = {}u;\n{MATMUL_COOP}\n",
        t.rows,
        t.tokens,
        t.subgroup_rows()
    );
    s += "@compute @workgroup_size(WGS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) sl: u32) {
    let r0 = wid.x * TM;
    let t0 = wid.y * TN;
";
    s += &format!(
        "    let rs = (sg % SR) * {}u;\n    let ts = (sg / SR) * {}u;\n",
        16 * mr,
        16 * mt
    );
    for m in 0..mr {
        for n in 0..mt {
            s += &format!("    var c{m}_{n}: coop_mat16x16<f32, C>;\n");
        }
    }
    let xf = if t.half_x { "xfetch_h" } else { "xfetch_f" };
    s += &staging(upt, xpt, xf);
    for kk in [0, 16] {
        for m in 0..mr {
            s += &format!(
                "        let a{m}_{kk} = coopLoadT<coop_mat16x16<f16, A>>(&Wh[(rs + {}u) * KSW + {}u], KSW);\n",
                16 * m,
                kk / 4
            );
        }
        for n in 0..mt {
            s += &format!(
                "        let b{n}_{kk} = coopLoad<coop_mat16x16<f16, B>>(&Xh[(ts + {}u) * KSW + {}u], KSW);\n",
                16 * n,
                kk / 4
            );
        }
        for m in 0..mr {
            for n in 0..mt {
                s += &format!(
                    "        c{m}_{n} = coopMultiplyAdd(a{m}_{kk}, b{n}_{kk}, c{m}_{n});\n"
                );
            }
        }
    }
    // The next step's fetches after the products, not before: the
    // products only read shared memory, and a fetch decodes what it loads
    // at once, so fetched first, the loads' round trip stalled each
    // subgroup before its products were issued; issued after them, it
    // overlaps the tensor cores' work.
    s += &prefetch(upt, xpt, xf);
    s += "        workgroupBarrier();\n    }\n    let cb = sg * 256u;\n";
    for m in 0..mr {
        for n in 0..mt {
            s += &format!(
                "    coopStore(c{m}_{n}, &Cs[cb], 16u);\n    workgroupBarrier();\n    \
                 drain(cb, sl, r0 + rs + {}u, t0 + ts + {}u);\n    workgroupBarrier();\n",
                16 * m,
                16 * n
            );
        }
    }
    s + "}\n"
}

/// Query heads per flash_coop.wgsl workgroup for groups of `group` query
/// heads per kv head: the whole group up to its 64 rows (a larger group
/// over several workgroups), so TQ = 64 / GS tokens.
pub fn flash_coop_heads(group: usize) -> u32 {
    group.clamp(1, 64) as u32
}

/// flash_coop.wgsl's dispatch for `kv_heads` kv heads of `group` query
/// heads: (kv head, share of its group) by tiles of TQ tokens.
pub fn flash_coop_shape(kv_heads: usize, group: usize) -> Shape {
    let gs = flash_coop_heads(group);
    Shape::TokenTiles(kv_heads as u32 * (group as u32).div_ceil(gs), 64 / gs)
}

/// Whether flash_coop.wgsl takes heads of `head_dim`: 64 and 128 (its
/// fragments are written out per 16 dims; larger heads' staging would
/// pass 48 KiB of workgroup memory).
pub fn flash_coop_fits(head_dim: usize) -> bool {
    matches!(head_dim, 64 | 128)
}

/// flash_coop.wgsl's workgroup memory at `head_dim`: T (64 rows of
/// head_dim / 4 + 2 f16 quads), Ssh (64 x 64 f32 scores) and Psh (64 rows
/// of 18 f16 quads): 43,008 bytes at 128, 34,816 at 64.
pub fn flash_coop_shared_bytes(head_dim: usize) -> u32 {
    (64 * (head_dim / 4 + 2) * 8 + 64 * 64 * 4 + 64 * 18 * 8) as u32
}

/// flash_coop.wgsl's staging of a chunk's rows from `cache` (KH or VH)
/// for heads of `head_dim`: every load of the thread first, then the
/// stores (see the shader's kv_at).
fn flash_coop_stage(head_dim: usize, cache: &str) -> String {
    let n = head_dim / 16;
    let mut s = String::new();
    for i in 0..n {
        s += &format!(
            "        let {cache}{i} = {cache}[kv_at(tl, j0, last, lid + {}u)];\n",
            128 * i
        );
    }
    for i in 0..n {
        s += &format!("        put_kv(lid + {}u, {cache}{i});\n", 128 * i);
    }
    s
}

/// flash_coop.wgsl for heads of `head_dim` (`flash_coop_fits`) with `gs`
/// query heads a workgroup: its directives and constants, and the entry
/// `main` with the fragments written out: the queries' A fragments qa{i}
/// (one per 16 dims), the scores of a chunk (four 16-key blocks, through
/// Ssh), and the output accumulators o{d} (one per 16 dims).
pub fn flash_coop_src(head_dim: usize, gs: u32) -> String {
    let kq = head_dim / 16;
    let mut m = String::from(
        "@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) sl: u32) {
    // No early exit (cooperative operations need uniform control flow):
    // the dispatch has no tile past the tokens.
    let tl = tile_of(wid);
    stage_q(tl, lid);
    workgroupBarrier();
",
    );
    for i in 0..kq {
        m += &format!(
            "    let qa{i} = coopLoadT<coop_mat16x16<f16, A>>(&T[16u * sg * RS + {}u], RS);\n",
            4 * i
        );
    }
    m += "    workgroupBarrier();
    // The keys the tile's rows see: from its first token's first to its
    // last token's own.
    let lo = first_key(S.pos + tl.t0);
    let hi = S.pos + tl.t0 + tl.nt;
    let last = hi - 1u;
";
    // S = Q K^T for the chunk staged in T, into Ssh.
    let mut scores = String::new();
    for b in 0..4 {
        scores += &format!("        var s{b}: coop_mat16x16<f32, C>;\n");
        for i in 0..kq {
            scores += &format!(
                "        s{b} = coopMultiplyAdd(qa{i}, coopLoad<coop_mat16x16<f16, B>>(&T[{}u * RS + {}u], RS), s{b});\n",
                16 * b,
                4 * i
            );
        }
        scores += &format!(
            "        coopStoreT(s{b}, &Ssh[16u * sg * CK + {}u], CK);\n",
            16 * b
        );
    }
    let (stage_k, stage_v) = (
        flash_coop_stage(head_dim, "KH"),
        flash_coop_stage(head_dim, "VH"),
    );
    m += "    // First pass: each row's max (thread pairs, combined after).
    var mx = MASKED;
    for (var j0 = lo; j0 < hi; j0 += CK) {
";
    m += &stage_k;
    m += "        workgroupBarrier();
";
    m += &scores;
    m += "        workgroupBarrier();
        mx = max(mx, part_max(tl, j0, lid));
    }
    mx = max(mx, subgroupShuffleXor(mx, 1u));
    // Second pass: the weights against that max, and O += P V.
    var l = 0.0;
";
    for d in 0..kq {
        m += &format!("    var o{d}: coop_mat16x16<f32, C>;\n");
    }
    m += "    for (var j0 = lo; j0 < hi; j0 += CK) {
";
    m += &stage_k;
    m += "        workgroupBarrier();
";
    m += &scores;
    // The keys' rows are spent once the scores are stored (the barrier),
    // so the values' rows go into T while the weights are made.
    m += "        workgroupBarrier();
        l += part_weights(tl, j0, mx, lid);
";
    m += &stage_v;
    m += "        workgroupBarrier();
";
    for b in 0..4 {
        m += &format!(
            "        let p{b} = coopLoadT<coop_mat16x16<f16, A>>(&Psh[16u * sg * PS + {}u], PS);\n",
            4 * b
        );
        for d in 0..kq {
            m += &format!(
                "        o{d} = coopMultiplyAdd(p{b}, coopLoadT<coop_mat16x16<f16, B>>(&T[{}u * RS + {}u], RS), o{d});\n",
                16 * b,
                4 * d
            );
        }
    }
    m += "        workgroupBarrier();
    }
    l += subgroupShuffleXor(l, 1u);
";
    // The output through Ssh, 64 dims (four fragments) a round.
    for r in 0..kq.div_ceil(4) {
        for d in 4 * r..(4 * r + 4).min(kq) {
            m += &format!(
                "    coopStoreT(o{d}, &Ssh[16u * sg * CK + {}u], CK);\n",
                16 * (d - 4 * r)
            );
        }
        m += &format!(
            "    workgroupBarrier();\n    drain(tl, sg, sl, {}u, l);\n    workgroupBarrier();\n",
            64 * r
        );
    }
    m += "}\n";
    format!(
        "enable f16;\nenable wgpu_cooperative_matrix;\n\
         const HD: u32 = {head_dim}u;\nconst GS: u32 = {gs}u;\n{FLASH_COOP}\n{ATTN_STEP}\n{m}"
    )
}

/// What a matvec pipeline is specialised for: formats, entry, rows per
/// workgroup (a team's), workgroup size (a team's), unit decoder (of the
/// first format), folded norm, vec4 x, path (f32, integer, wide integer),
/// teams (1 but for `glu_q` and `main_q`), own x's row length (`glu_q` only: its
/// workgroup arrays are sized by it; 0 without).
type MatvecKey = (
    Fmts,
    Mv,
    u32,
    u32,
    &'static str,
    bool,
    bool,
    MvPath,
    u32,
    usize,
    u32,
);

/// A pipeline built on its first use (see the getters on `Kernels`).
type Lazy = OnceCell<Rc<wgpu::ComputePipeline>>;

pub struct Kernels {
    matvec: HashMap<MatvecKey, Rc<wgpu::ComputePipeline>>,
    /// Fold the rmsnorm into the matvec's single pass over x (else a
    /// separate pass over x first; kernel tests only).
    pub fold_norm: bool,
    /// Sum partial dot products with subgroup operations.
    pub subgroups: bool,
    /// Threads per matvec workgroup (64, 128 or 256), or 0, the default, to
    /// pick by the row length (`matvec_threads`; kernel tests set others).
    pub matvec_wg: u32,
    /// `GpuTuning::matvec_rows`.
    pub matvec_rows: [u32; 3],
    /// Read x and the norm gains as vec4 where the rows allow
    /// (`GpuTuning::vector_x`; else scalar loads).
    pub vector_x: bool,
    /// The device's storage buffers per shader stage: the q/k/v kernel
    /// binds 8 without the vec4 aliases and 10 with them.
    pub storage_buffers: u32,
    /// Decode products through the integer path (quantize_x.wgsl, then
    /// the unit_idot decoders) where every format has an int decoder:
    /// `GpuTuning::int_dot` and the device's WGSL has dot4I8Packed
    /// (`Gpu::int_dot`).
    pub int_dot: bool,
    /// few.wgsl's replay rounds to f16 through the device's conversion
    /// (round_z_pack.wgsl): `GpuTuning::round_pack` and the device passed
    /// the load-time check (`Gpu::round_pack`).
    pub round_pack: bool,
    /// `GpuTuning::int_min_bytes` and `int_min_bytes_q8_0` (`int_floor`).
    pub int_min_bytes: u64,
    pub int_min_bytes_q8_0: u64,
    /// `GpuTuning::wide_int`: integer products whose formats all have a
    /// wide decoder take the wide path (`MvPath::Wide`).
    pub wide_int: bool,
    /// Lanes of book_shuffle.wgsl's code book (`book_lanes`): 16 or 8, or
    /// 0 for book_table.wgsl's.
    pub book_lanes: u32,
    /// The int8 x the integer path reads (made with the graph; without
    /// it, as in most kernel tests, every product takes the f32 path).
    pub int_x: Option<super::ops::IntX>,
    /// The down product's int8 x where the gate/up product writes it
    /// (`GpuTuning::glu_q`; made with the graph beside `int_x`).
    pub int_h: Option<super::ops::IntX>,
    /// `GpuTuning::glu_q`, `glu_q_shape`, `glu_q_min`, `glu_q_narrow_cols`
    /// and `glu_q_narrow_shape` (`glu_q_shape_for` picks the shape).
    pub glu_q: bool,
    pub glu_q_shape: GluQShape,
    pub glu_q_min: usize,
    pub glu_q_narrow_cols: usize,
    pub glu_q_narrow_shape: GluQShape,
    /// The fused gate/up product's int8 x where the Wo product writes it
    /// (`GpuTuning::wo_q`; made with the graph beside `int_x`).
    pub int_g: Option<super::ops::IntX>,
    /// `GpuTuning::wo_q`, `wo_q_shape` and `wo_q_min`.
    pub wo_q: bool,
    pub wo_q_shape: MainQShape,
    pub wo_q_min: usize,
    /// The device's threads a workgroup
    /// (`max_compute_invocations_per_workgroup`).
    pub max_threads: u32,
    /// The f16 x the tensor-core prefill tile reads for the large products
    /// (made with the graph where some product qualifies,
    /// `build::half_x_cols`; without it every tile reads f32 x).
    pub half_x: Option<super::ops::HalfX>,
    /// `GpuTuning::half_x_min`.
    pub half_x_min: usize,
    /// `GpuTuning::glu_own_x`.
    pub glu_own_x: usize,
    quantize_x: Lazy,
    pack_f16: Lazy,
    embed: HashMap<GgmlType, Rc<wgpu::ComputePipeline>>,
    chunked: HashMap<ChunkedKey, Rc<wgpu::ComputePipeline>>,
    split: HashMap<(usize, u32, DeepShape), Rc<wgpu::ComputePipeline>>,
    /// By (head size, `main_q`, `round_pack`).
    few: HashMap<(usize, bool, bool), Rc<wgpu::ComputePipeline>>,
    mid: HashMap<(usize, usize, bool), Rc<wgpu::ComputePipeline>>,
    flash: HashMap<FlashTile, Rc<wgpu::ComputePipeline>>,
    flash_coop: HashMap<(usize, u32), Rc<wgpu::ComputePipeline>>,
    /// Prefill attention on the tensor cores where it applies
    /// (`GpuTuning::flash_coop`, and `coop`).
    pub flash_coop_on: bool,
    matmul: HashMap<(Fmts, Mv, Tile, bool), Rc<wgpu::ComputePipeline>>,
    matmul_int: HashMap<(Fmts, Mv, Tile), Rc<wgpu::ComputePipeline>>,
    /// Prefill products whose formats all have a `tile_q_decoder` take
    /// matmul_int.wgsl (int8 x, dot4I8Packed) instead of matmul.wgsl:
    /// `GpuTuning::int_prefill` and the device's WGSL has dot4I8Packed.
    /// Never instead of a cooperative-matrix tile.
    pub int_prefill: bool,
    /// The prefill tile (matmul.wgsl).
    pub tile: Tile,
    /// Prefill on matmul_coop.wgsl: the device has what it needs and
    /// `GpuTuning::coop_matrix` allows it.
    pub coop: bool,
    /// Its tile shape for every product (`GpuTuning::coop_shape`), else
    /// picked by the product's entry and rows (`Tile::coop_for`).
    pub coop_fixed: Option<Tile>,
    /// `GpuTuning::coop_long`.
    pub coop_long: bool,
    /// The device's workgroup memory in bytes
    /// (`max_compute_workgroup_storage_size`: what a tile or glu_q may
    /// declare).
    pub shared_limit: u32,
    // The format-independent pipelines, each built by its getter on first
    // use, so that a load compiles only what its op lists use.
    rmsnorm: Lazy,
    rmsnorm_in_place: Lazy,
    rmsnorm_add: Lazy,
    rope: Lazy,
    kv_store: Lazy,
    attention: Lazy,
    silu_mul: Lazy,
    gelu_mul: Lazy,
    add_bias: Lazy,
    argmax: Lazy,
    argmax_pairs: Lazy,
    argmax_pairs_part: Lazy,
    argmax_masked: Lazy,
    sample_first: Lazy,
    sample_merge: Lazy,
    sample_last: Lazy,
}

/// The tiled kernel's whole source for formats `f`, entry `mv` (not the
/// LM head), tile `tile` (matmul_coop.wgsl for a `coop` one), vec4 x `vx`.
pub fn matmul_source(f: Fmts, mv: Mv, tile: Tile, vx: bool) -> String {
    let mut src = if tile.coop {
        matmul_coop_src(tile)
    } else {
        matmul_src(tile)
    };
    src.push_str(TILE);
    src.push_str(MATRIX);
    src.push_str(&compose("", f[0]));
    src.push_str(UNITS);
    // Tiles need cols % 32 == 0, so every fast decoder's alignment holds;
    // tile rows start at multiples of 32 columns.
    src.push_str(if vx { X_VEC4 } else { X_SCALAR });
    src.push_str(&tile_src(f));
    src.push_str(w_sec_src(f, mv));
    src.push_str(tile_rows_src(mv));
    src.push_str(&matrix_tail(mv));
    src
}

/// matmul_int.wgsl's whole source for formats `f` (each with a
/// `tile_q_decoder`), entry `mv` (not the LM head), tile `tile` (not a
/// `coop` one).
pub fn matmul_int_source(f: Fmts, mv: Mv, tile: Tile) -> String {
    let mut src = matmul_int_src(tile);
    src.push_str(MATRIX);
    src.push_str(&compose("", f[0]));
    src.push_str(UNITS);
    src.push_str(UNITS_Q);
    src.push_str(INT_X_SRC);
    src.push_str(&tile_q_src(f));
    src.push_str(w_sec_src(f, mv));
    src.push_str(tile_rows_src(mv));
    src.push_str(&matrix_tail(mv));
    src
}

/// The tiled kernels' `phys_row` and `epilogue` for entry `mv`.
fn tile_rows_src(mv: Mv) -> &'static str {
    match mv {
        Mv::Main | Mv::Head => {
            "fn phys_row(l: u32) -> u32 {
    return l;
}
fn epilogue(t: u32, l0: u32, v: vec4<f32>) {
    for (var i = 0u; i < 4u; i++) {
        if l0 + i < P.rows {
            store_row(t, l0 + i, v[i]);
        }
    }
}
"
        }
        // The activation is `act` (matrix_tail).
        Mv::Silu | Mv::Gelu => {
            "fn phys_row(l: u32) -> u32 {
    return glu_row(l);
}
fn epilogue(t: u32, l0: u32, v: vec4<f32>) {
    store_glu(t, l0, v.x, v.y);
    if l0 + 2u < P.rows {
        store_glu(t, l0 + 2u, v.z, v.w);
    }
}
"
        }
        Mv::Qkv => {
            "fn phys_row(l: u32) -> u32 {
    return qkv_row(l);
}
fn epilogue(t: u32, l0: u32, v: vec4<f32>) {
    store_qkv(t, l0, v);
}
"
        }
    }
}

pub fn pipeline(gpu: &Gpu, label: &str, src: &str, entry: &str) -> Rc<wgpu::ComputePipeline> {
    gpu.note_shader(label, entry, src);
    let module = gpu.shader_module(label, src);
    Rc::new(
        gpu.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            }),
    )
}

/// rmsnorm.wgsl for workgroups of `wg` threads, with its row reader `xat`
/// reading `buf` (X, or Out in place).
fn rmsnorm_src(wg: u32, buf: &str) -> String {
    format!(
        "const WG: u32 = {wg}u;\n{RMSNORM}\nfn xat(i: u32) -> f32 {{\n    return {buf}[i];\n}}\n"
    )
}

/// elementwise.wgsl with the f16 snippet its `gelu_mul` uses.
fn elementwise_src() -> String {
    format!("{ELEMENTWISE}\n{F16}")
}

/// `cell`'s pipeline, built by `build` the first time.
fn lazy(
    cell: &Lazy,
    build: impl FnOnce() -> Rc<wgpu::ComputePipeline>,
) -> Rc<wgpu::ComputePipeline> {
    cell.get_or_init(build).clone()
}

/// An attention.wgsl pipeline: its chunk shape (C, QS), entry, split rule
/// and MD (the merge's dimensions a workgroup; the head's for the other
/// entries).
type ChunkedKey = ((u32, u32), &'static str, SplitRule, usize);

/// How attention.wgsl's `split` cuts a decode step's keys, and so what
/// its `merge` expects: splits as short as one chunk of the kernel while
/// they keep at most `wgs` workgroups busy (`GpuTuning::split_wgs`),
/// doubling up to `max` keys past that (`GpuTuning::split_max`); `wgs` 0:
/// `max` keys always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SplitRule {
    pub wgs: u32,
    pub max: usize,
}

impl SplitRule {
    /// SPLIT_KEYS keys always (the kernels that do not split; split.wgsl's
    /// default shape gives the same rule, `DeepShape::rule`).
    pub const FIXED: SplitRule = SplitRule {
        wgs: 0,
        max: SPLIT_KEYS,
    };

    /// The tuning's rule for heads of `head_dim` in groups of `group`:
    /// `max` a power of two of at least the chunk and SPLIT_KEYS keys (so a
    /// whole number of chunks), at most 4096.
    pub fn new(tuning: &GpuTuning, head_dim: usize, group: usize) -> SplitRule {
        let c = chunk_shape(head_dim, group).0 as usize;
        SplitRule {
            wgs: tuning.split_wgs,
            max: tuning
                .split_max
                .clamp(SPLIT_KEYS.max(c), 4096)
                .next_power_of_two(),
        }
    }

    /// Keys per split for a query that sees `keys` keys, heads of
    /// `head_dim` in groups of `group` per kv head on `kv_heads`: the
    /// shortest of one chunk, two, four .. `max` keys whose splits keep at
    /// most `wgs` workgroups busy. The shader's `split_len`, for the host
    /// and the tests.
    pub fn len(self, head_dim: usize, group: usize, kv_heads: usize, keys: usize) -> usize {
        if self.wgs == 0 {
            return self.max;
        }
        let wgs = chunk_workgroups(kv_heads, head_dim, group) as usize;
        let mut ls = chunk_shape(head_dim, group).0 as usize;
        while ls < self.max && keys.div_ceil(ls) * wgs > self.wgs as usize {
            ls *= 2;
        }
        ls
    }

    /// Split slots per head that `len`'s splits need at any position of a
    /// `ctx`-key context: splits of `max` keys over the whole context, or
    /// shorter ones only while they number at most wgs / workgroups.
    pub fn slots(self, ctx: usize, head_dim: usize, group: usize, kv_heads: usize) -> usize {
        let long = ctx.div_ceil(self.max);
        if self.wgs == 0 {
            return long;
        }
        let c = chunk_shape(head_dim, group).0 as usize;
        let wgs = chunk_workgroups(kv_heads, head_dim, group) as usize;
        long.max(self.wgs as usize / wgs).min(ctx.div_ceil(c))
    }
}

/// Decode's split dispatch (attention.wgsl's `split`, split.wgsl): `x`
/// workgroups a split, one split a slot of the `slots` that the partial
/// results hold for the whole context. At a known position only the
/// splits that hold the token's keys launch. The others would exit at
/// once, but launching them was not free: with the context allocated at
/// 131072 keys rather than 2304, decode at depth 2048 ran 6% slower on a
/// synthetic llama-3.1-8b and 9% on a llama-3.2-1b (H200, BENCHMARKS.md
/// 2026-11-27f).
#[derive(Debug, Clone, Copy)]
pub struct SplitGrid {
    pub x: u32,
    pub slots: u32,
    /// The layer's attention window (0: none; the shaders' P.window).
    pub window: u32,
    /// How the kernel cuts the keys into splits.
    pub rule: SplitRule,
    pub head_dim: usize,
    pub group: usize,
    pub kv_heads: usize,
}

impl SplitGrid {
    /// The splits that hold the keys of the token at `pos`: the shaders'
    /// first_key and cut (`SplitRule::len`), at most `slots`.
    pub fn used(&self, pos: u32) -> u32 {
        let len = pos as usize + 1;
        let w = self.window as usize;
        let keys = if w == 0 { len } else { len.min(w) };
        let ls = self
            .rule
            .len(self.head_dim, self.group, self.kv_heads, keys);
        (keys.div_ceil(ls) as u32).clamp(1, self.slots)
    }
}

/// attention.wgsl with `chunked`'s constants for heads of `head_dim` dims
/// and `group` query heads per kv head, `split`'s and `merge`'s split
/// lengths by `rule`, and `merge`'s dimensions a workgroup `md` (the
/// head's for the other entries, which do not read it).
fn attention_src(head_dim: usize, group: usize, rule: SplitRule, md: usize) -> String {
    let (c, qs) = chunk_shape(head_dim, group);
    let (ls, wgs) = (rule.max, rule.wgs);
    let ls0 = if wgs == 0 { ls as u32 } else { c };
    format!(
        "const C: u32 = {c}u;\nconst QS: u32 = {qs}u;\nconst LS: u32 = {ls}u;\nconst LS0: u32 = {ls0}u;\nconst SPLIT_WGS: u32 = {wgs}u;\nconst MD: u32 = {md}u;\n{ATTENTION}\n{ATTN_STEP}\n{F16}\n{INT8_BLOCK}"
    )
}

/// Pairs one workgroup of argmax.wgsl's `pairs_part` reduces (256 threads,
/// 4 pairs each, all loads in flight at once).
pub const PAIRS_PER_GROUP: usize = 1024;

/// Keys per split of attention.wgsl's `split` (a multiple of every chunk
/// size). Decode attends in splits once the context is longer than this;
/// up to it, `chunked`'s one pass keeps llama.cpp's CPU order exactly.
pub const SPLIT_KEYS: usize = 64;

/// `src` with its line `marker` (a whole line: a comment may name the
/// marker too) replaced by the generated `text`, lines ending in '\n'.
fn fill_line(src: &str, marker: &str, text: &str) -> String {
    src.replace(&format!("\n{marker}\n"), &format!("\n{text}"))
}

/// The attention shaders' generated parts: `src` with each of its
/// `(marker, text)` lines filled (`fill_line`).
fn fill_lines(src: &str, parts: &[(&str, String)]) -> String {
    parts.iter().fold(src.to_string(), |body, (marker, text)| {
        fill_line(&body, marker, text)
    })
}

/// split.wgsl for heads of `head_dim` in groups of `group`, in shape
/// `sh`: its constants, and its K and V loads and their sums written out
/// as named values (see the shader's header), since the driver may keep
/// an array indexed in a loop in memory (BENCHMARKS.md, 2026-11-26d).
pub fn split_src(head_dim: usize, group: usize, sh: DeepShape) -> String {
    let gq = split_heads(head_dim, group);
    let (ls, tpk, nc) = (sh.keys as usize, sh.tpk, sh.chunks);
    let pw = sh.key_words(head_dim);
    let lanes = sh.lanes(head_dim);
    let hb = sh.out_heads(head_dim, group);
    let buf = sh.buf_len(head_dim, group, hb);
    let mut kl = String::new();
    let mut kd = String::new();
    // Both branches, as the shader's constant VEC picks one: each binding
    // (KC, KC4) stays in the layout that the host's bind group fills.
    for i in 0..pw {
        kl += &format!("    var k{i}: u32;\n");
    }
    // The loads from row `krow` into k0 .. (K_LOADS at the start, K_NEXT
    // for the next chunk).
    let mut kn = String::new();
    kn += "    if VEC {\n        let kb = (krow + part * PW) / 4u;\n";
    for q in 0..pw.div_ceil(4) {
        kn += &format!("        let kq{q} = KC4[kb + {q}u];\n");
        for c in 0..4.min(pw - 4 * q) {
            kn += &format!(
                "        k{} = kq{q}.{};\n",
                4 * q + c,
                ["x", "y", "z", "w"][c]
            );
        }
    }
    kn += "    } else {\n";
    for i in 0..pw {
        kn += &format!("        k{i} = KC[krow + min(part * PW + {i}u, HW - 1u)];\n");
    }
    kn += "    }\n";
    kl += &kn;
    for i in 0..pw {
        kd += &format!(
            "    {{\n        let kk = unpack2x16float(k{i});\n        let e = qb + {}u * GV;\n        \
             d0 += qv[e] * kk.x + qv[e + GV] * kk.y;\n        if GV > 1u {{\n            \
             d1 += qv[e + 1u] * kk.x + qv[e + GV + 1u] * kk.y;\n        }}\n    }}\n",
            2 * i
        );
    }
    let mut vl = String::new();
    let mut vs = String::new();
    for i in 0..ls.div_ceil(lanes) {
        let j = i * lanes;
        vl += &format!("    let v{i} = VC[min(lo + lane + {j}u, last) * kvw + vb];\n");
        // Slots whose keys may pass LS (LANES does not divide it) weigh 0
        // there.
        let (idx, guard) = if j + lanes > ls {
            (
                format!("min(lane + {j}u, LS - 1u)"),
                format!("lane + {j}u < LS"),
            )
        } else {
            (format!("lane + {j}u"), String::new())
        };
        let wt = |h: &str| {
            if guard.is_empty() {
                format!("wv[({idx}) * GV{h}]")
            } else {
                format!("select(vec4<f32>(), wv[({idx}) * GV{h}], {guard})")
            }
        };
        vs += &format!(
            "    {{\n        let v = unpack2x16float(v{i});\n        let a = {};\n        \
             ax0 += a * v.x;\n        ay0 += a * v.y;\n        if GV > 1u {{\n            \
             let u = {};\n            ax1 += u * v.x;\n            ay1 += u * v.y;\n        }}\n    }}\n",
            wt(""),
            wt(" + 1u")
        );
    }
    let (ve, vl) = if sh.v_early {
        (vl, String::new())
    } else {
        (String::new(), vl)
    };
    let body = fill_lines(
        SPLIT,
        &[
            ("K_LOADS", kl),
            ("K_NEXT", kn),
            ("V_EARLY", ve),
            ("V_LOADS", vl),
            ("K_DOTS", kd),
            ("V_SUMS", vs),
        ],
    );
    // PW and LANES are the host's (`key_words`, `lanes`), which the
    // generated loads and sums already follow.
    format!(
        "const HD: u32 = {head_dim}u;\nconst GQ: u32 = {gq}u;\nconst LS: u32 = {ls}u;\n\
         const NC: u32 = {nc}u;\nconst TPK: u32 = {tpk}u;\nconst PW: u32 = {pw}u;\nconst LANES: u32 = {lanes}u;\n\
         const HB: u32 = {hb}u;\nconst BUF: u32 = {buf}u;\n{body}\n{ATTN_STEP}\n{F16}"
    )
}

/// Words of a K row that each of few.wgsl's four score threads of a key
/// sums, for heads of `head_dim`.
fn few_part_words(head_dim: usize) -> usize {
    (head_dim / 2).div_ceil(4)
}

/// Whether few.wgsl reads K rows as 16-byte words (KC4, binding 10) for
/// heads of `head_dim`: each score thread's part of a row is whole
/// 16-byte words and the parts tile the row; else as u32 (KC, binding 2).
pub fn few_vec(head_dim: usize) -> bool {
    let pw = few_part_words(head_dim);
    pw.is_multiple_of(4) && 4 * pw == head_dim / 2
}

/// Words of V few.wgsl stages in workgroup memory at once (12 KiB: with
/// its other arrays, 2.8 KiB at head size 128, within WebGPU's 16).
const FEW_STAGE_WORDS: usize = 3072;

/// Steps of few.wgsl's replay that read their inputs together and share
/// one rescale branch.
const FEW_GROUP: usize = 8;

/// Keys a stage of few.wgsl's V holds for heads of `head_dim`: all of
/// SPLIT_KEYS up to head size 96, 48 at 128, 24 at 256.
pub fn few_stage_keys(head_dim: usize) -> usize {
    (FEW_STAGE_WORDS / (head_dim / 2)).clamp(1, SPLIT_KEYS)
}

/// One score thread's part of a key row in few.wgsl and mid.wgsl (four
/// threads a key, `few_part_words` words each): the loads of its words
/// from the row that starts at word `row` (a WGSL expression), named
/// `k{sfx}{i}` (16-byte words through KC4 from word `kb{sfx}` where
/// `few_vec`, else u32 words through KC), and their sum into `dot` in d
/// order, each product kept out of a fused multiply-add by Z. Returns
/// (loads, sums).
fn key_part_src(head_dim: usize, row: &str, sfx: &str, dot: &str) -> (String, String) {
    let pw = few_part_words(head_dim);
    let vec = few_vec(head_dim);
    let (mut kl, mut kd) = (String::new(), String::new());
    // This thread's K words in row order, as expressions.
    let mut words = Vec::new();
    if vec {
        kl += &format!("    let kb{sfx} = ({row} + part * PW) / 4u;\n");
        for q in 0..pw / 4 {
            kl += &format!("    let k{sfx}{q} = KC4[kb{sfx} + {q}u];\n");
            for c in ["x", "y", "z", "w"] {
                words.push(format!("k{sfx}{q}.{c}"));
            }
        }
    } else {
        for i in 0..pw {
            kl += &format!("    let k{sfx}{i} = KC[{row} + min(part * PW + {i}u, HW - 1u)];\n");
            words.push(format!("k{sfx}{i}"));
        }
    }
    for (i, word) in words.iter().enumerate() {
        // Words past the row (a row that four parts do not tile) add
        // nothing.
        let guard = if vec {
            String::new()
        } else {
            format!("if part * PW + {i}u < HW ")
        };
        kd += &format!(
            "    {guard}{{\n        let kk = unpack2x16float({word});\n        \
             let e = 2u * (part * PW + {i}u);\n        \
             {dot} += qs[e] * kk.x + Z;\n        {dot} += qs[e + 1u] * kk.y + Z;\n    }}\n"
        );
    }
    (kl, kd)
}

/// few.wgsl for heads of `head_dim` (even, <= 256): its constants, and
/// its K loads, the partial dots, the first V loads and the replay
/// written out as named values (see the shader's header); `round_pack`:
/// its replay rounds to f16 through pack2x16float (round_z_pack.wgsl,
/// where the device passed `probe::pack_rounds_exactly`), else by hand.
pub fn few_src(head_dim: usize, round_pack: bool) -> String {
    let round = match round_pack {
        true => ROUND_Z_PACK,
        false => ROUND_Z_HAND,
    };
    let pw = few_part_words(head_dim);
    let nk = SPLIT_KEYS;
    let ck = few_stage_keys(head_dim);
    let (kl, kd) = key_part_src(head_dim, "krow", "", "dot");
    // V_STAGE: word i = lid + k WG of the stage (key i / HW, word i % HW),
    // clamped into it where the last round of threads runs past its end.
    let (words, wg) = (ck * (head_dim / 2), 4 * nk);
    let mut vl = String::new();
    let mut vs = String::new();
    for k in 0..words.div_ceil(wg) {
        let at = k * wg;
        vl += &format!(
            "    let i{k} = min(lid + {at}u, CK * HW - 1u);\n    \
             let v{k} = VC[min(c0 + i{k} / HW, last) * kvw + kvh + i{k} % HW];\n"
        );
        vs += &match at + wg <= words {
            true => format!("    vs[i{k}] = v{k};\n"),
            false => format!("    if lid + {at}u < CK * HW {{\n        vs[i{k}] = v{k};\n    }}\n"),
        };
    }
    // V_REPLAY: whole groups of steps; where one of a group's keys
    // rescales, its steps as the single-step loop after it does them.
    // Step i's accumulation, after its rescale where it has one (`total`
    // times r only there: times 1 it is the same sum).
    let step = |i: usize, rescale: bool| {
        let (pre, total) = match rescale {
            true => (
                format!(
                    "                    if r{i} != 1.0 {{\n                        ax = round_f16_z(ax * r{i}, ZU);\n                        \
                     ay = round_f16_z(ay * r{i}, ZU);\n                    }}\n"
                ),
                format!("total * r{i} + w{i}"),
            ),
            false => (String::new(), format!("total + w{i}")),
        };
        format!(
            "{pre}                    ax = round_f16_z(ax + (v{i}.x * w{i} + Z), ZU);\n                    \
             ay = round_f16_z(ay + (v{i}.y * w{i} + Z), ZU);\n                    total = {total};\n"
        )
    };
    let g = FEW_GROUP;
    let mut vr = format!("            for (; j + {g}u <= end; j += {g}u) {{\n");
    for i in 0..g {
        vr += &format!(
            "                let r{i} = rs[j + {i}u];\n                let w{i} = wt[j + {i}u];\n                \
             let v{i} = unpack2x16float(vs[(j + {i}u - c0) * HW + w]);\n"
        );
    }
    let ones: Vec<String> = (0..g).map(|i| format!("r{i} == 1.0")).collect();
    vr += &format!("                if {} {{\n", ones.join(" && "));
    vr += &(0..g).map(|i| step(i, false)).collect::<String>();
    vr += "                } else {\n";
    vr += &(0..g).map(|i| step(i, true)).collect::<String>();
    vr += "                }\n            }\n";
    let body = fill_lines(
        FEW,
        &[
            ("K_LOADS", kl),
            ("K_DOTS", kd),
            ("V_STAGE", vl + &vs),
            ("V_REPLAY", vr),
        ],
    );
    format!(
        "const HD: u32 = {head_dim}u;\nconst NK: u32 = {nk}u;\nconst PW: u32 = {pw}u;\n\
         const CK: u32 = {ck}u;\n{body}\n{ATTN_STEP}\n{F16}\n{round}\n{INT8_BLOCK}\n{HEAD_Q}"
    )
}

/// The most keys mid.wgsl attends for heads of `head_dim` with the
/// tuning's `mid_keys` (0: mid.wgsl off): that many rounded down to a
/// multiple of 64, at most 256 (one score thread a key's quarter, a key
/// a thread in the max tree) and at most 32768 / head_dim (each thread
/// holds all its K and V words at once: 16 16-byte words of each at head
/// size 128), and 0 where it does not apply (head sizes that are not a
/// multiple of 8, or past 256: its V loads are 16-byte words of a row)
/// or where that leaves no keys past SPLIT_KEYS.
pub fn mid_keys(tuning: &GpuTuning, head_dim: usize) -> usize {
    if !head_dim.is_multiple_of(8) || head_dim > 256 {
        return 0;
    }
    let mk = tuning.mid_keys.min(256).min(32768 / head_dim) / 64 * 64;
    if mk > SPLIT_KEYS {
        mk
    } else {
        0
    }
}

/// mid.wgsl's pipelines for heads of `head_dim`, by the most keys each
/// attends (ascending; empty where `mid_keys` is 0): 128, 256 .. below
/// `mid_keys`, then `mid_keys`. A step takes the first that holds its
/// keys, since each thread loads every K and V word its MK keys may need,
/// whether in use or not: on the H200 (BENCHMARKS.md, 2026-11-27c) tg128
/// from 0 ran 1.2% faster on the synthetic llama-3.1-8b Q4_K (and
/// 0.5-3% on the 8B F16, 1B and SmolLM2) with MK 128 than with 256, which only
/// the steps past 128 keys need.
pub fn mid_tiers(tuning: &GpuTuning, head_dim: usize) -> Vec<usize> {
    let max = mid_keys(tuning, head_dim);
    let mut tiers = Vec::new();
    let mut mk = 2 * SPLIT_KEYS;
    while mk < max {
        tiers.push(mk);
        mk *= 2;
    }
    if max > 0 {
        tiers.push(max);
    }
    tiers
}

/// mid.wgsl's V layout for heads of `head_dim`: 16-byte word groups a
/// row (`G`) and lanes (`L`, 256 / G threads: the rest idle).
fn mid_lanes(head_dim: usize) -> (usize, usize) {
    let g = head_dim / 8;
    (g, 256 / g)
}

/// mid.wgsl for heads of `head_dim` (a multiple of 8, <= 256) over at most
/// `mk` keys (`mid_keys`): its constants, and its K and V loads, the
/// partial dots and the V sums written out as named values (see the
/// shader's header).
pub fn mid_src(head_dim: usize, mk: usize) -> String {
    let pw = few_part_words(head_dim);
    let (g, l) = mid_lanes(head_dim);
    let rounds = mk / 64;
    let vk = mk.div_ceil(l);
    let (mut kl, mut kd) = (String::new(), String::new());
    for r in 0..rounds {
        // Round r's key lid / 4, whose row starts at word kr{r}.
        kl += &format!(
            "    let kr{r} = min(lo + {}u + lid / 4u, last) * kvw + kvh;\n",
            64 * r
        );
        let (loads, sums) = key_part_src(
            head_dim,
            &format!("kr{r}"),
            &format!("{r}_"),
            &format!("dot{r}"),
        );
        kl += &loads;
        kd += &format!("    var dot{r} = 0.0;\n{sums}    scr[{r}u * WG + lid] = dot{r};\n");
    }
    let (mut vl, mut vs) = (String::new(), String::new());
    for i in 0..vk {
        vl += &format!("    let v{i} = VC4[min(lo + lane + {i}u * L, last) * kvw4 + vb];\n");
        vs += &format!(
            "        {{\n            let j = lane + {i}u * L;\n            if j < n {{\n                \
             let wj = sc[j];\n                \
             a0 += vec4<f32>(unpack2x16float(v{i}.x), unpack2x16float(v{i}.y)) * wj;\n                \
             a1 += vec4<f32>(unpack2x16float(v{i}.z), unpack2x16float(v{i}.w)) * wj;\n                \
             total += wj;\n            }}\n        }}\n"
        );
    }
    let body = fill_lines(
        MID,
        &[
            ("K_LOADS", kl),
            ("V_LOADS", vl),
            ("K_DOTS", kd),
            ("V_SUMS", vs),
        ],
    );
    let scr = (4 * mk).max(l * head_dim);
    format!(
        "const HD: u32 = {head_dim}u;\nconst MK: u32 = {mk}u;\nconst PW: u32 = {pw}u;\n\
         const G: u32 = {g}u;\nconst L: u32 = {l}u;\nconst SCR: u32 = {scr}u;\n{body}\n{ATTN_STEP}\n{F16}\n{INT8_BLOCK}\n{HEAD_Q}"
    )
}

/// From how many keys decode steps of heads of `head_dim` take
/// split.wgsl (0: never): `GpuTuning::deep_split_keys` at head sizes of 128
/// and more, `deep_split_keys_64` from 64 to 127, never below 64 (not
/// measured there). See `DEEP_SPLIT_KEYS` and `DEEP_SPLIT_KEYS_64`.
pub fn deep_keys(tuning: &GpuTuning, head_dim: usize) -> usize {
    match head_dim {
        128.. => tuning.deep_split_keys,
        64..128 => tuning.deep_split_keys_64,
        _ => 0,
    }
}

/// split.wgsl's tiers for heads of `head_dim` in groups of `group` in a
/// context of `ctx` keys: from how many keys a decode step takes each
/// shape, in order (empty where `deep_keys` is 0). The first is the
/// tuning's shape from `deep_keys`; at head sizes of 128 and more a second
/// walks `deep_far_chunks` chunks a split from `deep_far_keys` (where that
/// is past the first and the shape fits), so that deep contexts launch
/// fewer splits and merge fewer partials. See `DEEP_FAR_KEYS`. A tier the
/// context never reaches is left out: its layer list and pipeline would
/// cost load time for nothing.
pub fn deep_tiers(
    tuning: &GpuTuning,
    head_dim: usize,
    group: usize,
    ctx: usize,
) -> Vec<(usize, DeepShape)> {
    let from = deep_keys(tuning, head_dim);
    if from == 0 {
        return Vec::new();
    }
    let near = DeepShape::pick(tuning.deep_shape, head_dim, group);
    let mut tiers = vec![(from, near)];
    let far = DeepShape {
        chunks: tuning.deep_far_chunks,
        ..near
    };
    if head_dim >= 128
        && tuning.deep_far_keys > from
        && far.chunks > near.chunks
        && far.fits(head_dim, group)
    {
        tiers.push((tuning.deep_far_keys, far));
    }
    tiers.retain(|&(from, _)| from <= ctx);
    tiers
}

/// split.wgsl's shape: `keys` per chunk, `chunks` chunks per split (each
/// split one workgroup per query-head slot, walking its chunks one after
/// another) and `tpk` threads per key for the scores, so `keys * tpk`
/// threads a workgroup (`GpuTuning::deep_shape`); `v_early`: each chunk's
/// V words loaded right after its K dots rather than after its softmax
/// (split.wgsl's V_EARLY; the same values, so the same results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeepShape {
    pub keys: u32,
    pub tpk: u32,
    pub chunks: u32,
    pub v_early: bool,
}

/// `LxTxC` (the CLI's WEBGGUF_GPU_DEEP_SHAPE syntax), then ` v_early` where
/// it is set.
impl std::fmt::Display for DeepShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.keys, self.tpk, self.chunks)?;
        if self.v_early {
            write!(f, " v_early")?;
        }
        Ok(())
    }
}

impl DeepShape {
    /// 64 keys, 4 threads a key: 256 threads; one chunk a split; V loaded
    /// after the softmax. v_early measured even on the H200 (BENCHMARKS.md,
    /// 2026-11-29d: synthetic Q4_K, tg64 after 2048-8192 keys, three
    /// interleaved rounds, every ratio within 0.99-1.03 of this one), so
    /// it stays off.
    pub const DEFAULT: DeepShape = DeepShape {
        keys: 64,
        tpk: 4,
        chunks: 1,
        v_early: false,
    };

    /// The most chunks a split walks.
    pub const MAX_CHUNKS: u32 = 16;

    pub fn threads(self) -> u32 {
        self.keys * self.tpk
    }

    /// Whether split.wgsl takes this shape for heads of `head_dim` in
    /// groups of `group`: keys a multiple of 8, a power of two of threads
    /// a key, at most 256 threads, and at least one a word of the head
    /// row (the V sums) and 8 a query head (the maxima's eighths); 1 to
    /// MAX_CHUNKS chunks.
    pub fn fits(self, head_dim: usize, group: usize) -> bool {
        let t = self.threads() as usize;
        (1..=Self::MAX_CHUNKS).contains(&self.chunks)
            && self.keys >= 8
            && self.keys.is_multiple_of(8)
            && self.tpk.is_power_of_two()
            && t <= 256
            && t >= head_dim / 2
            && t >= 8 * split_heads(head_dim, group) as usize
            && self.workgroup_bytes(head_dim, group) <= 16384
    }

    /// split.wgsl's workgroup memory for heads of `head_dim` in groups of
    /// `group`: the queries by part (`qv`), the partial dots and V sums
    /// (`buf`), the weights by key (`wv`), the eighths' maxima and sums,
    /// and the running maxima and rescales (`mrun`, `sv`).
    /// WebGPU guarantees 16 KiB. It mirrors the shader's declarations;
    /// `split_source_compiles_for_every_head_size` holds it to naga's
    /// layout of the generated source.
    pub fn workgroup_bytes(self, head_dim: usize, group: usize) -> usize {
        self.bytes_with(head_dim, group, self.out_heads(head_dim, group))
    }

    /// The bytes with the V sums of `hb` heads meeting in `buf` at once.
    fn bytes_with(self, head_dim: usize, group: usize, hb: usize) -> usize {
        let gq = split_heads(head_dim, group) as usize;
        let (keys, tpk) = (self.keys as usize, self.tpk as usize);
        let gv = gq.div_ceil(4);
        let qv = tpk * (2 * self.key_words(head_dim) * gv + 1) * 16;
        qv + self.buf_len(head_dim, group, hb) * 4
            + keys * gv * 16
            + 2 * gq * 8 * 4
            + gq * 4
            + gv * 16
    }

    /// split.wgsl's `buf`: the partial dots [GQ][LS][TPK] (at least two
    /// rows of threads), or `hb` heads' lanes of V sums, the larger.
    fn buf_len(self, head_dim: usize, group: usize, hb: usize) -> usize {
        let gq = split_heads(head_dim, group) as usize;
        (gq.max(2) * self.threads() as usize).max(hb * self.lanes(head_dim) * head_dim)
    }

    /// split.wgsl's HB: the most heads (of the workgroup's GQ) whose
    /// V sums meet in `buf` at once within 16 KiB, each round two
    /// barriers; at least 1 (which the partial dots' rows always hold,
    /// as LANES * HD <= 2 WG).
    pub fn out_heads(self, head_dim: usize, group: usize) -> usize {
        let gq = split_heads(head_dim, group) as usize;
        (1..=gq)
            .rev()
            .find(|&hb| self.bytes_with(head_dim, group, hb) <= 16384)
            .unwrap_or(1)
    }

    /// split.wgsl's PW: a score thread's share of a head row's words.
    fn key_words(self, head_dim: usize) -> usize {
        (head_dim / 2).div_ceil(self.tpk as usize)
    }

    /// split.wgsl's LANES: threads a word of the head row for the V sums.
    fn lanes(self, head_dim: usize) -> usize {
        (self.threads() as usize / (head_dim / 2).max(1)).min(self.keys as usize)
    }

    /// `want` where it fits the heads, else the default's size with
    /// `want`'s v_early (which needs no workgroup memory).
    pub fn pick(want: DeepShape, head_dim: usize, group: usize) -> DeepShape {
        if want.fits(head_dim, group) {
            want
        } else {
            DeepShape {
                v_early: want.v_early,
                ..DeepShape::DEFAULT
            }
        }
    }

    /// How the merge counts split.wgsl's splits: `keys * chunks` keys
    /// always.
    pub fn rule(self) -> SplitRule {
        SplitRule {
            wgs: 0,
            max: (self.keys * self.chunks) as usize,
        }
    }
}

/// split.wgsl's query heads per workgroup for heads of `head_dim` in
/// groups of `group` per kv head: the whole group where it fits (at most
/// 8, and 1024 query elements in workgroup memory), so that each split's
/// K and V rows are read once for all of them.
pub fn split_heads(head_dim: usize, group: usize) -> u32 {
    (group.clamp(1, 8) as u32).min((1024 / head_dim.max(1)).max(1) as u32)
}

/// The chunked kernels' workgroups per token (attention.wgsl `chunked`,
/// `split`): each kv head's query heads in slots of `chunk_shape`'s QS.
pub fn chunk_workgroups(kv_heads: usize, head_dim: usize, group: usize) -> u32 {
    let (_, qs) = chunk_shape(head_dim, group);
    kv_heads as u32 * (group as u32).div_ceil(qs)
}

/// split.wgsl's workgroups per split: each kv head's query heads in
/// workgroups of `split_heads`.
pub fn split_workgroups(kv_heads: usize, head_dim: usize, group: usize) -> u32 {
    kv_heads as u32 * (group as u32).div_ceil(split_heads(head_dim, group))
}

/// Workgroups a head for attention.wgsl's merge (`merge_out`): head_dim /
/// `dims` where `dims` is a multiple of 32 that divides head_dim (so
/// `merge_q`'s parts quantize whole 32-element blocks), else 1.
pub fn merge_parts(head_dim: usize, dims: usize) -> u32 {
    if dims > 0 && dims.is_multiple_of(32) && head_dim.is_multiple_of(dims) {
        (head_dim / dims) as u32
    } else {
        1
    }
}

/// attention.wgsl `chunked`'s keys per chunk (a power of two <= 64 whose
/// K and V rows fit 1024 words each) and query heads per workgroup.
pub fn chunk_shape(head_dim: usize, group: usize) -> (u32, u32) {
    let fit = (1024 / (head_dim / 2).max(1)).clamp(1, 64) as u32;
    let c = 1 << (31 - fit.leading_zeros());
    let qs = (group as u32)
        .min(256 / head_dim.max(1) as u32)
        .min(256 / c)
        .max(1);
    (c, qs)
}

/// flash.wgsl's tiles, (head_dim, query rows, keys per chunk): rows =
/// 2048 / head_dim, so that each of the 256 threads owns one output word
/// (two dims) of 4 rows; chunks as long as the workgroup memory allows
/// with K and V staged together (`flash_shared_bytes`: 13,440, 15,040 and
/// 13,152 bytes). Other head sizes keep attention.wgsl's `chunked` for
/// every prefill.
const FLASH_TILES: [(usize, u32, u32); 3] = [(64, 32, 16), (128, 16, 16), (256, 8, 8)];

/// WebGPU's default (and guaranteed) workgroup memory, which flash.wgsl
/// stays within on every device.
const FLASH_SHARED_MAX: usize = 16 << 10;

/// flash.wgsl's workgroup memory for a tile, in bytes: the f16 query rows
/// and key rows (padded to head_dim / 2 + 4 words), the value rows, scores
/// and weights (rows x keys each), and three f32 per row.
const fn flash_shared_bytes(head_dim: usize, rows: u32, keys: u32) -> usize {
    let (hw, r, c) = (head_dim / 2, rows as usize, keys as usize);
    4 * (r * (hw + 4) + c * (hw + 4) + c * hw + 2 * r * c + 3 * r)
}

// Every tile within the portable budget, with 4 rows per thread and one
// 16-byte K (and V) word of a chunk per thread (flash.wgsl's KW == 1).
const _: () = {
    let mut i = 0;
    while i < FLASH_TILES.len() {
        let (hd, rows, keys) = FLASH_TILES[i];
        assert!(flash_shared_bytes(hd, rows, keys) <= FLASH_SHARED_MAX);
        assert!(rows as usize * hd == 2048);
        assert!(keys as usize * hd / 8 <= 256);
        i += 1;
    }
};

/// A flash.wgsl pipeline's constants: heads of `head_dim` dims, `rows`
/// query rows per workgroup (`heads` query heads of one kv head x
/// `tokens()` tokens), `keys` per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlashTile {
    pub head_dim: u32,
    pub rows: u32,
    pub keys: u32,
    pub heads: u32,
}

impl FlashTile {
    /// The tile for heads of `head_dim` dims, `group` query heads per kv
    /// head (a larger group is split over workgroups of `rows` heads);
    /// None for a head size without one (64, 128 and 256 have one).
    pub fn new(head_dim: usize, group: usize) -> Option<FlashTile> {
        let &(_, rows, keys) = FLASH_TILES.iter().find(|t| t.0 == head_dim)?;
        Some(FlashTile {
            head_dim: head_dim as u32,
            rows,
            keys,
            heads: (group as u32).clamp(1, rows),
        })
    }

    /// Consecutive tokens per workgroup.
    pub fn tokens(self) -> u32 {
        self.rows / self.heads
    }

    /// The dispatch for `kv_heads` kv heads of `group` query heads each:
    /// x the kv heads times their workgroups, y the tokens in tiles.
    pub fn shape(self, kv_heads: usize, group: usize) -> Shape {
        let per = (group as u32).div_ceil(self.heads);
        Shape::TokenTiles(kv_heads as u32 * per, self.tokens())
    }

    /// Its workgroup memory, in bytes.
    pub fn shared_bytes(self) -> usize {
        flash_shared_bytes(self.head_dim as usize, self.rows, self.keys)
    }

    fn source(self) -> String {
        let FlashTile {
            head_dim,
            rows,
            keys,
            heads,
        } = self;
        format!(
            "const HD: u32 = {head_dim}u;\nconst R: u32 = {rows}u;\nconst CK: u32 = {keys}u;\nconst GS: u32 = {heads}u;\n{FLASH}\n{ATTN_STEP}\n{F16}"
        )
    }
}

/// A kernel file followed by the decoders and the alias that picks `ty`'s.
fn compose(kernel: &str, ty: GgmlType) -> String {
    format!(
        "{kernel}\n{DEQUANT}\nfn load_weight(rb: u32, k: u32) -> f32 {{\n    return w_{}(rb, k);\n}}\n",
        ty.name().to_ascii_lowercase()
    )
}

impl Kernels {
    /// No pipelines yet, as `tuning` asks: each is built on first use (by
    /// its getter, or for a new shape), and its shader errors surface
    /// through the error scope around that use.
    pub fn new(gpu: &Gpu, tuning: &GpuTuning) -> Kernels {
        let shared_limit = gpu.limits.max_compute_workgroup_storage_size;
        Kernels {
            matvec: HashMap::new(),
            subgroups: subgroups_usable(gpu, tuning.subgroups),
            fold_norm: true,
            matvec_wg: tuning.matvec_wg,
            matvec_rows: tuning.matvec_rows,
            vector_x: tuning.vector_x,
            storage_buffers: gpu.limits.max_storage_buffers_per_shader_stage,
            int_dot: tuning.int_dot && gpu.int_dot,
            round_pack: tuning.round_pack && gpu.round_pack == Some(true),
            int_min_bytes: tuning.int_min_bytes,
            int_min_bytes_q8_0: tuning.int_min_bytes_q8_0,
            wide_int: tuning.wide_int,
            book_lanes: book_lanes(gpu, tuning),
            int_x: None,
            int_h: None,
            glu_q: tuning.glu_q,
            glu_q_shape: tuning.glu_q_shape,
            glu_q_min: tuning.glu_q_min,
            glu_q_narrow_cols: tuning.glu_q_narrow_cols,
            glu_q_narrow_shape: tuning.glu_q_narrow_shape,
            int_g: None,
            wo_q: tuning.wo_q,
            wo_q_shape: tuning.wo_q_shape,
            wo_q_min: tuning.wo_q_min,
            max_threads: gpu.limits.max_compute_invocations_per_workgroup,
            half_x: None,
            half_x_min: tuning.half_x_min,
            glu_own_x: tuning.glu_own_x,
            quantize_x: Lazy::new(),
            pack_f16: Lazy::new(),
            embed: HashMap::new(),
            chunked: HashMap::new(),
            split: HashMap::new(),
            few: HashMap::new(),
            mid: HashMap::new(),
            flash: HashMap::new(),
            flash_coop: HashMap::new(),
            flash_coop_on: tuning.flash_coop,
            matmul: HashMap::new(),
            matmul_int: HashMap::new(),
            int_prefill: tuning.int_prefill && gpu.int_dot,
            // The large tile measured slower on the H100 (BENCHMARKS.md);
            // `GpuTuning::large_tile` picks it where the memory allows.
            tile: if shared_limit >= 24 << 10 && tuning.large_tile {
                Tile::LARGE
            } else {
                Tile::SMALL
            },
            coop: tuning.coop_matrix && gpu.coop && shared_limit >= Tile::COOP_MAX_SHARED,
            coop_fixed: tuning
                .coop_shape
                .and_then(|(r, t, w)| Tile::coop(r, t, w))
                .filter(|t| t.shared_bytes() <= shared_limit),
            coop_long: tuning.coop_long,
            shared_limit,
            rmsnorm: Lazy::new(),
            rmsnorm_in_place: Lazy::new(),
            rmsnorm_add: Lazy::new(),
            rope: Lazy::new(),
            kv_store: Lazy::new(),
            attention: Lazy::new(),
            silu_mul: Lazy::new(),
            gelu_mul: Lazy::new(),
            add_bias: Lazy::new(),
            argmax: Lazy::new(),
            argmax_pairs: Lazy::new(),
            argmax_pairs_part: Lazy::new(),
            argmax_masked: Lazy::new(),
            sample_first: Lazy::new(),
            sample_merge: Lazy::new(),
            sample_last: Lazy::new(),
        }
    }

    /// rmsnorm.wgsl (prefill before the tiled products, and unfused lists)
    /// on 256 threads: a decode token's norm is one workgroup, and 64
    /// threads took 24 memory round trips over a 4096-element row.
    pub fn rmsnorm(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.rmsnorm, || {
            pipeline(gpu, "rmsnorm", &rmsnorm_src(256, "X"), "main")
        })
    }

    /// rmsnorm.wgsl `main` reading and writing Out (binding 0 unused): the
    /// per-head q/k norm (qwen3, gemma3), on 64 threads (rows of head_dim,
    /// at most 512).
    pub fn rmsnorm_in_place(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.rmsnorm_in_place, || {
            pipeline(gpu, "rmsnorm", &rmsnorm_src(64, "Out"), "main")
        })
    }

    /// rmsnorm.wgsl `add`: Out += rmsnorm(X) * G (gemma3's post-norms), on
    /// 256 threads as `rmsnorm`.
    pub fn rmsnorm_add(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.rmsnorm_add, || {
            pipeline(gpu, "rmsnorm_add", &rmsnorm_src(256, "X"), "add")
        })
    }

    /// quantize_x.wgsl: x as int8 blocks for the integer matvec.
    pub fn quantize_x(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.quantize_x, || {
            pipeline(
                gpu,
                "quantize_x",
                &format!("{MATRIX_PARAMS}\n{QUANTIZE_X}\n{INT8_BLOCK}"),
                "main",
            )
        })
    }

    /// pack_f16.wgsl: x in f16 for the tensor-core prefill tile.
    pub fn pack_f16(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.pack_f16, || {
            pipeline(
                gpu,
                "pack_f16",
                &format!("const NX: u32 = {NX}u;\n{PACK_F16}"),
                "main",
            )
        })
    }

    /// rope.wgsl (unfused q/k/v only).
    pub fn rope(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.rope, || {
            pipeline(gpu, "rope", &format!("{ROPE}\n{ROPE_PAIR}"), "main")
        })
    }

    /// attention.wgsl's `store`: k and v into the cache (unfused q/k/v only).
    pub fn kv_store(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.kv_store, || {
            pipeline(
                gpu,
                "kv_store",
                &attention_src(64, 1, SplitRule::FIXED, 64),
                "store",
            )
        })
    }

    /// attention.wgsl's one-key-at-a-time `main` (heads over 256 dims, or
    /// without `GpuTuning::chunked_attention`).
    pub fn attention(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.attention, || {
            pipeline(
                gpu,
                "attention",
                &attention_src(64, 1, SplitRule::FIXED, 64),
                "main",
            )
        })
    }

    /// elementwise.wgsl's `silu_mul` (unfused gate/up only).
    pub fn silu_mul(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.silu_mul, || {
            pipeline(gpu, "silu_mul", &elementwise_src(), "silu_mul")
        })
    }

    /// elementwise.wgsl's `gelu_mul` (unfused GELU gate/up only).
    pub fn gelu_mul(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.gelu_mul, || {
            pipeline(gpu, "gelu_mul", &elementwise_src(), "gelu_mul")
        })
    }

    /// elementwise.wgsl's `add_bias` (unfused q/k/v with biases only).
    pub fn add_bias(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.add_bias, || {
            pipeline(gpu, "add_bias", &elementwise_src(), "add_bias")
        })
    }

    /// argmax.wgsl's `main` over a whole logits buffer (tests; the backend
    /// scans the LM head's partials with `argmax_pairs`).
    pub fn argmax(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.argmax, || pipeline(gpu, "argmax", ARGMAX, "main"))
    }

    /// argmax.wgsl's `pairs`: the best of the LM head's partials.
    pub fn argmax_pairs(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.argmax_pairs, || {
            pipeline(gpu, "argmax", ARGMAX, "pairs")
        })
    }

    /// argmax.wgsl `pairs_part`: the best of each PAIRS_PER_GROUP pairs.
    pub fn argmax_pairs_part(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.argmax_pairs_part, || {
            pipeline(gpu, "argmax", ARGMAX, "pairs_part")
        })
    }

    /// argmax.wgsl's `masked`: the best logit a grammar's mask allows
    /// (greedy steps under a grammar).
    pub fn argmax_masked(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.argmax_masked, || {
            pipeline(gpu, "argmax", ARGMAX, "masked")
        })
    }

    /// sample.wgsl's `first` (the GPU sampler; built on the first sampled
    /// step).
    pub fn sample_first(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.sample_first, || {
            pipeline(gpu, "sample", SAMPLE, "first")
        })
    }

    /// sample.wgsl's `merge`.
    pub fn sample_merge(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.sample_merge, || {
            pipeline(gpu, "sample", SAMPLE, "merge")
        })
    }

    /// sample.wgsl's `last`.
    pub fn sample_last(&self, gpu: &Gpu) -> Rc<wgpu::ComputePipeline> {
        lazy(&self.sample_last, || {
            pipeline(gpu, "sample", SAMPLE, "last")
        })
    }

    /// Whether matvec pipelines (entry `mv`) for `cols`-column matrices
    /// read x and the gains as vec4 (bindings 11 and 12): every row of x
    /// then starts on a 16-byte boundary, and the entry's storage bindings
    /// (10 for q/k/v) fit the device's limit (WebGPU guarantees only 8).
    pub fn matvec_vx(&self, cols: usize, mv: Mv) -> bool {
        self.vector_x && cols.is_multiple_of(4) && (mv != Mv::Qkv || self.storage_buffers >= 10)
    }

    /// Threads per matvec workgroup for rows of `cols` elements: 128 from
    /// 256 units (2048 columns) up, else 64. Measured on the H100
    /// (bench/h100-sweep-wg-rows.log): TinyLlama's products (2048 and 5632
    /// columns) decode 4-10% faster with 128 than with 64 and 15-25% faster
    /// than with 256; SmolLM2's (576 and 1536) are best with 64, whose
    /// threads then still get one or more units each.
    pub fn matvec_threads(&self, cols: usize) -> u32 {
        match self.matvec_wg {
            0 if cols >= 2048 => 128,
            0 => 64,
            wg => wg,
        }
    }

    /// The integer path's variant for formats `f` and entry `mv`: wide
    /// (`wide_int`, every format with a wide decoder) or per-unit. The
    /// vec4 alias of W where some format reads through it (`wide_vec`),
    /// every row of the product starts on a 16-byte boundary (`aligned`)
    /// and the entry's storage bindings fit the device's limit: besides
    /// the weights Y, XQ, XD, the head's Part, q/k/v's KC, VC, B, FF
    /// (WebGPU guarantees only 8; q/k/v binds 8 with W alone, so a mixed
    /// q/k/v group that also reads W gets the alias only where the device
    /// allows 9).
    pub fn int_path(&self, f: Fmts, mv: Mv, aligned: bool) -> MvPath {
        if !(self.wide_int && f.iter().all(|&t| wide_decoder(t).is_some())) {
            return MvPath::Int;
        }
        let others = match mv {
            Mv::Qkv => 7,
            Mv::Head => 4,
            _ => 3,
        };
        let w = f.iter().any(|&t| !wide_vec(t)) as u32;
        let vec = f.iter().any(|&t| wide_vec(t));
        MvPath::Wide {
            wq: vec && aligned && others + w < self.storage_buffers,
        }
    }

    fn unsupported(ty: GgmlType) -> Error {
        Error::UnsupportedTensorType {
            tensor: "(GPU weight)".into(),
            type_name: ty.name().into(),
        }
    }

    /// The matvec pipeline for matrices of formats `f` (`Fmts`) and `cols`
    /// columns, entry `mv`, `rows` rows per workgroup; `path`: f32 x, or
    /// the integer path (x from quantize_x.wgsl; every format needs an
    /// `int_decoder`, and for `MvPath::Wide` a `wide_decoder`); `norm`:
    /// the product's x is normed (flag NORM), which on the integer path
    /// compiles the norm's sums in (matvec.wgsl's SQ).
    #[allow(clippy::too_many_arguments)]
    pub fn matvec(
        &mut self,
        gpu: &Gpu,
        f: Fmts,
        mv: Mv,
        rows: u32,
        cols: usize,
        path: MvPath,
        norm: bool,
    ) -> Result<Rc<wgpu::ComputePipeline>> {
        self.matvec_teams(gpu, f, mv, rows, cols, path, None, false, norm)
    }

    /// The glu_q team shape for gate/up rows of `cols` in formats `f`:
    /// `glu_q_narrow_shape` for rows of at most `glu_q_narrow_cols` (and
    /// for Q8_0 pairs at any length) where the device takes it (its
    /// threads a workgroup and workgroup memory),
    /// else `glu_q_shape`, so that a device of 256 threads a workgroup
    /// keeps glu_q in the default shape.
    pub fn glu_q_shape_for(&self, cols: usize, f: Fmts) -> GluQShape {
        let n = self.glu_q_narrow_shape;
        // Q8_0 pairs take glu_q only in narrow teams (`glu_q_takes`), so
        // theirs is the narrow shape at any row length (unless it is off).
        let q8 = f[0] == GgmlType::Q8_0 && f[1] == GgmlType::Q8_0 && self.glu_q_narrow_cols > 0;
        if (cols <= self.glu_q_narrow_cols || q8) && self.glu_q_fits(n, f) {
            n
        } else {
            self.glu_q_shape
        }
    }

    /// Whether this device runs glu_q in `shape` over formats `f`: its
    /// threads a workgroup and its workgroup memory (`glu_q_bytes`).
    pub fn glu_q_fits(&self, shape: GluQShape, f: Fmts) -> bool {
        shape.valid(self.max_threads) && glu_q_bytes(shape, f) <= self.shared_limit as usize
    }

    /// matvec.wgsl's `glu_q` for a gate/up product on the integer path:
    /// `shape`'s rows per team and threads a team (`GluQShape`); with
    /// `own_x` (the wide path, where `own_x_fits`) it quantizes its own x;
    /// `norm` as for `matvec` (own x needs it).
    #[allow(clippy::too_many_arguments)]
    pub fn matvec_glu_q(
        &mut self,
        gpu: &Gpu,
        f: Fmts,
        mv: Mv,
        shape: GluQShape,
        cols: usize,
        path: MvPath,
        own_x: bool,
        norm: bool,
    ) -> Result<Rc<wgpu::ComputePipeline>> {
        if !matches!(mv, Mv::Silu | Mv::Gelu) || !path.int() || !shape.valid(self.max_threads) {
            return Err(Error::Gpu(format!("no glu_q kernel for {mv:?} {shape:?}")));
        }
        if own_x && !(norm && matches!(path, MvPath::Wide { .. }) && own_x_fits(shape, f, cols)) {
            return Err(Error::Gpu(format!(
                "no glu_q kernel quantizing its own x for {f:?} {shape:?} rows of {cols}"
            )));
        }
        let teams = Some((shape.threads, shape.teams()));
        self.matvec_teams(gpu, f, mv, shape.rows, cols, path, teams, own_x, norm)
    }

    /// matvec.wgsl's `main_q` for a plain product on the integer path that
    /// also writes the next fused product's int8 x: `shape`'s rows per
    /// team and threads a team (`MainQShape`).
    pub fn matvec_main_q(
        &mut self,
        gpu: &Gpu,
        f: Fmts,
        shape: MainQShape,
        cols: usize,
        path: MvPath,
    ) -> Result<Rc<wgpu::ComputePipeline>> {
        if !path.int() || !shape.valid(self.max_threads) {
            return Err(Error::Gpu(format!("no main_q kernel for {shape:?}")));
        }
        let teams = Some((shape.threads, shape.teams()));
        self.matvec_teams(
            gpu,
            f,
            Mv::Main,
            shape.rows,
            cols,
            path,
            teams,
            false,
            false,
        )
    }

    /// `matvec`, `matvec_glu_q` and `matvec_main_q`: `teams` is (threads a
    /// team, teams a workgroup) for the entries in teams, None for one.
    #[allow(clippy::too_many_arguments)]
    fn matvec_teams(
        &mut self,
        gpu: &Gpu,
        f: Fmts,
        mv: Mv,
        rows: u32,
        cols: usize,
        path: MvPath,
        teams: Option<(u32, u32)>,
        own_x: bool,
        norm: bool,
    ) -> Result<Rc<wgpu::ComputePipeline>> {
        let int = path.int();
        let ty = f[0];
        if let Some(&bad) = f.iter().find(|&&t| !supported(t)) {
            return Err(Self::unsupported(bad));
        }
        if is_mixed(f) && !f.iter().all(|&t| mixable(t, cols)) {
            return Err(Error::Gpu(format!(
                "no mixed matrix kernel for {f:?} rows of {cols}"
            )));
        }
        let (dec, _) = unit_decoder(ty, cols);
        // A subgroup must not span two teams.
        let sg = self.subgroups && teams.is_none_or(|t| gpu.adapter.subgroup_max_size <= t.0);
        // The code book by shuffles needs this pipeline's subgroups.
        let shuffle = sg && self.book_lanes > 0;
        let wide = matches!(path, MvPath::Wide { .. });
        // A wide unit is 4 units: below 4096 columns, 128 threads would
        // leave some without one (2048 columns are 64 wide units). The
        // formats with a code book (IQ4_XS, IQ4_NL) fill it in every
        // workgroup, so fewer, longer workgroups pay for it less often: at
        // 4096 columns (one wide unit a thread with 128) 64 threads ran
        // the synthetic 8B IQ4_XS at 237-241 tg128 against 229-231 on the
        // H100, but the 1B's down product (8192 columns, two wide units
        // for each of 128 threads) lost 6% with them (BENCHMARKS.md,
        // 2026-11-26g; 2% in 2026-11-28b). Past it, the 8B's down product
        // (14,336 columns: 3.5 wide units a thread with 128, so half the
        // threads idle for the last one) gained with 64 threads: synthetic
        // 8B IQ4_XS tg128 270.4 / 270.3 -> 274.1 / 273.6, IQ4_NL 263.5 /
        // 263.8 -> 265.3 / 265.0 (2026-11-28b, bookwg.log). So the code-book
        // formats keep 128 threads only where each takes a whole number, at
        // least two, of wide units.
        // Q2_K's and Q3_K's gate/up, and Q3_K's q/k/v, also ran faster with
        // 64 threads on the synthetic 8B (4096 columns, two wide units a
        // thread): gate/up 1,410 -> 1,325 us (Q3_K) and 965 -> 860 (Q2_K),
        // q/k/v 673 -> 619 (Q3_K); Q2_K's q/k/v and both formats' plain
        // products lost 3-7% (2026-11-28, shape.log). In-stream tg128 then
        // gained 2.5% (Q3_K) and 5-13% (Q2_K) (ab.log). The same change for
        // Q4_K, Q5_K, Q6_K and Q4_0, which gpu-profile's per-kernel times
        // also favoured, gained nothing in-stream (ab2.log).
        // Q3_K's padded decoder (16-byte loads, 2026-11-29f) follows the
        // code-book formats' rule: 64 threads wherever 128 would not each
        // take a whole number, at least two, of wide units. On the H200,
        // synthetic 8B Q3_K tg64 353.0-353.8 with 64 threads everywhere
        // against 342.4-342.9 (its Wo and down products, 4,096 and 14,336
        // columns, are the ones that change); the 1B (down product 8,192
        // columns, two units a thread) lost 8% with 64 threads everywhere
        // and keeps 128 there (BENCHMARKS.md, 2026-11-29f, shape-q3.txt).
        let whole_units = f.iter().any(|&t| has_code_book(t) || t == GgmlType::Q3_K);
        // Whether the default thread count gives each thread a whole
        // number, at least two, of wide units.
        let (units, t) = (cols / 32, self.matvec_threads(cols) as usize);
        let even = units >= 2 * t && units.is_multiple_of(t);
        let low_bits = |ts: &[GgmlType]| f.iter().all(|t| ts.contains(t));
        let narrow = match mv {
            Mv::Silu | Mv::Gelu => low_bits(&[GgmlType::Q2_K, GgmlType::Q3_K]),
            Mv::Qkv => low_bits(&[GgmlType::Q3_K]),
            _ => false,
        };
        let wg = match (self.matvec_wg, teams) {
            (_, Some(t)) => t.0,
            (0, None)
                if wide && (cols < 4096 || (whole_units && !even) || (narrow && cols < 8192)) =>
            {
                64
            }
            _ => self.matvec_threads(cols),
        };
        let nteams = teams.map_or(1, |t| t.1);
        let fold = self.fold_norm;
        if int && !f.iter().all(|&t| int_decoder(t).is_some()) {
            return Err(Error::Gpu(format!("no integer matrix kernel for {f:?}")));
        }
        if wide && !f.iter().all(|&t| wide_decoder(t).is_some()) {
            return Err(Error::Gpu(format!(
                "no wide integer matrix kernel for {f:?}"
            )));
        }
        // The integer path reads no f32 x (bindings 11, 12 unused), but
        // where it quantizes its own (through 11 and 12: rows a multiple
        // of 32).
        let vx = (self.matvec_vx(cols, mv) && !int) || own_x;
        // The integer path's loads of the norm's block sums a thread
        // (matvec.wgsl's SQ_LOADS), written out for rows of `cols`.
        let sqn = if int && norm {
            cols.div_ceil(32).div_ceil(wg as usize).max(1) as u32
        } else {
            0
        };
        Ok(self
            .matvec
            .entry((
                f,
                mv,
                rows,
                wg,
                dec,
                fold,
                vx,
                path,
                nteams,
                if own_x { cols } else { 0 },
                sqn,
            ))
            .or_insert_with(|| {
                let mut src = String::new();
                // A browser's compiler wants the directive and naga
                // rejects it: which one compiles follows the adapter's
                // backend, not the build's target.
                if sg && gpu.adapter.backend == wgpu::Backend::BrowserWebGpu {
                    src.push_str("enable subgroups;\n");
                }
                src.push_str(&format!(
                    "const R: u32 = {rows}u;\nconst RN: u32 = {}u;\nconst WG: u32 = {wg}u;\n\
                     const TEAMS: u32 = {nteams}u;\n\
                     const RW: u32 = {}u;\nconst FOLD: bool = {fold};\nconst INT_X: bool = {int};\n\
                     const OWN_X: bool = {own_x};\nconst SQ: bool = {};\n",
                    rows + 1,
                    (rows + 1) * wg,
                    sqn > 0
                ));
                src.push_str(INT8_BLOCK);
                let body = if sg {
                    MATVEC
                        .replace(
                            "@builtin(local_invocation_index) lid: u32",
                            "@builtin(local_invocation_index) lid: u32, \
                             @builtin(subgroup_invocation_id) sgl: u32, \
                             @builtin(subgroup_size) sgs: u32",
                        )
                        .replace("SG_INIT", "SGL = sgl;\n    SGS = sgs;")
                } else {
                    MATVEC.replace("SG_INIT", "")
                };
                let starts: String = (0..rows)
                    .map(|r| format!("    rb[{r}] = row_start(g, {r}u, rows);\n"))
                    .collect();
                let acc_rows: String = (0..=rows)
                    .map(|r| format!("    reduce_row({r}u, lid, acc[{r}]);\n"))
                    .collect();
                src.push_str(MATRIX);
                let sq_sum = if sqn == 0 {
                    String::new()
                } else {
                    let loads: String = (0..sqn)
                        .map(|i| format!("    let sq{i} = x_sq_at(tx, lid + {i}u * WG, nbx);\n"))
                        .collect();
                    let terms: Vec<String> = (0..sqn).map(|i| format!("sq{i}")).collect();
                    format!(
                        "    let nbx = (P.cols + 31u) / 32u;\n{loads}    acc[R] += {};\n",
                        terms.join(" + ")
                    )
                };
                let body = fill_line(&body, "ROW_STARTS", &starts);
                let body = fill_line(&body, "SQ_SUM", &sq_sum);
                src.push_str(&compose(&body, ty));
                src.push_str(UNITS);
                src.push_str(&fill_line(
                    if sg { REDUCE_SUBGROUP } else { REDUCE },
                    "ACC_ROWS",
                    &acc_rows,
                ));
                src.push_str(&dot_rows_src(rows, f, cols, mv, path, shuffle));
                match path {
                    MvPath::F32 => src.push_str(X_LOAD),
                    MvPath::Int => {
                        src.push_str(INT_X_SRC);
                        src.push_str(X_SQ_XD);
                    }
                    MvPath::Wide { wq } => {
                        if own_x {
                            let nb = cols / 32;
                            src.push_str(&format!(
                                "const XQW: u32 = {}u;\nconst XDB: u32 = {nb}u;\n{OWN_X}",
                                2 * nb
                            ));
                        } else {
                            src.push_str(INT_X_WIDE_SRC);
                            src.push_str(X_SQ_XD);
                        }
                        src.push_str(WIDE);
                        if shuffle {
                            src.push_str(&format!(
                                "const BOOK_LANES: u32 = {}u;\n",
                                self.book_lanes
                            ));
                            src.push_str(BOOK_SHUFFLE);
                        } else {
                            src.push_str(BOOK_TABLE);
                        }
                        src.push_str(if wq { WQ_VEC4 } else { WQ_SCALAR });
                    }
                }
                if !own_x {
                    src.push_str("fn own_x(lid: u32, xb: u32) {\n}\n");
                }
                src.push_str(w_sec_src(f, mv));
                src.push_str(if vx { X_VEC4 } else { X_SCALAR });
                src.push_str(if vx { G_VEC4 } else { G_SCALAR });
                src.push_str(&matrix_tail(mv));
                match teams {
                    Some(_) if mv == Mv::Main => pipeline(gpu, "main_q", &src, "main_q"),
                    Some(_) => pipeline(gpu, "glu_q", &src, "glu_q"),
                    None => pipeline(gpu, mv.label(), &src, mv.entry()),
                }
            })
            .clone())
    }

    /// attention.wgsl's `chunked` for heads of `head_dim` (<= 256) dims
    /// and `group` query heads per kv head.
    pub fn attention_chunked(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        group: usize,
    ) -> Rc<wgpu::ComputePipeline> {
        self.attention_entry(gpu, head_dim, group, "chunked", SplitRule::FIXED)
    }

    /// Another entry of attention.wgsl (`split`, `chunked_q`; the merges
    /// are `attention_merge`'s) for the shape `attention_chunked` takes.
    pub fn attention_entry(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        group: usize,
        entry: &'static str,
        rule: SplitRule,
    ) -> Rc<wgpu::ComputePipeline> {
        debug_assert!(!entry.starts_with("merge"), "merges: attention_merge");
        self.attention_src_entry(gpu, head_dim, group, entry, rule, head_dim)
    }

    /// attention.wgsl's `merge` (`q`: `merge_q`) after `rule`'s splits, in
    /// `parts` workgroups a head (`merge_parts`). The dimensions a
    /// workgroup are a constant of the pipeline (MD), so that the loops
    /// over the merge's lanes have a constant trip count.
    pub fn attention_merge(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        group: usize,
        q: bool,
        rule: SplitRule,
        parts: u32,
    ) -> Rc<wgpu::ComputePipeline> {
        let entry = if q { "merge_q" } else { "merge" };
        let md = head_dim / parts.max(1) as usize;
        self.attention_src_entry(gpu, head_dim, group, entry, rule, md)
    }

    fn attention_src_entry(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        group: usize,
        entry: &'static str,
        rule: SplitRule,
        md: usize,
    ) -> Rc<wgpu::ComputePipeline> {
        self.chunked
            .entry((chunk_shape(head_dim, group), entry, rule, md))
            .or_insert_with(|| {
                pipeline(
                    gpu,
                    "attention",
                    &attention_src(head_dim, group, rule, md),
                    entry,
                )
            })
            .clone()
    }

    /// split.wgsl for heads of `head_dim` in groups of `group` in shape
    /// `sh` (one of `deep_tiers`'): decode attention in splits of
    /// `sh.keys * sh.chunks` keys, one workgroup per split and query-head
    /// slot (attention.wgsl's `merge` by the shape's `rule` combines
    /// them).
    pub fn attention_split(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        group: usize,
        sh: DeepShape,
    ) -> Rc<wgpu::ComputePipeline> {
        let gq = split_heads(head_dim, group);
        self.split
            .entry((head_dim, gq, sh))
            .or_insert_with(|| {
                pipeline(
                    gpu,
                    "attention_split",
                    &split_src(head_dim, group, sh),
                    "main",
                )
            })
            .clone()
    }

    /// few.wgsl for heads of `head_dim`: decode attention below
    /// SPLIT_KEYS keys, the chunked kernel's recurrence with every K row
    /// loaded at once; `q`: entry `main_q` (also Wo's int8 x).
    pub fn attention_few(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        q: bool,
    ) -> Rc<wgpu::ComputePipeline> {
        let round = self.round_pack;
        self.few
            .entry((head_dim, q, round))
            .or_insert_with(|| {
                let entry = if q { "main_q" } else { "main" };
                pipeline(gpu, "attention_few", &few_src(head_dim, round), entry)
            })
            .clone()
    }

    /// mid.wgsl for heads of `head_dim` over at most `mk` keys
    /// (`mid_keys`): decode attention from SPLIT_KEYS keys in one
    /// dispatch, an f32 softmax; `q`: entry `main_q` (also Wo's int8 x).
    pub fn attention_mid(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        mk: usize,
        q: bool,
    ) -> Rc<wgpu::ComputePipeline> {
        self.mid
            .entry((head_dim, mk, q))
            .or_insert_with(|| {
                let entry = if q { "main_q" } else { "main" };
                pipeline(gpu, "attention_mid", &mid_src(head_dim, mk), entry)
            })
            .clone()
    }

    /// flash_coop.wgsl for heads of `head_dim` with `gs` query heads a
    /// workgroup (`flash_coop_heads`), where `flash_coop_attention` says.
    pub fn attention_flash_coop(
        &mut self,
        gpu: &Gpu,
        head_dim: usize,
        gs: u32,
    ) -> Rc<wgpu::ComputePipeline> {
        self.flash_coop
            .entry((head_dim, gs))
            .or_insert_with(|| {
                pipeline(
                    gpu,
                    "attention_flash_coop",
                    &flash_coop_src(head_dim, gs),
                    "main",
                )
            })
            .clone()
    }

    /// Whether prefill attention of heads of `head_dim` takes
    /// flash_coop.wgsl: the device has cooperative matrices, the tuning
    /// asks for it, and the head size and its workgroup memory fit.
    pub fn flash_coop_attention(&self, head_dim: usize) -> bool {
        self.coop
            && self.flash_coop_on
            && flash_coop_fits(head_dim)
            && flash_coop_shared_bytes(head_dim) <= self.shared_limit
    }

    /// flash.wgsl for `tile`: prefill attention past SPLIT_KEYS keys.
    pub fn attention_flash(&mut self, gpu: &Gpu, tile: FlashTile) -> Rc<wgpu::ComputePipeline> {
        self.flash
            .entry(tile)
            .or_insert_with(|| pipeline(gpu, "attention_flash", &tile.source(), "main"))
            .clone()
    }

    /// The prefill tile for `rows` rows of formats `f`, entry `mv`: a
    /// cooperative-matrix one where the device has it, except for F32 and
    /// BF16 weights (f16 would round F32 weights, whose references must
    /// match exactly, and clip BF16's range), else `tile`.
    pub fn tile_for(&self, f: Fmts, mv: Mv, rows: usize) -> Tile {
        if !self.coop
            || f.iter()
                .any(|ty| matches!(ty, GgmlType::F32 | GgmlType::BF16))
        {
            return self.tile;
        }
        self.coop_fixed.unwrap_or_else(|| Tile::coop_for(mv, rows))
    }

    /// `t` reading x in f16 (`Tile::half_x`) where it is a cooperative-
    /// matrix tile of a product of at least `half_x_min` rows and columns
    /// and the graph made the f16 x (`half_x`) for such rows.
    pub fn half_tile(&self, t: Tile, rows: usize, cols: usize) -> Tile {
        let half = t.coop
            && takes_half_x(rows, cols, self.half_x_min)
            && self.half_x.as_ref().is_some_and(|h| cols <= h.cols);
        Tile { half_x: half, ..t }
    }

    /// The tile for batches of more than LONG_BATCH tokens where it is not
    /// `tile_for`'s (`Tile::coop_long`; not with a forced shape, or where
    /// the device's workgroup memory does not hold it).
    pub fn long_tile(&self, f: Fmts, mv: Mv, rows: usize) -> Option<Tile> {
        if !self.coop_long || self.coop_fixed.is_some() || !self.tile_for(f, mv, rows).coop {
            return None;
        }
        Tile::coop_long(mv, rows).filter(|t| t.shared_bytes() <= self.shared_limit)
    }

    /// The tiled (prefill) pipeline for formats `f` (`Fmts`), entry `mv`,
    /// on `tile` (`tile_for`'s, `half_tile`'s or `long_tile`'s):
    /// matmul.wgsl, or matmul_coop.wgsl for a `coop` one.
    pub fn matmul_tile(
        &mut self,
        gpu: &Gpu,
        f: Fmts,
        mv: Mv,
        tile: Tile,
    ) -> Result<Rc<wgpu::ComputePipeline>> {
        if let Some(&bad) = f.iter().find(|&&t| !supported(t)) {
            return Err(Self::unsupported(bad));
        }
        if mv == Mv::Head {
            return Err(Error::Gpu("the LM head is never tiled".into()));
        }
        let vx = self.vector_x;
        Ok(self
            .matmul
            .entry((f, mv, tile, vx))
            .or_insert_with(|| pipeline(gpu, "matmul", &matmul_source(f, mv, tile, vx), "main"))
            .clone())
    }

    /// Whether a prefill product of formats `f` and `rows` rows takes
    /// matmul_int.wgsl (`int_prefill`): every format has a
    /// `tile_q_decoder`, the product would take matmul.wgsl (not a
    /// cooperative-matrix tile) and `int_x` holds rows of `cols`.
    pub fn int_tile(&self, f: Fmts, mv: Mv, rows: usize, cols: usize) -> bool {
        self.int_prefill
            && !self.tile_for(f, mv, rows).coop
            && f.iter().all(|&t| tile_q_decoder(t).is_some())
            && self
                .int_x
                .as_ref()
                .is_some_and(|x| cols.div_ceil(32) <= x.blocks)
    }

    /// The integer prefill pipeline (matmul_int.wgsl) for formats `f`,
    /// entry `mv`, on `tile`.
    pub fn matmul_int(&mut self, gpu: &Gpu, f: Fmts, mv: Mv) -> Result<Rc<wgpu::ComputePipeline>> {
        if let Some(&bad) = f.iter().find(|&&t| tile_q_decoder(t).is_none()) {
            return Err(Error::Gpu(format!("no integer tile decoder for {bad}")));
        }
        if mv == Mv::Head {
            return Err(Error::Gpu("the LM head is never tiled".into()));
        }
        let tile = self.tile;
        Ok(self
            .matmul_int
            .entry((f, mv, tile))
            .or_insert_with(|| pipeline(gpu, "matmul_int", &matmul_int_source(f, mv, tile), "main"))
            .clone())
    }

    pub fn embed(&mut self, gpu: &Gpu, ty: GgmlType) -> Result<Rc<wgpu::ComputePipeline>> {
        if !supported(ty) {
            return Err(Self::unsupported(ty));
        }
        Ok(self
            .embed
            .entry(ty)
            .or_insert_with(|| pipeline(gpu, "embed", &compose(EMBED, ty), "main"))
            .clone())
    }
}

/// Lanes of the code book in registers (`GpuTuning::book_shuffle`): 16
/// where every subgroup has at least 16, 8 where at least 8; 0 (the
/// workgroup table) without usable subgroups or narrower ones.
fn book_lanes(gpu: &Gpu, tuning: &GpuTuning) -> u32 {
    if !(tuning.book_shuffle && subgroups_usable(gpu, tuning.subgroups)) {
        return 0;
    }
    match gpu.adapter.subgroup_min_size {
        n if n >= 16 => 16,
        n if n >= 8 => 8,
        _ => 0,
    }
}

/// Whether matvec.wgsl may sum with subgroup operations: the adapter has
/// them, every subgroup size it reports divides the 64-thread workgroup,
/// and they are `wanted` (`GpuTuning::subgroups`, off for comparisons).
fn subgroups_usable(gpu: &Gpu, wanted: bool) -> bool {
    let (lo, hi) = (gpu.adapter.subgroup_min_size, gpu.adapter.subgroup_max_size);
    gpu.features.contains(wgpu::Features::SUBGROUP)
        && lo >= 1
        && hi <= 64
        && lo.is_power_of_two()
        && hi.is_power_of_two()
        && wanted
}

/// A bind group for group 0 of `pipeline`, binding each buffer whole.
pub fn bind(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    bufs: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = bufs
        .iter()
        .map(|&(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: b.as_entire_binding(),
        })
        .collect();
    gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}
