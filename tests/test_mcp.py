"""MCP servers (actors/peers/mcp/servers.py, mcp_wire.py, mcp_config.py) against real server processes.

The servers are tests/mcp_server.py (written with the official `mcp` SDK, run with this
Python as a real stdio subprocess) and, where node and the package are installed (.ci/run
does it), the reference `@modelcontextprotocol/server-everything`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import psutil
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.errors import ToolError
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.peers.jsonrpc import (
    MAX_SCHEMA_BYTES,
    MAX_TOOLS,
    PROTOCOL_VERSION,
    Ignored,
    LineBuffer,
    Notification,
    Request,
    Response,
    WireError,
    call_result,
    parse,
    tool_list,
)
from actors.peers.mcp.config import DEFAULT_TIMEOUT_MS, McpConfig, ServerSpec, load_config, parse_config
from actors.peers.mcp.manager import McpManager
from actors.peers.mcp.servers import McpUnavailable
from actors.runs.env import Env
from actors.tools.files import ReadFile
from actors.tools.registry import Registry, ToolContext
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.server import build_registry
from bmoe_daemon.store import Store
from tests.daemon_proc import run_daemon
from tests.peers import need_peer
from tests.waiting import wait_state

SERVER = Path(__file__).with_name("mcp_server.py")
TEST_TOOLS = ["t_echo", "t_fail", "t_hang", "t_crash", "t_shout", "t_slow", "t_pid"]
STOP_LIMIT_S = 3.0
EVERYTHING_VERSION = "2026.1.26"  # the version .ci/run installs


def spec(name: str = "t", *args: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> ServerSpec:
    return ServerSpec(name=name, command=sys.executable, args=(str(SERVER), *args), timeout_ms=timeout_ms)


@asynccontextmanager
async def servers(*specs: ServerSpec, **kwargs: float) -> AsyncIterator[McpManager]:
    manager = McpManager(McpConfig(tuple(specs)), **kwargs)
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        try:
            yield manager
        finally:
            manager.close()


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def wait_gone(pids: list[int], limit: float = STOP_LIMIT_S) -> float:
    """Seconds until none of `pids` is alive; fails past `limit`."""
    start = trio.current_time()
    with trio.fail_after(limit):
        while any(alive(p) for p in pids):
            await trio.sleep(0.02)
    return trio.current_time() - start


async def wait_children(pid: int, count: int = 1) -> list[int]:
    with trio.fail_after(10):
        while True:
            try:
                kids = [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except psutil.NoSuchProcess:
                kids = []
            if len(kids) >= count:
                return kids
            await trio.sleep(0.02)


CTX = ToolContext(conversation="c", workspace=None, mode="full")


# ---- the wire, without I/O ----


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20), st.data())
def test_line_buffer_gives_the_same_lines_however_the_bytes_arrive(lines, data):
    stream = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    buf = LineBuffer()
    got: list[bytes] = []
    last = 0
    for cut in [*cuts, len(stream)]:
        got += buf.feed(stream[last:cut])
        last = cut
    assert got == [line[:-1] if line.endswith(b"\r") else line for line in lines]
    assert buf.pending == 0


def test_line_buffer_refuses_an_endless_line():
    buf = LineBuffer(limit=10)
    assert buf.feed(b"0123456789") == []
    with pytest.raises(WireError):
        buf.feed(b"x")


def test_line_buffer_reads_a_line_fed_in_small_pieces_in_linear_time():
    # Before, every feed searched the whole pending line again: 4 MiB in 64-byte
    # pieces was 137 GB of searching (many seconds on the event loop).
    line = b"x" * (4 * 1024 * 1024)
    buf = LineBuffer()
    started = time.process_time()
    for i in range(0, len(line), 64):
        assert not buf.feed(line[i : i + 64])
    assert buf.feed(b"\r\nnext") == [line] and buf.pending == 4
    assert time.process_time() - started < 2.0


@given(st.binary(max_size=200))
def test_parse_never_raises(raw):
    assert isinstance(parse(raw), (Response, Request, Notification, Ignored))


def test_parse_kinds():
    assert parse(b'{"jsonrpc":"2.0","id":3,"result":{"a":1}}') == Response(3, {"a": 1})
    err = parse(b'{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}')
    assert isinstance(err, Response) and err.error == {"code": -1, "message": "no"}
    assert parse(b'{"jsonrpc":"2.0","id":"x","method":"ping"}') == Request("x", "ping")
    assert parse(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}') == Notification(
        "notifications/tools/list_changed"
    )
    for noise in (b"Starting server...", b"[1]", b'{"id": true, "result": 1}', b""):
        assert isinstance(parse(noise), Ignored)


def test_call_result_reads_text_parts_and_errors():
    result = {"content": [{"type": "text", "text": "one"}, {"type": "image", "data": "..", "mimeType": "image/png"},
                          {"type": "resource", "resource": {"uri": "x", "text": "two"}}, "junk"]}
    assert call_result(result) == ("one\n[a image part (image/png) is not shown here]\ntwo", False)
    assert call_result({"content": [{"type": "text", "text": "bad"}], "isError": True}) == ("bad", True)
    assert call_result({"content": [], "structuredContent": {"n": 1}}) == ('{"n": 1}', False)
    assert call_result({"content": []})[0] == "The tool answered with no text."
    assert call_result({"isError": True}) == ("The tool reported an error without saying why.", True)
    with pytest.raises(WireError):
        call_result([])


def test_tool_list_pages_and_leaves_out_what_it_cannot_use():
    tools, cursor, left_out = tool_list({"tools": [
        {"name": "a", "description": "A.", "inputSchema": {"type": "object"}},
        {"name": "b"},
        {"description": "no name"},
        {"name": "c", "inputSchema": "nope"},
        {"name": "d", "annotations": {"title": "Dee"}},
    ], "nextCursor": "p2"})
    assert [t.name for t in tools] == ["a", "b", "d"]
    assert tools[1].input_schema == {"type": "object", "properties": {}} and tools[1].description == ""
    assert tools[2].title == "Dee"
    assert cursor == "p2" and len(left_out) == 2
    with pytest.raises(WireError):
        tool_list({"nope": []})


def test_tool_list_reads_a_bounded_part_of_what_a_server_lists():
    # A page of 100,000 tools, names of a megabyte, a schema of a megabyte: before, every
    # one was read (and a warning logged for each), and a huge schema went to the model
    # with every round.
    many = [{"name": f"t{i}"} for i in range(100_000)]
    tools, _, left_out = tool_list({"tools": many})
    assert len(tools) == MAX_TOOLS
    assert left_out == [f"{100_000 - MAX_TOOLS} tools past the first {MAX_TOOLS} of one page"]
    big = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}}
    tools, _, left_out = tool_list({"tools": [
        {"name": "x" * 1_000_000}, {"name": "fat", "inputSchema": big}, {"name": "ok", "title": "T" * 10_000},
    ]})
    assert [t.name for t in tools] == ["ok"] and len(tools[0].title or "") == 200
    assert left_out == ["a tool whose name is longer than 128 characters",
                        f"fat: its inputSchema is larger than {MAX_SCHEMA_BYTES} bytes"]


# ---- the config ----


def test_config_entries_and_what_is_left_out(tmp_path, caplog):
    data = {"mcpServers": {
        "docs": {"command": "npx", "args": ["-y", "pkg"], "env": {"KEY": "v", "N": 3}, "cwd": "sub", "timeout_ms": 500},
        "plain": {"command": "prog"},
        "remote": {"url": "http://example.invalid/mcp"},
        "bad name!": {"command": "x"},
        "noargs": {"command": "x", "args": "not a list"},
        "slow": {"command": "x", "timeout_ms": 0},
        "nothing": {},
    }}
    with caplog.at_level(logging.WARNING, logger="bmoe.mcp"):
        config = parse_config(data, base=tmp_path)
    docs, plain = config.servers
    assert (docs.name, docs.command, docs.args, docs.timeout_ms) == ("docs", "npx", ("-y", "pkg"), 500)
    assert docs.cwd == str(tmp_path / "sub") and dict(docs.env) == {"KEY": "v", "N": "3"}
    assert plain.timeout_ms == DEFAULT_TIMEOUT_MS == 30_000 and plain.args == ()
    skipped = {s.name: s for s in config.skipped}
    assert set(skipped) == {"remote", "bad name!", "noargs", "slow", "nothing"}
    assert "https://" in skipped["remote"].why and skipped["remote"].command == "http://example.invalid/mcp"
    assert "left out" in caplog.text and "remote" in caplog.text
    env = docs.environment({"PATH": "/bin", "HOME": "/h", "SECRET_TOKEN": "s", "KEY": "old"})
    assert env == {"PATH": "/bin", "HOME": "/h", "KEY": "v", "N": "3"}


def test_load_config_absent_or_broken(tmp_path, caplog):
    assert load_config(tmp_path / "none.json") == McpConfig()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="bmoe.mcp"):
        assert load_config(bad) == McpConfig()
    assert "not usable" in caplog.text
    good = tmp_path / "mcp.json"
    good.write_text(json.dumps({"mcpServers": {"t": {"command": "x"}}}))
    assert [s.name for s in load_config(good).servers] == ["t"]


async def test_load_config_never_waits_on_a_fifo_nor_reads_a_device(tmp_path):
    # Before, a FIFO at mcp.json was opened for reading, which waits for a writer: the
    # daemon never started.
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    try:
        with trio.fail_after(5):
            got = await trio.to_thread.run_sync(load_config, fifo, abandon_on_cancel=True)
    finally:
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))  # frees a reader that did wait
    assert got == McpConfig()
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    assert load_config(zero) == McpConfig()


# ---- one server's actor ----


async def test_tools_are_listed_as_server_tool_and_stderr_goes_to_the_log(caplog):
    caplog.set_level(logging.INFO, logger="bmoe.mcp")
    async with servers(spec("t", "--stdout-noise")) as manager:
        await manager.prepare()
        server = manager.server("t")
        assert server is not None and server.state == "running" and server.starts == 1
        tools = manager.tools()
        assert [t.name for t in tools] == TEST_TOOLS  # both pages of its list
        echo = tools[0]
        assert echo.description == "Answers with the text it is given."
        assert echo.parameters["required"] == ["text"]
        assert echo.is_change({}) and echo.needs_workspace and not echo.offered_read_only and echo.mcp == "t"
        assert (await echo.run({"text": "hi"}, CTX)).result == "echo: hi"
        shout = next(t for t in tools if t.name == "t_shout")
        assert (await shout.run({"text": "a secret for the log only"}, CTX)).result == "printed"
        with trio.fail_after(5):
            while "a secret for the log only" not in caplog.text:
                await trio.sleep(0.01)
        assert "test server: starting" in caplog.text
        fail = next(t for t in tools if t.name == "t_fail")
        with pytest.raises(ToolError, match="it failed: because"):
            await fail.run({"why": "because"}, CTX)
        assert server.starts == 1  # an error result leaves the program running


async def test_crash_mid_call_is_an_error_and_the_next_call_starts_it_again():
    async with servers(spec()) as manager:
        server = manager.server("t")
        first_pid = int((await server.call("pid", {}))[0])
        with pytest.raises(ToolError, match="ended during the call") as err:
            await server.call("crash", {})
        assert "exited with code 3" in str(err.value) and "started again" in str(err.value)
        second_pid = int((await server.call("pid", {}))[0])
        assert second_pid != first_pid and server.starts == 2 and server.state == "running"
        await wait_gone([first_pid])


async def test_a_call_past_its_time_limit_is_an_error_in_plain_words():
    async with servers(spec(timeout_ms=300)) as manager:
        server = manager.server("t")
        pid = server.pid
        await server.ensure_started()
        pid = server.pid
        with pytest.raises(ToolError, match=r"did not answer within 0.3 seconds"):
            await server.call("slow", {"seconds": 30})
        await wait_gone([pid])
        assert (await server.call("echo", {"text": "again"}))[0] == "echo: again"
        assert server.starts == 2


async def test_a_server_that_hangs_at_start_is_failed_after_10_s(mock_clock):
    async with servers(spec("t", "--hang-start"), spec("ok")) as manager:
        await manager.server("ok").ensure_started()  # virtual time stands still meanwhile
        # From here virtual time jumps once every task has waited a tenth of a real second.
        mock_clock.autojump_threshold = 0.1
        start = trio.current_time()
        await manager.prepare()
        waited = trio.current_time() - start
        hung, ok = manager.server("t"), manager.server("ok")
        assert 10 <= waited < 11
        assert hung.state == "failed" and "did not start within 10 s" in hung.error
        assert ok.state == "running"
        assert [t.name for t in manager.tools()] == [n.replace("t_", "ok_") for n in TEST_TOOLS]
        with pytest.raises(McpUnavailable, match="restarts"):
            await hung.call("echo", {})
        await manager.prepare()
        assert hung.starts == 1  # failed until the daemon restarts
        row = next(r for r in manager.listing() if r["name"] == "t")
        assert row["state"] == "failed" and row["tools"] == [] and "10 s" in row["error"]


@pytest.mark.parametrize(
    ("args", "why"),
    [(("--bad-handshake",), "handshake: not today"), (("--exit-at-start",), "ended during its start")],
)
async def test_a_failed_handshake_leaves_the_server_failed(args, why):
    async with servers(spec("t", *args)) as manager:
        await manager.prepare()
        server = manager.server("t")
        assert server.state == "failed" and why in server.error
        await wait_gone([p for p in [server.pid] if p])


async def test_a_command_that_cannot_start_is_failed():
    bad = ServerSpec(name="nope", command="/nonexistent/program")
    async with servers(bad) as manager:
        await manager.prepare()
        assert manager.server("nope").state == "failed"
        assert "could not be started" in manager.server("nope").error


async def test_a_stop_during_a_call_ends_the_program_and_what_it_started():
    async with servers(spec()) as manager:
        server = manager.server("t")
        await server.ensure_started()
        pid = server.pid
        async with trio.open_nursery() as nursery:
            cancel = trio.CancelScope()

            async def call() -> None:
                with cancel:
                    await server.call("hang", {"child": True})

            nursery.start_soon(call)
            kids = await wait_children(pid)
            cancel.cancel()
        took = await wait_gone([pid, *kids])
        assert took < STOP_LIMIT_S
        assert server.state == "stopped"
        assert (await server.call("echo", {"text": "back"}))[0] == "echo: back"
        assert server.starts == 2 and server.pid != pid


async def test_closing_the_manager_leaves_no_process():
    async with servers(spec("a"), spec("b")) as manager:
        await manager.prepare()
        pids = [s.pid for s in manager.servers]
        assert all(pids) and all(alive(p) for p in pids)
    await wait_gone(pids)


async def test_a_name_already_taken_is_left_out():
    registry = Registry([ReadFile()])
    async with servers(spec("a", "--extra-tool", "b_c"), spec("a_b", "--extra-tool", "c"),
                       spec("read", "--extra-tool", "file")) as manager:
        registry.add_source(manager)
        await registry.prepare(workspace=Path("/tmp"), mode="full", local=True)
        names = [t.name for t in registry.offered(workspace=Path("/tmp"), mode="full", local=True)]
        assert names.count("a_b_c") == 1 and names.count("read_file") == 1
        assert registry.get("read_file").__class__ is ReadFile
        assert registry.get("a_b_c").mcp == "a"  # the first server's
        rows = manager.listing(lambda t: registry.get(t.name) is t)
        listed = {r["name"]: [t["name"] for t in r["tools"]] for r in rows}
        assert "a_b_c" in listed["a"] and "a_b_c" not in listed["a_b"] and "read_file" not in listed["read"]


# ---- through a conversation ----


@attrs.define
class McpDaemon:
    hub: Hub
    backend: ScriptedBackend
    manager: McpManager
    folder: Path
    engine: Engine
    bus: EventBus


@pytest.fixture
async def mcp_daemon(tmp_path: Path) -> AsyncIterator[McpDaemon]:
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    manager = McpManager(McpConfig((spec(),)))
    registry = build_registry(Config(data_dir=tmp_path / "data"), mcp=manager)
    env = Env(engine=engine, bus=EventBus(), store=store, registry=registry, resolve_workspace=lambda _: None)
    hub = Hub(env, store)
    folder = tmp_path / "ws"
    folder.mkdir()
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(manager.run)
        await nursery.start(hub.run)
        yield McpDaemon(hub, backend, manager, folder, engine, env.bus)
        # A conversation closed while its finished run still flushes waits CLEANUP_S
        # (conversation.py); let the runs' last saves land first.
        for conv in hub.conversations():
            await conv.flush()
        hub.close()
        while hub.statistics().state != "stopped":
            await trio.sleep(0.01)
        manager.close()
        engine.close()


def tool_items(conv):
    return [i for i in conv.items if i.kind == "tool"]


def call(name: str, **args: object) -> dict:
    return {"tool_calls": [{"name": name, "arguments": args}]}


async def test_full_mode_calls_the_server_tool_at_once(mcp_daemon):
    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.push(call("t_echo", text="hi"), {"text": "Done."})
    await conv.send_message("go")
    await wait_state(conv, "idle", timeout=15)
    (card,) = tool_items(conv)
    assert (card.tool, card.state, card.result, card.mcp) == ("t_echo", "done", "echo: hi", "t")
    assert card.title == "echo (t)" and card.args == {"text": "hi"}
    offered = {t.name: t for t in d.backend.turns[0].tools}
    assert set(TEST_TOOLS) <= set(offered) and offered["t_echo"].parameters["required"] == ["text"]
    assert conv.items[-1].text == "Done."


async def test_without_workspace_tools_the_mcp_tools_come_only_when_asked_for(mcp_daemon):
    from actors.errors import Invalid
    from actors.record.client_tools import checked

    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    mine = checked("read_file", "The editor's own read.", {"type": "object"}, None)  # a built-in's name: free here
    conv = await d.hub.create(workspace=ws.id, mode="full", workspace_tools=False, mcp_tools=True,
                              client_tools=(mine,))
    d.backend.push(call("t_echo", text="hi"), {"text": "Done."})
    await conv.send_message("go")
    await wait_state(conv, "idle", timeout=15)
    assert {t.name for t in d.backend.turns[-2].tools} == {*TEST_TOOLS, "read_file"}
    (card,) = tool_items(conv)
    assert (card.state, card.mcp) == ("done", "t")
    with pytest.raises(Invalid, match="'t_echo' is taken: an MCP tool"):  # listed now: taken when asked for
        await d.hub.create(workspace=ws.id, workspace_tools=False, mcp_tools=True,
                           client_tools=(checked("t_echo", "", {"type": "object"}, None),))
    plain = await d.hub.create(workspace=ws.id, mode="full", workspace_tools=False, client_tools=(mine,))
    await plain.send_message("go")
    await wait_state(plain, "idle", timeout=15)
    assert [t.name for t in d.backend.turns[-1].tools] == ["read_file"]


async def test_ask_mode_shows_the_arguments_on_a_card_before_the_call(mcp_daemon):
    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    conv = await d.hub.create(workspace=ws.id, mode="ask")
    d.backend.push(call("t_echo", text="please"), {"text": "Done."})
    await conv.send_message("go")
    await wait_state(conv, "waiting", timeout=15)
    (card,) = tool_items(conv)
    assert card.state == "waiting" and card.args == {"text": "please"} and card.result is None
    await conv.approve(card.id, True)
    await wait_state(conv, "idle", timeout=15)
    assert tool_items(conv)[0].result == "echo: please"


async def test_no_mcp_tools_in_read_only_without_a_workspace_or_from_the_network(mcp_daemon):
    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    for kwargs, local in (({"workspace": ws.id, "mode": "read_only"}, True), ({"mode": "full"}, True),
                          ({"workspace": ws.id, "mode": "ask"}, False)):
        conv = await d.hub.create(**kwargs)
        await conv.send_message("hello", local=local)
        await wait_state(conv, "idle", timeout=15)
        names = {t.name for t in d.backend.turns[-1].tools}
        assert not names & set(TEST_TOOLS), kwargs
    assert d.manager.server("t").starts == 0  # never wanted, never started


async def test_a_stop_during_an_mcp_call_ends_its_program_within_3_s(mcp_daemon):
    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.push(call("t_hang", child=True))
    await conv.send_message("hang")
    server = d.manager.server("t")
    with trio.fail_after(10):
        while not (tool_items(conv) and tool_items(conv)[0].state == "running" and server.pid):
            await trio.sleep(0.01)
    pid = server.pid
    kids = await wait_children(pid)
    start = trio.current_time()
    assert await conv.stop() is True
    await wait_gone([pid, *kids], limit=STOP_LIMIT_S - (trio.current_time() - start))
    (card,) = tool_items(conv)
    assert card.state == "error" and conv.info.state == "idle"
    d.backend.push(call("t_echo", text="again"), {"text": "Back."})
    await conv.send_message("again")
    await wait_state(conv, "idle", timeout=15)
    assert tool_items(conv)[-1].result == "echo: again" and server.starts == 2


async def test_a_crash_mid_call_is_an_error_result_in_the_conversation(mcp_daemon):
    d = mcp_daemon
    ws = await d.hub.add_workspace(str(d.folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.push(call("t_crash"), call("t_echo", text="after"), {"text": "Done."})
    await conv.send_message("go")
    await wait_state(conv, "idle", timeout=15)
    crash, echo = tool_items(conv)
    assert crash.state == "error" and "ended during the call" in crash.result
    assert "crashing now" not in crash.result  # stderr is the log's, not the model's
    assert (echo.state, echo.result) == ("done", "echo: after")
    # The model read the error as the call's result.
    tool_msgs = [m for m in d.backend.turns[1].messages if m["role"] == "tool"]
    assert "ended during the call" in tool_msgs[0]["content"]


async def test_the_agent_route_lists_servers_to_a_local_client_only(mcp_daemon, tmp_path):
    d = mcp_daemon

    async def get(config: Config, scope: dict) -> dict:
        ctx = DaemonContext(config=config, hub=d.hub, engine=d.engine, bus=d.bus, mcp=d.manager)
        resp = await create_app(ctx).test_client().get("/api/agent", scope_base=scope)
        assert resp.status_code == 200
        return await resp.get_json()

    builtin = [{"id": "builtin", "name": "Built-in agent", "available": True, "missing": []}]
    body = await get(Config(data_dir=tmp_path), {"client": ("192.0.2.7", 40000)})
    assert body == {"tools": True, "commands": True, "agents": builtin, "mcp": [], "lsp": [], "helpers": 2,
                    "helper_rounds": 20}
    assert d.manager.server("t").starts == 0  # a network request starts nothing
    body = await get(Config(data_dir=tmp_path, chat_only=True), {"client": ("127.0.0.1", 40000)})
    assert (body["tools"], body["commands"], body["mcp"]) == (False, False, [])
    body = await get(Config(data_dir=tmp_path), {"client": ("127.0.0.1", 40000)})
    (row,) = body["mcp"]
    assert row["state"] == "running" and [t["name"] for t in row["tools"]] == TEST_TOOLS


# ---- the daemon process ----

SCRIPT = {"rounds": [
    {"when": "hang", "tool_calls": [{"name": "t_hang", "arguments": {"child": True}}]},
    {"when": "echo", "tool_calls": [{"name": "everything_echo", "arguments": {"message": "hi"}}]},
    {"when": "echo", "text": "Echoed."},
]}


async def _conversation(c, folder: Path, text: str) -> str:
    ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
    conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()
    r = await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": text})
    assert r.status_code == 202
    return conv["id"]


async def test_daemon_lists_servers_and_its_exit_leaves_no_mcp_process(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {
        "t": {"command": sys.executable, "args": [str(SERVER)]},
        "remote": {"url": "http://example.invalid/mcp"},  # plain http off this network: left out
    }}))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    pids: list[int] = []
    async with run_daemon(data, "--scripted", str(tmp_path / "script.json")) as d:
        async with d.client() as c:
            body = (await c.get("/api/agent")).json()
            assert body["tools"] is True and body["commands"] is True
            assert body["agents"][0] == {"id": "builtin", "name": "Built-in agent", "available": True, "missing": []}
            assert {a["id"] for a in body["agents"][1:]} >= {"opencode", "claude-code", "codex", "pi"}  # over ACP
            t, remote = body["mcp"]
            assert (t["name"], t["state"]) == ("t", "running") and t["command"].endswith("mcp_server.py")
            assert [x["name"] for x in t["tools"]] == TEST_TOOLS and "error" not in t
            assert t["tools"][0] == {"name": "t_echo", "description": "Answers with the text it is given."}
            assert remote["state"] == "failed" and "https://" in remote["error"] and remote["tools"] == []
            assert remote["remote"] is True and remote["url"] == "http://example.invalid/mcp"
            cid = await _conversation(c, folder, "hang")
            with trio.fail_after(15):
                while True:
                    items = (await c.get(f"/api/conversations/{cid}")).json()["items"]
                    if any(i.get("state") == "running" for i in items):
                        break
                    await trio.sleep(0.05)
            pids = [p.pid for p in psutil.Process(d.proc.pid).children(recursive=True)]
            with trio.fail_after(10):
                while len(pids) < 2:  # the server and the child its hanging call started
                    await trio.sleep(0.05)
                    pids = [p.pid for p in psutil.Process(d.proc.pid).children(recursive=True)]
    assert d.proc.returncode == 0
    await wait_gone(pids)
    assert "test server: starting" in d.stderr() and "left out" in d.stderr()


def everything_entry() -> Path | None:
    folder = os.environ.get("BMOE_MCP_EVERYTHING_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bmoe-daemon", "ci", "npm"
    )
    entry = Path(folder) / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    try:
        version = json.loads((entry.parent.parent / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return entry if version == EVERYTHING_VERSION and shutil.which("node") else None


@pytest.fixture
def everything() -> Path:
    """The reference server's entry point; `need_peer` without it (in a plain fixture:
    raised inside the trio test, a skip would lose its reason)."""
    entry = everything_entry()
    if entry is None:
        need_peer(
            f"node or @modelcontextprotocol/server-everything@{EVERYTHING_VERSION} is not installed (.ci/run does it)"
        )
    return entry


async def test_the_reference_server_answers_through_a_full_mode_conversation(tmp_path, everything):
    entry = everything
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"everything": {"command": "node", "args": [str(entry), "stdio"]}}}))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--scripted", str(tmp_path / "script.json"),
                          "--mcp-servers-config", str(config)) as d:
        async with d.client() as c:
            (row,) = (await c.get("/api/agent")).json()["mcp"]
            assert row["state"] == "running" and "everything_echo" in [t["name"] for t in row["tools"]]
            cid = await _conversation(c, folder, "echo")
            with trio.fail_after(20):
                while True:
                    body = (await c.get(f"/api/conversations/{cid}")).json()
                    if body["state"] == "idle" and body["items"][-1]["kind"] == "assistant":
                        break
                    await trio.sleep(0.05)
            card = next(i for i in body["items"] if i["kind"] == "tool")
            assert (card["tool"], card["state"], card["mcp"]) == ("everything_echo", "done", "everything")
            assert card["result"] == "Echo: hi" and card["args"] == {"message": "hi"}
            assert body["items"][-1]["text"] == "Echoed."


def test_protocol_offered():
    assert PROTOCOL_VERSION == "2024-11-05"
