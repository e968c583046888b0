"""Files that turn a read into something else, for the tests of every reader: a FIFO
(an open waits for a writer), /dev/zero behind a link (it never ends), a sparse file
far larger than any limit, and a link out of the workspace.

`bounded` runs a blocking reader in a thread it can abandon, so a reader that waits on a
FIFO fails its test within the bound instead of hanging the suite; `release` then opens
each FIFO for writing once, which ends the abandoned thread's wait. `watchdog` does the
same for a reader the test cannot put in a thread of its own (one inside the daemon,
or one that blocks the event loop): after the bound it releases the FIFOs, so the
reader goes on and the test fails on the time it took.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

SPARSE_BYTES = 10 * 1024**3  # 10 GiB, taking no disk space
BOUND_S = 5.0


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def zero_link(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")
    return path


def sparse(path: Path, size: int = SPARSE_BYTES) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def link_out(path: Path, target: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


def release(*fifos: Path) -> None:
    """Give every reader waiting on these FIFOs its end of file."""
    for path in fifos:
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@contextlib.contextmanager
def releasing(*fifos: Path) -> Iterator[None]:
    try:
        yield
    finally:
        release(*fifos)


async def bounded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` in a worker thread; fails (trio.TooSlowError) after BOUND_S."""
    with trio.fail_after(BOUND_S):
        return await trio.to_thread.run_sync(lambda: fn(*args, **kwargs), abandon_on_cancel=True)


@contextlib.contextmanager
def watchdog(*fifos: Path, after: float = BOUND_S) -> Iterator[None]:
    timer = threading.Timer(after, release, fifos)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        release(*fifos)
