// Matrix-vector products with a block-format weight matrix: R rows per
// workgroup of WG threads. The row's 8-element units (units.wgsl) are dealt
// round-robin to the threads; each thread decodes the x values of a unit
// once and uses them for all R rows, then the workgroup sums the R partial
// sums (shared-memory tree, or subgroupAdd where the host enables it) and
// an epilogue writes them. Decode-sized matrices make this latency-bound:
// loads are grouped so that each thread waits for few round trips.
//
// x[t] = X row t, or with flag NORM rmsnorm(X row t) * G, computed in every
// workgroup: with FOLD (the default) as s * sum_k w_k (x_k g_k), the sum of
// squares for s accumulated from the same loads of x as the dot product
// and summed with the rows (one pass over x); otherwise by a separate pass
// (norm_scale) and (x_k s) g_k as rmsnorm.wgsl does. With flag LAST the one
// token read is S.n - 1 and it writes token 0 (the LM head). Rows and
// epilogues are matrix.wgsl's:
// Entry `main`: plain rows, store_row. Entry `head`: the same, and the
//   best of the group's rows (largest logit, lowest row among equals, NaN
//   never) to Part[part_base + group] for argmax.wgsl's `pairs`.
// Entry `glu`: gate/up pairs, store_glu (R even; the host's `act` is silu
//   or geglu). Entry `qkv`: q/k/v quads, store_qkv (R a multiple of 4).
// Entry `glu_q`: `glu` (integer path only), the workgroup TEAMS teams of
//   WG threads, team j summing row group TEAMS * workgroup + j, so that a
//   workgroup holds TEAMS * R / 2 consecutive outputs, whole 32-element
//   blocks: it also writes them as the down product's int8 x (17 HQ, 18
//   HD; int8_block.wgsl: the bits quantize_x.wgsl would write from Y).
//   Why: that saves the down product's quantize pass, one dependent
//   dispatch a layer, ~6 us of an H200 decode step each (synthetic 8B
//   Q4_K tg64 +7.3%; BENCHMARKS.md, 2026-11-29d). With OWN_X (the wide
//   path) it also quantizes its own x from X and G (own_x.wgsl), which
//   saves its own quantize pass.
// Entry `main_q`: `main` (integer path only), the workgroup TEAMS teams of
//   WG threads as `glu_q`'s, holding TEAMS * R consecutive rows, whole
//   32-element blocks: it also writes its outputs y times G (the next
//   rmsnorm's gains, binding 4) as the next fused product's int8 x (17
//   HQ, 18 HD), with each block's sum of squares of y at P.out_sq_base:
//   the bits quantize_x.wgsl with NORM would write from Y. The norm's
//   scale is left to that product, as the pass leaves it, so no
//   workgroup needs another's rows. Why: that saves the quantize pass
//   before gate/up, one dependent dispatch a layer (`GpuTuning::wo_q`:
//   the Wo product; real-layout 8B tg128 on the H200 +2.0% IQ4_XS, +3.0%
//   Q4_K_M, in 16 teams of 64 threads; BENCHMARKS.md, 2026-12-02b).
// Bindings: matrix.wgsl's (G: any buffer without NORM; `main_q`'s gains);
//   17 HQ, 18 HD.
// Dispatch: (nx, ceil(groups / nx), tokens) workgroups of WG threads,
//   groups = ceil(rows / R), group = wid.x + wid.y * nx; (nx, ny, 1) with
//   LAST. `glu_q`, `main_q`: the same over ceil(groups / TEAMS) workgroups of
//   TEAMS * WG threads. The host prepends `const R`, `RN` (R + 1: the
//   rows and the sum of squares), `WG` (64, 128 or 256; `glu_q`,
//   `main_q`: a team's), `TEAMS` (1 but for those), `RW` (RN * WG), `FOLD`,
//   `INT_X`, `OWN_X` (`glu_q` only) and `SQ`, and appends int8_block.wgsl,
//   matrix.wgsl, dequant.wgsl,
//   units.wgsl, the generated `dot_rows` and `w_sec`, one of the two
//   `reduce` functions, f16.wgsl,
//   rope_pair.wgsl, the gated activation `act(gate, up)`, and `xv4(i)` /
//   `gv4(k)` (X[i .. i + 4], G[k .. k + 4]): vec4 loads through bindings
//   11 (X again) and 12 (G again) where rows are a multiple of 4 long,
//   scalar loads otherwise, and `xload(xb, k)` (x[k], or 0 past the row's
//   end; the separate norm pass's loads).
// Const INT_X (the integer path): x is read as int8 blocks that
//   quantize_x.wgsl wrote (bindings 13 XQ, 14 XD, appended by the host
//   with a `dot_rows` of units.wgsl's unit_idot decoders and `x_sq`), the
//   norm's gains already applied there: with NORM (the flag is shared with
//   that pass's uniform; const SQ, the host's `norm`) the threads sum the
//   blocks' sums of squares that the pass left in XD (`x_sq`) with the
//   rows, and the rows are multiplied by the norm's scale as with FOLD.
//   The host's `xload` is a stub, so that the kernel binds neither X nor
//   G (q/k/v then binds 8 storage buffers, WebGPU's guaranteed minimum).
//   The wide variant (wide.wgsl's decoders, 32 elements per call) views
//   binding 13 as vec4<u32> words (XQ4) and may
//   read Q4_K/Q5_K weights through a vec4<u32> alias of W at binding 15
//   (then W itself is bound only where another format reads it).

// TEAMS teams of WG threads a workgroup, each with its own RW sums (one
// team everywhere but `glu_q` and `main_q`); TB is this thread's team's
// first.
var<workgroup> red: array<f32, RW * TEAMS>;
var<private> TB: u32;
var<private> SGL: u32;
var<private> SGS: u32;
// This thread's index in the whole workgroup (wide.wgsl's code-book fill
// shares the table's entries among all TEAMS * WG threads).
var<private> FLID: u32;

// The rmsnorm scale of X[xb ..][..cols]. Eight loads per thread are issued
// before any is used: GPU compilers do not overlap the loads of successive
// loop iterations, and each round trip costs about half a microsecond.
fn norm_scale(lid: u32, xb: u32) -> f32 {
    var ss = 0.0;
    for (var k = lid; k < P.cols; k += 8u * WG) {
        let v0 = xload(xb, k);
        let v1 = xload(xb, k + WG);
        let v2 = xload(xb, k + 2u * WG);
        let v3 = xload(xb, k + 3u * WG);
        let v4 = xload(xb, k + 4u * WG);
        let v5 = xload(xb, k + 5u * WG);
        let v6 = xload(xb, k + 6u * WG);
        let v7 = xload(xb, k + 7u * WG);
        ss += ((v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3)) + ((v4 * v4 + v5 * v5) + (v6 * v6 + v7 * v7));
    }
    red[TB + lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            red[TB + lid] += red[TB + lid + s];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / sqrt(red[TB] / f32(P.cols) + P.eps);
    workgroupBarrier();
    return scale;
}

// fn dot_rows(lid, t, xb, scale, norm, rb: array<u32, R>, sec) ->
// array<f32, RN>: this thread's partial sums (t: the token read) for the R rows starting at bytes rb[r],
// then (FOLD with NORM) its share of the sum of squares of x. The host
// generates it with the loop over rows and several units per iteration
// written out, so that every load of an iteration is issued up front, and
// each row decoded in its format: the matrix's, or in a mixed group the
// format of row r's member (gate/up: r even gate, odd up) or, for q/k/v,
// of section `sec`.

// The token this workgroup reads (x) and writes.
fn src_token(z: u32) -> u32 {
    return select(z, S.n - 1u, (P.flags & F_LAST) != 0u);
}

fn dst_token(z: u32) -> u32 {
    return select(z, 0u, (P.flags & F_LAST) != 0u);
}

struct Pro {
    xb: u32,
    scale: f32,
}

fn prologue(lid: u32, z: u32) -> Pro {
    let xb = src_token(z) * P.cols;
    var scale = 1.0;
    if (P.flags & F_NORM) != 0u && !FOLD && !INT_X {
        scale = norm_scale(lid, xb);
    }
    return Pro(xb, scale);
}

// What the summed rows are multiplied by: with the norm folded (FOLD) or
// left to the product by the quantize pass (SQ), the rmsnorm scale from
// the sum of squares summed into red[R * WG], otherwise 1 (the norm, if
// any, was applied to x).
fn row_scale(sep: f32) -> f32 {
    if (P.flags & F_NORM) != 0u && ((FOLD && !INT_X) || SQ) {
        return 1.0 / sqrt(red[TB + R * WG] / f32(P.cols) + P.eps);
    }
    return 1.0;
}

// x with the norm gains (and the separate norm's scale) applied.
fn xg(x: vec4<f32>, k: u32, scale: f32, norm: bool) -> vec4<f32> {
    if norm {
        return (x * scale) * gv4(k);
    }
    return x;
}

// Block b's sum of squares (x_sq), or 0 past the row's nbx blocks.
fn x_sq_at(t: u32, b: u32, nbx: u32) -> f32 {
    return select(0.0, x_sq(t, min(b, nbx - 1u)), b < nbx);
}

// Which weight row a logical row reads: plain, gate/up pairs, q/k/v quads.
const ROWS_PLAIN: u32 = 0u;
const ROWS_GLU: u32 = 1u;
const ROWS_QKV: u32 = 2u;

fn phys(l: u32, rows: u32) -> u32 {
    if rows == ROWS_GLU {
        return glu_row(l);
    }
    if rows == ROWS_QKV {
        return qkv_row(l);
    }
    return l;
}

// The first byte of row r of workgroup g's R logical rows. The host
// writes the R calls out with constant indices (ROW_STARTS): an array that
// a loop indexes may live in memory rather than registers, as split.wgsl's
// per-head sums did (BENCHMARKS.md, 2026-11-26d).
fn row_start(g: u32, r: u32, rows: u32) -> u32 {
    var last = P.rows - 1u;
    if rows == ROWS_GLU {
        last = P.rows - 2u + (r & 1u);
    }
    return row_byte(phys(min(g * R + r, last), rows));
}

// Row group g's R logical rows (`rows` maps them to weight rows) summed
// into red[r * WG] for token z; returns what the sums are multiplied by.
// Rows past the end read the last row (gate/up: the last of its kind, so
// that each row keeps its section's format) and are not stored. g0 is the
// workgroup's first row group (g itself but for the teams of `glu_q` and
// `main_q`), whose section every team takes.
fn group_rows(g: u32, g0: u32, lid: u32, z: u32, rows: u32) -> f32 {
    let pr = prologue(lid, z);
    // rb[r] = row_start(g, r, rows) for each r < R, written out by the
    // host (constant indices only: see row_start).
    var rb: array<u32, R>;
ROW_STARTS
    // The group's section, for a mixed q/k/v group (whose sections are
    // whole groups: the host makes R divide split and kvd; only the `qkv`
    // entry reads such a group, one team a workgroup). Taken from g0, a
    // workgroup's value, not g: a team's g derives from the thread index,
    // and Chrome's compiler (Tint) rejects a module where a subgroup
    // operation (the code book's shuffles, the sums) follows a branch on
    // such a value, even in an entry point that is never dispatched (and
    // it counts a struct's fields as one value: the teams pass g0 from
    // wid, not from their TeamAt).
    let sec = w_sec(phys(g0 * R, rows));
    // With OWN_X the int8 x is the workgroup's own (one token, at 0).
    let tx = select(src_token(z), 0u, OWN_X);
    var acc = dot_rows(lid, tx, pr.xb, pr.scale, (P.flags & F_NORM) != 0u, rb, sec);
    // SQ (the integer path with NORM): this thread's share of the blocks'
    // sums of squares (blocks lid, lid + WG, ..) into acc[R], summed with
    // the rows. The host writes the loads out as named values sq0, sq1, ..
    // (SQ_SUM: as many as rows of the pipeline's cols need; nothing without
    // SQ), after the rows' loop: issued before it (held across it, or in a
    // loop of loads) they changed the driver's code for the loop and ran
    // an 8B 4-5% slower, the products without a norm too (BENCHMARKS.md,
    // 2026-11-30).
SQ_SUM
    reduce(lid, acc);
    return row_scale(pr.scale);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    FLID = lid;
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let sc = group_rows(g, g, lid, wid.z, ROWS_PLAIN);
    let L = g * R + lid;
    if lid < R && L < P.rows {
        store_row(dst_token(wid.z), L, red[lid * WG] * sc);
    }
}

@compute @workgroup_size(WG)
fn head(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    FLID = lid;
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let sc = group_rows(g, g, lid, wid.z, ROWS_PLAIN);
    let L = g * R + lid;
    if lid < R && L < P.rows {
        store_row(dst_token(wid.z), L, red[lid * WG] * sc);
    }
    if lid == 0u {
        var bv = -3.4e38;
        var bi = 0xffffffffu;
        for (var r = 0u; r < R; r++) {
            let v = red[r * WG] * sc;
            if g * R + r < P.rows && v > bv {
                bv = v;
                bi = P.out_off + g * R + r;
            }
        }
        Part[P.part_base + g] = vec2<u32>(bitcast<u32>(bv), bi);
    }
}

@compute @workgroup_size(WG)
fn glu(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    FLID = lid;
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let sc = group_rows(g, g, lid, wid.z, ROWS_GLU);
    let L = g * R + 2u * lid;
    if lid < R / 2u && L < P.rows {
        store_glu(dst_token(wid.z), L, red[2u * lid * WG] * sc, red[(2u * lid + 1u) * WG] * sc);
    }
}

@compute @workgroup_size(WG)
fn qkv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    FLID = lid;
    let g = wid.x + wid.y * P.nx;
    if g * R >= P.rows {
        return;
    }
    let sc = group_rows(g, g, lid, wid.z, ROWS_QKV);
    let l0 = g * R + 4u * lid;
    if lid < R / 4u && l0 < P.rows {
        store_qkv(dst_token(wid.z), l0, sc * vec4<f32>(red[4u * lid * WG], red[(4u * lid + 1u) * WG],
            red[(4u * lid + 2u) * WG], red[(4u * lid + 3u) * WG]));
    }
}

// A thread's place in a workgroup of TEAMS teams (`glu_q`, `main_q`): its
// team and index in it, the workgroup w, its team's row group g = w TEAMS +
// team, and the token t it writes; it also sets FLID and TB (the team's
// sums). Every team runs to the end, past the last row too (row_start
// reads the last row for those; nothing of theirs is stored): the
// barriers need the whole workgroup.
struct TeamAt {
    team: u32,
    tl: u32,
    w: u32,
    g: u32,
    t: u32,
}

fn team_at(wid: vec3<u32>, lid: u32) -> TeamAt {
    FLID = lid;
    let team = lid / WG;
    TB = team * RW;
    let w = wid.x + wid.y * P.nx;
    return TeamAt(team, lid % WG, w, w * TEAMS + team, dst_token(wid.z));
}

// glu_q's outputs as int8 blocks (quantize_x.wgsl's layout: token t's
// words from t * nb * 8, scales from t * nb, nb = ceil(split / 32)).
@group(0) @binding(17) var<storage, read_write> HQ: array<u32>;
@group(0) @binding(18) var<storage, read_write> HD: array<f32>;

// glu_q's outputs in order (0 past the last pair), for their blocks.
const QP: u32 = max(TEAMS * R / 2u, 1u);
var<workgroup> hq: array<f32, QP>;

@compute @workgroup_size(WG * TEAMS)
fn glu_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    let at = team_at(wid, lid);
    if OWN_X {
        own_x(lid, src_token(wid.z) * P.cols);
    }
    let sc = group_rows(at.g, (wid.x + wid.y * P.nx) * TEAMS, at.tl, wid.z, ROWS_GLU);
    let L = at.g * R + 2u * at.tl;
    if at.tl < R / 2u {
        var h = 0.0;
        if L < P.rows {
            h = act(red[TB + 2u * at.tl * WG] * sc, red[TB + (2u * at.tl + 1u) * WG] * sc);
            Y[at.t * P.out_stride + P.out_off + (L >> 1u)] = h;
        }
        hq[at.team * (R / 2u) + at.tl] = h;
    }
    workgroupBarrier();
    // Thread i packs outputs 4i .. 4i + 3: block i / 8, word i % 8.
    let nb = (P.split + 31u) / 32u;
    if lid < QP / 4u {
        let b = lid / 8u;
        var amax = 0.0;
        for (var j = 0u; j < 32u; j++) {
            amax = max(amax, abs(hq[32u * b + j]));
        }
        let blk = at.w * (QP / 32u) + b;
        if blk < nb {
            let v = vec4<f32>(hq[4u * lid], hq[4u * lid + 1u], hq[4u * lid + 2u], hq[4u * lid + 3u]);
            HQ[(at.t * nb + blk) * 8u + lid % 8u] = q8_pack(v, q8_inv(amax));
            if lid % 8u == 0u {
                HD[at.t * nb + blk] = q8_scale(amax);
            }
        }
    }
}

// main_q's outputs in order (0 past the last row), and each 8-element
// group's largest magnitude (times the gains) and sum of squares (without),
// as quantize_x.wgsl's threads leave theirs.
// (Sized at least 1: every matvec pipeline compiles this file, with its R
// and TEAMS.)
const QM: u32 = TEAMS * R;
const QG: u32 = max(QM / 8u, 1u);
var<workgroup> hm: array<f32, QM>;
var<workgroup> mmag: array<f32, QG>;
var<workgroup> msq: array<f32, QG>;

@compute @workgroup_size(WG * TEAMS)
fn main_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    SG_INIT
    let at = team_at(wid, lid);
    let sc = group_rows(at.g, (wid.x + wid.y * P.nx) * TEAMS, at.tl, wid.z, ROWS_PLAIN);
    let L = at.g * R + at.tl;
    if at.tl < R {
        var y = 0.0;
        if L < P.rows {
            // store_row's arithmetic, keeping the value.
            let o = at.t * P.out_stride + P.out_off + L;
            y = red[TB + at.tl * WG] * sc;
            if (P.flags & F_ACC) != 0u {
                y += Y[o];
            }
            Y[o] = y;
        }
        hm[at.team * R + at.tl] = y;
    }
    workgroupBarrier();
    // quantize_x.wgsl's arithmetic, in its order: thread c takes outputs
    // 8c .. 8c + 7 (block c / 4), the gains clamped into the row (they
    // multiply zeros past it). The host runs main_q over a whole matrix
    // (rows from 0, one part), so a row is its gain's index.
    let nb = (P.rows + 31u) / 32u;
    let k0 = 8u * lid;
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    if lid < QM / 8u {
        let x0 = vec4<f32>(hm[k0], hm[k0 + 1u], hm[k0 + 2u], hm[k0 + 3u]);
        let x1 = vec4<f32>(hm[k0 + 4u], hm[k0 + 5u], hm[k0 + 6u], hm[k0 + 7u]);
        let kg = vec4<u32>(k0, k0 + 1u, k0 + 2u, k0 + 3u) + vec4<u32>(at.w * QM);
        let last = vec4<u32>(P.rows - 1u);
        let ga = min(kg, last);
        let gb = min(kg + vec4<u32>(4u), last);
        a = x0 * vec4<f32>(G[ga.x], G[ga.y], G[ga.z], G[ga.w]);
        b = x1 * vec4<f32>(G[gb.x], G[gb.y], G[gb.z], G[gb.w]);
        msq[lid] = dot(x0, x0) + dot(x1, x1);
        let m = max(abs(a), abs(b));
        mmag[lid] = max(max(m.x, m.y), max(m.z, m.w));
    }
    workgroupBarrier();
    let blk = at.w * (QM / 32u) + lid / 4u;
    if lid < QM / 8u && blk < nb {
        let g0 = lid & ~3u;
        let amax = max(max(mmag[g0], mmag[g0 + 1u]), max(mmag[g0 + 2u], mmag[g0 + 3u]));
        let id = q8_inv(amax);
        let o = (at.t * nb + blk) * 8u + 2u * (lid & 3u);
        HQ[o] = q8_pack(a, id);
        HQ[o + 1u] = q8_pack(b, id);
        if (lid & 3u) == 0u {
            HD[at.t * nb + blk] = q8_scale(amax);
            HD[P.out_sq_base + at.t * nb + blk] = (msq[g0] + msq[g0 + 1u]) + (msq[g0 + 2u] + msq[g0 + 3u]);
        }
    }
}
