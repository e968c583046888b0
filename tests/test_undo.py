"""A conversation's checkpoints (actors/conversations/undo.py) around its runs: the
after-run checkpoint is taken in the background, so the conversation is idle and takes
the next message at once, and the next run's checkpoint waits for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from actors.bus import EventBus
from actors.checkpoints.store import Checkpoints
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.tools.registry import Registry
from bmoe_daemon.store import Store
from tests.conftest import NoteTool
from tests.waiting import wait_for, wait_state


class SlowCheckpoints(Checkpoints):
    """The store, with an after-run checkpoint that takes a while (a big workspace, a
    loaded machine)."""

    taking = False
    state_of: Callable[[], str] | None = None  # the conversation's state, read while the checkpoint is taken
    states_while_taking: list[str]

    async def after_run(self, *args: object, **kwargs: object) -> bool:
        self.taking = True
        try:
            await trio.sleep(1.0)
            if self.state_of is not None:
                self.states_while_taking.append(self.state_of())
            return await super().after_run(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            self.taking = False


@pytest.fixture
async def slow(tmp_path: Path) -> AsyncIterator[tuple[Hub, ScriptedBackend, SlowCheckpoints]]:
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    checkpoints = SlowCheckpoints(store.agent_dir / "checkpoints")
    checkpoints.states_while_taking = []
    env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry([NoteTool()]),
              resolve_workspace=lambda _: None, plans=PlanFiles(store.agent_dir / "plans"),
              checkpoints=checkpoints)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        yield hub, backend, checkpoints
        hub.close()
        engine.close()


async def test_the_next_message_is_taken_while_the_last_runs_checkpoint_is_taken(slow, tmp_path):
    hub, backend, checkpoints = slow
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await hub.add_workspace(str(folder))
    conv = await hub.create(workspace=ws.id, mode="full")
    backend.push({"tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "a"}}]},
                 {"text": "Wrote a."},
                 {"tool_calls": [{"name": "note", "arguments": {"path": "b.txt", "text": "b"}}]},
                 {"text": "Wrote b."})
    checkpoints.state_of = lambda: conv.info.state
    await conv.send_message("write a")
    await wait_state(conv, "idle", "error")
    # Read inside the checkpoint, a second into it: the run said idle before its checkpoint
    # was taken (the test's own poll may come before or after the checkpoint's first step).
    await wait_for(lambda: checkpoints.states_while_taking, 10)
    assert checkpoints.states_while_taking == ["idle"], "the run ended idle only once its checkpoint was taken"
    await conv.send_message("write b")  # not 409 busy: the conversation is idle
    await wait_state(conv, "running")
    await wait_state(conv, "idle", "error")
    await wait_for(lambda: not checkpoints.taking, 10)
    changes = await conv.undo.changes()
    # The second run's before-checkpoint waited for the first's after: each run has its own file.
    assert [[f["path"] for f in c["files"]] for c in changes] == [["a.txt"], ["b.txt"]]
