#!/usr/bin/env bash
# Started by the kit's pipeline.sh (go.sh patches it in) while llama.cpp
# quantizes: nothing this time.
echo "next.sh: nothing to run"
