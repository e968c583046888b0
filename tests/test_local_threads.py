"""actors/model/backends/local.py keeps numpy's BLAS to one thread: llama.cpp computes with
threads of its own, and OpenBLAS's pool, one thread per core, only spins beside it."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.daemon_proc import REPO

THREADS = "import os; print(len(os.listdir('/proc/self/task')))"


def threads_after(imports: str, **env: str) -> int:
    base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", f"{imports}; {THREADS}"], env={**base, **env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, check=True, timeout=60)
    return int(done.stdout.strip())


def test_the_local_backend_leaves_numpy_one_blas_thread_unless_told_otherwise():
    cores = len(os.sched_getaffinity(0))
    assert threads_after("import actors.model.backends.local") == 1  # the main thread alone
    if cores > 1:  # the premise: numpy alone starts a pool, one thread per core
        assert threads_after("import numpy") == cores
    # A count the person set is theirs.
    assert threads_after("import actors.model.backends.local", OPENBLAS_NUM_THREADS=str(max(cores, 2))) == max(cores, 2)
