#!/usr/bin/env python3
"""shapes.py RES: the read shapes of bw.sh's gpu-bandwidth runs side by
side: per shape the GB/s of the 1 GiB runs a (in order) and b (reversed)
and of the 2,047 MiB run, the best 20 by the mean of a and b, each order's
best, read_sum's shape and figure, and CUDA's reads from the same call."""
import json, sys, os
r = sys.argv[1]
def load(n):
    p = os.path.join(r, n)
    try:
        return json.load(open(p))
    except Exception as e:
        print(f"{n}: {e}"); return None
runs = {k: load(f"shapes-{k}.json") for k in ("1024-a", "1024-b", "2047")}
cuda = [load(f"torch-bw-{i}.json") for i in (1, 2)]
for i, c in enumerate(cuda, 1):
    if c: print(f"CUDA read {i}: median {c['read_GBps_median']:.0f} best {c['read_GBps_best']:.0f} GB/s; copy {c['copy_GBps_read_plus_write_median']:.0f}")
for k, d in runs.items():
    if d: print(f"{k}: read_sum {d['kernel_read_gb_s']:.0f}, kernel copy {d['kernel_copy_gb_s_read_plus_write']:.0f} GB/s ({d['adapter']})")
key = lambda s: (s["order"], s["wg"], s["loads"], s["turns"])
tab = {}
for k, d in runs.items():
    for s in (d or {}).get("shapes", []):
        tab.setdefault(key(s), {})[k] = s
def mean_ab(v):
    xs = [v[k]["read_gb_s"] for k in ("1024-a", "1024-b") if k in v]
    return sum(xs) / len(xs) if xs else 0
rows = sorted(tab.items(), key=lambda kv: -mean_ab(kv[1]))
def line(k, v):
    f = lambda n: f"{v[n]['read_gb_s']:7.0f}" if n in v else "      -"
    g = next(iter(v.values()))["groups"]
    return f"{k[0]}:{k[1]}:{k[2]}:{k[3]:<3} groups {g:6d}  a {f('1024-a')}  b {f('1024-b')}  2047 {f('2047')}"
print("best 20 by the mean of the 1 GiB runs:")
for k, v in rows[:20]: print("  " + line(k, v))
for o in range(3):
    best = [kv for kv in rows if kv[0][0] == o][:3]
    print(f"order {o} best:"); [print("  " + line(k, v)) for k, v in best]
rs = (0, 256, 8, 4)
if rs in tab: print("read_sum's shape: " + line(rs, tab[rs]))
