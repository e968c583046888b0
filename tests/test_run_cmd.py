"""`bmoe-daemon run` as a subprocess (bmoe_daemon/run_cmd/), on the scripted model:
against a daemon found through its lock file, and embedded (started and stopped for
the call, no process left); plain and --json output, --output-schema, an approval on a
terminal (a pty) and refused without one, Ctrl-C stopping the run in the daemon."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio

from tests.daemon_proc import REPO, run_daemon

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
RUN_TIMEOUT_S = 90


def script(path: Path, rounds: list[dict[str, Any]], default: str = "Hello there.", delay: float = 0.0) -> Path:
    path.write_text(json.dumps({"token_delay": delay, "rounds": rounds, "default": {"text": default}}))
    return path


def cli(*args: str, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bmoe_daemon", "run", *args], env=ENV, stdin=stdin,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=REPO)


async def acli(*args: str) -> subprocess.CompletedProcess[str]:
    return await trio.to_thread.run_sync(lambda: cli(*args))


# `python -m bmoe_daemon ARGS...`, writing the modules it imported to argv[1] as it exits.
NOTING_MODULES = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = [sys.argv[0], *sys.argv[2:]]
runpy.run_module("bmoe_daemon", run_name="__main__", alter_sys=True)
"""
# What the client talking to a running daemon does without (bmoe_daemon/run_cmd/client.py):
# its start-up is most of its cost.
NOT_IN_THE_CLIENT = ("trio", "httpx", "hypercorn", "quart", "jsonschema")


def serve_pids(data: Path) -> list[int]:
    """Processes whose command line names this data folder (a daemon left behind)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in cmd and str(data).encode() in cmd:
                out.append(int(entry))
    return out


def test_embedded_plain_output_and_no_process_left(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = script(tmp_path / "s.json", [{"when": "tool", "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}])
    done = cli("--data-dir", str(data), "--scripted", str(s), "use a tool")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["✓ Echo hi (done)", "Hello there."]  # no colour, no spinner off a terminal
    assert "\x1b" not in done.stdout
    assert serve_pids(data) == []
    # The lock was let go: a serve of the folder could start now.
    assert json.loads((data / "daemon.lock").read_text())["address"].startswith("http://127.0.0.1:")


def test_json_lines_end_with_the_result(tmp_path: Path) -> None:
    s = script(tmp_path / "s.json", [])
    done = cli("--json", "--data-dir", str(tmp_path / "data"), "--scripted", str(s), "say hi")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert {line["type"] for line in lines[:-1]} <= {"conversation", "item", "delta", "prefill", "plan"}
    assert "".join(line.get("text", "") for line in lines if line["type"] == "delta") == "Hello there."
    final = lines[-1]
    assert final["type"] == "result" and final["result"] == "Hello there." and final["end_reason"] == "answered"
    assert set(final) == {"type", "result", "end_reason", "usage", "conversation"}
    assert final["usage"]["completion_tokens"] > 0


def test_output_schema_passing_after_one_held_round_and_failing(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}))
    # The scripted model ignores the grammar: its first answer strays, the held round's
    # answer (the notice names the schema) matches.
    good = script(tmp_path / "good.json", [{"when": "JSON schema", "text": '{"n": 3}'}], default="three")
    done = cli("--json", "--output-schema", str(schema), "--data-dir", str(tmp_path / "a"), "--scripted",
               str(good), "count")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["result"] == '{"n": 3}'
    bad = script(tmp_path / "bad.json", [], default='{"n": "three"}')
    done = cli("--json", "--output-schema", str(schema), "--data-dir", str(tmp_path / "b"), "--scripted",
               str(bad), "count")
    assert done.returncode == 1
    final = json.loads(done.stdout.splitlines()[-1])
    assert "does not match --output-schema" in final["error"] and "'three' is not of type 'integer'" in final["error"]
    # A schema file that is not one is a usage error.
    (tmp_path / "nota.json").write_text("{")
    assert cli("--output-schema", str(tmp_path / "nota.json"), "--data-dir", str(tmp_path / "c"), "x").returncode == 2


def _write_round(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    s = script(tmp_path / "s.json", [{"when": "write", "tool_calls": [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "hello\n"}}]}], default="Wrote it.")
    return ws, s


def test_an_approval_is_refused_without_a_terminal(tmp_path: Path) -> None:
    ws, s = _write_round(tmp_path)
    done = cli("--workspace", str(ws), "--mode", "ask", "--data-dir", str(tmp_path / "data"), "--scripted", str(s),
               "write the file")
    assert "(denied)" in done.stdout, done.stdout + done.stderr
    assert not (ws / "a.txt").exists()


def test_an_approval_is_answered_on_a_terminal(tmp_path: Path) -> None:
    ws, s = _write_round(tmp_path)
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr on the pty
        os.chdir(REPO)
        os.execve(sys.executable, [sys.executable, "-m", "bmoe_daemon", "run", "--workspace", str(ws),
                                   "--data-dir", str(tmp_path / "data"), "--scripted", str(s), "write the file"], ENV)
    seen = b""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    answered = False
    try:
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break  # the child closed the pty
            if not chunk:
                break
            seen += chunk
            if not answered and b"Approve? [y]es / [n]o / [a]lways" in seen:
                os.write(fd, b"y\n")
                answered = True
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    text = seen.decode(errors="replace")
    assert answered, text
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert (ws / "a.txt").read_text() == "hello\n"
    assert "(done)" in text and "\x1b[" in text  # colour on a terminal


async def test_against_a_running_daemon_and_ctrl_c_stops_the_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    s = script(tmp_path / "s.json", [{"when": "slow", "text": "word " * 400}], delay=0.05)
    async with run_daemon(data, "--scripted", str(s)) as d, d.client() as c:
        done = await acli("--json", "--data-dir", str(data), "say hi")
        assert done.returncode == 0, done.stderr
        cid = json.loads(done.stdout.splitlines()[-1])["conversation"]
        assert (await c.get(f"/api/conversations/{cid}")).json()["end_reason"] == "answered"  # this daemon's
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "bmoe_daemon", "run", "--json", "--data-dir", str(data), "go slow"],
            env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO))
        assert proc.stdout is not None
        buf = b""
        with trio.fail_after(30):
            while b'"type": "delta"' not in buf:
                buf += await proc.stdout.receive_some(65536)
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            while chunk := await proc.stdout.receive_some(65536):
                buf += chunk
            code = await proc.wait()
        final = json.loads(buf.decode().splitlines()[-1])
        assert code == 3 and final["end_reason"] == "stopped", buf
        conv = (await c.get(f"/api/conversations/{final['conversation']}")).json()
        assert conv["state"] == "idle" and conv["end_reason"] == "stopped"
        # --embedded with the folder held is a usage error, naming the holder.
        held = await acli("--embedded", "--data-dir", str(data), "hi")
        assert held.returncode == 2 and "in use by" in held.stderr


async def test_the_key_from_the_lock_file_and_a_client_of_the_standard_library_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = tmp_path / "key"
    key.write_text("s3cret-key\n")
    s = script(tmp_path / "s.json", [])
    noted = tmp_path / "modules.json"
    async with run_daemon(data, "--scripted", str(s), "--api-key-file", str(key)):
        assert json.loads((data / "daemon.lock").read_text())["key_file"] == str(key)
        done = await trio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-c", NOTING_MODULES, str(noted), "run", "--data-dir", str(data), "say hi"],
            env=ENV, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=REPO))
        assert done.returncode == 0 and done.stdout == "Hello there.\n", done.stderr
        assert "s3cret" not in done.stdout + done.stderr
    # The client asked with the standard library's HTTP only.
    modules = json.loads(noted.read_text())
    assert "bmoe_daemon.run_cmd.client" in modules
    assert [m for m in modules if m.split(".")[0] in NOT_IN_THE_CLIENT] == []


def test_a_call_the_stop_ended_is_not_said_to_be_denied() -> None:
    from bmoe_daemon.run_cmd.render import tool_line

    card = {"kind": "tool", "title": "Write a.txt", "state": "denied"}
    assert tool_line({**card, "ended_by": "person"}, colour=False) == "⊘ Write a.txt (denied)"
    assert tool_line({**card, "ended_by": "stop"}, colour=False) == "⊘ Write a.txt (stopped)"
    assert tool_line({**card, "state": "error", "ended_by": "cut"}, colour=False) == "✗ Write a.txt (not run)"
    assert tool_line({**card, "state": "error"}, colour=False) == "✗ Write a.txt (error)"
