#!/usr/bin/env python3
"""The per-kernel decode bandwidth table of BENCHMARKS.md (2026-12-07c on).

Usage: scripts/kbw.py RESDIR [QUANT..]   (default: Q4_K_M IQ4_XS Q8_0)
RESDIR is one gpu-side-by-side result folder: gpu-profile of each real
8B file (webgguf.log's prof-llama-3.1-8b-QUANT) against the bytes each
kernel group reads, from llama-quantize's per-tensor logs
(quant-llama-3.1-8b-QUANT.log). The dated kbw.py scripts of 2026-12-02
and 12-02c are the records of their runs' tables.
"""
import re,json,sys,collections,os
os.chdir(sys.argv[1])
# per-kernel decode bandwidth: bytes each decode kernel group reads (weights), from
# llama-quantize's per-tensor log, against gpu-profile's timed-alone us
groups={'qkv':['attn_q','attn_k','attn_v'],'wo':['attn_output'],'gate_up':['ffn_gate','ffn_up'],'down':['ffn_down'],'lm_head':['output']}
def sizes(q):
    b=collections.Counter(); types=collections.defaultdict(collections.Counter)
    if q=='F16':
        # F16 file: every matrix 2 bytes a weight
        for n,(r,c) in {'attn_q':(4096,4096),'attn_k':(4096,1024),'attn_v':(4096,1024),'attn_output':(4096,4096),'ffn_gate':(4096,14336),'ffn_up':(4096,14336),'ffn_down':(14336,4096)}.items():
            b[n]=32*r*c*2; types[n]['f16']+=32
        b['output']=4096*128256*2; types['output']['f16']=1
        return b,types
    for line in open(f'quant-llama-3.1-8b-{q}.log'):
        m=re.search(r'\] (blk\.\d+\.)?(\w+)\.weight\s+- .*?(converting to (\w+) \.\. size = +[\d.]+ MiB -> +([\d.]+) MiB|type = +(\w+), size = +([\d.]+) MiB)',line)
        if not m: continue
        n=m.group(2)
        mib=float(m.group(5) or m.group(7)); t=m.group(4) or m.group(6)
        b[n]+=mib*2**20; types[n][t]+=1
    return b,types
log=open('webgguf.log').read()
print('| file | qkv | wo | gate/up | down | LM head | step (fed) |')
print('| --- | --- | --- | --- | --- | --- | ---: |')
for q in sys.argv[2:] or ['Q4_K_M','IQ4_XS','Q8_0']:
    i=log.index(f'### prof-llama-3.1-8b-{q} '); j=log.index(f'### end prof-llama-3.1-8b-{q} ')
    body=log[i:j]; d=json.loads(body[body.index('{'):])
    us={x['kernel']:x['us'] for x in d['kernels_decode']['by_kernel']}
    us['gate_up']=us.get('gate_up_q',us.get('gate_up'))
    us['wo']=us.get('wo_q',0)+us.get('wo',0)
    us['down']=us.get('down_q',0)+us.get('down',0)
    b,types=sizes(q)
    cells=[]
    for g,names in groups.items():
        by=sum(b[n] for n in names); t=us[g]
        ty='+'.join(sorted(set(k.upper() for n in names for k in types[n])))
        cells.append('%s: %.0f MB, %.0f us, **%.2f**' % (ty, by/1e6, t, by/t/1e6))
    print('| %s | %s | %.0f us |' % (q, ' | '.join(cells), d['wall_per_step']['greedy_fed_true']['median_us']))
