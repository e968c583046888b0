"""Start the real daemon as a process on port 0 and talk to it over HTTP and SSE."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 60


class DaemonProcess:
    def __init__(self, proc: trio.Process, url: str, data_dir: Path, stderr_path: Path) -> None:
        self.proc = proc
        self.url = url
        self.data_dir = data_dir
        self.stderr_path = stderr_path

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30, **kwargs)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def log_file(self) -> str:
        """The daemon's log file (the default place, <data>/logs/daemon.log)."""
        return (self.data_dir / "logs" / "daemon.log").read_text(errors="replace")


@asynccontextmanager
async def run_daemon(data_dir: Path, *args: str, env: dict[str, str] | None = None,
                     program: list[str] | None = None, cwd: Path = REPO) -> AsyncIterator[DaemonProcess]:
    """Start `bmoe-daemon serve --port 0 ...`; SIGTERM it on exit (SIGKILL if it hangs).
    It is this checkout's, unless `program` names another installed `bmoe-daemon`: that
    one runs in exactly `env`, with nothing leading here."""
    data_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
    options = ["serve", "--port", "0", "--data-dir", str(data_dir), *args]
    if program is None:
        cmd = [sys.executable, "-m", "bmoe_daemon", *options]
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    else:
        cmd, full_env = [*program, *options], dict(env or {})
    with open(stderr_path, "ab") as err:
        proc = await trio.lowlevel.open_process(cmd, stdout=subprocess.PIPE, stderr=err, env=full_env, cwd=str(cwd))
    assert proc.stdout is not None
    url = None
    buf = b""
    try:
        with trio.fail_after(START_TIMEOUT_S):
            while url is None:
                chunk = await proc.stdout.receive_some(4096)
                if not chunk:
                    raise RuntimeError(f"daemon exited before listening: {stderr_path.read_text()}")
                buf += chunk
                for line in buf.decode(errors="replace").splitlines():
                    if line.startswith("listening on "):
                        url = line.removeprefix("listening on ").strip()
        yield DaemonProcess(proc, url, data_dir, stderr_path)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with trio.move_on_after(40) as cs:
                cs.shield = True
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                with trio.CancelScope(shield=True):
                    await proc.wait()
        await proc.stdout.aclose()


def sse_fields(lines: list[str]) -> tuple[int | None, str, str]:
    """An event frame's id, name and data, from its lines."""
    ev_id, name, data = None, "message", ""
    for line in lines:
        field, _, value = line.partition(": ")
        if field == "id":
            ev_id = int(value)
        elif field == "event":
            name = value
        elif field == "data":
            data += value
    return ev_id, name, data


class SSE:
    """A minimal Server-Sent Events reader over httpx."""

    def __init__(self, client: httpx.AsyncClient, headers: dict[str, str] | None = None,
                 path: str = "/api/events") -> None:
        self._client = client
        self._headers = headers or {}
        self._path = path
        self.events: list[tuple[int | None, str, Any]] = []
        self.comments: list[str] = []
        self._new = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with self._client.stream("GET", self._path, headers=self._headers, timeout=None) as resp:
            assert resp.status_code == 200, resp.status_code
            assert resp.headers["content-type"].startswith("text/event-stream")
            started = False
            lines: list[str] = []
            async for line in resp.aiter_lines():
                if line.startswith(":"):
                    self.comments.append(line)
                    if not started:
                        started = True
                        task_status.started()
                    continue
                if line == "":
                    ev_id, name, data = sse_fields(lines)
                    lines = []
                    if data:
                        self.events.append((ev_id, name, json.loads(data)))
                        self._new.set()
                        self._new = trio.Event()
                    continue
                lines.append(line)

    async def wait_for(self, pred: Any, timeout: float = 30) -> tuple[int | None, str, Any]:
        with trio.fail_after(timeout):
            seen = 0
            while True:
                for ev in self.events[seen:]:
                    if pred(ev):
                        return ev
                seen = len(self.events)
                await self._new.wait()
