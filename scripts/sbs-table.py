#!/usr/bin/env python3
"""Tables for BENCHMARKS.md from one gpu-side-by-side result folder.

Usage: scripts/sbs-table.py bench/h100-YYYY-MM-DD/sbs/res [--median]
--median: each engine's median repetition (llama-bench's samples_ts, our
pp_median_tok_s / tg_median_tok_s) instead of the means; a run of a file
again under the label FILE-pass2 or FILE-bound (a second pass, or the
binary with naga's loop counters) adds its tg128 as a column.
Reads lb-*.json (llama-bench), webgguf.log (our CLI's raw JSON), bpt.jsonl
(bytes per decoded token) and torch-bw.json (the HBM ceiling), and prints:
(depth: runs labelled dDEPTH-FILE, one depth each, or depth-FILE, several
depths in one call with their own d=0)
the side-by-side table with ratios, the depth figures, the old/new A/B, and
gate/up bandwidth per format from `gpu-profile` (gate and up are one format
in every llama.cpp mix, so their bytes are exact)."""
import json, re, sys, statistics
from pathlib import Path

d = Path(sys.argv[1])
MEDIAN = "--median" in sys.argv[2:]
log = (d / "webgguf.log").read_text()
runs = {}
for m in re.finditer(r"^### (\S+) :: webgguf .*?\n(.*?)^### end \1 rc=(\d+)", log, re.S | re.M):
    runs[m.group(1)] = (m.group(2), int(m.group(3)))

def wg(label):
    out, rc = runs.get(label, ("", 1))
    for line in out.splitlines():
        if line.startswith("{") and line.endswith("}"):
            r = json.loads(line)
            if MEDIAN:
                r["pp_tok_s"] = r.get("pp_median_tok_s", r["pp_tok_s"])
                r["tg_tok_s"] = r.get("tg_median_tok_s", r["tg_tok_s"])
            return r
    return None

def lb(label):
    p = d / f"lb-{label}.json"
    if not p.exists():
        return None
    r = {}
    for x in json.loads(p.read_text() or "[]"):
        r["pp" if x["n_prompt"] else "tg"] = statistics.median(x["samples_ts"]) if MEDIAN else x["avg_ts"]
    return r

bpt = {json.loads(l)["file"].removesuffix(".gguf"): json.loads(l) for l in open(d / "bpt.jsonl")}
hbm = json.loads((d / "torch-bw.json").read_text())["copy_GBps_read_plus_write_median"]

def f(x, n=0):
    return "–" if x is None else f"{x:,.{n}f}"

print(f"HBM ceiling (CUDA 4 GiB copy, read + write): {hbm:,.0f} GB/s\n")
extra = [x for x in ("pass2", "bound") if any(k.endswith("-" + x) for k in runs)]
print(f"{'Medians' if MEDIAN else 'Means'} of each engine's repetitions, tokens/s:\n")
print("| file | llama.cpp CUDA pp512 / tg128 | webgguf pp512 / tg128 | ratio pp / tg | webgguf decode GB/s (% of HBM) |"
      + "".join(f" webgguf tg128, {x} |" for x in extra))
print("| --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(extra))
for shape in ["tinyllama-1.1b", "llama-3.2-1b", "llama-3.1-8b"]:
    for q in ["Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS", "Q4_0", "Q8_0", "F16", "Q3_K_M", "Q2_K"]:
        name = f"{shape}-{q}"
        a, b = lb(name), wg(name)
        if not a or not b:
            continue
        gbs = bpt[name]["bytes_per_token"] * b["tg_tok_s"] / 1e9
        cols = "".join(f" {f((wg(name + '-' + x) or {}).get('tg_tok_s'))} |" for x in extra)
        print(f"| {shape} {q} | {f(a['pp'])} / {f(a['tg'])} | {f(b['pp_tok_s'])} / {f(b['tg_tok_s'])} | "
              f"{b['pp_tok_s']/a['pp']:.2f} / **{b['tg_tok_s']/a['tg']:.2f}** | {gbs:,.0f} ({100*gbs/hbm:.0f}%) |" + cols)

print("\nDecode at depth (tg128 after a d-token context), tokens/s:\n")
# A run again under the label ...-alt (another split shape, say) adds a column.
alt = any(re.match(r"d\d+-.*-alt$", k) for k in runs)
print("| file | depth | llama.cpp CUDA | webgguf | llama.cpp loss vs d=0 | webgguf loss vs d=0 |"
      + (" webgguf, -alt run |" if alt else ""))
print("| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: |" if alt else ""))
for shape in ["llama-3.2-1b", "llama-3.1-8b"]:
    for q in ["Q4_K_M", "Q4_0"]:
        base_a, base_b = lb(f"{shape}-{q}"), wg(f"{shape}-{q}")
        for dep in [2048, 8192]:
            a, b = lb(f"d{dep}-{shape}-{q}"), wg(f"d{dep}-{shape}-{q}")
            if a and b and base_a and base_b:
                c = wg(f"d{dep}-{shape}-{q}-alt")
                print(f"| {shape} {q} | {dep} | {f(a['tg'])} | {f(b['tg_tok_s'])} | "
                      f"{100*(1-a['tg']/base_a['tg']):.0f}% | {100*(1-b['tg_tok_s']/base_b['tg_tok_s']):.0f}% |"
                      + (f" {f(c['tg_tok_s']) if c else '–'} |" if alt else ""))

# One load or one llama-bench call over several depths (label depth-FILE:
# llama-bench -d 0,2048,8192 and `webgguf bench -d 0,2048,8192`, each
# depth's figures in its own JSON object), losses against that run's d=0.
def lb_depths(label):
    p = d / f"lb-{label}.json"
    if not p.exists():
        return {}
    pick = statistics.median if MEDIAN else statistics.mean
    return {x["n_depth"]: pick(x["samples_ts"]) for x in json.loads(p.read_text() or "[]") if x["n_gen"]}

def wg_depths(label):
    out, _ = runs.get(label, ("", 1))
    key = "tg_median_tok_s" if MEDIAN else "tg_tok_s"
    return {r["depth"]: r[key] for r in (json.loads(l) for l in out.splitlines()
                                          if l.startswith("{") and l.endswith("}"))}

for shape in ["llama-3.2-1b", "llama-3.1-8b"]:
    for q in ["Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS", "Q4_0", "Q8_0", "F16"]:
        a, b = lb_depths(f"depth-{shape}-{q}"), wg_depths(f"depth-{shape}-{q}")
        if 0 not in a or 0 not in b:
            continue
        for dep in sorted(set(a) & set(b) - {0}):
            print(f"| {shape} {q} | {dep} | {f(a[dep])} | {f(b[dep])} | "
                  f"{100*(1-a[dep]/a[0]):.1f}% | {100*(1-b[dep]/b[0]):.1f}% |" + (" – |" if alt else ""))

ab = {}
for label in runs:
    m = re.match(r"ab-(new|old)-(.+)-(\d)$", label)
    if m and wg(label):
        ab.setdefault(m.group(2), {}).setdefault(m.group(1), []).append(wg(label))
if ab:
    print("\nOld (main before this merge) against new binary, same run, interleaved, mean of 2 × (-r 3):\n")
    print("| preset | old pp512 / tg128 | new pp512 / tg128 | new ÷ old |")
    print("| --- | ---: | ---: | ---: |")
    for p, v in ab.items():
        mo = [statistics.mean(x[k] for x in v["old"]) for k in ("pp_tok_s", "tg_tok_s")]
        mn = [statistics.mean(x[k] for x in v["new"]) for k in ("pp_tok_s", "tg_tok_s")]
        print(f"| {p} | {f(mo[0])} / {f(mo[1])} | {f(mn[0])} / {f(mn[1])} | {mn[0]/mo[0]:.3f} / {mn[1]/mo[1]:.3f} |")

# gate/up: 2 x ffn x dim weights per layer, all layers, one format
SH = {"llama-3.1-8b": (4096, 14336, 32), "llama-3.2-1b": (2048, 8192, 16)}
BPW = {"Q4_K": 144 / 256, "Q5_K": 176 / 256, "Q6_K": 210 / 256, "IQ4_XS": 136 / 256,
       "Q4_0": 18 / 32, "Q8_0": 34 / 32, "F16": 2.0, "Q2_K": 84 / 256, "Q3_K": 110 / 256,
       "Q4_1": 20 / 32, "Q5_0": 22 / 32, "Q5_1": 24 / 32, "IQ4_NL": 18 / 32, "BF16": 2.0}
def decode_kernels(prof):
    """A profile's decode step, us by kernel. Since glu_q (2026-11-29d)
    the gate/up dispatch that also writes the down product's int8 x is
    labelled gate_up_q: read as gate_up."""
    k = {x["kernel"]: x["us"] for x in prof["kernels_decode"]["by_kernel"]}
    if "gate_up_q" in k:
        k["gate_up"] = k["gate_up_q"]
    return k


GU = {"Q4_K_M": "Q4_K", "Q5_K_M": "Q5_K", "Q6_K": "Q6_K", "IQ4_XS": "IQ4_XS", "Q4_0": "Q4_0", "Q8_0": "Q8_0", "F16": "F16",
      "Q3_K_M": "Q3_K", "Q2_K": "Q2_K"}
print("\nPer-kernel decode bandwidth (`gpu-profile`, one token, timestamps): fused gate/up, "
      "2 × ffn × dim per layer, all layers:\n")
print("| file | gate/up format | bytes | µs | GB/s | % of HBM | whole step GB/s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for label, (out, rc) in runs.items():
    m = re.match(r"prof-(llama-[\d.]+-\d+b)-(.+)$", label)
    if not m or rc:
        continue
    shape, q = m.groups()
    try:
        prof = json.loads(out[out.index("{"):])
    except Exception:
        continue
    k = decode_kernels(prof)
    if "gate_up" not in k:
        continue
    dim, ff, L = SH[shape]
    by = 2 * ff * dim * L * BPW[GU[q]]
    gbs = by / k["gate_up"] / 1e3
    step = bpt[f"{shape}-{q}"]["bytes_per_token"] / prof["kernels_decode"]["sum_of_kernels_us"] / 1e3
    print(f"| {shape} {q} | {GU[q]} | {by/1e6:,.0f} MB | {k['gate_up']:,.0f} | {gbs:,.0f} | {100*gbs/hbm:.0f}% | {step:,.0f} |")

# The other families: synthetic 8B profiles (every matrix in one type), in
# a folder above the results as prof-synth-TYPE.json, if there.
synth = sorted(d.parent.glob("prof-synth-*.json")) or sorted(d.parent.parent.glob("prof-synth-*.json"))
if synth:
    print("\nThe other decode families (synthetic llama-3.1-8b, every matrix in TYPE; fused gate/up):\n")
    print("| format | bytes | µs | GB/s | % of HBM |")
    print("| --- | ---: | ---: | ---: | ---: |")
    dim, ff, L = SH["llama-3.1-8b"]
    for pth in synth:
        t = pth.stem.removeprefix("prof-synth-")
        try:
            prof = json.loads(pth.read_text())
        except Exception:
            continue
        k = decode_kernels(prof)
        by = 2 * ff * dim * L * BPW[t]
        gbs = by / k["gate_up"] / 1e3
        print(f"| {t} | {by/1e6:,.0f} MB | {k['gate_up']:,.0f} | {gbs:,.0f} | {100*gbs/hbm:.0f}% |")
