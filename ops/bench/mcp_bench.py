"""MCP servers: from daemon start to a server's tools listed, and what one `tools/call`
costs through the daemon's MCP actor over a direct call.

1. Start to tools: `serve --no-model` with a `<data>/mcp.json` naming tests/mcp_server.py
   (and, with --everything, the reference server .ci/run installs). The clock starts
   just before the process is spawned; `GET /api/agent` (which starts the servers the
   first time) is polled until every server reads `running` with its tools. Also the
   time to `listening on`, and the first `GET /api/agent` alone (the servers' start).
   Five repetitions, median.
2. Round trip: the same server program driven two ways in this process, `--calls`
   `echo` calls each, one at a time, alternating in blocks so both see the same machine:
   a direct client (trio, one JSON line out, one in: the least a call can cost over
   stdio) and `McpServer.call`, the actor the daemon calls (start check, request
   bookkeeping, time limit, result reading). The figure is the median per call and the
   difference. The `mcp` SDK is not a dependency of the daemon (actors/mcp.py says why),
   so the direct client here is the raw wire, a floor the SDK's client would not beat.

    /work/venv/bin/python ops/bench/mcp_bench.py [--reps 5] [--calls 2000] [--everything]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import REPO, CpuWatch, DaemonProcess, Report, median, percentile, split_address  # noqa: E402

from actors.mcp import McpServer  # noqa: E402
from actors.mcp_config import ServerSpec  # noqa: E402
from actors.mcp_wire import LineBuffer, encode_notification, encode_request, initialize_params  # noqa: E402

SERVER = REPO / "tests" / "mcp_server.py"
TARGET_TOOLS_S = 2.5
TARGET_OVERHEAD_US = 300.0
POLL_S = 0.01
BLOCK = 100


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


def one_start(folder: Path, servers: dict[str, dict]) -> dict[str, float]:
    data = folder / "data"
    data.mkdir(parents=True)
    (data / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
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
            if len(rows) == len(servers) and all(r["state"] == "running" and r["tools"] for r in rows):
                break
            if any(r["state"] == "failed" for r in rows):
                raise RuntimeError(f"a server failed: {rows}")
            if time.perf_counter() - daemon.started_at > 60:
                raise TimeoutError("the servers' tools were not listed within 60 s")
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
            self.ready += self.lines.feed(await self.proc.stdout.receive_some(65536))


async def round_trips(calls: int, spec: ServerSpec, args: dict) -> tuple[list[float], list[float]]:
    """Per-call seconds: (direct, through the actor), alternating blocks of BLOCK calls."""
    direct: list[float] = []
    actor: list[float] = []
    proc = await trio.lowlevel.open_process(
        [spec.command, *spec.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=spec.environment(),
    )
    server = McpServer(spec)
    try:
        client = DirectClient(proc)
        await client.request("initialize", initialize_params())
        await proc.stdin.send_all(encode_notification("notifications/initialized"))
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await server.ensure_started()
            tool = {"name": "echo", "arguments": args}
            for _ in range(20):  # warm both
                await client.request("tools/call", tool)
                await server.call("echo", args)
            while len(direct) < calls:
                for _ in range(BLOCK):
                    t = time.perf_counter()
                    msg = await client.request("tools/call", tool)
                    direct.append(time.perf_counter() - t)
                    assert "result" in msg
                for _ in range(BLOCK):
                    t = time.perf_counter()
                    await server.call("echo", args)
                    actor.append(time.perf_counter() - t)
            server.close()
    finally:
        proc.kill()
        await proc.wait()
    return direct, actor


def report_round_trips(report: Report, label: str, direct: list[float], actor: list[float]) -> float:
    d, a = median(direct) * 1e6, median(actor) * 1e6
    report.figure(f"{label}: direct call, median", d, "µs", "{:.0f}")
    report.figure(f"{label}: direct call, p95", percentile(direct, 95) * 1e6, "µs", "{:.0f}")
    report.figure(f"{label}: through McpServer.call, median", a, "µs", "{:.0f}")
    report.figure(f"{label}: through McpServer.call, p95", percentile(actor, 95) * 1e6, "µs", "{:.0f}")
    report.figure(f"{label}: overhead per call (median)", a - d, "µs", "{:.0f}")
    return a - d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--everything", action="store_true", help="also the reference server (node), if installed")
    opts = ap.parse_args()
    report = Report("mcp_bench", "daemon start -> MCP tools listed; tools/call through the MCP actor vs direct")
    servers = {"t": {"command": sys.executable, "args": [str(SERVER)]}}
    entry = everything_entry()
    if opts.everything:
        if entry is None:
            report.note("the reference server is not installed (.ci/run installs it); measured without it")
        else:
            servers["everything"] = {"command": "node", "args": [str(entry), "stdio"]}
    watch = CpuWatch().start()
    runs = []
    for _ in range(opts.reps):
        with tempfile.TemporaryDirectory(prefix="bmoe-mcp-bench-") as tmp:
            runs.append(one_start(Path(tmp), servers))
    names = " and ".join(servers)
    report.figure("daemon start -> listening (median)", median([r["listening"] for r in runs]), "s", "{:.3f}")
    report.figure(
        f"first GET /api/agent, starting {names} (median)", median([r["first_get"] for r in runs]), "s", "{:.3f}"
    )
    listed = median([r["listed"] for r in runs])
    report.figure(f"daemon start -> {names} tools listed (median)", listed, "s", "{:.3f}")
    report.figure("other processes' CPU during the starts", watch.foreign_cores(), "cores", "{:.2f}")

    watch = CpuWatch().start()
    spec = ServerSpec(name="t", command=sys.executable, args=(str(SERVER),))
    direct, actor = trio.run(round_trips, opts.calls, spec, {"text": "x" * 100})
    overhead = report_round_trips(report, "test server", direct, actor)
    if opts.everything and entry is not None:
        spec = ServerSpec(name="everything", command="node", args=(str(entry), "stdio"))
        direct, actor = trio.run(round_trips, min(opts.calls, 1000), spec, {"message": "x" * 100})
        report_round_trips(report, "reference server", direct, actor)
    report.figure("other processes' CPU during the calls", watch.foreign_cores(), "cores", "{:.2f}")

    report.target("daemon start -> tools listed", listed, "<=", TARGET_TOOLS_S, "s")
    report.target("overhead of one tools/call through the actor", overhead, "<=", TARGET_OVERHEAD_US, "µs", "{:.0f}")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
