"""Giving memory back once the model is let go for idleness (actors/model/engine.py).

Closing llama.cpp's model frees its weights and caches, but two things stay counted in
the process's resident memory: heap pages the C library keeps for later (glibc's
malloc hands them back only when asked: `malloc_trim`), and the pages of llama.cpp's
and numpy's shared libraries that the last turns read in. Those are clean file pages:
asking the kernel to page them out (`madvise(MADV_PAGEOUT)`, Linux 5.4+) changes no
data, it only lets the kernel drop them, and the next turn reads back in what it needs
(a few milliseconds). Where either call is missing (another C library, another system,
an older kernel) the step is skipped.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import sys

log = logging.getLogger("bmoe.engine")

MADV_PAGEOUT = 21
# Mapped files whose path holds one of these are the model runtime's code: the native
# parts of llama-cpp-python (llama.cpp and ggml) and numpy (with its bundled BLAS).
RUNTIME_MARKERS = ("/llama_cpp/", "/numpy/", "/numpy.libs/")


def release_idle_memory(*, page_out: bool = True) -> int:
    """Hand back what the closed model left resident; the bytes of library mappings
    asked to be paged out (0 where that cannot be asked, or `page_out` is false: a
    model is about to load).

    First a full collection: the Python side of the closed model (llama-cpp-python's
    objects, which hold their own exit stacks, and the numpy arrays they own) is in
    reference cycles that only the collector frees, and it ran at its own pace before:
    the daemon's resident memory grew by about 1.5 MB each time the model was let go."""
    gc.collect()
    _trim_heap()
    return _page_out_runtime() if page_out else 0


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _trim_heap() -> None:
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


def runtime_mappings(maps: str) -> list[tuple[int, int]]:
    """The (start, end) of each mapping in a /proc/<pid>/maps text that maps a file of
    the model runtime (RUNTIME_MARKERS)."""
    out: list[tuple[int, int]] = []
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not any(m in parts[5] for m in RUNTIME_MARKERS):
            continue
        lo, _, hi = parts[0].partition("-")
        try:
            out.append((int(lo, 16), int(hi, 16)))
        except ValueError:
            continue
    return out


def _page_out_runtime() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    libc = _libc()
    madvise = getattr(libc, "madvise", None)
    if madvise is None:
        return 0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            maps = fh.read()
    except OSError:
        return 0
    asked = 0
    for lo, hi in runtime_mappings(maps):
        if madvise(lo, hi - lo, MADV_PAGEOUT) != 0:  # EINVAL: a kernel without it; nothing changed
            log.debug("madvise(MADV_PAGEOUT) refused (errno %d); the runtime's pages stay", ctypes.get_errno())
            return asked
        asked += hi - lo
    return asked
