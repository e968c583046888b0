"""Remote MCP servers: what one `tools/call` costs through the daemon's MCP actor over
HTTP, beside the same call over stdio, and how soon a server that went away is used
again once it is back.

The reference server `@modelcontextprotocol/server-everything` (`.ci/run` installs it),
in its three modes, each driven by `McpServer.call` (`echo`, `--calls` calls one at a
time, after a few to warm): stdio, Streamable HTTP (`streamableHttp`: each call a POST
answered with an event stream) and the older HTTP+SSE transport (`sse`: a POST, the
answer over the open stream). Medians and p95 per call, and this process's CPU time per
call (the daemon's side: the actor, httpx; the server is another process). Then the
reconnect: the Streamable HTTP server killed during a call, started again on the same
port after `--outage` seconds, with the retry delays at their defaults (1 s, doubling):
from its `listening` line to the actor `running` again, which the backoff bounds by the
step the outage reached.

    .venv/bin/python ops/bench/mcp_remote_bench.py [--calls 1000] [--outage 3] [--quick]

--quick: 100 calls a way, a 1 s outage. No target: the issue sets none; the figures are
for comparing the transports.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, CpuWatch, Report, exit_on_sigterm, median, missing_peer, parse_args, percentile  # noqa: E402

sys.path.insert(0, str(REPO))
from mcp_bench import everything_entry  # noqa: E402

from actors.errors import ToolError  # noqa: E402
from actors.peers.mcp.config import RemoteSpec, ServerSpec  # noqa: E402
from actors.peers.mcp.servers import McpServer  # noqa: E402

WARM_CALLS = 20
MESSAGE = "x" * 100
READY_TIMEOUT_S = 30.0
BACK_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_node(entry: Path, mode: str, port: int) -> tuple[trio.Process, float]:
    """server-everything in `mode` on `port`; the process and when it said it listens."""
    proc = await trio.lowlevel.open_process(["node", str(entry), mode], env={**os.environ, "PORT": str(port)},
                                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    seen = b""
    with trio.fail_after(READY_TIMEOUT_S):
        while f"port {port}".encode() not in seen:
            chunk = await proc.stderr.receive_some(4096)
            if not chunk:
                raise RuntimeError(f"server-everything {mode} exited: {seen.decode(errors='replace')}")
            seen += chunk
    return proc, time.perf_counter()


async def stop_node(proc: trio.Process) -> None:
    proc.kill()
    await proc.wait()
    if proc.stderr is not None:
        await proc.stderr.aclose()


async def timed_calls(server: McpServer, calls: int) -> tuple[list[float], float, bool]:
    """Per-call seconds, this process's CPU seconds per call, and whether every answer was right."""
    for _ in range(WARM_CALLS):
        await server.call("echo", {"message": MESSAGE})
    times: list[float] = []
    right = True
    cpu = time.process_time()
    for _ in range(calls):
        t = time.perf_counter()
        text, is_error = await server.call("echo", {"message": MESSAGE})
        times.append(time.perf_counter() - t)
        right = right and not is_error and text == f"Echo: {MESSAGE}"
    return times, (time.process_time() - cpu) / calls, right


async def one_way(entry: Path, mode: str, calls: int) -> tuple[list[float], float, bool]:
    port = free_port()
    proc = None
    if mode == "stdio":
        spec: ServerSpec | RemoteSpec = ServerSpec(name="e", command="node", args=(str(entry), "stdio"))
    else:
        proc, _ = await start_node(entry, mode, port)
        spec = RemoteSpec(name="e", url=f"http://127.0.0.1:{port}/{'mcp' if mode == 'streamableHttp' else 'sse'}")
    server = McpServer(spec)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            await server.ensure_started()
            try:
                return await timed_calls(server, calls)
            finally:
                server.close()
    finally:
        if proc is not None:
            await stop_node(proc)


async def reconnect(entry: Path, outage: float) -> tuple[float, bool, bool]:
    """Seconds from the server listening again to the actor running; whether the call in
    flight ended with an error; whether the server was used again."""
    port = free_port()
    proc, _ = await start_node(entry, "streamableHttp", port)
    server = McpServer(RemoteSpec(name="e", url=f"http://127.0.0.1:{port}/mcp"))
    ended_with_error = False
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        await server.ensure_started()

        async def long_call() -> None:
            nonlocal ended_with_error
            try:
                await server.call("trigger-long-running-operation", {"duration": 30, "steps": 30})
            except ToolError:
                ended_with_error = True

        async with trio.open_nursery() as calling:
            calling.start_soon(long_call)
            await trio.sleep(0.3)  # the call is on its way (a figure, not a test: a late kill still drops it)
            await stop_node(proc)
        await trio.sleep(outage)
        proc, back_at = await start_node(entry, "streamableHttp", port)
        try:
            with trio.fail_after(BACK_TIMEOUT_S):
                while server.state != "running":
                    await trio.sleep(0.01)
            took = time.perf_counter() - back_at
            used = (await server.call("echo", {"message": "back"}))[0] == "Echo: back"
        finally:
            server.close()
            await stop_node(proc)
    return took, ended_with_error, used


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--outage", type=float, default=3.0)
    opts = parse_args(ap, quick={"calls": 100, "outage": 1.0})
    exit_on_sigterm()
    entry = everything_entry()
    if entry is None:
        missing_peer("the reference MCP server (npm @modelcontextprotocol/server-everything)",
                     "run .ci/run (it installs it into ~/.cache/bmoe-daemon/ci/npm; or set BMOE_MCP_EVERYTHING_DIR)")
    if shutil.which("node") is None:
        missing_peer("node, which runs the reference MCP server", "apt-get install nodejs")
    report = Report("mcp_remote_bench", "tools/call through the MCP actor: stdio, Streamable HTTP, HTTP+SSE; "
                                        "reconnect after an outage")
    watch = CpuWatch().start()
    names = {"stdio": "stdio", "streamableHttp": "Streamable HTTP", "sse": "HTTP+SSE"}
    for mode, label in names.items():
        times, cpu, right = trio.run(one_way, entry, mode, opts.calls)
        report.check(f"{label}: every answer right", right)
        report.figure(f"{label}: tools/call, median", median(times) * 1e6, "µs", "{:.0f}")
        report.figure(f"{label}: tools/call, p95", percentile(times, 95) * 1e6, "µs", "{:.0f}")
        report.figure(f"{label}: this process's CPU per call", cpu * 1e6, "µs", "{:.0f}")
    report.figure("other processes' CPU during the calls", watch.foreign_cores(), "cores", "{:.2f}")
    took, ended, used = trio.run(reconnect, entry, opts.outage)
    report.check("the call in flight when the server went away ended with an error", ended)
    report.check("the server was used again once back", used)
    report.figure(f"after a {opts.outage:g} s outage: server listening -> actor running", took, "s", "{:.2f}")
    return report.finish()


if __name__ == "__main__":
    sys.exit(main())
