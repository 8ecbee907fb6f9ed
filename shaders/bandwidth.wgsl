// Memory bandwidth kernels for `webgguf gpu-bandwidth` (src/gpu/bandwidth.rs).
// Entry `read_sum` (a function named `read` would shadow the access
//   mode): each workgroup adds up (wrapping, lane by lane) the vec4<u32>
//   words of Src its threads visit and writes the four sums to
//   Out[workgroup]; the host adds the workgroups' sums and checks them
//   against the data, so no load can be dropped.
// Entry `copy`: Dst[i] = Src[i] for every i below both lengths.
// Both loop grid-stride with UNROLL independent 16-byte loads per turn:
// GPU compilers do not overlap the loads of successive turns, so a single
// load per turn would leave each thread waiting out the memory latency.
// Bindings: 0 Src (vec4<u32>), 1 Dst (vec4<u32>, read_write; `copy`),
//   2 Out (vec4<u32>, one per workgroup, read_write; `read_sum`).
// Dispatch: (groups, 1, 1) workgroups of 256 threads, any groups from 1;
//   with T = groups * 256 threads, thread t visits words t, t + T, t + 2T...

const WG: u32 = 256u;
const UNROLL: u32 = 8u;

@group(0) @binding(0) var<storage, read> Src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> Dst: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> Out: array<vec4<u32>>;

var<workgroup> part: array<vec4<u32>, 256>;

@compute @workgroup_size(256)
fn read_sum(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = arrayLength(&Src);
    let t = groups.x * WG;
    var i = gid.x;
    var acc = vec4<u32>(0u);
    // A binding holds at most 2^28 words and T is below 2^24, so i + 8T
    // cannot wrap.
    while i + (UNROLL - 1u) * t < n {
        let v0 = Src[i];
        let v1 = Src[i + t];
        let v2 = Src[i + 2u * t];
        let v3 = Src[i + 3u * t];
        let v4 = Src[i + 4u * t];
        let v5 = Src[i + 5u * t];
        let v6 = Src[i + 6u * t];
        let v7 = Src[i + 7u * t];
        acc += ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7));
        i += UNROLL * t;
    }
    while i < n {
        acc += Src[i];
        i += t;
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            part[lid] += part[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        Out[wid.x] = part[0];
    }
}

@compute @workgroup_size(256)
fn copy(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let n = min(arrayLength(&Src), arrayLength(&Dst));
    let t = groups.x * WG;
    var i = gid.x;
    while i + (UNROLL - 1u) * t < n {
        let v0 = Src[i];
        let v1 = Src[i + t];
        let v2 = Src[i + 2u * t];
        let v3 = Src[i + 3u * t];
        let v4 = Src[i + 4u * t];
        let v5 = Src[i + 5u * t];
        let v6 = Src[i + 6u * t];
        let v7 = Src[i + 7u * t];
        Dst[i] = v0;
        Dst[i + t] = v1;
        Dst[i + 2u * t] = v2;
        Dst[i + 3u * t] = v3;
        Dst[i + 4u * t] = v4;
        Dst[i + 5u * t] = v5;
        Dst[i + 6u * t] = v6;
        Dst[i + 7u * t] = v7;
        i += UNROLL * t;
    }
    while i < n {
        Dst[i] = Src[i];
        i += t;
    }
}
