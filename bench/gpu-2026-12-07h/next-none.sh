# Run by the kit's pipeline while llama-quantize runs (go-depth.sh): nothing
# this time (the kernel tests ran in sg.sh's call).
echo "next: nothing to run"
