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


async def doctor(tmp_path: Path, *args: str, pythonpath: Path | None = None, home: Path | None = None,
                 env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """Runs `python -m bmoe_daemon doctor ARGS` with HOME in tmp_path (no service installed,
    unless `home` is one that has it); `pythonpath` goes before the checkout."""
    if home is None:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
    path = os.pathsep.join([*([str(pythonpath)] if pythonpath else []), str(REPO)])
    env = {**os.environ, **(env or {}), "PYTHONPATH": path, "HOME": str(home)}
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


def broken_llama(tmp_path: Path) -> Path:
    """A folder whose `llama_cpp` fails to import as a broken build does: its shared
    library will not load (llama-cpp-python raises RuntimeError then)."""
    folder = tmp_path / "broken"
    (folder / "llama_cpp").mkdir(parents=True)
    (folder / "llama_cpp" / "__init__.py").write_text(
        'raise RuntimeError("Failed to load shared library \'libllama.so\': libggml.so: cannot open shared object")\n')
    return folder


async def test_a_llama_cpp_python_that_will_not_load(tmp_path):
    code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", "0",
                               pythonpath=broken_llama(tmp_path))
    assert code == 1, lines
    text, todo = line(lines, "llama-cpp-python")
    assert text.startswith("FAIL") and "cannot be imported (Failed to load shared library" in text
    assert todo == "what to do: pip install llama-cpp-python in the daemon's virtualenv (ops/install.sh does)"
    model, model_todo = line(lines, "model")
    assert model.startswith("FAIL") and "does not load: llama-cpp-python cannot be loaded" in model
    assert model_todo is not None


async def test_a_gguf_that_does_not_load(tmp_path):
    from tests.test_model_scan import write_gguf

    header_only = tmp_path / "tiny.gguf"
    write_gguf(header_only)  # a real GGUF's header and one tensor: not a model llama.cpp can run
    code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", "0",
                               "--model", str(header_only))
    assert code == 1, lines
    text, todo = line(lines, "model")
    assert text.startswith("FAIL") and f"{header_only} (--model) does not load" in text
    assert todo == "what to do: pass --model a GGUF file (a chat model)"
    assert not any(t.split(" ", 1)[-1].lstrip().startswith("model speed:") for t in lines)


async def test_a_remembered_model_that_is_gone(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    gone = tmp_path / "deleted.gguf"
    (data / "model.json").write_text(json.dumps({"path": str(gone)}))
    code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", "0")
    assert code == 1, lines
    text, todo = line(lines, "model")
    assert text.startswith("FAIL") and f"{gone} (chosen last time ({data / 'model.json'})) cannot be read" in text
    assert todo is not None and "models page, or delete model.json" in todo


async def test_a_data_folder_that_cannot_be_written(tmp_path):
    from tests.test_startup import unwritable_folder

    folder = unwritable_folder(tmp_path)
    code, lines = await doctor(tmp_path, "--data-dir", str(folder), "--port", "0", "--no-model")
    assert code == 1, lines
    text, todo = line(lines, "data folder")
    assert text.startswith("FAIL") and f"cannot write in {folder}" in text
    assert todo == "what to do: fix its permissions or pass --data-dir a folder you can write to"


async def test_a_host_that_does_not_resolve(tmp_path):
    code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", "8765",
                               "--host", "no-such-host.invalid", "--no-model")
    assert code == 1, lines
    text, todo = line(lines, "port")
    assert text.startswith("FAIL") and "--host no-such-host.invalid is not an address" in text
    assert todo is not None and "--host 127.0.0.1" in todo


async def test_a_service_installed_but_not_running(tmp_path):
    from tests.test_service_commands import UNIT, Machine

    (tmp_path / "machine").mkdir()
    m = Machine(tmp_path / "machine")
    m.answer({"--user is-active bmoe-daemon": [3, "failed\n", ""]})
    (m.home / UNIT).parent.mkdir(parents=True)
    (m.home / UNIT).write_text("[Service]\n")
    code, lines = await doctor(tmp_path, "--data-dir", str(tmp_path / "data"), "--port", "0", "--no-model",
                               home=m.home, env={k: v for k, v in m.env().items() if k != "HOME"})
    assert code == 1, lines
    text, todo = line(lines, "service")
    assert text.startswith("FAIL") and "installed" in text and "but not running (systemd says 'failed')" in text
    assert todo is not None and "bmoe-daemon service logs shows why" in todo


def test_a_python_too_old():
    from bmoe_daemon.doctor import check_python

    old = check_python((3, 10, 14))
    assert not old.ok and old.detail == "3.10.14 is older than 3.11" and "Python 3.11 or newer" in old.todo
    assert check_python().ok


async def test_remote_mcp_servers_are_connected_with_the_key_stores_secrets(tmp_path):
    from tests.test_mcp_remote import TOKEN, bearer_server

    data = tmp_path / "data"
    data.mkdir()
    (data / "credentials.json").write_text(json.dumps({"secret/t-token": TOKEN}))
    (data / "credentials.json").chmod(0o640)  # doctor reads it as it is: the daemon fixes the mode, not doctor
    async with bearer_server() as port:
        (data / "mcp.json").write_text(json.dumps({"mcpServers": {
            "t": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": "Bearer ${secret:t-token}"}},
            "away": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
            "unsaved": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Key": "${secret:missing}"}},
        }}))
        code, lines = await doctor(tmp_path, "--data-dir", str(data), "--port", "0", "--no-model")
    assert code == 1
    text, _ = line(lines, "MCP server t")
    assert text.startswith("ok") and "connected over streamable-http" in text and "t_echo" in text
    text, todo = line(lines, "MCP server away")
    assert text.startswith("FAIL") and "cannot be reached" in text
    assert todo is not None and "server is up" in todo
    text, todo = line(lines, "MCP server unsaved")
    assert text.startswith("FAIL") and "'missing'" in text
    assert todo is not None and "PUT /api/secrets/NAME" in todo
    assert all(TOKEN not in text for text in lines)
    assert (data / "credentials.json").stat().st_mode & 0o777 == 0o640
def test_the_usage_ledger_line(tmp_path):
    """`doctor`'s usage ledger line: none yet, a ledger read with its totals and the lines
    it skips (a crash leaves one cut short), and one that is not a plain file."""
    from actors.model.usage import LEDGER_FILE, Entry
    from bmoe_daemon.doctor import check_usage

    check = check_usage(tmp_path)
    assert check.ok and "does not exist yet" in check.detail
    lines = [Entry(1.0, "c", None, "local", "local", "m", "i", 100, 20, 0, None).to_line(),
             Entry(2.0, "c", None, "provider", "p", "m", "i", 1000, 10, 0, 0.5).to_line()]
    (tmp_path / LEDGER_FILE).write_bytes(b"".join(lines) + lines[0][:20])
    check = check_usage(tmp_path)
    assert check.ok, check
    assert "2 answers, 120 tokens on this computer, 1,010 on providers ($0.50 priced)" in check.detail
    assert "1 line(s) skipped" in check.detail
    (tmp_path / LEDGER_FILE).unlink()
    (tmp_path / LEDGER_FILE).mkdir()
    check = check_usage(tmp_path)
    assert not check.ok and "not a plain file" in check.detail and check.todo
