"""The scheduler actor (actors/scheduling/scheduler.py) with the scripted engine, on trio's
autojump clock: the wall clock is BASE plus trio's time, the zone Europe/Berlin.

The store and the scheduler write their files in worker threads, and the autojump
clock jumps whenever the run loop waits, a thread included: virtual days would pass
while a write is under way. So here those calls run inline (`writes_inline`), and
virtual time moves only when every task waits on the clock.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import trio

from actors.errors import Busy, Invalid, NotFound
from actors.scheduling.schedule import parse_schedule
from actors.scheduling.scheduler import NOTICE_NO_WORKSPACE, Scheduler, TaskSpec
from bmoe_daemon.store import write_atomic
from tests.waiting import drained

BERLIN = ZoneInfo("Europe/Berlin")
# Saturday 2024-03-30 12:00 in Berlin: the night after is the spring-forward one.
BASE = datetime.datetime(2024, 3, 30, 12, 0, tzinfo=BERLIN).timestamp()
LONG = 30 * 86400  # a guard on virtual time: the clock jumps, so it costs nothing
MAX_SLEEP_S = 3600.0  # fewer wake-ups than the daemon's minute over the days these tests span


@pytest.fixture(autouse=True)
def writes_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run trio.to_thread.run_sync's function in the run loop itself (see the module docstring)."""

    async def run_sync(fn: Callable[..., Any], *args: Any, **_: Any) -> Any:
        await trio.lowlevel.checkpoint()
        return fn(*args)

    monkeypatch.setattr(trio.to_thread, "run_sync", run_sync)


def at(*parts: int) -> float:
    return datetime.datetime(*parts, tzinfo=BERLIN).timestamp()


def tasks_path(daemon) -> Path:
    return daemon.data / "agent" / "tasks.json"


@asynccontextmanager
async def scheduler(daemon) -> AsyncIterator[Scheduler]:
    s = Scheduler(daemon.hub, tasks_path(daemon), write_file=write_atomic, zone=BERLIN,
                  clock=lambda: BASE + trio.current_time(), max_sleep=MAX_SLEEP_S)
    async with trio.open_nursery() as nursery:
        await nursery.start(s.run)
        try:
            yield s
        finally:
            s.close()


def spec(schedule: dict[str, Any], prompt: str = "Summarise the news.", **kw: Any) -> TaskSpec:
    return TaskSpec(prompt=prompt, schedule=parse_schedule(schedule), **kw)


async def task_event(sub, pred) -> dict[str, Any]:
    with trio.fail_after(LONG):
        while True:
            ev = await sub.receive()
            if getattr(ev, "name", None) == "task" and pred(ev.data):
                return ev.data


def runs_of(daemon, task_id: str) -> list:
    return sorted((c for c in daemon.hub.conversations() if c.info.task == task_id), key=lambda c: c.info.created)


async def test_a_due_task_runs_as_a_read_only_conversation_and_says_so_on_local_streams(daemon, autojump_clock):
    with daemon.bus.subscribe(local=True) as local, daemon.bus.subscribe(local=False) as remote:
        async with scheduler(daemon) as s:
            task = await s.create(spec({"kind": "daily", "at": "13:00"}))
            assert task["mode"] == "read_only" and task["enabled"]
            assert task["next_run"] == at(2024, 3, 30, 13, 0)
            assert task["title"] == "Summarise the news." and task["last_run"] is None
            started = await task_event(local, lambda t: t["last_run"] and t["last_run"]["outcome"] == "running")
            ended = await task_event(local, lambda t: t["last_run"]["outcome"] == "done")
        assert started["last_run"]["at"] == at(2024, 3, 30, 13, 0)
        assert not ended["running"]
        assert ended["next_run"] == at(2024, 3, 31, 13, 0)
        (conv,) = runs_of(daemon, task["id"])
        assert conv.id == started["last_run"]["conversation"]
        assert conv.info.mode == "read_only" and conv.info.workspace is None
        assert [i.kind for i in conv.items] == ["user", "assistant"]
        assert conv.items[0].text == "Summarise the news." and conv.items[1].text == "Done."
        assert [e for e in drained(remote) if e.name == "task"] == []
    saved = json.loads(tasks_path(daemon).read_text())
    assert saved[0]["last_run"]["outcome"] == "done" and saved[0]["id"] == task["id"]
    # The run's own end beside the outcome: a row says "answered", "stuck"..., not only "done".
    assert ended["last_run"]["end_reason"] == "answered" == saved[0]["last_run"]["end_reason"]


def test_a_last_runs_end_reason_is_read_back_and_an_unknown_one_dropped():
    from actors.scheduling.scheduler import Task

    record = {"id": "t1", "title": "t", "prompt": "p", "workspace": None, "mode": "read_only", "route": "local",
              "schedule": {"kind": "daily", "at": "13:00"}, "enabled": True, "created": 1.0,
              "last_run": {"at": 2.0, "conversation": "c1", "outcome": "done", "end_reason": "stuck"}}
    assert Task.from_record(record).last_run.end_reason == "stuck"
    record["last_run"]["end_reason"] = "bored"
    assert Task.from_record(record).last_run.end_reason is None
    del record["last_run"]["end_reason"]  # a tasks.json written before the field
    assert Task.from_record(record).last_run.end_reason is None


async def test_task_events_after_each_save_and_at_each_runs_start_and_end(daemon, autojump_clock):
    def state(t: dict[str, Any]) -> tuple:
        return (t["title"], t["running"], t["last_run"]["outcome"] if t["last_run"] else None, t.get("deleted", False))

    with (daemon.bus.subscribe(local=False) as remote, daemon.bus.subscribe(local=True) as local,
          daemon.bus.subscribe(local=True) as everything):
        async with scheduler(daemon) as s:
            task = await s.create(spec({"kind": "interval", "every_minutes": 5}, title="News"))
            await s.update(task["id"], {"title": "Headlines"})
            await task_event(local, lambda t: t["last_run"] and t["last_run"]["outcome"] == "done")
            await s.delete(task["id"])
        events = [e for e in drained(everything) if e.name == "task"]
        assert [e.name for e in drained(remote) if e.name == "task"] == []
    assert all(e.local_only for e in events)
    assert [state(e.data) for e in events] == [
        ("News", False, None, False),  # saved: created
        ("Headlines", False, None, False),  # saved: changed
        ("Headlines", True, "running", False),  # a run started, five minutes on
        ("Headlines", False, "done", False),  # ...and ended
        ("Headlines", False, "done", True),  # forgotten
    ]
    assert events[2].data["last_run"]["at"] == BASE + 300


async def test_once_switches_itself_off_after_its_run(daemon, autojump_clock):
    async with scheduler(daemon) as s:
        with daemon.bus.subscribe() as sub:
            task = await s.create(spec({"kind": "once", "at": "2024-03-30T12:30"}))
            ran = await task_event(sub, lambda t: t["last_run"] and t["last_run"]["outcome"] == "done")
        assert ran["enabled"] is False and ran["next_run"] is None
        assert ran["last_run"]["at"] == at(2024, 3, 30, 12, 30)
        await trio.sleep(3 * 86400)
        assert len(runs_of(daemon, task["id"])) == 1
        # Switched on again with a new time, it runs again.
        with daemon.bus.subscribe() as sub:
            again = parse_schedule({"kind": "once", "at": "2024-04-05T08:00"})
            await s.update(task["id"], {"enabled": True, "schedule": again})
            ran = await task_event(sub, lambda t: t["last_run"]["at"] > BASE + 3600
                                   and t["last_run"]["outcome"] == "done")
        assert ran["last_run"]["at"] == at(2024, 4, 5, 8, 0) and ran["enabled"] is False
        assert len(runs_of(daemon, task["id"])) == 2


async def ended_runs(sub, count: int) -> list[str]:
    """The local start times of the next `count` runs to end."""
    seen: list[str] = []
    while len(seen) < count:
        ev = await task_event(sub, lambda t: t["last_run"] and t["last_run"]["outcome"] != "running")
        seen.append(datetime.datetime.fromtimestamp(ev["last_run"]["at"], BERLIN).strftime("%a %m-%d %H:%M%z"))
    return seen


async def test_a_daily_task_runs_once_a_day_across_the_spring_forward_night(daemon, autojump_clock):
    with daemon.bus.subscribe() as sub:
        async with scheduler(daemon) as s:
            task = await s.create(spec({"kind": "daily", "at": "02:30"}))
            seen = await ended_runs(sub, 3)
            # 02:30 does not exist on 03-31 (02:00 -> 03:00): it runs once, at 03:30 summer time.
            assert seen == ["Sun 03-31 03:30+0200", "Mon 04-01 02:30+0200", "Tue 04-02 02:30+0200"]
            assert s.get(task["id"])["next_run"] == at(2024, 4, 3, 2, 30)
            assert len(runs_of(daemon, task["id"])) == 3


async def test_a_weekly_task_runs_on_its_days(daemon, autojump_clock):
    async with scheduler(daemon) as s:
        # Sunday = 0 and Tuesday = 2; BASE is a Saturday.
        with daemon.bus.subscribe() as sub:
            task = await s.create(spec({"kind": "weekly", "at": "07:00", "weekdays": [0, 2]}))
            seen = await ended_runs(sub, 3)
        assert seen == ["Sun 03-31 07:00+0200", "Tue 04-02 07:00+0200", "Sun 04-07 07:00+0200"]
        assert len(runs_of(daemon, task["id"])) == 3


async def test_missed_runs_after_a_restart_run_once(daemon, autojump_clock):
    three_days_ago = BASE - 3 * 86400
    rows = [{
        "id": "t1", "title": "Morning", "prompt": "Good morning.", "workspace": None, "mode": "read_only",
        "route": "local", "schedule": {"kind": "daily", "at": "09:00"}, "enabled": True, "created": three_days_ago,
        # The daemon stopped while its last run was going.
        "last_run": {"at": three_days_ago, "conversation": "c-gone", "outcome": "running"}, "since": three_days_ago,
    }, {
        "id": "t2", "title": "Later", "prompt": "Later.", "workspace": None, "mode": "read_only", "route": "local",
        "schedule": {"kind": "once", "at": "2024-03-29T10:00"}, "enabled": True, "created": three_days_ago,
        "last_run": None, "since": three_days_ago,
    }]
    tasks_path(daemon).write_text(json.dumps(rows))
    with daemon.bus.subscribe() as sub:
        async with scheduler(daemon) as s:
            done = set()
            while done != {"t1", "t2"}:
                ev = await task_event(sub, lambda t: t["last_run"] and t["last_run"]["outcome"] == "done")
                done.add(ev["id"])
                assert ev["last_run"]["at"] == BASE  # at once, when next seen
            await trio.sleep(6 * 3600)  # to 18:00: nothing more is due
            assert len(runs_of(daemon, "t1")) == 1 and len(runs_of(daemon, "t2")) == 1
            assert s.get("t1")["next_run"] == at(2024, 3, 31, 9, 0)
            assert s.get("t2")["enabled"] is False


async def test_a_run_that_was_going_when_the_daemon_stopped_reads_stopped(daemon, autojump_clock):
    rows = [{
        "id": "t1", "title": "x", "prompt": "x", "workspace": None, "mode": "read_only", "route": "local",
        "schedule": {"kind": "once", "at": "2024-03-01T10:00"}, "enabled": False, "created": BASE - 100,
        "last_run": {"at": BASE - 50, "conversation": "c1", "outcome": "running"}, "since": BASE - 50,
    }]
    tasks_path(daemon).write_text(json.dumps(rows))
    async with scheduler(daemon) as s:
        assert s.get("t1")["last_run"]["outcome"] == "stopped"
    assert json.loads(tasks_path(daemon).read_text())[0]["last_run"]["outcome"] == "stopped"


async def test_running_a_task_that_runs_is_busy_and_a_stop_is_recorded(daemon, autojump_clock):
    daemon.backend.push({"when": "forever", "hang": True, "delay": 1.0})
    async with scheduler(daemon) as s:
        task = await s.create(spec({"kind": "daily", "at": "23:00"}, prompt="Think forever."))
        with daemon.bus.subscribe() as sub:
            ran = await s.run_now(task["id"])
            assert ran["running"] and ran["last_run"]["outcome"] == "running"
            assert ran["enabled"] and ran["next_run"] == at(2024, 3, 30, 23, 0)  # a run by hand keeps the schedule
            with pytest.raises(Busy):
                await s.run_now(task["id"])
            conv = daemon.hub.get(ran["last_run"]["conversation"])
            assert await conv.stop() is True
            ended = await task_event(sub, lambda t: t["last_run"]["outcome"] != "running")
        assert ended["last_run"]["outcome"] == "stopped" and not ended["running"]
        with pytest.raises(NotFound):
            await s.run_now("nope")


async def test_shutdown_during_a_run_records_it_stopped(daemon, autojump_clock):
    daemon.backend.push({"when": "forever", "hang": True, "delay": 1.0})
    async with scheduler(daemon) as s:
        task = await s.create(spec({"kind": "daily", "at": "23:00"}, prompt="Think forever."))
        await s.run_now(task["id"])
    assert json.loads(tasks_path(daemon).read_text())[0]["last_run"]["outcome"] == "stopped"


async def test_a_scheduled_ask_run_refuses_a_write_and_counts_the_refusal(daemon, autojump_clock, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    daemon.backend.push(
        {"when": "note", "tool_calls": [{"name": "note", "arguments": {"path": "out.txt", "text": "written"}}]},
        {"when": "note", "text": "I could not write the note: nobody approved it."},
    )
    with daemon.bus.subscribe() as sub:
        async with scheduler(daemon) as s:
            task = await s.create(spec({"kind": "once", "at": "2024-03-30T12:10"}, prompt="Write the note.",
                                       workspace=ws.id, mode="ask"))
            ended = await task_event(sub, lambda t: t["last_run"] and t["last_run"]["outcome"] not in ("running",))
            events = drained(sub)
    assert ended["last_run"]["outcome"] == "done"
    assert not (folder / "out.txt").exists() and daemon.note.calls == []
    conv = daemon.hub.get(ended["last_run"]["conversation"])
    assert conv.info.task == task["id"] and conv.info.mode == "ask"
    (card,) = [i for i in conv.items if i.kind == "tool"]
    assert card.state == "denied" and "nobody at the screen" in card.result
    notices = [i for i in conv.items if i.kind == "notice"]
    assert len(notices) == 1 and "1 change was refused" in notices[0].text and notices[0].level == "warn"
    # The model read that it was not done.
    second = daemon.backend.turns[-1].messages
    assert any(m["role"] == "tool" and m["content"].startswith("Not done") for m in second)
    # Nobody was asked: the conversation never waited for an approval.
    assert all(e.data.get("state") != "waiting" for e in events if getattr(e, "name", "") == "conversation")


async def test_a_task_whose_workspace_was_forgotten_leaves_a_conversation_saying_so(daemon, autojump_clock, tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    async with scheduler(daemon) as s:
        task = await s.create(spec({"kind": "daily", "at": "23:00"}, workspace=ws.id))
        await daemon.hub.remove_workspace(ws.id)
        ran = await s.run_now(task["id"])
    assert ran["last_run"]["outcome"] == "error" and not ran["running"]
    conv = daemon.hub.get(ran["last_run"]["conversation"])
    assert conv.items[-1].text == NOTICE_NO_WORKSPACE and conv.info.workspace is None


async def test_bad_tasks_save_nothing(daemon, autojump_clock):
    async with scheduler(daemon) as s:
        await s.create(spec({"kind": "daily", "at": "23:00"}))
        before = tasks_path(daemon).read_bytes()
        for bad in (spec({"kind": "daily", "at": "23:00"}, workspace="w-nope"),
                    spec({"kind": "daily", "at": "23:00"}, prompt="   "),
                    spec({"kind": "daily", "at": "23:00"}, mode="sideways")):
            with pytest.raises(Invalid):
                await s.create(bad)
        task_id = s.tasks()[0]["id"]
        with pytest.raises(Invalid):
            await s.update(task_id, {"workspace": "w-nope"})
        with pytest.raises(NotFound):
            await s.update("nope", {"title": "x"})
        assert tasks_path(daemon).read_bytes() == before
        assert len(s.tasks()) == 1


async def test_an_unreadable_tasks_file_is_moved_aside_not_overwritten(daemon, autojump_clock):
    tasks_path(daemon).write_text("{not json")
    async with scheduler(daemon) as s:
        assert s.tasks() == []
        await s.create(spec({"kind": "daily", "at": "23:00"}))
    aside = [p for p in tasks_path(daemon).parent.iterdir() if p.name.startswith("tasks.json.unreadable-")]
    assert len(aside) == 1 and aside[0].read_text() == "{not json"


async def test_a_fifo_for_tasks_json_is_moved_aside_not_waited_on(daemon):
    import os

    path = tasks_path(daemon)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    with trio.fail_after(5):
        async with scheduler(daemon) as s:
            assert s.tasks() == []
    assert list(path.parent.glob("tasks.json.unreadable-*"))
