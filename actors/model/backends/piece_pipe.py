"""Pieces from the thread that runs llama.cpp to the trio side that emits them."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import trio

from actors.model.toolcalls import CallArgs, CallStart, Event, Reasoning, Retract, Text
from actors.model.turns import Aborted, Emit, Piece

# Pieces the generating thread may hand over before the trio side has emitted them.
PIPE_PIECES = 64


class PiecePipe:
    """Pieces from the generating thread to the trio side, without a round trip.

    The thread hands each piece over with `run_sync_soon` (it does not wait for the
    trio side to emit it, which would add the event path's time to every token) and
    goes on generating; `deliver` emits them in order on the trio side. At most
    PIPE_PIECES are in flight: beyond that the thread waits, so a slow consumer slows
    generation instead of growing a queue. If emitting fails (a stop), the abort flag
    goes up, the thread stops at its next check, and the failure is raised once the
    thread has returned.
    """

    def __init__(self, emit: Emit, abort: threading.Event) -> None:
        self._emit = emit
        self._abort = abort
        self._room = threading.Semaphore(PIPE_PIECES)
        self._token = trio.lowlevel.current_trio_token()
        self._tx, self._rx = trio.open_memory_channel[Piece](math.inf)
        self._failure: BaseException | None = None

    def send(self, piece: Piece) -> None:
        """In the generating thread."""
        while not self._room.acquire(timeout=0.05):
            if self._abort.is_set():
                raise Aborted()
        self._token.run_sync_soon(self._put, piece)

    def _put(self, piece: Piece) -> None:
        try:
            self._tx.send_nowait(piece)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._room.release()  # the trio side has stopped taking pieces

    def close_from_trio(self) -> None:
        # After the thread returned: every piece it sent was queued before this runs
        # (run_sync_soon keeps order), so `deliver` emits them all, then ends.
        self._token.run_sync_soon(self._tx.close)

    async def deliver(self) -> None:
        try:
            async with self._rx:
                async for piece in self._rx:
                    try:
                        if self._failure is None:
                            await self._emit(piece)
                    except Exception as exc:  # Aborted: stop the thread, keep draining
                        self._failure = exc
                        self._abort.set()
                    finally:
                        self._room.release()
        except BaseException:  # cancelled: the thread must stop too
            self._abort.set()
            raise

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure


class PieceMapper:
    """Turns the tool-call parser's events into the engine's pieces."""

    def __init__(self, send: Callable[[Piece], None]) -> None:
        self._send = send

    def events(self, events: list[Event]) -> None:
        for ev in events:
            if isinstance(ev, Text):
                self._send(Piece("text", ev.text))
            elif isinstance(ev, Reasoning):
                self._send(Piece("reasoning", ev.text))
            elif isinstance(ev, CallStart):
                self._send(Piece("tool_call", "", index=ev.index, call_id=ev.call_id, name=ev.name))
            elif isinstance(ev, CallArgs):
                self._send(Piece("tool_call", ev.text, index=ev.index))
            elif isinstance(ev, Retract):
                self._send(Piece("retract", ev.text, reasoning=ev.reasoning))
