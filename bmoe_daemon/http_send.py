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
chunk. A busy lock is waited for as before. Everything else (`Closed`, `Updated`
events, the shielded write, closing on a broken stream) is hypercorn's own code path.

The replaced method is hypercorn's internal API, so the versions it was written for
are pinned in pyproject.toml, and `install()` refuses any other version: on a
version it does not know, hypercorn keeps its own method.
"""

from __future__ import annotations

import importlib.metadata
import logging
from typing import Any

import trio
from hypercorn.events import Closed, RawData

log = logging.getLogger("bmoe.http")

KNOWN_VERSIONS = ("0.17.", "0.18.")


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
            with trio.CancelScope(shield=True):
                await self.stream.send_all(event.data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self.protocol.handle(Closed())
    finally:
        lock.release()


_ORIGINAL: list[Any] = []


def supported(version: str) -> bool:
    return version.startswith(KNOWN_VERSIONS)


def install() -> bool:
    """Use `_protocol_send` for hypercorn's trio server; False (and nothing changed)
    on a hypercorn version this was not written for."""
    from hypercorn.trio import tcp_server

    if _ORIGINAL:
        return True
    version = importlib.metadata.version("hypercorn")
    if not supported(version):
        log.warning("hypercorn %s is not one the event stream's send path was written for; using its own", version)
        return False
    _ORIGINAL.append(tcp_server.TCPServer.protocol_send)
    tcp_server.TCPServer.protocol_send = _protocol_send  # type: ignore[method-assign]
    return True
