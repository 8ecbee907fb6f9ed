//! Op construction: the dispatches (with their parameters and bind groups)
//! of the matrix products (`matvec_ops`), the embedding gather
//! (`embed_ops`) and the GPU sampler (`sample_ops`, `SampleBufs`), and the
//! rows-per-workgroup choice.

use super::device::Gpu;
use super::kernels::{self, Kernels, Mv, Op, Shape};
use super::upload::GpuMatrix;
use crate::error::{Error, Result};
use crate::sampler::SamplerParams;

/// The rope and KV-cache side of `Mv::Qkv`.
pub struct QkvArgs<'a> {
    pub kc: &'a wgpu::Buffer,
    pub vc: &'a wgpu::Buffer,
    /// q, k and v biases concatenated like the rows, if any.
    pub bias: Option<&'a wgpu::Buffer>,
    /// Rope frequency divisors (a 1-element dummy without `has_ff`).
    pub ff: &'a wgpu::Buffer,
    pub has_ff: bool,
    pub kvd: usize,
    pub head_dim: usize,
    pub rope_dim: usize,
    pub neox: bool,
    pub theta_scale: f32,
    pub freq_scale: f32,
}

/// What one matvec computes (see matvec.wgsl).
pub struct MatvecArgs<'a> {
    pub mv: Mv,
    pub label: &'static str,
    pub x: &'a wgpu::Buffer,
    pub y: &'a wgpu::Buffer,
    pub step: &'a wgpu::Buffer,
    /// Output element of the first computed row, and the stride between tokens.
    pub out_off: usize,
    pub out_stride: usize,
    pub accumulate: bool,
    /// Fold rmsnorm(x) * gains (with eps) into the product.
    pub norm: Option<(&'a wgpu::Buffer, f32)>,
    /// Read token S.n - 1 only and write token 0 (the LM head).
    pub last: bool,
    /// Rows per workgroup (a multiple of 4 for `Mv::Qkv`, of 2 for
    /// `Mv::Silu`); 0 picks one from the shape (`auto_rows`).
    pub rows_per_group: u32,
    /// `Mv::Head`: where the argmax partials go.
    pub partials: Option<&'a wgpu::Buffer>,
    /// `Mv::Silu`: the first up row; `Mv::Qkv`: the number of q rows.
    pub split: usize,
    pub qkv: Option<QkvArgs<'a>>,
    /// Use the tiled kernel (matmul.wgsl) where it applies: a batch of
    /// tokens, columns a multiple of 32, no norm, not `last`.
    pub tiled: bool,
    /// The int8 x the integer path reads and its quantize pass writes, if
    /// not `Kernels::int_x` (the down product's: `Kernels::int_h`).
    pub int_x: Option<&'a IntX>,
    /// A fused gate/up product on the integer path also writes its outputs
    /// here as int8 x (matvec.wgsl's `glu_q`), where `Kernels::glu_q` and
    /// its shape allow; its dispatch is then labelled "gate_up_q".
    pub int_out: Option<&'a IntX>,
    /// A plain product on the integer path (the Wo product; with
    /// `GpuTuning::down_q` the down product) also writes its outputs times
    /// these gains (the next rmsnorm's) as the next fused product's int8 x,
    /// with each block's sum of squares (matvec.wgsl's `main_q`), where
    /// `Kernels::wo_q` and its shape allow; its dispatch is then labelled
    /// "down_q" (`label` "down") or "wo_q".
    pub int_next: Option<(&'a IntX, &'a wgpu::Buffer)>,
}

impl<'a> MatvecArgs<'a> {
    /// A plain `y[t] (+)= m x[t]` over [tokens][rows] buffers.
    pub fn plain(
        x: &'a wgpu::Buffer,
        y: &'a wgpu::Buffer,
        step: &'a wgpu::Buffer,
        out_stride: usize,
        accumulate: bool,
    ) -> MatvecArgs<'a> {
        MatvecArgs {
            mv: Mv::Main,
            label: "matvec",
            x,
            y,
            step,
            out_off: 0,
            out_stride,
            accumulate,
            norm: None,
            last: false,
            rows_per_group: 0,
            partials: None,
            split: 0,
            qkv: None,
            tiled: false,
            int_x: None,
            int_out: None,
            int_next: None,
        }
    }
}

/// Rows per matvec workgroup: 2 for plain products, 4 for the fused q/k/v
/// (quads) and gate/up kernels and for the LM head, the best measured on
/// the H100 (larger groups were slower: fewer threads, each waiting for
/// more round trips; the head with 2 rows leaves 4x more argmax partials).
/// Gate/up on the wide integer path takes `wide_glu_rows` instead
/// (`matvec_ops`, once the path is known).
pub fn auto_rows(_rows: usize, mv: Mv) -> u32 {
    match mv {
        Mv::Qkv | Mv::Silu | Mv::Gelu | Mv::Head => 4,
        Mv::Main => 2,
    }
}

/// Rows per workgroup of gate/up on the wide integer path for formats
/// `f`: 2 (one gate and one up row), or 4 where a member has IQ4_NL's code
/// book. On the H100 (BENCHMARKS.md, 2026-11-27f, synthetic files, three
/// interleaved rounds) 2 ran tg128 faster than 4 rows: llama-3.1-8b Q4_K
/// +2.6% (gate/up 1,169 -> 1,073 us), Q5_K +1.6%, Q4_0 +0.8%, Q8_0
/// +2-10%, llama-3.2-1b Q4_K +1.1%, TinyLlama -0.3%, SmolLM2 0%; 8B Q6_K
/// -0.6%, Q3_K -1% (one round). Half the rows a workgroup is twice the
/// workgroups, each with half the loads in flight. The code-book formats
/// are bound by their shared-memory lookups, not by loads in flight, and
/// each workgroup fills the table first: at 4 rows the synthetic 8B
/// IQ4_XS's gate/up took 1,422 us against 1,495 (2026-11-28, shape.log).
pub fn wide_glu_rows(f: kernels::Fmts) -> u32 {
    if f.iter().any(|&t| kernels::has_code_book(t)) {
        4
    } else {
        2
    }
}

/// The int8 x of the integer matvec path (quantize_x.wgsl's XQ and XD),
/// one for every product of a graph: dispatches run in order, and each
/// integer product is its own quantize pass followed by its matvec.
#[derive(Clone)]
pub struct IntX {
    /// Packed int8 values, `tokens` x `blocks` x 8 words.
    pub q: wgpu::Buffer,
    /// One f32 scale per block, then (from `sq_base`) one sum of squares
    /// per block where a norm's quantize pass wrote them.
    pub d: wgpu::Buffer,
    /// 32-element blocks per token it holds, and tokens (the graph's
    /// batch: no dispatch quantizes more).
    pub blocks: usize,
    pub tokens: usize,
}

/// The x of the tensor-core prefill tile where it reads f16
/// (matmul_coop.wgsl's XH, `Tile::half_x`): each token's row rounded to
/// f16 and packed, written by a pack_f16.wgsl pass before each such
/// product, one buffer for every product of a graph (as `IntX`).
#[derive(Clone)]
pub struct HalfX {
    pub buf: wgpu::Buffer,
    /// The longest rows it holds (for the graph's batch of tokens).
    pub cols: usize,
}

/// Bytes of `HalfX`'s buffer for `tokens` tokens of rows up to `cols` long.
pub fn half_x_bytes(cols: usize, tokens: usize) -> u64 {
    (tokens * cols * 2) as u64
}

impl HalfX {
    pub fn new(gpu: &Gpu, cols: usize, tokens: usize) -> Result<HalfX> {
        Ok(HalfX {
            buf: gpu.storage("f16 x", half_x_bytes(cols, tokens))?,
            cols,
        })
    }
}

/// Bytes of `IntX`'s two buffers for `tokens` tokens of rows up to `cols`
/// long; `sums`: room for the blocks' sums of squares too.
pub fn int_x_sizes(cols: usize, tokens: usize, sums: bool) -> [u64; 2] {
    let nb = cols.div_ceil(32) as u64;
    // The scales, then (a norm's pass: quantize_x.wgsl) the blocks' sums
    // of squares from `IntX::sq_base`.
    let words = if sums { 2 } else { 1 };
    [tokens as u64 * nb * 32, words * tokens as u64 * nb * 4]
}

impl IntX {
    /// Where in `d` the blocks' sums of squares start (after every
    /// token's scales), in floats: matrix.wgsl's `Params::sq_base`.
    pub fn sq_base(&self) -> u32 {
        (self.tokens * self.blocks) as u32
    }

    /// For the x of products that a norm's pass may feed: with room for
    /// the blocks' sums of squares.
    pub fn new(gpu: &Gpu, cols: usize, tokens: usize) -> Result<IntX> {
        IntX::make(gpu, cols, tokens, true)
    }

    /// For the down product's x (`Kernels::int_h`), which no norm's pass
    /// writes: the scales only.
    pub fn without_sums(gpu: &Gpu, cols: usize, tokens: usize) -> Result<IntX> {
        IntX::make(gpu, cols, tokens, false)
    }

    fn make(gpu: &Gpu, cols: usize, tokens: usize, sums: bool) -> Result<IntX> {
        let [q, d] = int_x_sizes(cols, tokens, sums);
        Ok(IntX {
            q: gpu.storage("int8 x", q)?,
            d: gpu.storage("int8 x scales", d)?,
            blocks: cols.div_ceil(32),
            tokens,
        })
    }
}

/// Whether `ops` begin with a quantize_x.wgsl pass (matvec_ops puts it
/// first where the product takes the integer path).
pub fn starts_with_quantize(gpu: &Gpu, k: &Kernels, ops: &[Op]) -> bool {
    let qp = k.quantize_x(gpu);
    ops.first()
        .is_some_and(|o| std::rc::Rc::ptr_eq(&o.pipeline, &qp))
}

/// Removes `ops`' leading quantize_x.wgsl pass, if it has one (matvec_ops
/// puts it first where the product takes the integer path), for a caller
/// whose producing kernel writes the int8 x itself; whether it did.
pub fn take_quantize(gpu: &Gpu, k: &Kernels, ops: &mut Vec<Op>) -> bool {
    let first = starts_with_quantize(gpu, k, ops);
    if first {
        ops.remove(0);
    }
    first
}

/// Dispatches for rows `rows` of `m` as `a` describes, one per part that
/// holds some of them; the batch runs along z unless `a.last`. Where the
/// integer path applies (`Kernels::int_dot`, an `IntX`, not tiled, every
/// format with an int decoder; or tiled, `Kernels::int_tile`) the
/// dispatches are preceded by one quantize_x.wgsl pass (with the norm's
/// gains and its block sums, if any: the product finishes the norm) that
/// shares the first part's uniform block.
pub fn matvec_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    rows: std::ops::Range<usize>,
    a: &MatvecArgs,
) -> Result<Vec<Op>> {
    // Rows the caller asks for, else the tuning's for this kind (0 for
    // neither: `auto_rows`); either way within the kind's minimum.
    let tuned = match a.mv {
        Mv::Qkv => k.matvec_rows[0],
        Mv::Silu | Mv::Gelu => k.matvec_rows[1],
        Mv::Main => k.matvec_rows[2],
        Mv::Head => 0,
    };
    let asked = if a.rows_per_group > 0 {
        a.rows_per_group
    } else {
        tuned
    };
    let mut r = match (asked, a.mv) {
        (0, mv) => auto_rows(rows.len(), mv),
        (r, Mv::Qkv) => r.max(4),
        (r, Mv::Silu | Mv::Gelu) => r.max(2),
        (r, _) => r,
    };
    let fused = !matches!(a.mv, Mv::Main | Mv::Head);
    if fused && (m.parts.len() != 1 || rows != (0..m.rows)) {
        return Err(Error::Gpu(
            "a fused matvec needs the whole matrix in one binding".into(),
        ));
    }
    // The formats, and where the rows start: one member of a mixed group
    // read alone is a plain matrix of its format from its first byte, its
    // rows counted from its first.
    let (fmts, row_bytes, byte0, first) = if fused || m.mixed.is_empty() {
        let s = &m.mixed;
        let fmts = match (s.len(), a.mv) {
            (0, _) => [m.ty; 3],
            (3, Mv::Qkv) => [s[0].ty, s[1].ty, s[2].ty],
            (2, Mv::Silu | Mv::Gelu) => [s[0].ty, s[1].ty, s[1].ty],
            _ => {
                return Err(Error::Gpu(
                    "a mixed group's members do not fit its kernel".into(),
                ))
            }
        };
        (fmts, m.row_bytes, 0, 0)
    } else {
        let s = m.member(&rows).ok_or_else(|| {
            Error::Gpu("rows of a mixed group read alone must lie in one member".into())
        })?;
        ([s.ty; 3], s.row_bytes, s.byte0, s.rows.start)
    };
    let mut secs = [(0u32, 0u32); 2];
    if fused && !m.mixed.is_empty() {
        // The sections the kernel computes (w_sec) must be the members.
        let kvd = a.qkv.as_ref().map_or(0, |q| q.kvd);
        let ends: &[usize] = match a.mv {
            Mv::Qkv => &[a.split, a.split + kvd, a.split + 2 * kvd],
            _ => &[a.split, 2 * a.split],
        };
        if m.mixed.iter().zip(ends).any(|(s, &e)| s.rows.end != e) {
            return Err(Error::Gpu(
                "a mixed group's members are not its kernel's sections".into(),
            ));
        }
        for (i, s) in m.mixed.iter().skip(1).enumerate() {
            secs[i] = (s.byte0 as u32, s.row_bytes as u32);
        }
        // A q/k/v workgroup reads one section (its decoder is picked per
        // workgroup): rows per group must divide every section.
        if a.mv == Mv::Qkv {
            while r > 4 && !(a.split.is_multiple_of(r as usize) && kvd.is_multiple_of(r as usize)) {
                r /= 2;
            }
            if !(a.split.is_multiple_of(r as usize) && kvd.is_multiple_of(r as usize)) {
                return Err(Error::Gpu(
                    "mixed q/k/v sections are not whole row groups".into(),
                ));
            }
        }
    }
    // The int8 x the integer path reads: the caller's, else the graph's
    // (a handle, so that `k` stays free for the pipeline getters below).
    let int_x: Option<IntX> = a.int_x.or(k.int_x.as_ref()).cloned();
    let tiled = a.tiled && m.cols.is_multiple_of(32) && a.norm.is_none() && !a.last;
    // The integer prefill tile (matmul_int.wgsl) reads x as int8 too.
    let int_tile = tiled && k.int_tile(fmts, a.mv, rows.len(), m.cols);
    let int = !tiled
        && k.int_dot
        && (rows.len() * row_bytes) as u64
            >= kernels::int_floor(fmts, k.int_min_bytes, k.int_min_bytes_q8_0)
        && int_x
            .as_ref()
            .is_some_and(|x| m.cols.div_ceil(32) <= x.blocks)
        && fmts.iter().all(|&t| kernels::int_decoder(t).is_some());
    // The wide path's vec4 alias of W needs the rows of the sections
    // whose format reads through it on 16-byte boundaries: each part's
    // buffer starts at a row, and a group's members are padded to 16 bytes
    // (upload::member_bytes), so only the row sizes could break it.
    let [(b1, rb1), (b2, rb2)] = secs.map(|(b, rb)| (b as usize, rb as usize));
    let starts = [(byte0, row_bytes), (b1, rb1), (b2, rb2)];
    let aligned = fmts.iter().zip(starts).all(|(&t, (b, rb))| {
        !kernels::wide_vec(t) || (b.is_multiple_of(16) && rb.is_multiple_of(16))
    });
    let path = if int {
        k.int_path(fmts, a.mv, aligned)
    } else {
        kernels::MvPath::F32
    };
    if asked == 0
        && matches!(a.mv, Mv::Silu | Mv::Gelu)
        && matches!(path, kernels::MvPath::Wide { .. })
    {
        r = wide_glu_rows(fmts);
    }
    // The tensor-core tile of long rows reads x in f16 from HalfX, packed
    // by a pass before it (`Kernels::half_tile`).
    let tile = k.half_tile(k.tile_for(fmts, a.mv, rows.len()), rows.len(), m.cols);
    // glu_q: the gate/up product writes the down product's int8 x, where
    // it takes the integer path and that x holds its outputs.
    let glu_shape = k.glu_q_shape_for(m.cols, fmts);
    let glu_q = a.int_out.filter(|h| {
        int && fused
            && matches!(a.mv, Mv::Silu | Mv::Gelu)
            && k.glu_q
            && kernels::glu_q_takes(fmts, glu_shape)
            && a.split >= k.glu_q_min
            && k.glu_q_fits(glu_shape, fmts)
            && a.split.div_ceil(32) <= h.blocks
    });
    // glu_q may quantize its own x (the FFN norm folded), which saves the
    // quantize pass before it (`Kernels::glu_own_x`).
    let own_x = glu_q.is_some()
        && m.cols <= k.glu_own_x
        && a.norm.is_some()
        && !a.last
        && matches!(path, kernels::MvPath::Wide { .. })
        && kernels::own_x_fits(glu_shape, fmts, m.cols);
    // main_q: a plain product writes the next fused product's int8 x
    // (with the norm's gains), where it takes the integer path over a
    // whole matrix in one part (a workgroup's rows are whole blocks of
    // that x from row 0) and that x holds its outputs.
    let main_q = a.int_next.filter(|(h, _)| {
        int && a.mv == Mv::Main
            && k.wo_q
            && m.rows >= k.wo_q_min
            && k.wo_q_shape.valid(k.max_threads)
            && kernels::main_q_bytes(k.wo_q_shape, fmts) <= k.shared_limit as usize
            && m.parts.len() == 1
            && rows == (0..m.rows)
            && a.out_off == 0
            && !a.last
            && m.rows.div_ceil(32) <= h.blocks
            // Not the int8 x it reads (a down product without glu_q reads
            // Kernels::int_x, which q/k/v's x would be).
            && int_x.as_ref().is_none_or(|x| x.q != h.q)
    });
    let teams = match (glu_q, main_q) {
        (Some(_), _) => {
            r = glu_shape.rows;
            glu_shape.teams()
        }
        (None, Some(_)) => {
            r = k.wo_q_shape.rows;
            k.wo_q_shape.teams()
        }
        (None, None) => 1,
    };
    let pipeline = if main_q.is_some() {
        k.matvec_main_q(gpu, fmts, k.wo_q_shape, m.cols, path)?
    } else if glu_q.is_some() {
        k.matvec_glu_q(
            gpu,
            fmts,
            a.mv,
            glu_shape,
            m.cols,
            path,
            own_x,
            a.norm.is_some(),
        )?
    } else if int_tile {
        k.matmul_int(gpu, fmts, a.mv)?
    } else if tiled {
        k.matmul_tile(gpu, fmts, a.mv, tile)?
    } else {
        k.matvec(gpu, fmts, a.mv, r, m.cols, path, a.norm.is_some())?
    };
    let half = k
        .half_x
        .clone()
        .filter(|_| tiled && !int_tile && tile.half_x);
    // A tile for long batches beside it (the same bindings; each batch
    // dispatches one of the two ops, by its token count).
    let long = match k
        .long_tile(fmts, a.mv, rows.len())
        .filter(|_| tiled && !int_tile)
    {
        Some(t) => {
            let t = k.half_tile(t, rows.len(), m.cols);
            Some((k.matmul_tile(gpu, fmts, a.mv, t)?, t))
        }
        None => None,
    };
    let mut ops = Vec::new();
    let mut part_base = 0;
    for p in &m.parts {
        let Some((lo, hi)) = overlap(p.row_off, p.rows, &rows) else {
            continue;
        };
        let n = (hi - lo) as u32;
        // Workgroups: glu_q's hold `teams` row groups each.
        let groups = n.div_ceil(r).div_ceil(teams);
        let nx = groups.min(kernels::NX);
        let ny = groups.div_ceil(nx);
        let q = a.qkv.as_ref();
        let flags = a.accumulate as u32
            | (a.norm.is_some() as u32) << 1
            | (a.last as u32) << 2
            | (q.is_some_and(|q| q.bias.is_some()) as u32) << 3
            | (q.is_some_and(|q| q.neox) as u32) << 4
            | (q.is_some_and(|q| q.has_ff) as u32) << 5;
        let words: [u32; MATVEC_PARAM_WORDS] = [
            n,
            m.cols as u32,
            (lo - p.row_off - first) as u32,
            (a.out_off + lo - rows.start) as u32,
            a.out_stride as u32,
            row_bytes as u32,
            flags,
            nx,
            f(a.norm.map_or(0.0, |n| n.1)),
            a.split as u32,
            q.map_or(0, |q| q.kvd as u32),
            q.map_or(0, |q| q.head_dim as u32),
            q.map_or(0, |q| q.rope_dim as u32),
            f(q.map_or(0.0, |q| q.theta_scale)),
            f(q.map_or(0.0, |q| q.freq_scale)),
            part_base,
            byte0 as u32,
            secs[0].0,
            secs[0].1,
            secs[1].0,
            secs[1].1,
            int_x.as_ref().map_or(0, IntX::sq_base),
            main_q.map_or(0, |(h, _)| h.sq_base()),
            0,
        ];
        let params = gpu.params_words(&words);
        part_base += groups;
        let g = a.norm.map_or(a.x, |n| n.0);
        // The tiled kernel reads x only through its vec4 alias when it has one.
        let x_binding = if tiled && k.vector_x { 11 } else { 1 };
        let mut entries = vec![(2, a.y), (3, &params), (5, a.step)];
        // The wide path may read the weights through their vec4 alias only.
        if path.binds_w(fmts) {
            entries.push((0, &p.buf));
        }
        if path.binds_wq() {
            entries.push((15, &p.buf));
        }
        // The integer kernels read x from XQ/XD only (13, 14 below), the
        // tensor-core tile of long rows from XH (16).
        if let Some(hx) = &half {
            entries.push((16, &hx.buf));
            if ops.is_empty() {
                // x once for every part: the first part's uniform has the
                // cols the pass reads.
                let pp = k.pack_f16(gpu);
                let bind = kernels::bind(
                    gpu,
                    &pp,
                    &[(1, a.x), (3, &params), (5, a.step), (16, &hx.buf)],
                );
                ops.push(Op {
                    pipeline: pp,
                    bind,
                    shape: Shape::Flat((m.cols / 4) as u32),
                    label: "pack_f16",
                });
            }
        } else if !int && !int_tile {
            entries.push((x_binding, a.x));
        }
        if !tiled && !int {
            entries.push((4, g));
        }
        // x and the gains as vec4: the f32 path's where its rows allow,
        // and glu_q's own x (the kernel's `vx`, `Kernels::matvec_teams`).
        if (!tiled && !int && k.matvec_vx(m.cols, a.mv)) || own_x {
            entries.extend([(11, a.x), (12, g)]);
        }
        let ix = int_x.as_ref().filter(|_| (int || int_tile) && !own_x);
        if let Some(h) = glu_q {
            entries.extend([(17, &h.q), (18, &h.d)]);
        }
        if let Some((h, gains)) = main_q {
            entries.extend([(4, gains), (17, &h.q), (18, &h.d)]);
        }
        if let Some(ix) = ix {
            entries.extend([(13, &ix.q), (14, &ix.d)]);
            if ops.is_empty() {
                // x once for every part: the first part's uniform has the
                // cols, flags and eps the pass reads.
                let qp = k.quantize_x(gpu);
                let bind = kernels::bind(
                    gpu,
                    &qp,
                    &[
                        (1, a.x),
                        (3, &params),
                        (4, g),
                        (5, a.step),
                        (13, &ix.q),
                        (14, &ix.d),
                    ],
                );
                let wgs = (m.cols.div_ceil(32) * 32).div_ceil(kernels::QUANTIZE_X_SPAN) as u32;
                ops.push(Op {
                    pipeline: qp,
                    bind,
                    shape: if a.last {
                        Shape::Fixed([wgs, 1, 1])
                    } else {
                        Shape::PerToken([wgs, 1, 1], 2)
                    },
                    label: "quantize_x",
                });
            }
        }
        if a.mv == Mv::Head {
            let part = a
                .partials
                .ok_or_else(|| Error::Gpu("LM head without partials".into()))?;
            entries.push((10, part));
        }
        if let Some(q) = q {
            entries.extend([(6, q.kc), (7, q.vc), (8, q.bias.unwrap_or(a.x)), (9, q.ff)]);
        }
        let bind = kernels::bind(gpu, &pipeline, &entries);
        let shape = if tiled {
            let t = if int_tile { k.tile } else { tile };
            match long {
                Some(_) => {
                    Shape::TokenTilesIn(n.div_ceil(t.rows), t.tokens, 1, kernels::LONG_BATCH)
                }
                None => Shape::TokenTiles(n.div_ceil(t.rows), t.tokens),
            }
        } else if a.last {
            Shape::Fixed([nx, ny, 1])
        } else {
            Shape::PerToken([nx, ny, 1], 2)
        };
        // Prefill products keep their kind in the label, so that
        // gpu-profile's prefill table tells q/k/v, gate/up and the rest
        // (wo, down, the LM head) apart.
        let label = match (int_tile, tiled, a.label) {
            (true, ..) => "matmul_int",
            (_, true, "qkv") => "matmul_qkv",
            (_, true, "gate_up") => "matmul_gate_up",
            (_, true, _) => "matmul",
            _ if glu_q.is_some() => "gate_up_q",
            _ if main_q.is_some() && a.label == "down" => "down_q",
            _ if main_q.is_some() => "wo_q",
            _ => a.label,
        };
        ops.push(Op {
            pipeline: pipeline.clone(),
            bind,
            shape,
            label,
        });
        if let Some((lp, t)) = &long {
            ops.push(Op {
                pipeline: lp.clone(),
                bind: kernels::bind(gpu, lp, &entries),
                shape: Shape::TokenTilesIn(
                    n.div_ceil(t.rows),
                    t.tokens,
                    kernels::LONG_BATCH + 1,
                    u32::MAX,
                ),
                label,
            });
        }
    }
    Ok(ops)
}

/// 32-bit words of a matvec dispatch's uniform block (one per part).
pub const MATVEC_PARAM_WORDS: usize = 24;

/// The rows of `rows` that a part holding `n` rows from `row_off` has, if
/// any: `matvec_ops` makes one dispatch (and one uniform block) per such
/// part, and the memory plan counts them with it.
pub fn overlap(row_off: usize, n: usize, rows: &std::ops::Range<usize>) -> Option<(usize, usize)> {
    let lo = rows.start.max(row_off);
    let hi = rows.end.min(row_off + n);
    (lo < hi).then_some((lo, hi))
}

/// Dispatches that gather the rows `tokens` names into `x`, times `scale`,
/// one per part.
pub fn embed_ops(
    gpu: &Gpu,
    k: &mut Kernels,
    m: &GpuMatrix,
    tokens: &wgpu::Buffer,
    x: &wgpu::Buffer,
    scale: f32,
) -> Result<Vec<Op>> {
    let pipeline = k.embed(gpu, m.ty)?;
    let mut ops = Vec::new();
    for p in &m.parts {
        let params = gpu.params([
            p.rows as u32,
            m.cols as u32,
            p.row_off as u32,
            m.row_bytes as u32,
            scale.to_bits(),
            0,
            0,
            0,
        ]);
        let bind = kernels::bind(
            gpu,
            &pipeline,
            &[(0, &p.buf), (1, tokens), (2, x), (3, &params)],
        );
        ops.push(Op {
            pipeline: pipeline.clone(),
            bind,
            shape: Shape::PerToken([(m.cols as u32).div_ceil(64), 1, 1], 1),
            label: "embed",
        });
    }
    Ok(ops)
}

/// Most distinct tokens the GPU applies the repetition penalty to; a longer
/// window is sampled on the CPU.
pub const PEN_CAP: usize = 1024;

/// Buffers of the GPU sampler (sample.wgsl).
pub struct SampleBufs {
    /// The per-step `Sampling` uniform.
    pub params: wgpu::Buffer,
    /// Penalized tokens.
    pub pen: wgpu::Buffer,
    /// Candidate pairs between levels.
    pub cand: [wgpu::Buffer; 2],
    /// Per-chunk (max, sum of exp) of the first level.
    pub stat: wgpu::Buffer,
    /// A grammar's allowed tokens, ceil(vocab / 32) words written per
    /// masked step (`write_mask`); read by sample.wgsl's `first` when the
    /// step's parameters say so, and by argmax.wgsl's `masked`.
    pub mask: wgpu::Buffer,
    /// Each merge level's uniform (`sample_levels`), the last one's last;
    /// made here so that the first sampled step allocates nothing.
    pub levels: Vec<wgpu::Buffer>,
}

/// Bytes of the per-step `Sampling` uniform.
pub const SAMPLING_BYTES: u64 = 48;
/// Bytes of a sampler level's uniform.
pub const LEVEL_BYTES: u64 = 16;

/// The sampler's buffer sizes for `vocab` tokens: (penalized tokens, each
/// candidate buffer, chunk stats, mask), in bytes before padding.
pub fn sample_sizes(vocab: usize) -> [u64; 4] {
    let pairs = vocab.div_ceil(1024) as u64 * 128;
    [
        PEN_CAP as u64 * 4,
        pairs * 8,
        vocab.div_ceil(1024) as u64 * 8,
        vocab.div_ceil(32) as u64 * 4,
    ]
}

/// The candidate counts the sampler's levels start from: one merge per
/// entry but the last, then the last level.
pub fn sample_levels(vocab: usize) -> Vec<usize> {
    let mut n = vocab.div_ceil(1024) * 128;
    let mut v = Vec::new();
    while n > 1024 {
        v.push(n);
        n = n.div_ceil(1024) * 128;
    }
    v.push(n);
    v
}

impl SampleBufs {
    pub fn new(gpu: &Gpu, vocab: usize) -> Result<SampleBufs> {
        let [pen, cand, stat, mask] = sample_sizes(vocab);
        Ok(SampleBufs {
            params: gpu.buffer(&wgpu::BufferDescriptor {
                label: Some("sampling"),
                size: SAMPLING_BYTES,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            pen: gpu.storage("penalized tokens", pen)?,
            cand: [
                gpu.storage("candidates", cand)?,
                gpu.storage("candidates", cand)?,
            ],
            stat: gpu.storage("chunk stats", stat)?,
            mask: gpu.storage("token mask", mask)?,
            levels: sample_levels(vocab)
                .into_iter()
                .map(|n| {
                    let words: [u32; LEVEL_BYTES as usize / 4] = [n as u32, 0, 0, 0];
                    gpu.params_words(&words)
                })
                .collect(),
        })
    }

    /// Write a step's allowed-token mask (`Extras::mask`: bit `i % 32` of
    /// word `i / 32`). Words past the end of `mask` allow nothing, as on the
    /// CPU; words past the vocabulary are dropped.
    pub fn write_mask(&self, gpu: &Gpu, vocab: usize, mask: &[u32]) {
        let words = vocab.div_ceil(32);
        let b: Vec<u8> = (0..words)
            .flat_map(|i| mask.get(i).copied().unwrap_or(0).to_le_bytes())
            .collect();
        gpu.queue.write_buffer(&self.mask, 0, &b);
    }

    /// Write one step's parameters: `pen` the penalized tokens (at most
    /// PEN_CAP), `r` the draw's random number, `masked`: apply the mask
    /// last written (`write_mask`); temperature 0 is greedy.
    pub fn write(
        &self,
        gpu: &Gpu,
        vocab: usize,
        p: &SamplerParams,
        pen: &[u32],
        r: f32,
        masked: bool,
    ) {
        if !pen.is_empty() {
            let b: Vec<u8> = pen.iter().flat_map(|t| t.to_le_bytes()).collect();
            gpu.queue.write_buffer(&self.pen, 0, &b);
        }
        let greedy = p.temperature <= 0.0;
        let words = [
            vocab as u32,
            p.top_k.min(u32::MAX as usize) as u32,
            f(p.top_p),
            f(p.min_p),
            f(if greedy { 1.0 } else { 1.0 / p.temperature }),
            f(p.repeat_penalty),
            pen.len() as u32,
            f(r),
            greedy as u32,
            masked as u32,
            0,
            0,
        ];
        let b: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
        gpu.queue.write_buffer(&self.params, 0, &b);
    }
}

/// Dispatches that sample a token from `logits` (`vocab` of them) into
/// `out[0]` with the parameters (and mask) last written to `b`
/// (sample.wgsl).
pub fn sample_ops(
    gpu: &Gpu,
    k: &Kernels,
    logits: &wgpu::Buffer,
    out: &wgpu::Buffer,
    b: &SampleBufs,
    vocab: usize,
) -> Vec<Op> {
    let groups = vocab.div_ceil(1024);
    let mut ops = vec![Op {
        bind: kernels::bind(
            gpu,
            &k.sample_first(gpu),
            &[
                (0, logits),
                (2, &b.cand[0]),
                (4, &b.params),
                (6, &b.pen),
                (7, &b.stat),
                (8, &b.mask),
            ],
        ),
        pipeline: k.sample_first(gpu),
        shape: Shape::Fixed([groups as u32, 1, 1]),
        label: "sample",
    }];
    let levels = sample_levels(vocab);
    let (merges, last) = b.levels.split_at(levels.len() - 1);
    let mut cur = 0;
    for (&n, l) in levels.iter().zip(merges) {
        let groups = n.div_ceil(1024);
        ops.push(Op {
            bind: kernels::bind(
                gpu,
                &k.sample_merge(gpu),
                &[(1, &b.cand[cur]), (2, &b.cand[1 - cur]), (5, l)],
            ),
            pipeline: k.sample_merge(gpu),
            shape: Shape::Fixed([groups as u32, 1, 1]),
            label: "sample",
        });
        cur = 1 - cur;
    }
    ops.push(Op {
        bind: kernels::bind(
            gpu,
            &k.sample_last(gpu),
            &[
                (1, &b.cand[cur]),
                (3, out),
                (4, &b.params),
                (5, &last[0]),
                (7, &b.stat),
            ],
        ),
        pipeline: k.sample_last(gpu),
        shape: Shape::Fixed([1, 1, 1]),
        label: "sample",
    });
    ops
}

pub(super) fn f(v: f32) -> u32 {
    v.to_bits()
}
