"""actors/peers/lsp/servers.py against a real language server from PyPI: pylsp (python-lsp-server,
with pyflakes, in the test extra). Edits go through the daemon's real run (scripted
model, real write_file/edit_file, mode full); the server's processes are looked at
for real (psutil, os.killpg). Without pylsp each test is skipped, or fails under
BMOE_REQUIRE_PEERS (tests/peers.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import psutil
import pytest
import trio

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.peers.lsp.servers import DIAGNOSTICS_WAIT_S, LanguageServer, LspManager, search_path
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.server import build_registry, workspace_in_use
from bmoe_daemon.store import Store
from tests.daemon_proc import run_daemon
from tests.peers import need_modules, need_peer
from tests.test_acp import group_alive
from tests.test_conversation import tool_items
from tests.waiting import wait_for, wait_http_state, wait_state

BROKEN = "def f(:\n    return 1\n"
FIXED = "def f():\n    return 1\n"
OFF = "Diagnostics for Python are off in this workspace"
# The tests give a server's start more than the daemon's 3 s: this machine is shared, and
# a start that takes longer only leaves that first edit without diagnostics (tested below).
WAIT_S = 20.0


def pylsp() -> str:
    """pylsp as the daemon finds it (its own scripts folder, then PATH)."""
    found = shutil.which("pylsp", path=search_path())
    if found is None:
        need_peer("pylsp is not installed: pip install 'python-lsp-server[pyflakes]' (the test extra has it)")
    need_modules("pylsp reports syntax errors through pyflakes: pip install pyflakes", "pyflakes")
    return found


@attrs.define
class Setup:
    hub: Hub
    backend: ScriptedBackend
    lsp: LspManager
    engine: Engine
    bus: EventBus
    ws: Path
    ws_id: str


@pytest.fixture
async def lsp_daemon(tmp_path: Path) -> AsyncIterator[Setup]:
    """tests/conftest.py's real_tools, with the language servers as the run's diagnostics;
    a workspace's servers end within 0.2 s of its last conversation's deletion."""
    pylsp()
    backend = ScriptedBackend()
    bus = EventBus()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    hub: Hub | None = None
    lsp = LspManager(in_use=lambda ws: hub is not None and workspace_in_use(hub, ws), sweep_s=0.2, wait_s=WAIT_S)
    env = Env(engine=engine, bus=bus, store=store, registry=build_registry(Config(data_dir=tmp_path / "data")),
              resolve_workspace=lambda _: None, plans=PlanFiles(store.agent_dir / "plans"), diagnostics=lsp)
    hub = Hub(env, store)
    folder = tmp_path / "project"
    folder.mkdir()
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(lsp.run)
        await nursery.start(hub.run)
        ws = await hub.add_workspace(str(folder))
        yield Setup(hub, backend, lsp, engine, bus, Path(ws.path), ws.id)
        hub.close()
        await hub.wait_stopped()
        lsp.close()
        with trio.fail_after(10):
            await lsp.wait_stopped()
        engine.close()


async def run_tool(s: Setup, conv, name: str, **args):
    """One round of the model calling `name`, then a closing answer; the call's item."""
    s.backend.push({"tool_calls": [{"name": name, "arguments": args}]}, {"text": "ok"})
    await conv.send_message(f"{name} please")
    await wait_state(conv, "idle", timeout=20)
    return tool_items(conv)[-1]


def python_server(s: Setup) -> LanguageServer:
    server = s.lsp.server(s.ws, "python")
    assert server is not None
    return server


def our_pylsps() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "pylsp" in " ".join(p.cmdline())]


async def test_a_syntax_error_comes_back_with_the_edit_and_its_fix_gets_none(lsp_daemon: Setup) -> None:
    s = lsp_daemon
    conv = await s.hub.create(workspace=s.ws_id, mode="full")
    card = await run_tool(s, conv, "write_file", path="src/a.py", content=BROKEN)
    assert card.state == "done", card.result
    assert "pylsp reports 1 error in src/a.py:" in card.result
    assert "src/a.py:1:7: error: invalid syntax" in card.result or "src/a.py:1:8: error:" in card.result
    # The model reads it as the call's result.
    tool_msgs = [m for m in s.backend.turns[-1].messages if m["role"] == "tool"]
    assert "src/a.py:1:" in tool_msgs[-1]["content"]
    fix = {"old_text": "def f(:", "new_text": "def f():"}
    card = await run_tool(s, conv, "edit_file", path="src/a.py", edits=[fix])
    assert card.state == "done", card.result
    assert "reports" not in card.result and "error" not in card.result
    assert (s.ws / "src" / "a.py").read_text() == FIXED
    # An undefined name is pyflakes' error too, and a warning follows the errors.
    card = await run_tool(s, conv, "write_file", path="src/a.py", content="import os\nprint(nowhere)\n")
    lines = card.result.splitlines()
    assert "pylsp reports 1 error and 1 warning in src/a.py:" in lines
    at = lines.index("pylsp reports 1 error and 1 warning in src/a.py:")
    assert lines[at + 1].startswith("src/a.py:2:7: error: undefined name 'nowhere'")
    assert lines[at + 2].startswith("src/a.py:1:1: warning: 'os' imported but unused")
    assert python_server(s).starts == 1


async def test_a_file_no_server_covers_gets_nothing_and_costs_nothing(lsp_daemon: Setup) -> None:
    s = lsp_daemon
    conv = await s.hub.create(workspace=s.ws_id, mode="full")
    card = await run_tool(s, conv, "write_file", path="notes.txt", content="def f(:\n")
    assert card.state == "done" and "reports" not in card.result
    assert s.lsp.servers == () and our_pylsps() == []
    started = time.perf_counter()
    for _ in range(1000):
        assert await s.lsp.after_edit(s.ws, "notes.txt") is None
    assert time.perf_counter() - started < 0.5  # a name looked up; no task, no thread, no process
    assert s.lsp.servers == ()


async def test_the_server_is_one_process_for_several_edits(lsp_daemon: Setup) -> None:
    s = lsp_daemon
    first = await s.hub.create(workspace=s.ws_id, mode="full")
    second = await s.hub.create(workspace=s.ws_id, mode="full")
    pids = set()
    for i, conv in enumerate([first, second, first, second]):
        card = await run_tool(s, conv, "write_file", path=f"m{i}.py", content=BROKEN if i % 2 else FIXED)
        assert ("reports 1 error" in card.result) == bool(i % 2), card.result
        pids.add(python_server(s).pid)
    server = python_server(s)
    assert server.starts == 1 and len(pids) == 1 and server.state == "running"
    assert [p.pid for p in our_pylsps()] == [server.pid]
    (row,) = [r for r in s.lsp.listing() if r["language"] == "python"]
    assert row == {"language": "python", "command": shutil.which("pylsp", path=search_path()),
                   "workspace": str(s.ws), "state": "running", "pid": server.pid}


async def test_a_crash_is_restarted_once_then_reported_off(lsp_daemon: Setup) -> None:
    s = lsp_daemon
    conv = await s.hub.create(workspace=s.ws_id, mode="full")
    card = await run_tool(s, conv, "write_file", path="a.py", content=BROKEN)
    assert "reports 1 error" in card.result
    server = python_server(s)
    first = server.pid
    os.killpg(first, signal.SIGKILL)
    await wait_for(lambda: server.crashes == 1 and server.state == "stopped")
    card = await run_tool(s, conv, "write_file", path="a.py", content=BROKEN)
    assert "reports 1 error" in card.result  # started again, and the file opened anew
    assert server.starts == 2 and server.pid != first
    os.killpg(server.pid, signal.SIGKILL)
    await wait_for(lambda: server.state == "off")
    card = await run_tool(s, conv, "write_file", path="a.py", content=BROKEN)
    assert card.state == "done" and OFF in card.result
    assert "pylsp ended by itself 2 times" in card.result and "reports" not in card.result
    card = await run_tool(s, conv, "write_file", path="a.py", content=BROKEN)
    assert card.state == "done" and OFF not in card.result and "reports" not in card.result  # said once
    assert server.starts == 2 and our_pylsps() == []
    ctx = DaemonContext(config=Config(data_dir=s.ws.parent / "data"), hub=s.hub, engine=s.engine, bus=s.bus, lsp=s.lsp)
    resp = await create_app(ctx).test_client().get("/api/agent", scope_base={"client": ("127.0.0.1", 40000)})
    (row,) = [r for r in (await resp.get_json())["lsp"] if r["language"] == "python"]
    assert row["state"] == "off" and "ended by itself 2 times" in row["error"] and row["workspace"] == str(s.ws)
    resp = await create_app(ctx).test_client().get("/api/agent", scope_base={"client": ("192.0.2.7", 40000)})
    assert (await resp.get_json())["lsp"] == []  # programs and folders of this computer: local only


async def test_the_last_conversation_deleted_ends_its_server(lsp_daemon: Setup) -> None:
    s = lsp_daemon
    first = await s.hub.create(workspace=s.ws_id, mode="full")
    second = await s.hub.create(workspace=s.ws_id, mode="full")
    await run_tool(s, first, "write_file", path="a.py", content=FIXED)
    pgid = python_server(s).pid
    await s.hub.delete(first.id)
    await trio.sleep(0.6)  # three sweeps: the other conversation still works there
    assert python_server(s).state == "running" and group_alive(pgid)
    await s.hub.delete(second.id)
    await wait_for(lambda: s.lsp.servers == () and not group_alive(pgid))


async def broken_edit(lsp: LspManager, nursery: trio.Nursery, ws: Path) -> LanguageServer:
    """Start `lsp` in `nursery`, edit a.py of `ws` with a syntax error: its server, the
    error reported."""
    await nursery.start(lsp.run)
    (ws / "a.py").write_text(BROKEN)
    assert "reports 1 error" in (await lsp.after_edit(ws, "a.py") or "")
    server = lsp.server(ws, "python")
    assert server is not None
    return server


async def test_the_servers_group_ends_at_close_and_when_idle(tmp_path: Path) -> None:
    # A server that started a child of its own: the child is in its group and ends with it.
    command = ["sh", "-c", f"sleep 300 & exec {pylsp()}"]
    # Idle after 0.3 s: less than an edit takes (pylsp alone waits 0.5 s before it lints),
    # so an edit in hand must hold the server.
    lsp = LspManager(commands={"python": command}, idle_s=0.3, wait_s=WAIT_S)
    async with trio.open_nursery() as nursery:
        server = await broken_edit(lsp, nursery, tmp_path)
        pgid = server.pid
        assert any(p.name() == "sleep" for p in psutil.process_iter() if _in_group(p, pgid))
        # Idle: the whole group ends; it is no crash, and the next edit starts it again.
        await wait_for(lambda: server.state == "stopped" and not group_alive(pgid), timeout=15)
        assert server.crashes == 0
        assert "reports 1 error" in (await lsp.after_edit(tmp_path, "a.py") or "")
        assert server.starts == 2
        pgid = server.pid
        lsp.close()
        with trio.fail_after(10):
            await lsp.wait_stopped()
        # SIGKILL is delivered a moment after it is sent: a bounded wait, not a sleep.
        await wait_for(lambda: not group_alive(pgid), timeout=5)


@pytest.mark.slow(reason="the code it tests starts processes (LspManager)")
async def test_an_edit_waits_at_most_its_limit_and_the_start_goes_on(tmp_path: Path) -> None:
    assert DIAGNOSTICS_WAIT_S == 3.0
    # `sleep` never answers initialize: the edit gives up at its limit, the start does not.
    lsp = LspManager(commands={"python": ["sleep", "300"]}, wait_s=0.3, start_timeout=2.0)
    (tmp_path / "a.py").write_text(BROKEN)
    async with trio.open_nursery() as nursery:
        await nursery.start(lsp.run)
        started = trio.current_time()
        assert await lsp.after_edit(tmp_path, "a.py") is None
        assert trio.current_time() - started < 1.0
        server = lsp.server(tmp_path, "python")
        assert server is not None and server.state == "starting"
        # Then its start fails (no answer within start_timeout): a crash like any other.
        await wait_for(lambda: server.crashes == 1 and server.state == "stopped")
        assert "did not answer initialize within 2 s" in server.last_end
        lsp.close()


@pytest.mark.slow(reason="the code it tests starts processes (LspManager)")
async def test_a_daemon_cancelled_ends_the_group_and_is_no_crash(tmp_path: Path) -> None:
    lsp = LspManager(wait_s=WAIT_S)
    async with trio.open_nursery() as nursery:
        server = await broken_edit(lsp, nursery, tmp_path)
        pgid = server.pid
        nursery.cancel_scope.cancel()
    await wait_for(lambda: not group_alive(pgid), timeout=5)
    assert server.crashes == 0 and server.state == "stopped"


def _in_group(p: psutil.Process, pgid: int) -> bool:
    try:
        return os.getpgid(p.pid) == pgid
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False


async def test_the_daemon_runs_its_servers_lists_them_and_ends_them(tmp_path: Path) -> None:
    pylsp()
    folder = tmp_path / "project"
    folder.mkdir()
    # Two edits: the first starts pylsp, which may take longer than the 3 s an edit waits
    # on a loaded machine; the second finds it running.
    calls = [{"name": "write_file", "arguments": {"path": "a.py", "content": text}} for text in (FIXED, BROKEN)]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"tool_calls": [calls[0]]}, {"tool_calls": [calls[1]]},
                                             {"text": "Wrote it."}]}))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()["id"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "write"})
            body = await wait_http_state(c, cid, "idle")
            card = [i for i in body["items"] if i["kind"] == "tool"][-1]
            assert "pylsp reports 1 error in a.py:" in card["result"], card
            rows = (await c.get("/api/agent")).json()["lsp"]
            (row,) = [r for r in rows if r["language"] == "python"]
            assert row["state"] == "running" and row["workspace"] == str(folder.resolve())
            pgid = row["pid"]
            assert group_alive(pgid)
    # The daemon's shutdown ended the server's whole group.
    await wait_for(lambda: not group_alive(pgid), timeout=5)
    assert "the language servers took longer" not in d.stderr()
