"""Reading an HTTP response's body (httpx) with bounds, for the provider backend.

`read_until` hands each item of an async iterator to a handler until it says stop,
ending the iterators cleanly; `body_lines` reads an event stream a line at a time with
every line bounded (actors/model/chatstream.py's SseLines); `read_body` reads a whole body
but no more than a limit; `read_head` reads the start of one. What a server sends decides none of these costs beyond the
limits: a body that never ends its line, or is larger than asked for, is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import TypeVar

import trio

from actors.model.chatstream import SseLines, StreamError

if _TYPE_CHECKING:
    import httpx


T = TypeVar("T")


async def read_until(items: AsyncIterator[T], handle: Callable[[T], Awaitable[bool]]) -> bool:
    """Call `handle` on each item until it returns True (then True) or raises (then
    that), or the items end (then False).

    Leaving early does not break out of the loop: it cancels the loop's own scope, so
    the iterator ends inside its next read. httpx's iterators are async generators
    nested several deep, and one left suspended would be finalised later by the
    garbage collector (trio warns about each); this way every one of them ends here.
    Outer cancellations go through untouched."""
    failure: Exception | None = None
    stopped = False
    with trio.CancelScope() as leave:
        try:
            async for item in items:
                if leave.cancel_called:
                    continue  # items already read; the next read ends the loop
                try:
                    stopped = await handle(item)
                except Exception as exc:
                    failure = exc
                if failure is not None or stopped:
                    leave.cancel()
        except Exception:
            if failure is None and not stopped:
                raise
    if failure is not None:
        raise failure
    return stopped


async def body_lines(resp: httpx.Response, handle: Callable[[str], Awaitable[bool]]) -> bool:
    """`read_until` over the lines of `resp`'s body (an event stream), the last one
    handed over even without its line end. Raises StreamError for a line longer than
    SseLines's limit."""
    lines = SseLines()

    async def on_bytes(chunk: bytes) -> bool:
        for line in lines.feed(chunk):
            if await handle(line):
                return True
        return False

    if await read_until(resp.aiter_bytes(), on_bytes):
        return True
    for line in lines.flush():
        if await handle(line):
            return True
    return False


async def read_head(resp: httpx.Response, limit: int) -> bytes:
    """At least the first `limit` bytes of `resp`'s body when it has that many (the
    rest is not read): enough of a refusal to say what it was."""
    parts: list[bytes] = []
    size = 0

    async def on_bytes(chunk: bytes) -> bool:
        nonlocal size
        parts.append(chunk)
        size += len(chunk)
        return size >= limit

    await read_until(resp.aiter_bytes(), on_bytes)
    return b"".join(parts)


async def read_body(resp: httpx.Response, limit: int) -> bytes:
    """`resp`'s whole body, or StreamError once it passes `limit` bytes."""
    parts: list[bytes] = []
    size = 0

    async def on_bytes(chunk: bytes) -> bool:
        nonlocal size
        size += len(chunk)
        if size > limit:
            raise StreamError(f"the answer is larger than {limit // (1024 * 1024)} MiB")
        parts.append(chunk)
        return False

    await read_until(resp.aiter_bytes(), on_bytes)
    return b"".join(parts)
