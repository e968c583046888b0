"""Engine backends: `local` (llama.cpp) and `scripted` (tests)."""
