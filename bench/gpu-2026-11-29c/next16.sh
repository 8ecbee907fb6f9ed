# Started by the kit's pipeline (go16.sh patches it in) after its
# bandwidth steps, while llama.cpp builds and quantizes: every gpu:: test
# of main's build (455c372) on this GPU.
set -u
W=${W:-/tmp/sbs}; R=${R:-/tmp/res}
gunzip -kf $W/tests-lib.gz; chmod +x $W/tests-lib
S=$(date +%s)
nice -n -10 $W/tests-lib --test-threads 1 gpu:: 2>&1 | grep -E "^test .*FAIL|test result|panicked|SKIPPED" | cut -c1-300
echo "tests after $(( $(date +%s) - S )) s"
