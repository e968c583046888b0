"""Stopping the daemon with a signal while runs are in every state: each conversation
ends with the shutdown notice, nothing is logged as a failure, the process exits soon,
and no program it started outlives it."""

from __future__ import annotations

import signal
import time

import psutil
import pytest
import trio

from actors import notices
from tests.daemon_proc import run_daemon
from tests.test_e2e import write_script
from tests.waiting import read_saved, wait_http_state

EXIT_WITHIN_S = 3.0
MARK = "31.4159"  # the command's sleep, to find it among the machine's processes

SCRIPT = {
    "rounds": [
        {"when": "slow", "text": "tick " * 2000, "delay": 0.02},
        {"when": "note", "tool_calls": [{"name": "note", "arguments": {"path": "n.txt", "text": "x"}}]},
        {"when": "command", "tool_calls": [
            {"name": "exec_shell_command", "arguments": {"command": f"sleep {MARK}", "timeout": 120}}]},
    ],
}


def _sleepers() -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        if MARK in " ".join(proc.info["cmdline"] or ()):
            out.append(proc)
    return out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_stops_streaming_waiting_and_commanding_runs_cleanly(tmp_path, signum):
    data = tmp_path / "data"
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(data, "--scripted", str(write_script(tmp_path, SCRIPT))) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            ids = {}
            # The slow one last: it holds the turn line while it streams.
            for what, mode in (("note", "ask"), ("command", "full"), ("slow", "ask")):
                conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": mode})).json()
                await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": f"{what} please"})
                ids[what] = conv["id"]
            await wait_http_state(c, ids["note"], "waiting")
            with trio.fail_after(10):
                while not _sleepers():
                    await trio.sleep(0.02)
            with trio.fail_after(10):
                while len((await c.get(f"/api/conversations/{ids['slow']}")).json()["items"]) < 2:
                    await trio.sleep(0.02)
        sent = time.monotonic()
        d.proc.send_signal(signum)
        with trio.fail_after(30):
            code = await d.proc.wait()
        took = time.monotonic() - sent
    assert code == 0
    assert took <= EXIT_WITHIN_S, f"the daemon took {took:.1f} s to exit"
    log = d.stderr()
    assert "Traceback" not in log and " ERROR " not in log and "failed" not in log, log
    assert not _sleepers()
    for what, cid in ids.items():
        saved = read_saved(data / "agent" / "conversations" / f"{cid}.json")
        assert saved["state"] == "idle", what
        assert saved["items"][-1]["kind"] == "notice" and saved["items"][-1]["text"] == notices.SHUTDOWN, what
        cards = [i for i in saved["items"] if i["kind"] == "tool"]
        assert all(c["state"] in ("done", "denied", "error") for c in cards), what
        if what == "note":
            # Nobody said no and nobody stopped it: the daemon did ("not run").
            assert cards[0]["state"] == "denied" and cards[0]["ended_by"] == "daemon"
        if what == "command":
            assert cards[0]["state"] == "error" and cards[0]["result"] == notices.ERROR_RUNNING_STOPPED
