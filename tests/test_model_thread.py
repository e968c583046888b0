"""The local model's one thread (actors/model/backends/model_thread.py): every call on the
same OS thread, in order, its result or exception handed back, trio's loop free
meanwhile, and a cancellation that waits for the call it cannot abandon."""

from __future__ import annotations

import threading

import pytest
import trio

from actors.model.backends import model_thread
from actors.model.backends.model_thread import ModelThread


async def test_every_call_runs_on_one_thread_in_order_and_answers() -> None:
    thread = ModelThread("model test")
    seen: list[tuple[int, int]] = []

    def work(n: int) -> int:
        seen.append((n, threading.get_ident()))
        return n * 2

    assert [await thread.run(work, n) for n in range(5)] == [0, 2, 4, 6, 8]
    async with trio.open_nursery() as nursery:  # several at once: still one thread, one at a time
        for n in range(5, 10):
            nursery.start_soon(thread.run, work, n)
    idents = {ident for _, ident in seen}
    assert len(idents) == 1 and threading.get_ident() not in idents
    assert sorted(n for n, _ in seen) == list(range(10)) and [n for n, _ in seen][:5] == [0, 1, 2, 3, 4]

    def fails() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await thread.run(fails)
    assert await thread.run(work, 11) == 22  # the thread goes on after a failure
    thread.close()


async def test_the_loop_runs_while_a_call_does_and_a_cancel_waits_for_it() -> None:
    thread = ModelThread("model test")
    release = threading.Event()
    ticks = 0
    got: list[str] = []

    def slow() -> str:
        return "done" if release.wait(10) else "the loop never released it"

    async def tick_then_release() -> None:
        nonlocal ticks
        for _ in range(30):
            ticks += 1
            await trio.sleep(0.01)
        release.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick_then_release)
        with trio.move_on_after(0.05) as scope:
            got.append(await thread.run(slow))  # cancelled at 0.05 s: it waits for the call all the same
            await trio.lowlevel.checkpoint()  # the cancellation comes here
    assert got == ["done"] and scope.cancelled_caught
    assert ticks == 30  # the loop ran all along, and the call ended only once released
    # A call asked for inside a scope already cancelled never starts.
    ran: list[int] = []
    with trio.CancelScope() as cancelled:
        cancelled.cancel()
        await thread.run(ran.append, 1)
    assert ran == [] and cancelled.cancelled_caught
    thread.close()


async def test_a_call_given_soon_runs_after_those_before_and_a_failure_is_logged(caplog) -> None:
    thread = ModelThread("model test")
    seen: list[tuple[str, int]] = []
    thread.soon(lambda: seen.append(("before the thread started", 0)))  # no turn to follow: dropped

    def work(name: str) -> str:
        seen.append((name, threading.get_ident()))
        return name

    def fails() -> None:
        raise ValueError("a spare could not be readied")

    assert await thread.run(work, "turn") == "turn"
    thread.soon(lambda: work("after the turn"))
    thread.soon(fails)
    with caplog.at_level("ERROR", logger=model_thread.__name__):
        assert await thread.run(work, "next turn") == "next turn"  # after both, the failure notwithstanding
    assert [name for name, _ in seen] == ["turn", "after the turn", "next turn"]
    assert len({ident for _, ident in seen}) == 1
    assert "a spare could not be readied" in caplog.text
    thread.close()
