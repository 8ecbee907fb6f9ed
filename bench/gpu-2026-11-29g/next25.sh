# Run by the kit's pipeline (go25.sh patches it in) while llama.cpp
# quantizes: glu_q's tests (own x among them) and the decode list's on the
# H200.
cd /tmp/sbs
[ -x ./tests-lib ] && { s=$(date +%s); ./tests-lib --test-threads 1 gpu::tests::glu_q gpu::tests::decode_list 2>&1 | grep -E "^test |test result|panicked|SKIPPED" | cut -c1-300; echo "tests after $(( $(date +%s) - s )) s"; }
