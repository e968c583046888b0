"""MCP servers: from daemon start to a server's tools listed, and what one `tools/call`
costs through the daemon's MCP actor over a direct call with the `mcp` SDK.

1. Start to tools, for each server on its own: tests/mcp_server.py (written with the
   SDK) and, with --everything, the reference server `.ci/run` installs. A `serve
   --no-model` with a `<data>/mcp.json` naming that one server; the clock starts just
   before the daemon is spawned, and `GET /api/agent` (which starts the server the first
   time) is polled until it reads `running` with its tools. Also the time to `listening
   on`, and the first `GET /api/agent` alone (the server's start). After each daemon
   start, the server's own start cost: the program alone, spawned here and driven by a
   raw-wire client from spawn to `initialize` + `tools/list` (every page) answered. The
   daemon's share is start-to-tools less that, per repetition (the two run back to back),
   median; the target is on that share, since a server's own imports (the SDK's take
   ~1.5 s) are not the daemon's.
2. Round trip: the same server program driven three ways in one trio run, `--calls`
   `echo` calls each, one at a time, alternating in blocks of BLOCK (the order rotating)
   so all see the same machine: (a) the SDK's own client (`mcp.ClientSession` over
   `mcp.client.stdio.stdio_client`; the SDK runs on anyio, here under trio), (b) a raw
   wire client (one JSON line out, one in: the least a call can cost over stdio), (c)
   `McpServer.call`, the actor the daemon calls (start check, request bookkeeping, time
   limit, result reading). Medians and p95 per call; the headline is (c) over (a), the
   issue's "over a direct call with the SDK"; (c) over (b) is the actor's cost over the
   floor. The SDK is a test dependency only: the daemon speaks the wire itself on trio so
   that it owns the program's process group (actors/peers/mcp/servers.py says why).

    .venv/bin/python ops/bench/mcp_bench.py [--reps 5] [--calls 2000] [--everything] [--quick]

--quick: one start and 200 calls a way, for each server, the reference one included
(--everything is on: its peers are the `mcp` SDK, a test extra, and the npm package
`.ci/run` installs; without either it says what to install and exits).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import (  # noqa: E402
    REPO,
    CpuWatch,
    DaemonProcess,
    Report,
    exit_on_sigterm,
    median,
    missing_peer,
    parse_args,
    percentile,
    require_module,
    split_address,
)

from actors.peers.jsonrpc import LineBuffer, encode_notification, encode_request, initialize_params, tool_list
from actors.peers.mcp.config import ServerSpec
from actors.peers.mcp.servers import McpServer

SERVER = REPO / "tests" / "mcp_server.py"
TARGET_TOOLS_S = 2.5  # on the daemon's share of start -> tools listed
TARGET_OVERHEAD_US = 300.0  # through the actor over the SDK's client
POLL_S = 0.01
BLOCK = 100
WARM_CALLS = 20
ALONE_TIMEOUT_S = 60.0
WAYS = ("sdk", "raw", "actor")


def everything_entry() -> Path | None:
    folder = os.environ.get("BMOE_MCP_EVERYTHING_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bmoe-daemon", "ci", "npm"
    )
    entry = Path(folder) / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    return entry if entry.is_file() else None


def get_agent(host: str, port: int) -> dict | None:
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", "/api/agent")
        resp = conn.getresponse()
        return json.loads(resp.read()) if resp.status == 200 else None
    except OSError:
        return None
    finally:
        conn.close()


def one_start(folder: Path, spec: ServerSpec) -> dict[str, float]:
    """One daemon start with `spec` as its only server: seconds to `listening on`, to
    the server's tools listed, and of the first `GET /api/agent`."""
    data = folder / "data"
    data.mkdir(parents=True)
    entry = {"command": spec.command, "args": list(spec.args)}
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {spec.name: entry}}))
    daemon = DaemonProcess(
        ["serve", "--port", "0", "--no-model", "--data-dir", str(data)], log_path=folder / "daemon.log"
    )
    try:
        address = daemon.start(timeout=60)
        listening = time.perf_counter() - daemon.started_at
        host, port = split_address(address)
        first_get = None
        while True:
            t = time.perf_counter()
            body = get_agent(host, port)
            if first_get is None and body is not None:
                first_get = time.perf_counter() - t
            rows = (body or {}).get("mcp", [])
            if len(rows) == 1 and all(r["state"] == "running" and r["tools"] for r in rows):
                break
            if any(r["state"] == "failed" for r in rows):
                raise RuntimeError(f"the server failed: {rows}")
            if time.perf_counter() - daemon.started_at > 60:
                raise TimeoutError("the server's tools were not listed within 60 s")
            time.sleep(POLL_S)
        listed = time.perf_counter() - daemon.started_at
    finally:
        daemon.stop()
    return {"listening": listening, "listed": listed, "first_get": first_get or 0.0}


class DirectClient:
    """The least a client does: one request line out, read lines until its answer."""

    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.lines = LineBuffer()
        self.ready: list[bytes] = []
        self.next_id = 0

    async def request(self, method: str, params: object = None) -> dict:
        self.next_id += 1
        rid = self.next_id
        await self.proc.stdin.send_all(encode_request(rid, method, params))
        while True:
            while self.ready:
                msg = json.loads(self.ready.pop(0))
                if msg.get("id") == rid:
                    return msg
            chunk = await self.proc.stdout.receive_some(65536)
            if not chunk:
                raise RuntimeError("the server closed its stdout")
            self.ready += self.lines.feed(chunk)


async def open_server(spec: ServerSpec) -> trio.Process:
    """The program in a session of its own (as the daemon starts it), stderr dropped."""
    return await trio.lowlevel.open_process(
        [spec.command, *spec.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=spec.environment(),
        cwd=spec.cwd,
    )


async def end_server(proc: trio.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own group (start_new_session)
    except ProcessLookupError:
        pass
    await proc.wait()


async def handshake(client: DirectClient) -> int:
    """`initialize`, `notifications/initialized`, `tools/list` (every page): the tools."""
    msg = await client.request("initialize", initialize_params())
    if "result" not in msg:
        raise RuntimeError(f"initialize failed: {msg}")
    await client.proc.stdin.send_all(encode_notification("notifications/initialized"))
    count, cursor = 0, None
    while True:
        msg = await client.request("tools/list", {"cursor": cursor} if cursor else None)
        tools, cursor, _ = tool_list(msg.get("result"))
        count += len(tools)
        if not cursor:
            return count


async def server_alone(spec: ServerSpec) -> float:
    """Seconds from spawning the program to its tools listed, through the raw client."""
    with trio.fail_after(ALONE_TIMEOUT_S):
        t0 = time.perf_counter()
        proc = await open_server(spec)
        try:
            if not await handshake(DirectClient(proc)):
                raise RuntimeError(f"{spec.name} listed no tools")
            return time.perf_counter() - t0
        finally:
            await end_server(proc)


async def round_trips(calls: int, spec: ServerSpec, args: dict[str, Any]) -> dict[str, list[float]]:
    """Per-call seconds of each way (WAYS), in alternating blocks of BLOCK calls."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import PaginatedRequestParams, TextContent

    times: dict[str, list[float]] = {way: [] for way in WAYS}
    params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd)
    with open(os.devnull, "w") as devnull:  # noqa: ASYNC230 (opened once, before any timing)
        async with stdio_client(params, errlog=devnull) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            cursor = None
            while True:  # every page, so the session knows echo's (absent) output schema
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                cursor = page.next_cursor
                if not cursor:
                    break
            proc = await open_server(spec)
            server = McpServer(spec)
            try:
                client = DirectClient(proc)
                await handshake(client)
                async with trio.open_nursery() as nursery:
                    await nursery.start(server.run)
                    await server.ensure_started()
                    tool = {"name": "echo", "arguments": args}

                    async def sdk() -> None:
                        result = await session.call_tool("echo", args)
                        assert not result.is_error and isinstance(result.content[0], TextContent)

                    async def raw() -> None:
                        msg = await client.request("tools/call", tool)
                        assert "result" in msg and not msg["result"].get("isError")

                    async def actor() -> None:
                        _text, is_error = await server.call("echo", args)
                        assert not is_error

                    way: dict[str, Callable[[], Awaitable[None]]] = {"sdk": sdk, "raw": raw, "actor": actor}
                    for name in WAYS:  # warm each
                        for _ in range(WARM_CALLS):
                            await way[name]()
                    turn = 0
                    while len(times["actor"]) < calls:
                        order = WAYS[turn % len(WAYS) :] + WAYS[: turn % len(WAYS)]
                        turn += 1
                        for name in order:
                            call, out = way[name], times[name]
                            for _ in range(BLOCK):
                                t = time.perf_counter()
                                await call()
                                out.append(time.perf_counter() - t)
                    server.close()
            finally:
                await end_server(proc)
    return times


def report_starts(report: Report, label: str, runs: list[dict[str, float]]) -> float:
    """Figures of one server's starts; the daemon's share (median of paired differences)."""
    listed = median([r["listed"] for r in runs])
    alone = median([r["alone"] for r in runs])
    share = median([r["listed"] - r["alone"] for r in runs])
    report.figure(f"{label}: daemon start -> listening (median)", median([r["listening"] for r in runs]), "s", "{:.3f}")
    report.figure(f"{label}: first GET /api/agent (median)", median([r["first_get"] for r in runs]), "s", "{:.3f}")
    report.figure(f"{label}: daemon start -> tools listed (median)", listed, "s", "{:.3f}")
    report.figure(f"{label}: program alone -> tools listed (median)", alone, "s", "{:.3f}")
    report.figure(f"{label}: daemon's share (median of differences)", share, "s", "{:.3f}")
    return share


def report_round_trips(report: Report, label: str, times: dict[str, list[float]]) -> tuple[float, float]:
    """Figures of one server's calls; the actor's overhead over the SDK and over raw (µs)."""
    names = {"sdk": "SDK ClientSession", "raw": "raw wire client", "actor": "through McpServer.call"}
    med = {way: median(times[way]) * 1e6 for way in WAYS}
    for way in WAYS:
        report.figure(f"{label}: {names[way]}, median", med[way], "µs", "{:.0f}")
        report.figure(f"{label}: {names[way]}, p95", percentile(times[way], 95) * 1e6, "µs", "{:.0f}")
    over_sdk = med["actor"] - med["sdk"]
    over_raw = med["actor"] - med["raw"]
    report.figure(f"{label}: actor over SDK client (median)", over_sdk, "µs", "{:.0f}")
    report.figure(f"{label}: actor over raw wire (median)", over_raw, "µs", "{:.0f}")
    report.figure(f"{label}: calls per way", len(times["actor"]), "", "{:d}")
    return over_sdk, over_raw


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--everything", action=argparse.BooleanOptionalAction, default=False,
                    help="also the reference server (node; .ci/run installs it)")
    opts = parse_args(ap, quick={"reps": 1, "calls": 200, "everything": True})
    exit_on_sigterm()
    require_module("mcp", "the MCP SDK (mcp, a test extra: the test server is written with it)",
                   "pip install -e '.[test]'")
    servers = [("test server", ServerSpec(name="t", command=sys.executable, args=(str(SERVER),)), {"text": "x" * 100})]
    entry = everything_entry()
    if opts.everything:
        if entry is None:
            missing_peer(
                "the reference MCP server (npm @modelcontextprotocol/server-everything)",
                "run .ci/run (it installs it at the version it pins into ~/.cache/bmoe-daemon/ci/npm;"
                " or set BMOE_MCP_EVERYTHING_DIR to where it is; --no-everything measures without it)",
            )
        if shutil.which("node") is None:
            missing_peer("node, which runs the reference MCP server", "apt-get install nodejs")
        spec = ServerSpec(name="everything", command="node", args=(str(entry), "stdio"))
        servers.append(("reference server", spec, {"message": "x" * 100}))
    report = Report(
        "mcp_bench", "daemon start -> MCP tools listed; tools/call through the MCP actor vs the SDK's client"
    )

    shares: dict[str, float] = {}
    watch = CpuWatch().start()
    for label, spec, _args in servers:
        runs = []
        for _ in range(opts.reps):
            with tempfile.TemporaryDirectory(prefix="bmoe-mcp-bench-") as tmp:
                run = one_start(Path(tmp), spec)
            run["alone"] = trio.run(server_alone, spec)
            runs.append(run)
        shares[label] = report_starts(report, label, runs)
    report.figure("other processes' CPU during the starts", watch.foreign_cores(), "cores", "{:.2f}")

    overheads: dict[str, float] = {}
    watch = CpuWatch().start()
    for label, spec, args in servers:
        calls = opts.calls if label == "test server" else min(opts.calls, 1000)
        overheads[label], _ = report_round_trips(report, label, trio.run(round_trips, calls, spec, args))
    report.figure("other processes' CPU during the calls", watch.foreign_cores(), "cores", "{:.2f}")

    for label, share in shares.items():
        report.target(f"{label}: daemon's share of start -> tools", share, "<=", TARGET_TOOLS_S, "s")
    report.target(
        "test server: tools/call, actor over SDK client",
        overheads["test server"],
        "<=",
        TARGET_OVERHEAD_US,
        "µs",
        "{:.0f}",
    )
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
