"""The person's hooks (actors/policy/hooks.py, actors/policy/hooks_config.py): real sh scripts as
hooks, fired by the built-in run over the scripted backend, and GET /api/hooks over a
real daemon process."""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import shlex
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.policy.hooks import HOOKS_FILE, HookRunner
from actors.policy.hooks_config import HookEvent, NameGlob, parse_config
from actors.process import is_provider_key
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.tools.registry import Registry, ToolContext, ToolOutcome
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import Store
from tests.conftest import EchoTool, NoteTool
from tests.daemon_proc import run_daemon
from tests.filler import numbered
from tests.waiting import wait_for, wait_http_state, wait_state

SECRET = "sk-test-provider-key-0123456789"


@attrs.define
class FakeMcpTool:
    """An MCP server's tool as the registry holds it: `<server>_<tool>`, with `mcp`."""

    name: str
    mcp: str
    description: str = "An MCP tool."
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})
    needs_workspace: bool = False

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return self.name

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome("mcp says hi")


@attrs.define
class Hooked:
    hub: Hub
    backend: ScriptedBackend
    hooks: HookRunner
    echo: EchoTool
    data: Path
    ws: Path
    bin: Path

    def configure(self, config: dict[str, Any]) -> None:
        write_config(self.hooks.path, config)

    def script(self, name: str, body: str) -> str:
        """A `#!/bin/sh` script written to the test's folder; its quoted path."""
        return write_script(self.bin / name, body)


def write_config(path: Path, config: dict[str, Any] | str) -> None:
    """hooks.json written whole and renamed over, as an editor does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(config if isinstance(config, str) else json.dumps(config))
    os.replace(tmp, path)


def write_script(path: Path, body: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return shlex.quote(str(path))


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


async def wait_gone(pid: int, timeout: float = 1.0) -> None:
    await wait_for(lambda: not alive(pid), timeout)


@pytest.fixture
async def hooked(tmp_path: Path) -> AsyncIterator[Hooked]:
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    echo = EchoTool()
    registry = Registry([echo, NoteTool(), FakeMcpTool("docs_search", "docs")])
    hooks = HookRunner(store.agent_dir / HOOKS_FILE, home=tmp_path / "data", tool_of=registry.get, recheck_s=0.0,
                       http_timeout_s=0.5)
    env = Env(engine=engine, bus=EventBus(), store=store, registry=registry, resolve_workspace=lambda _: None,
              plans=PlanFiles(store.agent_dir / "plans"), hooks=hooks)
    hub = Hub(env, store)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hooks.run)
        await nursery.start(hub.run)
        yield Hooked(hub, backend, hooks, echo, tmp_path / "data", ws, tmp_path / "bin")
        hub.close()
        hooks.close()
        engine.close()


async def run_message(h: Hooked, calls: list[dict[str, Any]], *, workspace: bool = True) -> Any:
    """A message whose first round makes `calls`, then answers; the idle conversation."""
    h.backend.push({"tool_calls": calls}, {"text": "Done."})
    ws = (await h.hub.add_workspace(str(h.ws))).id if workspace else None
    conv = await h.hub.create(workspace=ws, mode="full")
    await conv.send_message("go")
    await conv.wait_run_end()
    return conv


def cards(conv: Any) -> list[Any]:
    return [i for i in conv.items if i.kind == "tool"]


def last(h: Hooked) -> list[str | None]:
    return [(row["last"] or {}).get("result") for row in h.hooks.listing()["hooks"]]


ECHO = {"name": "echo", "arguments": {"text": "hello"}}


# ---- blocking, failing, timing out ----


async def test_a_pre_tool_use_hook_that_exits_2_blocks_the_call_and_the_model_reads_why(hooked):
    block = hooked.script("block.sh", 'cat >/dev/null\necho "echo is off today; write a note instead" >&2\nexit 2')
    hooked.configure({"pre_tool_use": [{"matcher": "echo", "command": block}]})
    conv = await run_message(hooked, [ECHO])
    assert hooked.echo.calls == []  # never ran
    [card] = cards(conv)
    assert card.state == "denied"
    assert "echo is off today; write a note instead" in card.result
    # The model's next turn reads the hook's words as the call's result.
    assert "echo is off today; write a note instead" in json.dumps(hooked.backend.turns[-1].messages)
    assert last(hooked) == ["blocked"]


async def test_the_first_block_stops_the_hooks_after_it_and_hooks_run_in_file_order(hooked, tmp_path):
    log_file = tmp_path / "order.log"
    first = hooked.script("first.sh", f"echo first >> {log_file}")
    block = hooked.script("block.sh", f"echo block >> {log_file}\necho no >&2\nexit 2")
    third = hooked.script("third.sh", f"echo third >> {log_file}")
    hooked.configure({"pre_tool_use": [{"command": first}, {"command": block}, {"command": third}]})
    conv = await run_message(hooked, [ECHO])
    assert log_file.read_text().split() == ["first", "block"]
    assert cards(conv)[0].state == "denied"
    assert last(hooked) == ["ran", "blocked", None]


async def test_a_slow_hook_times_out_is_logged_and_blocks_nothing(hooked, caplog):
    slow = hooked.script("slow.sh", "sleep 30\nexit 2")
    hooked.configure({"pre_tool_use": [{"command": slow, "timeout_s": 0.5}]})
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="bmoe.hooks"):
        conv = await run_message(hooked, [ECHO])
    assert time.monotonic() - t0 < 5
    assert cards(conv)[0].state == "done" and hooked.echo.calls == [{"text": "hello"}]
    assert last(hooked) == ["timed_out"]
    assert any("timed out after 0.5 s" in r.getMessage() for r in caplog.records)


async def test_a_crashing_hook_blocks_nothing(hooked, caplog):
    crash = hooked.script("crash.sh", "echo about to fall over >&2\nkill -SEGV $$")
    missing = shlex.quote(str(hooked.bin / "not-there.sh"))
    two_after = hooked.script("two.sh", "exit 2")  # 2 blocks only before a call
    hooked.configure({"pre_tool_use": [{"command": crash}, {"command": missing}],
                      "post_tool_use": [{"command": two_after}]})
    with caplog.at_level(logging.WARNING, logger="bmoe.hooks"):
        conv = await run_message(hooked, [ECHO])
    assert cards(conv)[0].state == "done" and hooked.echo.calls == [{"text": "hello"}]
    assert last(hooked) == ["failed", "failed", "failed"]
    rows = hooked.hooks.listing()["hooks"]
    assert "about to fall over" in rows[0]["last"]["detail"]
    assert rows[1]["last"]["detail"].startswith("exit code 127")
    assert any("about to fall over" in r.getMessage() for r in caplog.records)


async def test_a_background_child_a_hook_leaves_is_ended_with_its_group(hooked, tmp_path):
    pid_file = tmp_path / "child.pid"
    leaver = hooked.script("leaver.sh", f"sleep 300 &\necho $! > {pid_file}\nexit 0")
    hooked.configure({"post_tool_use": [{"command": leaver}]})
    conv = await run_message(hooked, [ECHO])
    assert cards(conv)[0].state == "done"
    pid = int(pid_file.read_text())
    await wait_gone(pid)
    assert last(hooked) == ["ran"]


async def test_a_stop_while_a_hook_runs_ends_its_group_within_a_second(hooked, tmp_path):
    pid_file = tmp_path / "pids"
    hang = hooked.script("hang.sh", f"sleep 60 &\necho $$ $! > {pid_file}\nwait")
    hooked.configure({"pre_tool_use": [{"command": hang}]})
    hooked.backend.push({"tool_calls": [ECHO]}, {"text": "Done."})
    ws = await hooked.hub.add_workspace(str(hooked.ws))
    conv = await hooked.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("go")
    await wait_for(lambda: pid_file.exists() and len(pid_file.read_text().split()) == 2)
    shell, child = map(int, pid_file.read_text().split())
    t0 = time.monotonic()
    await conv.stop()
    await wait_gone(shell)
    await wait_gone(child)
    assert time.monotonic() - t0 < 1.0
    await wait_state(conv, "idle")
    assert hooked.echo.calls == []
    assert cards(conv)[0].state == "denied"
    assert last(hooked) == ["stopped"]


# ---- what a hook is told ----


async def test_a_hook_gets_the_event_in_variables_and_on_stdin_without_the_provider_keys(hooked, tmp_path,
                                                                                         monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", SECRET + "-2")
    monkeypatch.setenv("BMOE_API_KEY", "the-daemon-key")
    monkeypatch.setenv("HOOK_TEST_KEPT", "kept")
    out = tmp_path / "out"
    out.mkdir()
    tell = hooked.script("tell.sh", 'env > "$1/env.$BMOE_EVENT"\ncat > "$1/stdin.$BMOE_EVENT"\npwd > "$1/pwd"')
    command = f"{tell} {shlex.quote(str(out))}"
    hooked.configure({event: [{"command": command}] for event in
                      ("session_start", "pre_tool_use", "post_tool_use", "session_end")})
    long_text = numbered("x", 500) + "END"
    conv = await run_message(hooked, [{"name": "echo", "arguments": {"text": long_text}}])
    assert cards(conv)[0].state == "done"

    env = dict(line.split("=", 1) for line in (out / "env.post_tool_use").read_text().splitlines() if "=" in line)
    assert env["BMOE_EVENT"] == "post_tool_use"
    assert env["BMOE_CONVERSATION"] == conv.id
    assert env["BMOE_WORKSPACE"] == str(hooked.ws.resolve())
    assert env["BMOE_TOOL"] == "echo"
    assert json.loads(env["BMOE_TOOL_ARGS"]) == {"text": long_text}
    assert env["BMOE_TOOL_RESULT"] == long_text[:2000]
    assert env["BMOE_TOOL_STATE"] == "done"
    assert env["HOOK_TEST_KEPT"] == "kept"
    for name in ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "BMOE_API_KEY"):
        assert name not in env
    assert SECRET not in (out / "env.post_tool_use").read_text()
    assert "the-daemon-key" not in (out / "env.post_tool_use").read_text()

    told = json.loads((out / "stdin.post_tool_use").read_text())
    assert told == {"event": "post_tool_use", "conversation": conv.id, "workspace": str(hooked.ws.resolve()),
                    "tool": "echo", "args": {"text": long_text}, "result": long_text, "state": "done"}
    before = json.loads((out / "stdin.pre_tool_use").read_text())
    assert (before["event"], before["tool"], before["result"]) == ("pre_tool_use", "echo", None)
    for event in ("session_start", "session_end"):
        told = json.loads((out / f"stdin.{event}").read_text())
        assert (told["event"], told["conversation"], told["tool"]) == (event, conv.id, None)
    assert (out / "pwd").read_text().strip() == str(hooked.ws.resolve())


async def test_the_events_come_in_order_and_a_hook_without_a_workspace_runs_in_the_data_folder(hooked, tmp_path):
    log_file = tmp_path / "events.log"
    note = hooked.script("note.sh", f'echo "$BMOE_EVENT $BMOE_TOOL $(pwd)" >> {log_file}')
    hooked.configure({event: [{"command": note}] for event in
                      ("session_start", "pre_tool_use", "post_tool_use", "session_end")})
    await run_message(hooked, [ECHO], workspace=False)
    data = str(hooked.data.resolve())
    assert log_file.read_text().splitlines() == [
        f"session_start  {data}", f"pre_tool_use echo {data}", f"post_tool_use echo {data}", f"session_end  {data}",
    ]


def test_provider_keys_are_told_apart_from_other_variables():
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "API_KEY",
                 "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "REPLICATE_API_TOKEN",
                 "azure_openai_api_key"):
        assert is_provider_key(name), name
    for name in ("PATH", "HOME", "LANG", "KEYBOARD", "SSH_AUTH_SOCK", "PYTHONPATH", "API_KEYS_DIR"):
        assert not is_provider_key(name), name


# ---- the matcher ----


async def fire_pre(hooks: HookRunner, tool: str) -> str | None:
    return await hooks.fire(HookEvent("pre_tool_use", "c1", None, tool=tool, args={}))


async def test_matchers_on_built_in_and_mcp_tools(hooked, tmp_path):
    log_file = tmp_path / "matched.log"
    matchers = ["echo", "ec?o", "*", "mcp_*", "mcp_docs_*", "docs_*", "mcp_echo", "note"]
    hooked.configure({"pre_tool_use": [
        {"matcher": m, "command": f"echo {shlex.quote(m)} >> {log_file}"} for m in matchers
    ]})

    async def matched(tool: str) -> list[str]:
        log_file.write_text("")
        assert await fire_pre(hooked.hooks, tool) is None
        return log_file.read_text().split()

    assert await matched("echo") == ["echo", "ec?o", "*"]
    # An MCP tool (it has `mcp`): by its name as the model calls it, and as mcp_<server>_<tool>.
    assert await matched("docs_search") == ["*", "mcp_*", "mcp_docs_*", "docs_*"]
    # A name no tool has is no MCP tool.
    assert await matched("docs_other") == ["*", "docs_*"]


PIECES = st.text(alphabet="ab_?*", max_size=8)


@given(pattern=PIECES, name=st.text(alphabet="ab_", max_size=12))
def test_name_glob_matches_as_fnmatch_does(pattern: str, name: str) -> None:
    assert NameGlob(pattern).match(name) == fnmatch.fnmatchcase(name, pattern)


@given(name=st.text(alphabet="ab[]!-", max_size=10))
def test_name_glob_takes_other_characters_literally(name: str) -> None:
    assert NameGlob(name).match(name)


def test_name_glob_takes_linear_time_on_a_pathological_pattern() -> None:
    pattern = "*a" * 40 + "*b"
    name = "a" * 20_000
    t0 = time.perf_counter()
    assert not NameGlob(pattern).match(name)
    assert NameGlob(pattern[:-1] + "a").match(name)
    assert time.perf_counter() - t0 < 2.0  # a backtracking matcher takes ages here


# ---- the file ----


def test_a_bad_file_says_where() -> None:
    cases = {
        b"{": "not valid JSON",
        b"[]": "JSON object",
        b'{"pre_tool_use": [{"command": "x", "timeout_s": 121}]}': "pre_tool_use[0]: timeout_s",
        b'{"pre_tool_use": [{"command": "x", "timeout_s": 0}]}': "pre_tool_use[0]: timeout_s",
        b'{"pre_tool_use": [{"comand": "x"}]}': "unknown field 'comand'",
        b'{"session_start": [{"command": "x", "matcher": "echo"}]}': "matcher applies to",
        b'{"pre_tool_uses": []}': "unknown key 'pre_tool_uses'",
        b'{"http": [{"url": "ftp://host/x"}]}': "http[0]: url",
        b'{"http": [{"url": "http://127.0.0.1:9/x", "events": ["nope"]}]}': "http[0]: events",
    }
    for data, words in cases.items():
        with pytest.raises(ValueError) as info:
            parse_config(data)
        assert words in str(info.value), (data, info.value)
    config = parse_config(b'{"pre_tool_use": [{"command": "x"}], "http": [{"url": "https://example.org/h"}]}')
    assert config.commands[0].timeout_s == 30
    assert config.http[0].events == ("session_start", "session_end", "pre_tool_use", "post_tool_use")


async def test_the_file_is_read_again_when_it_changes_and_a_bad_one_keeps_the_last_good(hooked, tmp_path, caplog):
    log_file = tmp_path / "which.log"

    def config(word: str) -> dict[str, Any]:
        return {"pre_tool_use": [{"command": f"echo {word} >> {log_file}"}]}

    async def ran() -> list[str]:
        log_file.write_text("")
        await fire_pre(hooked.hooks, "echo")
        return log_file.read_text().split()

    assert await ran() == []  # no file: no hooks
    hooked.configure(config("first"))
    assert await ran() == ["first"]
    hooked.configure(config("second"))
    assert await ran() == ["second"]
    with caplog.at_level(logging.WARNING, logger="bmoe.hooks"):
        hooked.configure('{"pre_tool_use": [')
        assert await ran() == ["second"]
        assert await ran() == ["second"]
    assert len([r for r in caplog.records if "cannot be used" in r.getMessage()]) == 1  # logged once
    listing = hooked.hooks.listing()
    assert "not valid JSON" in listing["error"] and listing["error_at"] is not None
    assert [h["command"] for h in listing["hooks"]] == [f"echo second >> {log_file}"]
    hooked.configure(config("third"))
    assert await ran() == ["third"]
    assert hooked.hooks.listing()["error"] is None
    hooked.hooks.path.unlink()
    assert await ran() == []


async def test_with_no_hook_for_the_event_fire_answers_at_once(hooked):
    hooked.configure({"post_tool_use": [{"command": "sleep 5"}]})
    t0 = time.perf_counter()
    for _ in range(1000):
        assert await fire_pre(hooked.hooks, "echo") is None
    assert time.perf_counter() - t0 < 1.0


# ---- HTTP hooks ----


class HookServer:
    """A bare HTTP/1.1 server on loopback that keeps each POST's JSON body."""

    def __init__(self, *, answer: bool = True) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.answer = answer
        self.port = 0

    async def handle(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += await stream.receive_some(65536)
        assert head.startswith(b"POST /hook ")
        assert b"content-type: application/json" in head.lower()
        self.bodies.append(json.loads(body))
        if not self.answer:
            await trio.sleep_forever()
        await stream.send_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self.handle, listeners)


async def test_an_http_hook_gets_each_event_as_a_json_post(hooked, nursery):
    server = HookServer()
    await nursery.start(server.run)
    hooked.configure({"http": [{"url": f"http://127.0.0.1:{server.port}/hook",
                                "events": ["pre_tool_use", "post_tool_use"]}]})
    conv = await run_message(hooked, [ECHO])
    assert cards(conv)[0].state == "done"
    await wait_for(lambda: len(server.bodies) == 2)
    pre, post = server.bodies
    assert pre == {"event": "pre_tool_use", "conversation": conv.id, "workspace": str(hooked.ws.resolve()),
                   "tool": "echo", "args": {"text": "hello"}, "result": None, "state": None}
    assert (post["event"], post["result"], post["state"]) == ("post_tool_use", "hello", "done")
    await wait_for(lambda: last(hooked) == ["ran"])


async def test_an_http_hook_never_holds_the_run(hooked, nursery):
    server = HookServer(answer=False)
    await nursery.start(server.run)
    hooked.configure({"http": [{"url": f"http://127.0.0.1:{server.port}/hook", "events": ["pre_tool_use"]}]})
    t0 = time.perf_counter()
    assert await fire_pre(hooked.hooks, "echo") is None
    assert time.perf_counter() - t0 < 0.25  # a wait for the answer would take the 0.5 s limit
    await wait_for(lambda: len(server.bodies) == 1)
    await wait_for(lambda: last(hooked) == ["timed_out"], timeout=3)  # the fixture's limit: 0.5 s


async def test_an_http_hook_that_cannot_connect_fails_quietly(hooked):
    with trio.socket.socket() as sock:  # a port nobody listens on
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    hooked.configure({"http": [{"url": f"http://user:pw@127.0.0.1:{port}/hook", "events": ["pre_tool_use"]}]})
    assert await fire_pre(hooked.hooks, "echo") is None
    await wait_for(lambda: last(hooked) == ["failed"], timeout=3)
    assert hooked.hooks.listing()["hooks"][0]["url"] == f"http://***@127.0.0.1:{port}/hook"


# ---- GET /api/hooks ----


async def test_get_hooks_answers_a_local_client_only(hooked, tmp_path):
    hooked.configure({"session_start": [{"command": "true"}]})
    ctx = DaemonContext(config=Config(data_dir=tmp_path), hub=hooked.hub, engine=Engine(ScriptedBackend()),
                        bus=EventBus(), hooks=hooked.hooks)
    client = create_app(ctx).test_client()
    resp = await client.get("/api/hooks", scope_base={"client": ("192.0.2.7", 40000)})
    assert resp.status_code == 403 and (await resp.get_json())["code"] == "local_only"
    resp = await client.get("/api/hooks", scope_base={"client": ("127.0.0.1", 40000)})
    body = await resp.get_json()
    assert body["enabled"] is True and [h["command"] for h in body["hooks"]] == ["true"]
    off = DaemonContext(config=Config(data_dir=tmp_path), hub=hooked.hub, engine=Engine(ScriptedBackend()),
                        bus=EventBus())
    resp = await create_app(off).test_client().get("/api/hooks", scope_base={"client": ("127.0.0.1", 40000)})
    assert (await resp.get_json()) == {"enabled": False, "file": None, "error": None, "error_at": None, "hooks": []}


async def test_get_hooks_over_a_real_daemon_lists_each_hook_with_its_last_outcome(tmp_path):
    data = tmp_path / "data"
    ws = tmp_path / "ws"
    ws.mkdir()
    block = write_script(tmp_path / "bin" / "block.sh", "echo not echo, not today >&2\nexit 2")
    write_config(data / "agent" / HOOKS_FILE, {
        "pre_tool_use": [{"matcher": "echo", "command": block, "timeout_s": 10}],
        "post_tool_use": [{"matcher": "mcp_*", "command": "true"}],
        "session_end": [{"command": "exit 3"}],
    })
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [
        {"when": "go", "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"when": "go", "text": "Blocked, then."},
    ]}))
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        hooks = (await c.get("/api/hooks")).json()
        assert hooks["enabled"] is True and hooks["error"] is None
        assert [(h["event"], h["matcher"], h["last"]) for h in hooks["hooks"]] == [
            ("session_end", None, None), ("pre_tool_use", "echo", None), ("post_tool_use", "mcp_*", None)]
        wid = (await c.post("/api/workspaces", json={"path": str(ws)})).json()["id"]
        cid = (await c.post("/api/conversations", json={"workspace": wid, "mode": "full"})).json()["id"]
        assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": "go"})).status_code == 202
        body = await wait_http_state(c, cid, "idle")
        [card] = [i for i in body["items"] if i["kind"] == "tool"]
        assert card["state"] == "denied" and "not echo, not today" in card["result"]

        async def outcomes() -> list[str | None]:
            rows = (await c.get("/api/hooks")).json()["hooks"]
            return [(h["last"] or {}).get("result") for h in rows]

        with trio.fail_after(10):
            while await outcomes() != ["failed", "blocked", None]:
                await trio.sleep(0.05)
        rows = (await c.get("/api/hooks")).json()["hooks"]
        assert rows[1]["last"]["detail"] == "echo: not echo, not today" and rows[1]["last"]["at"] > 0
        assert rows[0]["last"]["detail"] == "exit code 3"
