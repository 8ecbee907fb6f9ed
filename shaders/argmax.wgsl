// Greedy sampling: Out[0] = the index of the largest of L[0..n] (the lowest
// index among equals; NaNs never win).
// Bindings: 0 L (f32 logits), 1 Out (u32), 2 P (Params).
// Dispatch: (1, 1, 1): one workgroup of 256 threads.

struct Params {
    n: u32,
    _p0: u32,
    _p1: u32,
    _p2: u32,
    _p3: u32,
    _p4: u32,
    _p5: u32,
    _p6: u32,
}

@group(0) @binding(0) var<storage, read> L: array<f32>;
@group(0) @binding(1) var<storage, read_write> Out: array<u32>;
@group(0) @binding(2) var<uniform> P: Params;

const WG: u32 = 256u;
var<workgroup> best_v: array<f32, 256>;
var<workgroup> best_i: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var bv = -3.4e38;
    var bi = 0xffffffffu;
    for (var i = lid; i < P.n; i += WG) {
        let v = L[i];
        if v > bv {
            bv = v;
            bi = i;
        }
    }
    best_v[lid] = bv;
    best_i[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            let ov = best_v[lid + s];
            let oi = best_i[lid + s];
            if ov > best_v[lid] || (ov == best_v[lid] && oi < best_i[lid]) {
                best_v[lid] = ov;
                best_i[lid] = oi;
            }
        }
        workgroupBarrier();
    }
    if lid == 0u {
        Out[0] = min(best_i[0], P.n - 1u);
    }
}
