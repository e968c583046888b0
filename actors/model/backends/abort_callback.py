"""The abort callback llama.cpp polls, and the native check that lets it run without Python.

A stop reaches a turn at llama.cpp's own cancellation points: the abort callback,
which the CPU backend polls between graph nodes (so during prefill too), and the
token loop. The callback reads the flag of the turn that currently owns the
context; the flag is lent for one generation and taken back when it ends, so it can
never stop a later turn.

The callback is polled hundreds of times per token. A Python callback takes the GIL
each time, and the daemon's own thread (events, HTTP) holds it often, so each poll
may wait: that cost a tenth of the token rate. So the callback is native: libc's
`strlen` on the turn's AbortFlag byte (engine.AbortFlag), which is an empty string
until a stop writes one character, so it answers false, then true, without Python.
The C ABIs return `bool` in the low byte of the same register `strlen` uses, and
`native_abort_check` checks that this holds on the machine before it is relied on;
where it does not, a Python callback reads the flag instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from actors.model.turns import AbortFlag

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from llama_cpp import Llama


@functools.cache
def native_abort_check() -> int | None:
    """The address of libc's `strlen` if, called as llama.cpp calls its abort callback
    (`bool (*)(void *)`), it answers false for an empty byte string and true for a
    one-character one on this machine; else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        address = ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    if not address:
        return None
    as_callback = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)(address)
    flag = AbortFlag()
    before = as_callback(flag.address)
    flag.set()
    after = as_callback(flag.address)
    return address if (before, after) == (False, True) else None


class AbortCallback:
    """The abort callback of one model's llama.cpp context; see the module docstring.

    `enabled=False` is for benchmarks only: the bare llama.cpp loop they compare with
    must run without the callback a stop relies on."""

    def __init__(self, llm: Llama, *, enabled: bool = True) -> None:
        import llama_cpp

        self._llm = llm
        self._flag: threading.Event | None = None
        # Keep references: ctypes would free a callback, or the idle flag's byte, while
        # llama.cpp holds it.
        self._python_cb = llama_cpp.ggml_abort_callback(self._should_abort)
        self._idle_flag = AbortFlag()  # what the native callback reads between turns
        native = native_abort_check() if enabled else None  # checked once per process
        self._native_cb = llama_cpp.ggml_abort_callback(native) if native else None
        self._set_abort = llama_cpp.llama_set_abort_callback if enabled else None
        self._point_at(self._idle_flag)

    @property
    def native(self) -> bool:
        return self._native_cb is not None

    @contextmanager
    def lent(self, flag: threading.Event) -> Iterator[None]:
        """llama.cpp reads `flag` inside this block, and an idle flag after it."""
        self._flag = flag
        self._point_at(flag)
        try:
            yield
        finally:
            self._flag = None
            # Never leave llama.cpp reading a finished turn's byte, which may be freed.
            self._point_at(self._idle_flag)

    def _point_at(self, flag: threading.Event) -> None:
        """Give llama.cpp the callback that reads `flag`: natively when it is an
        AbortFlag and the native check passed, else through Python."""
        if self._set_abort is None:
            return
        ctx = self._llm.ctx
        if self._native_cb is not None and isinstance(flag, AbortFlag):
            self._set_abort(ctx, self._native_cb, ctypes.c_void_p(flag.address))
        else:
            self._set_abort(ctx, self._python_cb, ctypes.c_void_p(0))

    def _should_abort(self, _data: ctypes.c_void_p | None) -> bool:
        flag = self._flag
        return flag is not None and flag.is_set()
