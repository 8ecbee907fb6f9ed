# Sourced by the kit's pipeline.sh (go.sh patches it in) after its
# benches: nothing this time.
:
