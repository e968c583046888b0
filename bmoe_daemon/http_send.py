"""Writes to a connection without a scheduler round before them.

hypercorn (0.17, 0.18) sends every chunk of a response under a per-connection
`trio.Lock`, entered with `async with`. trio's `Lock.acquire` yields to the scheduler
even when the lock is free. For the event stream that yield comes before the socket
write. When one event wakes 50 subscribers, all 50 therefore do their pre-write work
before any of them writes, and even the first client gets the frame only after the
whole fan-out: measured, a p50 of 6 ms where the writes themselves take about 2.

`install()` replaces `TCPServer.protocol_send` with the same steps, except that a free
lock is taken without yielding (`acquire_nowait`). The write still ends in trio's own
checkpoint (`send_all` yields after it sends), so the task still gives way once per
chunk. A busy lock is waited for as before. The write stays shielded, as hypercorn's
is, but it is bounded: a client that takes nothing for WRITE_STALL_S (or any client
once the daemon stops, `stop_writes`) has its connection closed, so a client that stops
reading can hold neither a task nor the daemon's exit. Everything else (`Closed`,
`Updated` events, closing on a broken stream) is hypercorn's own code path.

The replaced method is hypercorn's internal API, so `install()` first checks that the
method it replaces is byte for byte the one this was written against (a SHA-256 of its
source): on any other, it refuses, with an error that names the hypercorn version and
the method, and the daemon does not start. pyproject.toml pins hypercorn to the versions
whose method that is (0.17.0 to 0.18.0 have the same one).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
from typing import Any

import trio
from hypercorn.events import Closed, RawData

# SHA-256 of `inspect.getsource(hypercorn.trio.tcp_server.TCPServer.protocol_send)` in
# hypercorn 0.17.0 to 0.18.0, the method `_protocol_send` follows.
PROTOCOL_SEND_SHA256 = "225856426bff7be02990c0badb90f51f801db14ac5db0f3d0c210cafbeb528ab"
REPLACED = "hypercorn.trio.tcp_server.TCPServer.protocol_send"


class HypercornChanged(RuntimeError):
    """The method `install()` would replace is not the one this module was written
    against: replacing it could drop what the new version does."""


# A client that takes no byte of a write for this long has stalled (it stopped
# reading, or vanished without closing): its connection is closed. An event stream's
# client reconnects with Last-Event-ID and misses nothing.
WRITE_STALL_S = 10.0
# Once the daemon stops, a write waits at most this long for its client.
STOPPING_WRITE_S = 0.5

_writes: set[trio.CancelScope] = set()  # the writes in progress, for `stop_writes`
_write_limit: list[float] = [WRITE_STALL_S]


async def _protocol_send(self: Any, event: Any) -> None:
    if not isinstance(event, RawData):
        await _ORIGINAL[0](self, event)
        return
    lock: trio.Lock = self.send_lock
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()
    try:
        try:
            # Shielded as hypercorn's is (a write cut in the middle would corrupt the
            # response), but bounded: nothing a client does holds a task forever.
            with trio.CancelScope(shield=True, deadline=trio.current_time() + _write_limit[0]) as scope:
                _writes.add(scope)
                try:
                    await self.stream.send_all(event.data)
                finally:
                    _writes.discard(scope)
            if scope.cancelled_caught:
                with trio.CancelScope(shield=True):
                    await self.stream.aclose()
                await self.protocol.handle(Closed())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self.protocol.handle(Closed())
    finally:
        lock.release()


def stop_writes() -> None:
    """The daemon is stopping: a write in progress gives up now, and a later one after
    STOPPING_WRITE_S, so a client that does not read cannot hold up the exit."""
    _write_limit[0] = STOPPING_WRITE_S
    for scope in list(_writes):
        scope.cancel()


_ORIGINAL: list[Any] = []


def source_sha256(method: Any) -> str:
    return hashlib.sha256(inspect.getsource(method).encode()).hexdigest()


def check_replaceable(method: Any, version: str) -> None:
    """Raise HypercornChanged unless `method` is the one `_protocol_send` follows."""
    try:
        digest = source_sha256(method)
    except (OSError, TypeError) as exc:  # no source to read (a frozen or compiled build)
        raise HypercornChanged(
            f"cannot read the source of {REPLACED} in hypercorn {version} ({exc}), so bmoe_daemon/http_send.py "
            "cannot check that it replaces the method it was written against. Install hypercorn from its "
            "Python source (pyproject.toml pins the versions it knows)."
        ) from exc
    if digest != PROTOCOL_SEND_SHA256:
        raise HypercornChanged(
            f"hypercorn {version} changed {REPLACED} (its source's SHA-256 is {digest}, not "
            f"{PROTOCOL_SEND_SHA256}), which bmoe_daemon/http_send.py replaces. Install a hypercorn that "
            "pyproject.toml allows (pip install 'hypercorn>=0.17,<0.19'), or compare the new method with "
            "_protocol_send, carry its changes over, and set PROTOCOL_SEND_SHA256 to the new digest."
        )


def install() -> None:
    """Use `_protocol_send` for hypercorn's trio server. Raises HypercornChanged (and
    changes nothing) when hypercorn's method is not the one it was written against.
    Installing twice is harmless."""
    from hypercorn.trio import tcp_server

    _write_limit[0] = WRITE_STALL_S  # a daemon started again in this process (tests)
    if _ORIGINAL:
        return
    original = tcp_server.TCPServer.protocol_send
    check_replaceable(original, importlib.metadata.version("hypercorn"))
    _ORIGINAL.append(original)
    tcp_server.TCPServer.protocol_send = _protocol_send  # type: ignore[method-assign]
