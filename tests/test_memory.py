"""actors/model/backends/memory.py: what is handed back once the model is let go."""

from __future__ import annotations

from actors.model.backends.memory import release_idle_memory, runtime_mappings

MAPS = """\
7f0000000000-7f0000010000 r--p 00000000 08:01 1 /venv/lib/python3.11/site-packages/llama_cpp/lib/libllama.so
7f0000010000-7f0000200000 r-xp 00010000 08:01 1 /venv/lib/python3.11/site-packages/llama_cpp/lib/libggml-cpu.so
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
7f0000300000-7f0000400000 r-xp 00000000 08:01 2 /venv/lib/python3.11/site-packages/numpy.libs/libopenblas.so
7f0000400000-7f0000500000 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000500000-7f0000600000 r--p 00000000 08:01 4 /venv/lib/python3.11/site-packages/numpy/_core/_multiarray_umath.so
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
garbage line
"""


def test_only_the_model_runtimes_files_are_named():
    assert runtime_mappings(MAPS) == [
        (0x7F0000000000, 0x7F0000010000), (0x7F0000010000, 0x7F0000200000),
        (0x7F0000300000, 0x7F0000400000), (0x7F0000500000, 0x7F0000600000),
    ]


def test_paging_out_the_runtime_changes_nothing_it_computes():
    import llama_cpp
    import numpy as np

    before = np.arange(1000).sum(), llama_cpp.llama_supports_gpu_offload()
    assert release_idle_memory() > 0
    # Linux (CI's system): llama.cpp's and numpy's mappings were asked to go
    assert (np.arange(1000).sum(), llama_cpp.llama_supports_gpu_offload()) == before
