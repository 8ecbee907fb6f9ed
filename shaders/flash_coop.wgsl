// Tiled causal grouped-query attention for prefill on cooperative matrices
// (tensor cores), flash.wgsl's result: for head h of token t (position p =
// pos + t) softmax(f16(q) . K[j] * scale) over the keys p sees, j in
// [first_key(p), p], then the weighted sum of V[j]. Only where the device
// has wgpu's experimental cooperative matrices with 16 x 16 x 16 f16 x f16
// -> f32 products, f16 and subgroups of exactly 32 (as matmul_coop.wgsl).
// A workgroup of 4 subgroups serves one kv head and R = 64 query rows: TQ
// consecutive tokens x GS query heads of that kv head (row r: token t0 + r
// / GS, head h0 + r % GS); subgroup s owns rows 16 s .. 16 s + 15.
// Why two passes over the keys: the output accumulators are opaque
// matrices that cannot be rescaled row by row, so the first pass finds
// each row's max over all its keys (the scores Q K^T on the tensor cores,
// the max in scalar code), and the second computes the scores again,
// their weights e^(s - max) against that final max (rounded to f16, the
// products' input type, and summed as rounded, so the output is an exact
// convex combination of the weights used), and O += P V on the tensor
// cores. The scores cost twice; nothing is rescaled.
// Per chunk of CK = 64 keys: the keys' rows are staged in f16 into T
// (shared), S = Q K^T lands in Ssh (f32), then scalar code by row pairs of
// threads (thread 2 r + e takes keys 32 e .. 32 e + 31 of row r) reduces or
// weighs it; in the second pass the values' rows follow into T.
// Numerics against flash.wgsl: the same f16 query, keys and values, f32
// scores and sums; the weights are rounded to f16 (relative 2^-11).
// Params (attention.wgsl's): 0 heads, 1 kv_heads, 2 head_dim (= HD), 4
//   scale (f32), 7 window (0: none); the others unused.
// The host prepends `enable f16; enable wgpu_cooperative_matrix;`, `const
//   HD` (64 or 128), `GS` (query heads per workgroup, <= 64) and appends
//   attn_step.wgsl (P, S, first_key) and the entry `main`, whose staging loads (kv_at), fragment loads and
//   products it writes out.
// Bindings (attention.wgsl's numbers): 8 Q (f32, [tokens][heads *
//   head_dim]), 2 KH, 3 VH (the caches as f16, 8 a 16-byte element:
//   [ctx][kv_heads * head_dim / 8]), 4 P, 5 S, 6 Out (f32, like Q).
// Dispatch: (kv_heads * ceil(heads / kv_heads / GS), ceil(tokens / TQ), 1)
//   workgroups of 128 threads.

@group(0) @binding(2) var<storage, read> KH: array<mat2x4<f16>>;
@group(0) @binding(3) var<storage, read> VH: array<mat2x4<f16>>;
@group(0) @binding(6) var<storage, read_write> Out: array<f32>;
@group(0) @binding(8) var<storage, read> Q: array<f32>;

const WG: u32 = 128u;
const R: u32 = 64u;
const TQ: u32 = R / GS;
const CK: u32 = 64u;
// A head row in quads of f16, and T's row stride: two quads of padding,
// so that the 8 rows a tensor-core load reads at once start in different
// banks (as matmul_coop.wgsl's KSW).
const HQ: u32 = HD / 4u;
const RS: u32 = HQ + 2u;
// Psh's row stride in quads (64 keys and two of padding).
const PS: u32 = CK / 4u + 2u;
// A score no key has.
const MASKED: f32 = -3.4e38;

// The queries (f16), then each chunk's key rows, then its value rows:
// [row or key][RS quads].
var<workgroup> T: array<vec4<f16>, R * RS>;
// The scores [row][key], f32; at the end the output rows on their way out.
var<workgroup> Ssh: array<f32, R * CK>;
// The weights [row][key] in f16 quads.
var<workgroup> Psh: array<vec4<f16>, R * PS>;

// This workgroup's place: kv head, query heads [h0, h0 + nh), tokens
// [t0, t0 + nt).
struct Tile {
    kvi: u32,
    h0: u32,
    nh: u32,
    t0: u32,
    nt: u32,
}

fn tile_of(wid: vec3<u32>) -> Tile {
    let grp = P.heads / P.kv_heads;
    let per = (grp + GS - 1u) / GS;
    let kvi = wid.x / per;
    let h0 = kvi * grp + (wid.x % per) * GS;
    let t0 = wid.y * TQ;
    return Tile(kvi, h0, min(GS, kvi * grp + grp - h0), t0, min(TQ, S.n - min(t0, S.n)));
}

// Row r is a (token, head) of this tile.
fn row_ok(tl: Tile, r: u32) -> bool {
    return r < TQ * GS && r / GS < tl.nt && r % GS < tl.nh;
}

// The queries of the tile's rows into T, rounded to f16 (zeros for rows
// past the tokens or heads).
fn stage_q(tl: Tile, lid: u32) {
    let qd = P.heads * HD;
    for (var f = lid; f < R * HQ; f += WG) {
        let r = f / HQ;
        let e = f % HQ;
        var v = vec4<f32>(0.0);
        if row_ok(tl, r) {
            let i = (tl.t0 + r / GS) * qd + (tl.h0 + r % GS) * HD + 4u * e;
            v = vec4<f32>(Q[i], Q[i + 1u], Q[i + 2u], Q[i + 3u]);
        }
        T[r * RS + e] = vec4<f16>(v);
    }
}

// The staging of a chunk's rows (keys j0 .. j0 + CK - 1, clamped to the
// last key: the scores of keys past it are masked, and their weights 0):
// element f of the chunk (8 values of key f / (HD / 8)) is KH[kv_at(..)]
// (or VH's) and goes to T by put_kv. The host writes each thread's loads
// out as named values, all issued before the first store (HD / 16 of
// them: one round trip a chunk, not one a load).
fn kv_at(tl: Tile, j0: u32, last: u32, f: u32) -> u32 {
    let rw = P.kv_heads * HD / 8u;
    return min(j0 + f / (HQ / 2u), last) * rw + tl.kvi * (HD / 8u) + f % (HQ / 2u);
}

fn put_kv(f: u32, m: mat2x4<f16>) {
    let j = f / (HQ / 2u);
    let e = f % (HQ / 2u);
    T[j * RS + 2u * e] = m[0];
    T[j * RS + 2u * e + 1u] = m[1];
}

// Whether row r sees key j (the tile's rows at position pos + t0 + r / GS).
fn sees(tl: Tile, r: u32, j: u32) -> bool {
    let p = S.pos + tl.t0 + r / GS;
    return row_ok(tl, r) && j <= p && j >= first_key(p);
}

// Thread (row r = lid / 2, half e = lid % 2): the max of its 32 scores of
// the chunk at j0 (MASKED where none), scaled.
fn part_max(tl: Tile, j0: u32, lid: u32) -> f32 {
    let r = lid / 2u;
    let c0 = 32u * (lid % 2u);
    var m = MASKED;
    for (var c = c0; c < c0 + 32u; c++) {
        if sees(tl, r, j0 + c) {
            m = max(m, Ssh[r * CK + c] * P.scale);
        }
    }
    return m;
}

// The same thread's 32 weights e^(s - m) of the chunk at j0 into Psh in
// f16 (0 for keys its row does not see), and their sum as rounded.
fn part_weights(tl: Tile, j0: u32, m: f32, lid: u32) -> f32 {
    let r = lid / 2u;
    let c0 = 32u * (lid % 2u);
    var l = 0.0;
    for (var q = 0u; q < 8u; q++) {
        var w = vec4<f32>(0.0);
        for (var i = 0u; i < 4u; i++) {
            let c = c0 + 4u * q + i;
            if sees(tl, r, j0 + c) {
                w[i] = exp(Ssh[r * CK + c] * P.scale - m);
            }
        }
        let wh = vec4<f16>(w);
        let wr = vec4<f32>(wh);
        l += (wr.x + wr.y) + (wr.z + wr.w);
        Psh[r * PS + c0 / 4u + q] = wh;
    }
    return l;
}

// Lane sl's share of subgroup sg's 16 rows x 64 dims (from dim d0) of the
// output, which coopStoreT left in Ssh: divided by the row's weight sum
// (lr: thread 2 r + e holds row r's, both halves summed), written for the
// tile's rows.
fn drain(tl: Tile, sg: u32, sl: u32, d0: u32, lr: f32) {
    let qd = P.heads * HD;
    // A loop the same for every lane (the shuffle needs them all).
    for (var i = 0u; i < 32u; i++) {
        let e = sl + 32u * i;
        let r = 16u * sg + e / 64u;
        let d = d0 + e % 64u;
        // Row r's sum lives in lanes 2 (r % 16) and 2 (r % 16) + 1 of the
        // subgroup (threads 2 r, 2 r + 1); every lane reads it.
        let l = subgroupShuffle(lr, 2u * (r % 16u));
        if row_ok(tl, r) && d < HD {
            Out[(tl.t0 + r / GS) * qd + (tl.h0 + r % GS) * HD + d] = Ssh[r * CK + e % 64u] / l;
        }
    }
}
