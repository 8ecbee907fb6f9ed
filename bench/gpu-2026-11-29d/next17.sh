# Run by the kit's pipeline (go17.sh patches it in) while llama.cpp
# quantizes: the glu_q test and the integer-path kernel tests of fbd7827.
cd /tmp/sbs
./tests-lib --test-threads 1 glu_q int quantize_x 2>&1 | grep -E "^test |test result|panicked|SKIPPED" | cut -c1-300
