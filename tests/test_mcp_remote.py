"""Remote MCP servers (actors/peers/mcp/remote.py, sse.py, the `url` entries of config.py,
and servers.py's reconnecting) against real servers over real HTTP.

The servers: the reference `@modelcontextprotocol/server-everything` in its two HTTP
modes (`streamableHttp`: answers as event streams, with sessions; `sse`: the older
transport), run with node on a free port (its `PORT`), and tests/mcp_server.py `--http`
(the official Python SDK's Streamable HTTP server answering JSON) behind a bearer token
it reads from its environment. Without node and the reference package, the tests that
need them fail under BMOE_REQUIRE_PEERS (tests/peers.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psutil
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import ToolError
from actors.model.chatstream import SseLines
from actors.peers.jsonrpc import WireError
from actors.peers.mcp.config import McpConfig, MissingSecret, RemoteSpec, parse_config
from actors.peers.mcp.extras import read_prompts, read_resources
from actors.peers.mcp.manager import McpManager
from actors.peers.mcp.servers import McpUnavailable
from actors.peers.mcp.sse import SseEvents
from tests.daemon_proc import run_daemon
from tests.peers import need_peer
from tests.test_mcp import EVERYTHING_VERSION, everything_entry
from tests.waiting import wait_for

SERVER = Path(__file__).with_name("mcp_server.py")
TOKEN = "tok-" + "7f3a9c1e5b2d4680" * 2  # what the bearer server wants; looked for everywhere after
SCRIPT = {"rounds": [
    {"when": "remote echo", "tool_calls": [{"name": "t_echo", "arguments": {"text": "over the network"}}]},
    {"when": "remote echo", "text": "Echoed from afar."},
]}


@pytest.fixture
def everything() -> Path:
    entry = everything_entry()
    if entry is None:
        need_peer(f"node or @modelcontextprotocol/server-everything@{EVERYTHING_VERSION} is not installed "
                  "(.ci/run does it)")
    return entry


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NodeServer:
    """server-everything in one HTTP mode on `port`; what it prints is kept."""

    def __init__(self, entry: Path, mode: str, port: int) -> None:
        self.cmd = ["node", str(entry), mode]
        self.port = port
        self.out = bytearray()
        self.err = bytearray()
        self.proc: trio.Process | None = None

    async def start(self, nursery: trio.Nursery) -> None:
        self.proc = await trio.lowlevel.open_process(self.cmd, env={**os.environ, "PORT": str(self.port)},
                                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        nursery.start_soon(self._pump, self.proc.stdout, self.out)
        nursery.start_soon(self._pump, self.proc.stderr, self.err)
        await wait_for(lambda: f"port {self.port}".encode() in self.err, timeout=20, poll=0.02)

    @staticmethod
    async def _pump(stream: trio.abc.ReceiveStream | None, into: bytearray) -> None:
        assert stream is not None
        async with stream:
            while chunk := await stream.receive_some(65536):
                into += chunk

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            with trio.CancelScope(shield=True):
                await self.proc.wait()


@asynccontextmanager
async def node_server(entry: Path, mode: str, port: int | None = None) -> AsyncIterator[NodeServer]:
    node = NodeServer(entry, mode, port or free_port())
    async with trio.open_nursery() as nursery:
        try:
            await node.start(nursery)
            yield node
        finally:
            await node.kill()


@asynccontextmanager
async def manager(*specs: RemoteSpec) -> AsyncIterator[McpManager]:
    m = McpManager(McpConfig(tuple(specs)), retry_first=0.2, retry_max=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(m.run)
        try:
            yield m
        finally:
            m.close()


# ---- the config ----


def test_url_entries_are_remote_servers_and_bad_ones_are_left_out():
    config = parse_config({"mcpServers": {
        "web": {"url": "https://mcp.example.com/mcp?key=abc&v=2",
                "headers": {"Authorization": "Bearer ${secret:web-token}", "X-Team": "blue"}, "timeout_ms": 900},
        "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
        "lan": {"type": "http", "url": "http://192.168.1.20:8080/mcp"},
        "plain": {"url": "http://mcp.example.com/mcp"},
        "userinfo": {"url": "https://me:pw@mcp.example.com/mcp"},
        "ftp": {"url": "ftp://mcp.example.com/"},
        "own": {"url": "https://mcp.example.com/mcp", "headers": {"Mcp-Session-Id": "x"}},
        "crlf": {"url": "https://mcp.example.com/mcp", "headers": {"X-A": "one\r\nX-B: two"}},
        "badref": {"url": "https://mcp.example.com/mcp", "headers": {"X-A": "${secret:no spaces}"}},
        "both": {"url": "https://mcp.example.com/mcp", "command": "prog"},
        "kind": {"url": "https://mcp.example.com/mcp", "type": "websocket"},
    }})
    web, old, lan = config.servers
    assert isinstance(web, RemoteSpec) and web.transport == "auto" and web.timeout_ms == 900
    assert (old.transport, lan.transport) == ("sse", "auto")
    assert web.shown_url == "https://mcp.example.com/mcp?key=***&v=***"
    assert web.secret_names == ("web-token",)
    assert web.shown_headers() == [{"name": "Authorization", "secrets": ["web-token"]},
                                   {"name": "X-Team", "secrets": []}]
    assert "Bearer" not in repr(web) and "blue" not in repr(web)
    skipped = {s.name: s for s in config.skipped}
    assert set(skipped) == {"plain", "userinfo", "ftp", "own", "crlf", "badref", "both", "kind"}
    assert all(s.remote for s in skipped.values())
    assert "https://" in skipped["plain"].why and "user name or password" in skipped["userinfo"].why
    assert "pw" not in skipped["userinfo"].command and "X-B" not in skipped["crlf"].why
    assert "set by the daemon" in skipped["own"].why and "secret" in skipped["badref"].why


def test_headers_take_their_secrets_from_the_store():
    headers = {"Authorization": "Bearer ${secret:a}", "X-K": "${secret:b}"}
    (spec,) = parse_config({"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "headers": headers}}}).servers
    assert isinstance(spec, RemoteSpec)
    store = {"a": "AAA", "b": "BBB"}
    headers, used = spec.resolve_headers(store.get)
    assert headers == {"Authorization": "Bearer AAA", "X-K": "BBB"} and used == ("AAA", "BBB")
    with pytest.raises(MissingSecret, match="'b'") as exc:
        spec.resolve_headers({"a": "AAA"}.get)
    assert "AAA" not in str(exc.value)


def test_prompts_and_resources_are_read_plainly_and_what_is_malformed_is_left_out():
    prompts, cursor = read_prompts({"prompts": [
        {"name": "p", "description": "d" * 900, "arguments": [{"name": "a", "required": True}, {"name": "b"}, 3]},
        {"name": ""}, "not an object", {"title": "no name"},
    ], "nextCursor": "2"})
    assert cursor == "2" and prompts == [{"name": "p", "description": "d" * 500, "arguments": [
        {"name": "a", "required": True}, {"name": "b", "required": False}]}]
    resources, cursor = read_resources({"resources": [{"uri": "x://1", "name": "one", "mimeType": "text/plain"},
                                                      {"uri": "x://2"}, {"name": "no uri"}]})
    assert cursor is None and resources == [{"uri": "x://1", "name": "one", "mime_type": "text/plain"},
                                            {"uri": "x://2", "name": "x://2"}]
    with pytest.raises(WireError):
        read_prompts({"prompts": "no"})


# ---- the event stream ----


def test_sse_events_read_fields_comments_and_multiline_data():
    events = SseEvents()
    lines = [": ping", "event: endpoint", "data: /message?sessionId=1", "", "id: 4", "data:{\"a\":", "data: 1}", "",
             "retry: 10", "", "event: message", "data: x", ""]
    out = [e for e in (events.feed(line) for line in lines) if e is not None]
    assert out == [("endpoint", "/message?sessionId=1"), ("message", '{"a":\n1}'), ("message", "x")]


def test_an_event_that_never_ends_is_refused():
    events = SseEvents(limit=100)
    with pytest.raises(WireError):
        for _ in range(20):
            events.feed("data: " + "x" * 10)


@given(st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=40))
def test_events_do_not_depend_on_how_the_stream_is_cut(cuts):
    body = b"event: endpoint\r\ndata: /m\r\n\r\n: c\ndata: {\"id\": 1}\n\ndata: a\rdata: b\r\r"
    lines, events, got = SseLines(), SseEvents(), []
    at, turn = 0, 0
    while at < len(body):
        n, turn = cuts[turn % len(cuts)], turn + 1
        chunk, at = body[at:at + n], at + n
        for line in lines.feed(chunk):
            event = events.feed(line)
            if event is not None:
                got.append(event)
    for line in lines.flush():
        events.feed(line)
    assert got == [("endpoint", "/m"), ("message", '{"id": 1}'), ("message", "a\nb")]


# ---- the reference server over HTTP ----


async def test_streamable_http_lists_and_calls_then_ends_its_session(everything):
    async with node_server(everything, "streamableHttp") as node:
        url = f"http://127.0.0.1:{node.port}/mcp"
        async with manager(RemoteSpec("everything", url)) as m:
            await m.prepare()
            (row,) = m.listing()
            assert (row["state"], row["remote"], row["transport"], row["url"]) == ("running", True, "streamable-http",
                                                                                 url)
            assert "everything_echo" in [t["name"] for t in row["tools"]] and "command" not in row
            # Its prompts and resources are listed too.
            prompts = {p["name"]: p for p in row["prompts"]}
            assert prompts["simple-prompt"]["arguments"] == [] and prompts["args-prompt"]["arguments"]
            assert row["resources"] and all(r["uri"].startswith("demo://") for r in row["resources"])
            server = m.server("everything")
            assert server is not None
            assert await server.call("echo", {"message": "hi"}) == ("Echo: hi", False)
            assert b"Session initialized" in node.out
            # A call given up on (a stop): the server is told, and the session goes on.
            posts = node.out.count(b"Received MCP POST request")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(server.call, "trigger-long-running-operation", {"duration": 60, "steps": 60})
                await wait_for(lambda: node.out.count(b"Received MCP POST request") > posts, poll=0.02)
                nursery.cancel_scope.cancel()
            await wait_for(lambda: node.out.count(b"Received MCP POST request") >= posts + 2, poll=0.02)
            assert server.state == "running"
            assert await server.call("echo", {"message": "still"}) == ("Echo: still", False)
        # Closed: the session is ended with a DELETE, not left to time out.
        await wait_for(lambda: b"session termination" in node.out, timeout=10, poll=0.02)


async def test_an_sse_only_server_is_spoken_to_over_the_older_transport(everything):
    async with node_server(everything, "sse") as node:
        async with manager(RemoteSpec("old", f"http://127.0.0.1:{node.port}/sse")) as m:
            await m.prepare()
            (row,) = m.listing()
            assert (row["state"], row["transport"]) == ("running", "sse")
            server = m.server("old")
            assert server is not None
            assert await server.call("echo", {"message": "over sse"}) == ("Echo: over sse", False)
            assert await server.call("get-sum", {"a": 2, "b": 3}) == ("The sum of 2 and 3 is 5.", False)
            # Its event stream broken while nothing is asked: seen at once, and tried again.
            await node.kill()
            await wait_for(lambda: server.state in ("reconnecting", "starting"), poll=0.02)
            assert m.listing()[0]["state"] == "reconnecting"


async def test_a_server_that_drops_mid_call_ends_the_call_and_is_reconnected(everything):
    port = free_port()
    async with manager(RemoteSpec("everything", f"http://127.0.0.1:{port}/mcp")) as m:
        server = m.server("everything")
        assert server is not None
        async with node_server(everything, "streamableHttp", port) as node:
            await m.prepare()
            assert server.state == "running"
            failed: list[str] = []

            async def long_call() -> None:
                try:
                    await server.call("trigger-long-running-operation", {"duration": 60, "steps": 60})
                except ToolError as exc:
                    failed.append(str(exc))

            posts = node.out.count(b"Received MCP POST request")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_call)
                await wait_for(lambda: node.out.count(b"Received MCP POST request") > posts, poll=0.02)
                await node.kill()
                with trio.fail_after(10):  # the call ends at once with why, never hangs
                    await wait_for(lambda: bool(failed), poll=0.02)
        assert "lost during the call" in failed[0] and "reconnects by itself" in failed[0]
        await wait_for(lambda: server.state in ("reconnecting", "starting"), poll=0.02)
        # Said at once, the program's end not yet reaped...
        (row,) = m.listing()
        assert row["state"] == "reconnecting" and "cannot be reached" in row["error"]
        # ... and with when it is tried again once it is.
        await wait_for(lambda: "next_try_at" in m.listing()[0], poll=0.02)
        (row,) = m.listing()
        assert row["state"] == "reconnecting" and "cannot be reached" in row["error"]
        assert time.time() - 1 < row["next_try_at"] < time.time() + 2
        with pytest.raises(McpUnavailable, match="cannot be reached"):
            await server.call("echo", {"message": "anyone?"})
        # Still away after a few tries; then back on the same address.
        await wait_for(lambda: server.retries >= 3, poll=0.02)
        async with node_server(everything, "streamableHttp", port):
            await wait_for(lambda: server.state == "running", timeout=20, poll=0.02)
            assert await server.call("echo", {"message": "back"}) == ("Echo: back", False)
            assert m.listing()[0]["state"] == "running" and "next_try_at" not in m.listing()[0]


# ---- a server behind a token, through the daemon ----


@asynccontextmanager
async def bearer_server(token: str = TOKEN) -> AsyncIterator[int]:
    """tests/mcp_server.py --http wanting `token` (given in its environment); its port."""
    proc = await trio.lowlevel.open_process([sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE,
                                            env={**os.environ, "TEST_MCP_TOKEN": token})
    assert proc.stdout is not None
    try:
        buf = b""
        with trio.fail_after(30):
            while b"\n" not in buf:
                chunk = await proc.stdout.receive_some(1024)
                assert chunk, "the bearer server exited before listening"
                buf += chunk
        yield int(buf.split(b"\n")[0].rsplit(b" ", 1)[1])
    finally:
        proc.terminate()
        with trio.CancelScope(shield=True):
            await proc.wait()
            await proc.stdout.aclose()


async def test_a_token_from_the_key_store_reaches_the_server_and_nothing_else(tmp_path):
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    async with bearer_server() as port:
        (data / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {
            "url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": "Bearer ${secret:t-token}"}}}}))
        seen: list[str] = []
        async with run_daemon(data, "--scripted", str(tmp_path / "script.json"), "--log-level", "debug") as d:
            async with d.client() as c:
                # No secret yet: failed, saying which one and where to put it.
                (row,) = (await c.get("/api/agent")).json()["mcp"]
                assert row["state"] == "failed" and "'t-token'" in row["error"]
                assert "/api/secrets/t-token" in row["error"]
                assert row["remote"] is True and row["headers"] == [{"name": "Authorization", "secrets": ["t-token"]}]
                assert (await c.get("/api/secrets")).json() == {
                    "secrets": [{"name": "t-token", "stored": False, "used_by": ["t"]}]}
                # A wrong one: the server's 401, said without the value.
                wrong = "wrong-" + TOKEN[::-1]
                r = await c.put("/api/secrets/t-token", json={"value": wrong})
                assert r.status_code == 200 and wrong not in r.text
                (row,) = (await c.get("/api/agent")).json()["mcp"]
                assert row["state"] == "failed" and "HTTP 401" in row["error"] and wrong not in row["error"]
                # The right one: connected, its tools listed and called in a conversation.
                assert (await c.put("/api/secrets/t-token", json={"value": TOKEN})).status_code == 200
                body = await c.get("/api/agent")
                seen.append(body.text)
                (row,) = body.json()["mcp"]
                assert (row["state"], row["transport"]) == ("running", "streamable-http")
                assert "t_echo" in [t["name"] for t in row["tools"]]
                # Its prompt: listed, and given as text to start a message with.
                assert row["prompts"] == [{"name": "review", "description": "Asks for a careful review.",
                                           "arguments": [{"name": "topic", "required": True}]}]
                got = await c.post("/api/mcp/t/prompts/review", json={"arguments": {"topic": "the diff"}})
                assert got.json() == {"text": "Review the diff carefully."}
                for path, body, code in [("/api/mcp/t/prompts/review", {"arguments": {}}, 400),
                                         ("/api/mcp/t/prompts/review", {"arguments": {"topic": 3}}, 400),
                                         ("/api/mcp/t/prompts/nope", {}, 404),
                                         ("/api/mcp/nope/prompts/review", {}, 404)]:
                    assert (await c.post(path, json=body)).status_code == code, path
                ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
                conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()
                assert (await c.post(f"/api/conversations/{conv['id']}/messages",
                                     json={"text": "remote echo"})).status_code == 202
                with trio.fail_after(20):
                    while True:
                        got = await c.get(f"/api/conversations/{conv['id']}")
                        if got.json()["state"] == "idle" and got.json()["items"][-1]["kind"] == "assistant":
                            break
                        await trio.sleep(0.05)
                seen.append(got.text)
                card = next(i for i in got.json()["items"] if i["kind"] == "tool")
                assert (card["tool"], card["state"], card["result"]) == ("t_echo", "done", "echo: over the network")
                assert (card["mcp"], card["mcp_host"]) == ("t", f"127.0.0.1:{port}")
                secrets = await c.get("/api/secrets")
                seen.append(secrets.text)
                assert secrets.json() == {"secrets": [{"name": "t-token", "stored": True, "used_by": ["t"]}]}
                for bad in ("bad name", "x" * 65):
                    assert (await c.put(f"/api/secrets/{bad}", json={"value": "v"})).json()["code"] == "bad_request"
                assert (await c.put("/api/secrets/ok", json={"value": "a\nb"})).status_code == 400
                assert (await c.put("/api/secrets/ok", json={"nope": 1})).status_code == 400
                assert (await c.delete("/api/secrets/none")).status_code == 404
                cmdlines = [cmdline_of(p) for p in [psutil.Process(d.proc.pid),
                                                    *psutil.Process(d.proc.pid).children(recursive=True)]]
        logs = d.stderr() + d.log_file()
    assert "HTTP Request: POST" in logs  # the debug log was on, and the requests are in it
    for text in [*seen, logs, *cmdlines]:
        assert TOKEN not in text and "7f3a9c1e5b2d4680" not in text
    stored = json.loads((data / "credentials.json").read_text())
    assert stored == {"secret/t-token": TOKEN} and (data / "credentials.json").stat().st_mode & 0o077 == 0


def cmdline_of(proc: psutil.Process) -> str:
    """A process's command line; empty for one that ended since it was listed (a child
    can end between the listing and the read)."""
    try:
        return " ".join(proc.cmdline())
    except psutil.NoSuchProcess:
        return ""
