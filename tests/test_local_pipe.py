"""The local backend's hand-off of pieces from the generating thread (actors/model/backends/piece_pipe.py)."""

from __future__ import annotations

import threading

import outcome
import pytest
import trio

from actors.model.backends.piece_pipe import PIPE_PIECES, PiecePipe
from actors.model.turns import Aborted, AbortFlag, Piece


async def run_pipe(n: int, emit, abort: threading.Event):
    pipe = PiecePipe(emit, abort)
    sent: list[int] = []

    def produce() -> None:
        for i in range(n):
            if abort.is_set():
                raise Aborted()
            pipe.send(Piece("text", str(i)))
            sent.append(i)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pipe.deliver)
        try:
            done = await trio.to_thread.run_sync(outcome.capture, produce)
        finally:
            pipe.close_from_trio()
    return pipe, done, sent


async def test_pieces_arrive_in_order_with_bounded_lead() -> None:
    got: list[str] = []

    async def emit(piece: Piece) -> None:
        got.append(piece.text)
        await trio.sleep(0.0005 if len(got) % 50 == 0 else 0)

    abort = AbortFlag()
    pipe, done, sent = await run_pipe(2000, emit, abort)
    done.unwrap()
    pipe.raise_failure()
    assert got == [str(i) for i in range(2000)]
    assert sent == list(range(2000))


async def test_a_slow_consumer_holds_the_thread_back() -> None:
    emitted = [0]
    most_ahead = [0]
    sent_box: list[list[int]] = []

    async def emit(piece: Piece) -> None:
        await trio.sleep(0.001)
        emitted[0] += 1
        if sent_box:
            most_ahead[0] = max(most_ahead[0], len(sent_box[0]) - emitted[0])

    abort = AbortFlag()
    pipe = PiecePipe(emit, abort)
    sent: list[int] = []
    sent_box.append(sent)

    def produce() -> None:
        for i in range(300):
            pipe.send(Piece("text", str(i)))
            sent.append(i)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pipe.deliver)
        await trio.to_thread.run_sync(produce)
        pipe.close_from_trio()
    assert emitted[0] == 300
    assert most_ahead[0] <= PIPE_PIECES


async def test_a_failed_emit_stops_the_thread_and_is_raised() -> None:
    async def emit(piece: Piece) -> None:
        if piece.text == "10":
            raise Aborted()

    abort = AbortFlag()
    pipe, done, sent = await run_pipe(100_000, emit, abort)
    assert abort.is_set()
    assert len(sent) < 100_000  # the thread stopped early
    with pytest.raises(Aborted):
        done.unwrap()
    with pytest.raises(Aborted):
        pipe.raise_failure()


async def test_cancelling_the_trio_side_stops_the_thread() -> None:
    async def emit(piece: Piece) -> None:
        await trio.sleep(1)

    abort = AbortFlag()
    with trio.move_on_after(0.2):
        await run_pipe(100_000, emit, abort)
    assert abort.is_set()
