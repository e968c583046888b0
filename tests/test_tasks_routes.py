"""The task routes (bmoe_daemon/routes/tasks.py): over the in-process app with Quart's
test client (so a request can come from the network), and once over the real daemon."""

from __future__ import annotations

import json
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import trio

from actors.scheduling.scheduler import Scheduler
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import write_atomic
from tests.daemon_proc import SSE, run_daemon
from tests.test_e2e import write_script

NET = {"client": ("192.0.2.7", 40000)}
LOCAL = {"client": ("127.0.0.1", 40000)}
DAILY = {"kind": "daily", "at": "04:00"}
FAR = {"kind": "once", "at": "2099-01-01T00:00"}


@pytest.fixture
async def served(daemon, tmp_path: Path):
    scheduler = Scheduler(daemon.hub, daemon.data / "agent" / "tasks.json", write_file=write_atomic,
                          zone=ZoneInfo("Europe/Berlin"))
    async with trio.open_nursery() as nursery:
        await nursery.start(scheduler.run)
        ctx = DaemonContext(config=Config(data_dir=tmp_path), hub=daemon.hub, engine=daemon.engine, bus=daemon.bus,
                            scheduler=scheduler)
        yield create_app(ctx)
        scheduler.close()


async def call(app, method, path, scope=LOCAL, json=None, data=None):
    client = app.test_client()
    if data is not None:
        resp = await client.open(path, method=method, data=data, scope_base=scope,
                                 headers={"Content-Type": "application/json"})
    else:
        resp = await client.open(path, method=method, json=json, scope_base=scope)
    return resp.status_code, await resp.get_json()


def tasks_file(daemon) -> Path:
    return daemon.data / "agent" / "tasks.json"


async def test_create_list_change_and_delete(served, daemon, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    assert await call(served, "GET", "/api/tasks") == (200, [])
    status, task = await call(served, "POST", "/api/tasks", json={"prompt": "Review the changes.", "schedule": DAILY,
                                                                   "workspace": ws.id})
    assert status == 201
    assert set(task) == {"id", "title", "prompt", "workspace", "mode", "route", "schedule", "enabled", "created",
                         "last_run", "next_run", "running", "keep_runs", "budget"}
    assert task["keep_runs"] == 100 and task["budget"] is None
    assert task["mode"] == "read_only" and task["route"] == "local" and task["enabled"] is True
    assert task["schedule"] == {"kind": "daily", "at": "04:00", "every_minutes": None, "weekdays": None}
    assert task["title"] == "Review the changes." and task["last_run"] is None and task["running"] is False
    assert task["next_run"] > task["created"]
    assert await call(served, "GET", "/api/tasks") == (200, [task])
    assert json.loads(tasks_file(daemon).read_text())[0]["id"] == task["id"]

    status, changed = await call(served, "PUT", f"/api/tasks/{task['id']}", json={
        "title": "Nightly review", "mode": "ask", "schedule": {"kind": "weekly", "at": "22:15", "weekdays": [1, 5]}})
    assert status == 200
    assert changed["title"] == "Nightly review" and changed["mode"] == "ask" and changed["prompt"] == task["prompt"]
    assert changed["schedule"]["weekdays"] == [1, 5] and changed["workspace"] == ws.id
    status, changed = await call(served, "PUT", f"/api/tasks/{task['id']}", json={"workspace": None, "enabled": False})
    assert status == 200 and changed["workspace"] is None and changed["next_run"] is None
    status, changed = await call(served, "PUT", f"/api/tasks/{task['id']}", json={"keep_runs": 7})
    assert status == 200 and changed["keep_runs"] == 7 and changed["title"] == "Nightly review"

    assert await call(served, "DELETE", f"/api/tasks/{task['id']}") == (200, {"deleted": task["id"]})
    assert await call(served, "GET", "/api/tasks") == (200, [])
    assert json.loads(tasks_file(daemon).read_text()) == []


BAD_TASKS = [
    {"prompt": "x", "schedule": {"kind": "hourly"}},
    {"prompt": "x", "schedule": {"kind": "interval", "every_minutes": 4}},
    {"prompt": "x", "schedule": {"kind": "interval", "every_minutes": "10"}},
    {"prompt": "x", "schedule": {"kind": "daily", "at": "25:00"}},
    {"prompt": "x", "schedule": {"kind": "daily", "at": "9:00"}},
    {"prompt": "x", "schedule": {"kind": "once", "at": "tomorrow"}},
    {"prompt": "x", "schedule": {"kind": "weekly", "at": "09:00", "weekdays": []}},
    {"prompt": "x", "schedule": {"kind": "weekly", "at": "09:00", "weekdays": [7]}},
    {"prompt": "x", "schedule": "daily"},
    {"prompt": "x"},
    {"schedule": DAILY},
    {"prompt": 5, "schedule": DAILY},
    {"prompt": "   ", "schedule": DAILY},
    {"prompt": "x", "schedule": DAILY, "mode": "sideways"},
    {"prompt": "x", "schedule": DAILY, "enabled": "yes"},
    {"prompt": "x", "schedule": DAILY, "workspace": "w-nope"},
    {"prompt": "x", "schedule": DAILY, "route": "nope"},
    {"prompt": "x", "schedule": DAILY, "route": "prov/model"},
    {"prompt": "x", "schedule": DAILY, "keep_runs": 0},
    {"prompt": "x", "schedule": DAILY, "keep_runs": 100_001},
    {"prompt": "x", "schedule": DAILY, "keep_runs": "10"},
    {"prompt": "x", "schedule": DAILY, "keep_runs": 2.5},
    {"prompt": "x", "schedule": DAILY, "keep_runs": True},
]


@pytest.mark.parametrize("body", BAD_TASKS, ids=[str(i) for i in range(len(BAD_TASKS))])
async def test_bad_tasks_are_400_and_save_nothing(served, daemon, body):
    status, err = await call(served, "POST", "/api/tasks", json=body)
    assert status == 400 and err["code"] == "bad_request" and err["error"], err
    assert not tasks_file(daemon).exists()
    assert await call(served, "GET", "/api/tasks") == (200, [])


async def test_bad_bodies_and_changes_are_400_and_change_nothing(served, daemon):
    for raw in (b"", b"not json", b"[]", b'"x"'):
        status, err = await call(served, "POST", "/api/tasks", data=raw)
        assert (status, err["code"]) == (400, "bad_request"), raw
    status, task = await call(served, "POST", "/api/tasks", json={"prompt": "x", "schedule": DAILY})
    assert status == 201
    before = tasks_file(daemon).read_bytes()
    for change in ({"schedule": {"kind": "daily", "at": "noon"}}, {"schedule": {"kind": "weekly", "at": "09:00"}},
                   {"schedule": {"kind": "interval", "every_minutes": 1}}, {"mode": 3}, {"workspace": "w-nope"},
                   {"prompt": ""}, {"colour": "red"}, {"route": "nope/x"}, {"keep_runs": 0}, {"keep_runs": None}):
        status, err = await call(served, "PUT", f"/api/tasks/{task['id']}", json=change)
        assert (status, err["code"]) == (400, "bad_request"), change
    assert tasks_file(daemon).read_bytes() == before
    assert (await call(served, "GET", "/api/tasks"))[1] == [task]


async def test_unknown_ids_are_404(served):
    for method, path, body in (("PUT", "/api/tasks/nope", {"title": "x"}), ("DELETE", "/api/tasks/nope", None),
                               ("POST", "/api/tasks/nope/run", None)):
        status, err = await call(served, method, path, json=body)
        assert (status, err["code"]) == (404, "not_found"), path


async def test_run_is_202_and_busy_while_it_runs(served, daemon):
    daemon.backend.push({"when": "forever", "hang": True, "delay": 0.01})
    status, task = await call(served, "POST", "/api/tasks", json={"prompt": "Think forever.", "schedule": FAR})
    assert status == 201
    status, ran = await call(served, "POST", f"/api/tasks/{task['id']}/run")
    assert status == 202
    assert ran["running"] is True and ran["last_run"]["outcome"] == "running" and ran["id"] == task["id"]
    conv = daemon.hub.get(ran["last_run"]["conversation"])
    assert conv.info.task == task["id"] and conv.info.mode == "read_only"
    status, err = await call(served, "POST", f"/api/tasks/{task['id']}/run")
    assert (status, err["code"]) == (409, "busy")
    with daemon.bus.subscribe() as sub, trio.fail_after(10):
        assert await conv.stop() is True
        while True:
            ev = await sub.receive()
            if ev.name == "task" and not ev.data["running"]:
                break
    listed = (await call(served, "GET", "/api/tasks"))[1][0]
    assert listed["last_run"]["outcome"] == "stopped"
    assert listed["enabled"] is True  # a run by hand leaves a `once` task on


async def test_every_task_route_is_local_only(served, daemon):
    status, task = await call(served, "POST", "/api/tasks", json={"prompt": "x", "schedule": FAR})
    tid = task["id"]
    for method, path, body in (("GET", "/api/tasks", None), ("POST", "/api/tasks", {"prompt": "y", "schedule": FAR}),
                               ("PUT", f"/api/tasks/{tid}", {"title": "z"}), ("DELETE", f"/api/tasks/{tid}", None),
                               ("POST", f"/api/tasks/{tid}/run", None)):
        status, err = await call(served, method, path, NET, json=body)
        assert (status, err["code"]) == (403, "local_only"), (method, path)
    assert (await call(served, "GET", "/api/tasks"))[1] == [task]


async def test_a_chat_only_daemon_has_no_tasks(daemon, tmp_path):
    app = create_app(DaemonContext(config=Config(data_dir=tmp_path, chat_only=True), hub=daemon.hub,
                                   engine=daemon.engine, bus=daemon.bus))
    status, err = await call(app, "GET", "/api/tasks")
    assert (status, err["code"]) == (400, "bad_request") and "chat" in err["error"]


async def test_tasks_over_the_real_daemon(tmp_path):
    """serve() starts the scheduler: a run by hand is a conversation, with `task`
    events on the stream; a SIGTERM during a run leaves it recorded `stopped`."""
    script = write_script(tmp_path, {"rounds": [{"when": "hang", "hang": True, "delay": 0.01}]})
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        sse = SSE(d.client())
        async with trio.open_nursery() as nursery:
            await nursery.start(sse.run)
            r = await c.post("/api/tasks", json={"prompt": "Say hello.", "schedule": FAR, "mode": "ask"})
            assert r.status_code == 201, r.text
            tid = r.json()["id"]
            r = await c.post(f"/api/tasks/{tid}/run")
            assert r.status_code == 202 and r.json()["running"] is True
            _, _, ended = await sse.wait_for(lambda e: e[1] == "task" and e[2]["last_run"]
                                             and e[2]["last_run"]["outcome"] == "done")
            conv = (await c.get(f"/api/conversations/{ended['last_run']['conversation']}")).json()
            assert conv["task"] == tid and conv["mode"] == "ask" and conv["items"][-1]["text"] == "Done."
            await c.put(f"/api/tasks/{tid}", json={"prompt": "hang on"})
            r = await c.post(f"/api/tasks/{tid}/run")
            assert r.status_code == 202
            assert (await c.post(f"/api/tasks/{tid}/run")).status_code == 409
            nursery.cancel_scope.cancel()
    saved = json.loads((tmp_path / "data" / "agent" / "tasks.json").read_text())
    assert saved[0]["last_run"]["outcome"] == "stopped"
