# Nothing to run while llama.cpp quantizes (go26.sh).
true
