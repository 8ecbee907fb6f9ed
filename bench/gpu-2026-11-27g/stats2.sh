#!/usr/bin/env bash
# 2026-11-27g, second call (same warm machine as stats1.sh): the same
# statistics, as one line a pipeline (file, label, entry, workgroup size,
# registers, local memory bytes past the driver's 2^36 offset) for every
# family, and the shaders and raw statistics in one tarball.
set -u
[ -x .dev/pstats ] || { for f in .dev/gl/*.deb; do dpkg -x "$f" / > /dev/null; done; ldconfig; for f in .dev/*.gz; do gunzip -kf "$f"; chmod +x "${f%.gz}"; done; }
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
W=/tmp/st; rm -rf $W; mkdir -p $W
timeout 200 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:Q4_K -n 4 -d 8192 --shaders $W/Q4_K-d8192 > $W/prof-Q4_K-d8192.json 2>/dev/null
for t in Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_XS Q4_0 Q8_0 F16; do
  timeout 120 .dev/webgguf-new gpu-profile --synthetic llama-3.1-8b:$t -n 4 --shaders $W/$t > $W/prof-$t.json 2> /dev/null
done
for d in $W/*/; do
  n=$(basename $d)
  .dev/pstats $d > $W/stats-$n.tsv 2>/dev/null
  python3 - $d $W/stats-$n.tsv $n <<'PY'
import re, sys
d, st, n = sys.argv[1:]
regs, loc = {}, {}
for l in open(st):
    f = l.rstrip('\n').split('\t')
    if len(f) < 6: continue
    if f[4] == 'Register Count': regs[f[0]] = f[5]
    if f[4] == 'Local Memory Size': loc[f[0]] = int(f[5]) - (1 << 36)
    if f[4] == 'error': regs[f[0]] = 'ERR ' + f[5][:60]
for l in open(d + '/index.tsv'):
    f, lab, ent = l.rstrip('\n').split('\t')
    src = open(d + '/' + f).read()
    m = re.search(r'@compute\s*@workgroup_size\(([^)]*)\)\s*fn\s+' + re.escape(ent) + r'\b', src)
    wg = m.group(1) if m else '?'
    c = re.search(r'const\s+' + re.escape(wg.strip()) + r'\s*(?::\s*u32)?\s*=\s*([^;]*);', src)
    if c: wg += '=' + c.group(1)
    print(f"{n}\t{f}\t{lab}\t{ent}\twg={wg}\tregs={regs.get(f, '?')}\tlocal={loc.get(f, '?')}")
PY
done
tar czf $OUT/stats.tgz -C $W .
