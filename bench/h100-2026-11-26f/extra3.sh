# Sourced by the kit's pipeline.sh (go3.sh patches it in) after its benches:
# uses its wg and mf. Profiles of four more 8B files (the kit profiles
# Q4_K_M), for the per-kernel tables, decode and prefill.
for q in Q4_0 Q8_0 F16 IQ4_XS; do
  f=$(mf llama-3.1-8b-$q); [ -n "$f" ] && wg prof-llama-3.1-8b-$q 200 gpu-profile -m $f -n 32
done
