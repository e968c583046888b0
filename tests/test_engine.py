"""The turn line (actors/model/engine.py) with the scripted backend."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import pytest
import trio

from actors.errors import ActorGone, ContextFull, NoModel, TurnFailed
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.model.turns import Aborted, TurnInput
from tests.waiting import wait_for

MSG = TurnInput(({"role": "user", "content": "hi"},))


async def _noop(piece):
    pass


async def test_turns_are_served_one_at_a_time_in_arrival_order(autojump_clock):
    backend = ScriptedBackend(default={"text": "abcdefgh", "delay": 0.01})
    engine = Engine(backend)
    engine.keep_order = True
    active = 0
    peak = 0

    async def emit(piece):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await trio.lowlevel.checkpoint()
        active -= 1

    done: list[str] = []

    async def client(name: str) -> None:
        await engine.turn(MSG, emit, owner=name)
        done.append(name)

    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        for i in range(8):
            nursery.start_soon(client, f"c{i}")
            await trio.sleep(0.001)  # a known arrival order (the clock is trio's, autojump)
        await wait_for(lambda: len(done) == 8)
        engine.close()
    assert engine.order == [f"c{i}" for i in range(8)]
    assert done == engine.order
    assert peak == 1


async def test_cancel_while_queued_withdraws_only_that_place(autojump_clock):
    backend = ScriptedBackend(default={"text": "x" * 40, "delay": 0.01})
    engine = Engine(backend)
    engine.keep_order = True
    results = {}

    async def client(name, scope_box=None):
        with trio.CancelScope() as cs:
            if scope_box is not None:
                scope_box.append(cs)
            results[name] = await engine.turn(MSG, _noop, owner=name)

    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        nursery.start_soon(client, "a")
        await trio.sleep(0.02)
        box: list[trio.CancelScope] = []
        nursery.start_soon(client, "b", box)
        await trio.sleep(0.001)
        nursery.start_soon(client, "c")
        await trio.sleep(0.01)
        box[0].cancel()
        await wait_for(lambda: len(results) == 2)
        engine.close()
    assert set(results) == {"a", "c"}
    assert results["a"].text == "x" * 40  # the running turn was not disturbed
    assert engine.order == ["a", "c"]
    assert engine.counters().withdrawn == 1


async def test_abort_flag_stops_only_its_own_turn():
    backend = ScriptedBackend(default={"text": "y" * 200, "delay": 0.005})
    engine = Engine(backend)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        with trio.move_on_after(0.05) as cs:
            await engine.turn(MSG, _noop)
        assert cs.cancelled_caught
        assert engine.counters().aborted == 1
        result = await engine.turn(MSG, _noop)  # the next turn is unaffected
        assert result.text == "y" * 200
        engine.close()


async def test_no_model_and_context_full():
    engine = Engine(None)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        with pytest.raises(NoModel):
            await engine.turn(MSG, _noop)
        engine.close()
    small = Engine(ScriptedBackend(context_chars=5))
    async with trio.open_nursery() as nursery:
        await nursery.start(small.run)
        with pytest.raises(ContextFull):
            await small.turn(MSG, _noop)
        small.close()


async def test_requests_fail_once_the_engine_stopped():
    engine = Engine(ScriptedBackend())
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        engine.close()
    with pytest.raises(ActorGone):
        await engine.turn(MSG, _noop)
    assert engine.statistics().state == "stopped"


async def test_emit_after_abort_raises_inside_the_backend():
    backend = ScriptedBackend()
    import threading

    flag = threading.Event()
    flag.set()
    with pytest.raises(Aborted):
        await backend.generate(TurnInput(({"role": "user", "content": "x"},)), _noop, flag)


async def test_a_switch_waits_for_the_turn_in_progress_and_serves_the_next_on_the_new_model():
    old = ScriptedBackend(default={"text": "from the old model", "delay": 0.01}, model_id="old")
    new = ScriptedBackend(default={"text": "from the new"}, model_id="new")
    closed: list[str] = []
    for b in (old, new):
        b.aclose = lambda b=b: _closed(closed, b.model_id)  # type: ignore[method-assign]
    engine = Engine(old, loader=_loader(old))
    told: list[str] = []
    engine.on_model = lambda b: told.append(b.model_id)
    results: dict[str, str] = {}

    async def first() -> None:
        results["first"] = (await engine.turn(MSG, _noop)).text

    async def second() -> None:
        results["second"] = (await engine.turn(MSG, _noop)).text

    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        nursery.start_soon(first)
        await wait_for(lambda: engine.statistics().state == "generating")

        async def switch() -> None:
            await engine.switch(_loader(new))
            results["switched"] = engine.model_id or ""

        nursery.start_soon(switch)
        await wait_for(lambda: engine.statistics().mailbox == 1)
        nursery.start_soon(second)  # queued behind the switch
        await wait_for(lambda: len(results) == 3)
        engine.close()
    assert results == {"first": "from the old model", "switched": "new", "second": "from the new"}
    assert closed[0] == "old" and told == ["new"]


async def test_a_model_that_does_not_load_leaves_the_old_one_serving():
    old = ScriptedBackend(default={"text": "still here"}, model_id="old")
    loads: list[str] = []

    async def reload() -> ScriptedBackend:
        loads.append("old again")
        return old

    async def broken() -> ScriptedBackend:
        loads.append("broken")
        raise TurnFailed("Could not load broken.gguf: bad tensor data")

    engine = Engine(old, loader=reload)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        with pytest.raises(TurnFailed, match="bad tensor"):
            await engine.switch(broken)
        assert loads == ["broken", "old again"] and engine.model_id == "old"
        assert (await engine.turn(MSG, _noop)).text == "still here"
        # Without a way to load the old one again, the new one is loaded before the old is let go.
        engine2 = Engine(old)
        await nursery.start(engine2.run)
        with pytest.raises(TurnFailed):
            await engine2.switch(broken)
        assert engine2.model_id == "old"
        engine.close()
        engine2.close()


def _loader(backend: ScriptedBackend):
    async def load() -> ScriptedBackend:
        return backend

    return load


async def _closed(closed: list[str], name: str) -> None:
    closed.append(name)


# ---- letting the model go when idle (--idle-unload) ----


class _Loads:
    """A model's loader that counts its loads and closes, each a fresh scripted model."""

    def __init__(self, text: str = "awake", *, fail: bool = False) -> None:
        self.loads = 0
        self.closes = 0
        self.text = text
        self.fail = fail

    def make(self) -> ScriptedBackend:
        backend = ScriptedBackend(default={"text": self.text}, model_id="m")
        backend.n_ctx = 4096

        async def aclose() -> None:
            self.closes += 1

        backend.aclose = aclose  # type: ignore[method-assign]
        return backend

    async def load(self) -> ScriptedBackend:
        self.loads += 1
        await trio.sleep(2)  # a load takes time; a turn waits for it
        if self.fail:
            raise TurnFailed("Could not load m.gguf: the file went away")
        return self.make()


@asynccontextmanager
async def _let_go(loads: _Loads) -> AsyncIterator[Engine]:
    """A running engine whose model was let go (5 s idle), closed on the way out."""
    engine = Engine(loads.make(), loader=loads.load, idle_unload_s=5)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await trio.sleep(6)
        assert not engine.loaded
        yield engine
        engine.close()


async def test_the_model_is_let_go_after_the_idle_time_and_loaded_again_for_the_next_turn(autojump_clock):
    loads = _Loads()
    engine = Engine(loads.make(), loader=loads.load, idle_unload_s=600)
    states: list[tuple[str, str, int]] = []
    engine.on_state = lambda s: states.append((s.state, s.model, s.n_ctx))
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        assert (await engine.turn(MSG, _noop)).text == "awake"
        await trio.sleep(599)
        assert engine.loaded and loads.closes == 0  # not yet idle long enough
        assert (await engine.turn(MSG, _noop)).text == "awake"  # a turn starts the idle time again
        await trio.sleep(599)
        assert engine.loaded
        await trio.sleep(2)
        assert not engine.loaded and loads.closes == 1 and loads.loads == 0
        # What it was is still known: its name and context, for /health and the models page.
        assert engine.model_id == "m" and engine.backend is not None and engine.backend.n_ctx == 4096
        assert engine.statistics().state == "asleep"
        assert engine.model_state() is not None and engine.model_state().state == "asleep"
        start = trio.current_time()
        assert (await engine.turn(MSG, _noop)).text == "awake"
        assert trio.current_time() - start >= 2  # the turn waited for the load
        assert engine.loaded and loads.loads == 1
        assert engine.counters().unloads == 1 and engine.counters().reloads == 1
        engine.close()
    assert states == [("asleep", "m", 4096), ("loading", "m", 4096), ("loaded", "m", 4096)]


async def test_no_turn_queued_means_no_unload_while_turns_keep_coming(autojump_clock):
    loads = _Loads()
    engine = Engine(loads.make(), loader=loads.load, idle_unload_s=10)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        for _ in range(20):  # a turn every 9 s for three minutes: never 10 s idle
            await engine.turn(MSG, _noop)
            await trio.sleep(9)
        assert engine.loaded and loads.closes == 0
        await trio.sleep(2)
        assert not engine.loaded
        engine.close()


async def test_idle_unload_zero_or_no_loader_keeps_the_model(autojump_clock):
    loads = _Loads()
    kept = Engine(loads.make(), loader=loads.load, idle_unload_s=0)
    no_loader = Engine(loads.make(), idle_unload_s=5)  # nothing could load it again
    async with trio.open_nursery() as nursery:
        await nursery.start(kept.run)
        await nursery.start(no_loader.run)
        await trio.sleep(3600)
        assert kept.loaded and no_loader.loaded and loads.closes == 0
        kept.close()
        no_loader.close()


@contextmanager
def _no_automatic_collection() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _in_a_cycle(backend: ScriptedBackend) -> weakref.ref[ScriptedBackend]:
    """The backend made to hold itself, as llama-cpp-python's objects do (their exit
    stacks hold their own methods): only a collection frees it."""
    backend.me = backend  # type: ignore[attr-defined]
    return weakref.ref(backend)


async def test_a_model_let_go_for_idleness_or_a_switch_is_freed_then_not_at_the_collectors_pace(autojump_clock):
    loads = _Loads()
    first = loads.make()
    first_ref = _in_a_cycle(first)
    engine = Engine(first, loader=loads.load, idle_unload_s=5)
    del first
    with _no_automatic_collection():
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await trio.sleep(6)
            assert not engine.loaded and loads.closes == 1
            assert first_ref() is None  # no reference kept, and the engine's collection freed it
            made: list[weakref.ref[ScriptedBackend]] = []

            async def load_other() -> ScriptedBackend:  # as a real loader: a new model each time
                other = ScriptedBackend(default={"text": "the other"}, model_id="other")
                made.append(_in_a_cycle(other))
                return other

            await engine.switch(load_other)
            assert (await engine.turn(MSG, _noop)).text == "the other"
            await engine.switch(loads.load)  # a switch with the model loaded: the old one goes first
            assert made[0]() is None and engine.model_id == "m"
            engine.close()


async def test_a_reload_that_fails_fails_only_that_turn_and_the_next_tries_again(autojump_clock):
    loads = _Loads()
    async with _let_go(loads) as engine:
        loads.fail = True
        with pytest.raises(TurnFailed, match="went away"):
            await engine.turn(MSG, _noop)
        assert not engine.loaded and engine.model_state().state == "asleep"
        loads.fail = False
        assert (await engine.turn(MSG, _noop)).text == "awake"
        assert loads.loads == 2


async def test_a_turn_cancelled_while_its_model_loads_is_not_run_and_the_model_stays(autojump_clock):
    async with _let_go(_Loads()) as engine:
        with trio.move_on_after(1):  # the load takes 2 s
            await engine.turn(MSG, _noop)
        await wait_for(lambda: engine.loaded)
        assert engine.counters().served == 0 and engine.counters().aborted == 1
        assert (await engine.turn(MSG, _noop)).text == "awake"


async def test_a_switch_while_asleep_loads_the_new_model_and_a_bad_one_leaves_the_old_asleep(autojump_clock):
    loads = _Loads()
    told: list[str] = []

    async def broken() -> ScriptedBackend:
        raise TurnFailed("Could not load broken.gguf: bad tensor data")

    async with _let_go(loads) as engine:
        engine.on_model = lambda b: told.append(b.model_id)
        with pytest.raises(TurnFailed, match="bad tensor"):
            await engine.switch(broken)
        assert not engine.loaded and engine.model_id == "m" and loads.loads == 0
        other = ScriptedBackend(default={"text": "the other"}, model_id="other")
        await engine.switch(_loader(other))
        assert engine.loaded and engine.model_id == "other" and told == ["other"]
        assert (await engine.turn(MSG, _noop)).text == "the other"
