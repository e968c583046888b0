"""`bmoe-daemon doctor` as a real process: all well, and each failure it can be made to
report here, with its mark and what to do."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import trio

from tests.daemon_proc import REPO, run_daemon

MCP_SERVER = REPO / "tests" / "mcp_server.py"


async def doctor(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    """Runs `python -m bmoe_daemon doctor ARGS` with HOME in tmp_path (no service installed)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home)}
    done = await trio.run_process([sys.executable, "-m", "bmoe_daemon", "doctor", *args], env=env,
                                  capture_stdout=True, capture_stderr=True, check=False, cwd=str(REPO))
    return done.returncode, done.stdout.decode().splitlines()


def line(lines: list[str], name: str) -> tuple[str, str | None]:
    """The check named `name` and the what-to-do line under it (None when there is none)."""
    for i, text in enumerate(lines):
        if text.split(" ", 1)[-1].lstrip().startswith(f"{name}:"):
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return text, after if after.startswith("what to do:") else None
    raise AssertionError(f"no {name} line in {lines}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_all_well_with_the_bundled_model(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable,
                                                                   "args": [str(MCP_SERVER)]}}}))
    code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", str(free_port()))
    assert code == 0, lines
    checks = lines[:-1]
    assert all(text.startswith("ok ") for text in checks), lines
    assert lines[-1] == f"all {len(checks)} checks ok"
    for name in ("Python", "llama-cpp-python", "llama.cpp build", "data folder", "port", "model",
                 "model speed", "MCP server t", "other agents", "service"):
        line(lines, name)
    model, _ = line(lines, "model")
    assert "SmolLM2" in model and "(the bundled one) loads" in model and "generic format" in model
    assert "32 tokens in" in line(lines, "model speed")[0]
    assert "echo" in line(lines, "MCP server t")[0]
    assert "not installed" in line(lines, "service")[0]


async def test_a_model_that_is_not_a_gguf(tmp_path):
    bad = tmp_path / "notes.gguf"
    bad.write_text("just some text, not a model\n")
    code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", "0", "--model", str(bad))
    assert code == 1
    text, todo = line(lines, "model")
    assert text.startswith("FAIL") and "is not a GGUF file" in text and str(bad) in text
    assert todo == "what to do: pass --model a GGUF file (a chat model)"
    assert lines[-1].endswith("checks failed")


async def test_a_data_folder_that_is_a_file(tmp_path):
    data = tmp_path / "data"
    data.write_text("")
    code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", "0", "--no-model")
    assert code == 1
    text, todo = line(lines, "data folder")
    assert text.startswith("FAIL") and f"{data} is a file, not a folder" in text
    assert todo == "what to do: move the file away or pass --data-dir another folder"


async def test_a_port_held_by_another_program(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", str(port),
                                   "--no-model")
    assert code == 1
    text, todo = line(lines, "port")
    assert text.startswith("FAIL") and f"{port} on 127.0.0.1 is in use by another program (pid {os.getpid()})" in text
    assert todo == "what to do: stop it, or pass --port another port (0 picks a free one)"


async def test_an_mcp_server_whose_command_does_not_exist(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {"gone": {"command": "no-such-program-here"}}}))
    code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", "0", "--no-model")
    assert code == 1
    text, todo = line(lines, "MCP server gone")
    assert text.startswith("FAIL") and "no-such-program-here" in text
    assert todo is not None and f"fix or remove its entry in {data / 'mcp.json'}" in todo


async def test_a_running_daemon_holding_the_folder(tmp_path):
    data = tmp_path / "data"
    async with run_daemon(data, "--no-model") as daemon:
        port = daemon.url.rsplit(":", 1)[1]
        code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", port, "--no-model")
        pid = daemon.proc.pid
    # The daemon serving the folder (the service, say) is how it should be: no failure.
    assert code == 0, lines
    text, todo = line(lines, "data folder")
    assert text.startswith("ok") and f"served by bmoe-daemon pid {pid} at {daemon.url} (running)" in text
    assert todo is None
    port_line, _ = line(lines, "port")
    assert port_line.startswith("ok") and "served by this daemon" in port_line
