"""llama-cpp-python's own OpenAI-compatible server, the real provider of
tests/test_providers.py, run as `python tests/llama_server.py ARGS` (its own arguments):
the same program as `python -m llama_cpp.server`, with the guard the daemon's own loads
have on a CPU whose AMX path crashes llama.cpp (actors/model/backends/local.avoid_amx_repack)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.model.backends.local import avoid_amx_repack

avoid_amx_repack()
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
