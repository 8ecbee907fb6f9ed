// The read kernel of `webgguf gpu-bandwidth --shapes` (src/gpu/bandwidth.rs):
// bandwidth.wgsl's read_sum in other shapes, to find which way of reading
// a buffer a GPU streams fastest (2026-12-07c: bandwidth.wgsl's shape
// reads 2.67 TB/s on an H100 where CUDA's sum reads 3.06).
// Entry `read_shaped`: each workgroup adds up (wrapping, lane by lane) the
//   vec4<u32> words of Src its threads visit and writes the four sums to
//   Out[workgroup]; the host adds them and checks them against the data.
// Pipeline constants:
//   WG     threads a workgroup, a power of two from 32 to 1024;
//   LOADS  independent 16-byte loads a thread issues a turn, 1 to 16;
//   ORDER  which words a turn's loads take (T threads in all, thread t,
//          workgroup g of G, lane l):
//          0  grid-stride, as read_sum: words t + k*T, every load of a
//             warp one contiguous run;
//          1  a span of about n / G contiguous words per workgroup, each
//             turn WG * LOADS of them, load k of lane l the word
//             k*WG + l of the turn's run;
//          2  LOADS consecutive words per thread a turn (a warp's load
//             touches every LOADS-th word), as a product reading its own
//             block does.
// Bindings: 0 Src (vec4<u32>), 2 Out (vec4<u32>, one per workgroup,
//   read_write); the binding numbers are bandwidth.wgsl's.
// Dispatch: (groups, 1, 1) workgroups of WG threads, any groups from 1.

override WG: u32 = 256u;
override LOADS: u32 = 8u;
override ORDER: u32 = 0u;

@group(0) @binding(0) var<storage, read> Src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> Out: array<vec4<u32>>;

// 256 words whatever WG, so that the larger workgroups' reduction does not
// hold 16 KiB of workgroup memory (that would cap the smaller ones'
// occupancy, which is part of what is measured).
var<workgroup> part: array<vec4<u32>, 256>;

// Order 0. A binding holds at most 2^28 words and T * LOADS is at most
// 2^30 (65,535 workgroups of 1,024 threads, 16 loads), so i + LOADS * T
// cannot wrap.
fn grid_stride(n: u32, t: u32, first: u32) -> vec4<u32> {
    var acc = vec4<u32>(0u);
    var i = first;
    while i + (LOADS - 1u) * t < n {
        for (var k = 0u; k < LOADS; k++) {
            acc += Src[i + k * t];
        }
        i += LOADS * t;
    }
    while i < n {
        acc += Src[i];
        i += t;
    }
    return acc;
}

// Order 1: the workgroup's span, in turns of WG * LOADS words.
fn spans(n: u32, groups: u32, g: u32, lane: u32) -> vec4<u32> {
    let turn = WG * LOADS;
    let span = (n / groups + turn) / turn * turn;
    let start = min(g * span, n);
    let end = min(start + span, n);
    var acc = vec4<u32>(0u);
    var i = start + lane;
    while i + (LOADS - 1u) * WG < end {
        for (var k = 0u; k < LOADS; k++) {
            acc += Src[i + k * WG];
        }
        i += turn;
    }
    while i < end {
        acc += Src[i];
        i += WG;
    }
    return acc;
}

// Order 2: runs of LOADS words a thread.
fn runs(n: u32, t: u32, first: u32) -> vec4<u32> {
    var acc = vec4<u32>(0u);
    var i = first * LOADS;
    while i + LOADS <= n {
        for (var k = 0u; k < LOADS; k++) {
            acc += Src[i + k];
        }
        i += LOADS * t;
    }
    // The last, partial run belongs to one thread.
    while i < n {
        acc += Src[i];
        i++;
    }
    return acc;
}

@compute @workgroup_size(WG)
fn read_shaped(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = arrayLength(&Src);
    let t = groups.x * WG;
    var acc: vec4<u32>;
    if ORDER == 1u {
        acc = spans(n, groups.x, wid.x, lid);
    } else if ORDER == 2u {
        acc = runs(n, t, gid.x);
    } else {
        acc = grid_stride(n, t, gid.x);
    }
    // Fold the threads past 256 into the first 256, then a tree.
    if lid < 256u {
        part[lid] = acc;
    }
    workgroupBarrier();
    for (var c = 1u; c * 256u < WG; c++) {
        if lid / 256u == c {
            part[lid % 256u] += acc;
        }
        workgroupBarrier();
    }
    for (var s = min(WG, 256u) / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            part[lid] += part[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        Out[wid.x] = part[0];
    }
}
