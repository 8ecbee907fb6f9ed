# Run by the kit's pipeline (go24.sh patches it in) while llama.cpp
# quantizes: every gpu:: test of the own-x change on the H200.
cd /tmp/sbs
[ -x ./tests-lib ] && { s=$(date +%s); ./tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300; echo "tests after $(( $(date +%s) - s )) s"; }
