"""The sandbox over HTTP (issue 28): the real daemon with a scripted model in `full`
mode, HOME, data folder and key file outside /tmp. A command cannot write in the home
folder or the host's /tmp, read the data folder or the key file, or reach a server on
loopback or on another address of this computer; it can write in the workspace; no
secret appears in a result, an event or the record. A run outside the sandbox is a card
in `full`, refused in `read_only`, and unconfined only after a yes. Without bubblewrap,
/health and doctor say so, and `--sandbox required` refuses to start."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from functools import partial
from pathlib import Path

import psutil
import pytest
import trio

from tests.daemon_proc import REPO, SSE, run_daemon
from tests.peers import need_peer
from tests.waiting import wait_http_state

SECRET_KEY = "KEY-" + uuid.uuid4().hex
SECRET_DATA = "DATA-" + uuid.uuid4().hex
HELLO = b"HELLO-" + uuid.uuid4().hex.encode()


def other_address() -> str | None:
    """A non-loopback IPv4 address of this computer, if it has one."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def call(command: str, **extra: object) -> dict:
    return {"tool_calls": [{"name": "exec_shell_command", "arguments": {"command": command, **extra}}]}


@pytest.fixture
def beside():
    path = Path(tempfile.mkdtemp(prefix="bmoe-e2e-sandbox-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def need_bwrap() -> None:
    if shutil.which("bwrap") is None:
        need_peer("bwrap is missing: install Debian's bubblewrap (apt-get install bubblewrap)")
    if subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True).returncode != 0:
        need_peer("bwrap cannot make a sandbox here (user namespaces off?)")


async def _serve_hello(stream: trio.SocketStream) -> None:
    await stream.send_all(HELLO + b"\n")
    await stream.aclose()


def _connect(host: str, port: int) -> str:
    return f"python3 -c \"import socket; print(socket.create_connection(('{host}', {port}), 3).recv(99))\""


async def test_commands_are_confined_over_http(beside, tmp_path):
    need_bwrap()
    home, data, ws = beside / "home", beside / "data", tmp_path / "ws"
    for folder in (home, ws):
        folder.mkdir()
    key_file = beside / "key.txt"
    key_file.write_text(SECRET_KEY + "\n")
    (data / "agent").mkdir(parents=True)
    (data / "agent" / "providers.json").write_text(json.dumps([{"id": "p", "key": SECRET_DATA}]))
    host_tmp = Path("/tmp") / f"bmoe-e2e-{uuid.uuid4().hex}"
    other = other_address()
    async with trio.open_nursery() as nursery:
        loop_port = (await nursery.start(partial(trio.serve_tcp, _serve_hello, 0, host="127.0.0.1")))[0] \
            .socket.getsockname()[1]
        other_port = None
        if other is not None:
            other_port = (await nursery.start(partial(trio.serve_tcp, _serve_hello, 0, host=other)))[0] \
                .socket.getsockname()[1]
        rounds = [
            {"when": "home", **call("echo pwned > $HOME/pwned.txt; echo also > ~/.bashrc")},
            {"when": "tmp", **call(f"echo pwned > {host_tmp}; ls /tmp")},
            {"when": "secrets", **call(f"cat {data}/agent/providers.json {key_file}; ls -AR {data}; env")},
            {"when": "loopback", **call(_connect("127.0.0.1", loop_port))},
            {"when": "other", **call(_connect(other or "192.0.2.1", other_port or 9))},
            {"when": "workspace", **call("echo made > made.txt && cat made.txt")},
            {"when": "outside", **call(f"echo out > {beside}/outside.txt", outside_sandbox=True,
                                       reason="write the report beside the workspace")},
            {"when": "unconfined", **call("true", outside_sandbox=True, reason="r")},
            {"when": "network", **call(_connect("127.0.0.1", loop_port))},
        ]
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"token_delay": 0, "rounds": [
            r for pair in rounds for r in (pair, {"when": pair["when"], "text": "Done."})]}))
        env = {"HOME": str(home)}
        auth = {"Authorization": f"Bearer {SECRET_KEY}"}
        async with run_daemon(data, "--scripted", str(script), "--api-key-file", str(key_file), env=env) as d, \
                d.client(headers=auth) as c:
            health = (await c.get("/health")).json()
            assert health["sandbox"]["available"] is True and health["sandbox"]["kind"] == "bwrap"
            sse = SSE(c)
            async with trio.open_nursery() as inner:
                await inner.start(sse.run)
                ws_row = (await c.post("/api/workspaces", json={"path": str(ws)})).json()
                assert ws_row["network"] is False

                async def result_of(word: str, mode: str = "full") -> dict:
                    new = {"workspace": ws_row["id"], "mode": mode}
                    cid = (await c.post("/api/conversations", json=new)).json()["id"]
                    await c.post(f"/api/conversations/{cid}/messages", json={"text": word})
                    body = await wait_http_state(c, cid, "idle", "waiting")
                    return next(i for i in body["items"] if i["kind"] == "tool") | {"conversation": cid}

                out = await result_of("home")
                assert not (home / "pwned.txt").exists() and not (home / ".bashrc").exists()
                assert "Read-only file system" in out["result"] and "ran in the sandbox" in out["result"]
                out = await result_of("tmp")
                # /tmp is the command's own: the write works there, and the host's /tmp never sees it.
                assert host_tmp.name in out["result"] and not host_tmp.exists()
                out = await result_of("secrets")
                for secret in (SECRET_KEY, SECRET_DATA):
                    assert secret not in out["result"]
                out = await result_of("loopback")
                assert HELLO.decode() not in out["result"] and "ran in the sandbox" in out["result"]
                if other is not None:
                    out = await result_of("other")
                    assert HELLO.decode() not in out["result"] and "ran in the sandbox" in out["result"]
                out = await result_of("workspace")
                assert (ws / "made.txt").read_text() == "made\n" and "ran in the sandbox" not in out["result"]

                # Outside the sandbox: a card even in full, with the reason; unconfined after a yes.
                card = await result_of("outside")
                assert card["state"] == "waiting" and card["title"].startswith("Run outside the sandbox")
                assert card["args"]["reason"] == "write the report beside the workspace"
                assert card.get("rule") is None and not (beside / "outside.txt").exists()
                r = await c.post(f"/api/conversations/{card['conversation']}/approval",
                                 json={"item": card["id"], "decision": "approve"})
                assert 200 <= r.status_code < 300
                await wait_http_state(c, card["conversation"], "idle")
                assert (beside / "outside.txt").read_text() == "out\n"
                refused = await result_of("unconfined", mode="read_only")
                assert refused["state"] == "denied" and "read-only" in refused["result"]

                # The network allowed on the workspace: loopback answers; kept on the record.
                r = await c.patch(f"/api/workspaces/{ws_row['id']}", json={"network": True})
                assert r.status_code == 200 and r.json()["network"] is True
                assert (await c.patch(f"/api/workspaces/{ws_row['id']}", json={"network": "yes"})).status_code == 400
                assert (await c.patch("/api/workspaces/nope", json={"network": True})).status_code == 404
                out = await result_of("network")
                assert HELLO.decode() in out["result"]
                saved = json.loads((data / "agent" / "workspaces.json").read_text())
                assert saved[0]["network"] is True

                events = json.dumps([e[2] for e in sse.events])
                inner.cancel_scope.cancel()
        for secret in (SECRET_KEY, SECRET_DATA):
            assert secret not in events
            for record in (data / "agent" / "conversations").glob("*.json"):
                assert secret not in record.read_text()
        nursery.cancel_scope.cancel()


async def test_without_bubblewrap(tmp_path):
    missing = tmp_path / "no-bwrap"
    data = tmp_path / "data"
    async with run_daemon(data, "--no-model", "--bwrap", str(missing)) as d, d.client() as c:
        sandbox = (await c.get("/health")).json()["sandbox"]
        assert sandbox["available"] is False and sandbox["kind"] == "bwrap"
        assert "install bubblewrap" in sandbox["why"] and sandbox["confined"] is False
        ws = (await c.post("/api/workspaces", json={"path": str(tmp_path), "network": True})).json()
        assert ws["network"] is True
    assert "commands are not sandboxed" in d.stderr() or "commands are not sandboxed" in d.log_file()
    # Kept across a restart; off is the person's choice.
    async with run_daemon(data, "--no-model", "--sandbox", "off") as d, d.client() as c:
        assert (await c.get("/api/workspaces")).json()[0]["network"] is True
        sandbox = (await c.get("/health")).json()["sandbox"]
        assert sandbox["setting"] == "off" and sandbox["confined"] is False
    # required refuses to start, with a plain line.
    argv = [sys.executable, "-m", "bmoe_daemon", "serve", "--port", "0", "--no-model", "--data-dir",
            str(tmp_path / "data2"), "--sandbox", "required", "--bwrap", str(missing)]
    done = await trio.to_thread.run_sync(lambda: subprocess.run(
        argv, capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}))
    assert done.returncode == 2
    assert "--sandbox required" in done.stderr and "install bubblewrap" in done.stderr
    assert "Traceback" not in done.stderr
