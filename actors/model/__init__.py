"""The model: the turn contract (turns.py), the engine actor that serves turns in one line
(engine.py), the backends that run them (local llama.cpp, a saved provider, the scripted
one for tests), reading a model's output (toolcalls/, reasoning.py, chatstream.py) and
finding the person's GGUF files (discovery/). Below the tools and the runs: nothing here
knows a conversation."""
