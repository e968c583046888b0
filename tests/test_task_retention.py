"""A task keeps its last `keep_runs` runs (actors/scheduling/scheduler.py, Hub.prune_runs): older
runs are deleted with their files, except one a client has open, one running and one
waiting on a card. On trio's autojump clock, with conversation actors that go to sleep
after IDLE_S quiet seconds (as the daemon's do after --idle-actor-minutes)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.errors import Invalid
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.scheduling.schedule import parse_schedule
from actors.scheduling.scheduler import DEFAULT_KEEP_RUNS, Scheduler, TaskSpec
from actors.tools.registry import Registry
from bmoe_daemon.store import Store, write_atomic
from tests.conftest import Daemon, EchoTool, NoteTool
from tests.waiting import wait_for, wait_state

IDLE_S = 60.0
NOTE_HI = {"name": "note", "arguments": {"path": "a.txt", "text": "hi"}}


@pytest.fixture(autouse=True)
def writes_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker threads run inline, so the autojump clock moves only when every task waits
    on it (see tests/test_scheduler.py)."""

    async def run_sync(fn: Callable[..., Any], *args: Any, **_: Any) -> Any:
        await trio.lowlevel.checkpoint()
        return fn(*args)

    monkeypatch.setattr(trio.to_thread, "run_sync", run_sync)


@pytest.fixture
async def sleepy(tmp_path: Path) -> AsyncIterator[Daemon]:
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    echo, note = EchoTool(), NoteTool()
    env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry([echo, note]),
              resolve_workspace=lambda _: None, plans=PlanFiles(store.agent_dir / "plans"),
              helpers=trio.CapacityLimiter(2))
    hub = Hub(env, store, idle_s=IDLE_S)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        yield Daemon(hub, backend, env.bus, engine, store, echo, note, tmp_path / "data")
        hub.close()
        engine.close()


def _scheduler(d: Daemon) -> Scheduler:
    return Scheduler(d.hub, d.data / "agent" / "tasks.json", write_file=write_atomic,
                     clock=lambda: 1_700_000_000 + trio.current_time(), max_sleep=3600)


def _spec(**kw: Any) -> TaskSpec:
    return TaskSpec(prompt="Check the news.", schedule=parse_schedule({"kind": "daily", "at": "03:00"}), **kw)


def _runs(d: Daemon, task_id: str) -> list[str]:
    """The task's runs, oldest first."""
    return [i.id for i in sorted((i for i in d.hub.infos() if i.task == task_id), key=lambda i: i.created)]


def _file(d: Daemon, cid: str) -> Path:
    return d.data / "agent" / "conversations" / f"{cid}.json"


async def _workspace(d: Daemon, tmp_path: Path) -> tuple[Path, str]:
    """A folder added as a workspace: it and the workspace's id."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder, (await d.hub.add_workspace(str(folder))).id


async def _run_and_end(d: Daemon, s: Scheduler, task_id: str) -> str:
    ran = await s.run_now(task_id)
    cid = str(ran["last_run"]["conversation"])
    await wait_for(lambda: not s.get(task_id)["running"], timeout=600)
    return cid


async def test_runs_beyond_the_bound_are_deleted_with_their_files_once_nothing_holds_them(sleepy, autojump_clock):
    s = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        task = await s.create(_spec(keep_runs=3))
        assert task["keep_runs"] == 3
        made = []
        for _ in range(6):
            made.append(await _run_and_end(sleepy, s, task["id"]))
            await trio.sleep(IDLE_S * 2)  # its actor goes to sleep: nothing holds it any more
        # Each run's start deleted the oldest, asleep by then.
        kept = _runs(sleepy, task["id"])
        assert kept == made[3:], kept
        for cid in made[:3]:
            assert not _file(sleepy, cid).exists()
        for cid in made[3:]:
            assert _file(sleepy, cid).exists()
        # Another task's runs and other conversations are not touched.
        other = await s.create(_spec(keep_runs=1))
        mine = await sleepy.hub.create(title="by hand")
        await _run_and_end(sleepy, s, other["id"])
        assert _runs(sleepy, task["id"]) == kept and mine.id in [i.id for i in sleepy.hub.infos()]
        s.close()


async def test_a_run_open_in_a_client_is_kept_until_it_is_let_go(sleepy, autojump_clock):
    s = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        task = await s.create(_spec(keep_runs=1))
        first = await _run_and_end(sleepy, s, task["id"])
        await trio.sleep(IDLE_S * 2)

        async def reader() -> None:  # a client that keeps the first run open, reading it now and then
            while True:
                await sleepy.hub.open(first)
                await trio.sleep(IDLE_S / 3)

        async with trio.open_nursery() as clients:
            clients.start_soon(reader)
            await trio.sleep(1)
            for _ in range(3):
                await _run_and_end(sleepy, s, task["id"])
                await trio.sleep(IDLE_S * 2)
            assert first in _runs(sleepy, task["id"])  # held all along
            clients.cancel_scope.cancel()
        await trio.sleep(IDLE_S * 2)  # let go, and asleep
        newest = await _run_and_end(sleepy, s, task["id"])
        assert _runs(sleepy, task["id"]) == [newest]
        assert not _file(sleepy, first).exists()
        s.close()


async def test_a_run_waiting_on_a_card_is_never_deleted(sleepy, autojump_clock, tmp_path):
    _, ws_id = await _workspace(sleepy, tmp_path)
    s = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        task = await s.create(_spec(keep_runs=1, workspace=ws_id, mode="ask"))
        first = await _run_and_end(sleepy, s, task["id"])
        # The person answers in the run's conversation, and the agent asks to write a file.
        conv = await sleepy.hub.open(first)
        sleepy.backend.push({"tool_calls": [NOTE_HI]}, {"text": "ok"})
        await conv.send_message("write it down")
        await wait_state(conv, "waiting")
        for _ in range(3):
            newest = await _run_and_end(sleepy, s, task["id"])
            await trio.sleep(IDLE_S * 3)
        assert _runs(sleepy, task["id"]) == [first, newest]  # the runs between went
        assert _file(sleepy, first).exists()
        assert sleepy.hub.peek(first).state == "waiting"
        s.close()


async def test_lowering_the_bound_deletes_at_once_and_the_bound_is_checked_and_kept(sleepy, autojump_clock):
    s = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        task = await s.create(_spec())
        assert task["keep_runs"] == DEFAULT_KEEP_RUNS
        for _ in range(4):
            await _run_and_end(sleepy, s, task["id"])
        await trio.sleep(IDLE_S * 2)
        assert len(_runs(sleepy, task["id"])) == 4
        for bad in (0, -1, 100_001):
            with pytest.raises(Invalid, match="keep_runs"):
                await s.update(task["id"], {"keep_runs": bad})
            with pytest.raises(Invalid, match="keep_runs"):
                await s.create(_spec(keep_runs=bad))
        assert len(_runs(sleepy, task["id"])) == 4
        updated = await s.update(task["id"], {"keep_runs": 2})
        assert updated["keep_runs"] == 2 and len(_runs(sleepy, task["id"])) == 2
        s.close()
    saved = json.loads((sleepy.data / "agent" / "tasks.json").read_text())
    assert saved[0]["keep_runs"] == 2
    # A record without the field (written before it existed) keeps the default.
    del saved[0]["keep_runs"]
    (sleepy.data / "agent" / "tasks.json").write_text(json.dumps(saved))
    s2 = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s2.run)
        assert s2.get(task["id"])["keep_runs"] == DEFAULT_KEEP_RUNS
        s2.close()


async def test_a_run_that_is_running_is_never_deleted(sleepy, autojump_clock, tmp_path):
    folder, ws_id = await _workspace(sleepy, tmp_path)
    s = _scheduler(sleepy)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        task = await s.create(_spec(keep_runs=1, workspace=ws_id, mode="full"))
        first = await _run_and_end(sleepy, s, task["id"])
        await trio.sleep(IDLE_S * 2)
        assert first not in sleepy.hub._convs  # asleep: no live actor
        # The person messages the old run, asleep: it wakes, and its call runs for an hour.
        conv = await sleepy.hub.open(first)
        slow = {"name": "note", "arguments": {"path": "a.txt", "text": "hi", "sleep": 3600}}
        sleepy.backend.push({"when": "keep going", "tool_calls": [slow]}, {"when": "keep going", "text": "ok"})
        await conv.send_message("keep going")
        await wait_for(lambda: any(i.kind == "tool" and i.state == "running" for i in conv.items))
        for _ in range(3):
            newest = await _run_and_end(sleepy, s, task["id"])
            await trio.sleep(IDLE_S * 3)  # quiet long past the idle bound, but running
        assert _runs(sleepy, task["id"]) == [first, newest]  # the runs between went
        assert _file(sleepy, first).exists() and sleepy.hub.peek(first).state == "running"
        await wait_state(conv, "idle", timeout=7200, poll=1)  # the call ends; the run answers
        assert (folder / "a.txt").read_text() == "hi"
        await trio.sleep(IDLE_S * 2)
        last = await _run_and_end(sleepy, s, task["id"])  # now nothing holds it
        assert _runs(sleepy, task["id"]) == [last] and not _file(sleepy, first).exists()
        s.close()
