"""Issue 29 end to end: a real daemon with the scripted model in `full` mode, over HTTP:
what each run changed, rewinds (refused for files changed since, forced, undone),
a fork, and all of it after a restart and after a kill -9 in the middle of a run."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import trio

from tests.daemon_proc import run_daemon
from tests.waiting import wait_http_state

SCRIPT = {
    "token_delay": 0.0,
    "rounds": [
        {"when": "write", "tool_calls": [{"name": "write_file",
                                          "arguments": {"path": "new/made.txt", "content": "made\n"}}]},
        {"when": "write", "text": "Wrote it."},
        {"when": "shell", "tool_calls": [{"name": "exec_shell_command",
                                          "arguments": {"command": "sed -i s/one/two/ a.txt && rm gone.txt"}}]},
        {"when": "shell", "text": "Edited and deleted."},
        {"when": "killme", "tool_calls": [{"name": "write_file",
                                           "arguments": {"path": "killed.txt", "content": "half\n"}}]},
        {"when": "killme", "hang": True, "delay": 0.01},
        {"when": "hello", "text": "Hello from the fork."},
    ],
}


def state_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (p.read_bytes(), bool(p.stat().st_mode & stat.S_IXUSR))
    return out


async def send(c, cid: str, text: str) -> str:  # type: ignore[no-untyped-def]
    r = await c.post(f"/api/conversations/{cid}/messages", json={"text": text})
    assert r.status_code == 202, r.text
    await wait_http_state(c, cid, "idle", "error", timeout=30)
    return str(r.json()["item"]["id"])


def files_of(entry: dict) -> dict[str, str]:
    return {f["path"]: f["status"] for f in entry["files"]}


async def test_changes_rewind_fork_restart_and_kill(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"one\n")
    (ws / "gone.txt").write_bytes(b"bye\n")
    (ws / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (ws / "run.sh").chmod(0o755)
    start = state_of(ws)
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        wid = (await c.post("/api/workspaces", json={"path": str(ws)})).json()["id"]
        body = {"workspace": wid, "mode": "full", "title": "undo"}
        cid = (await c.post("/api/conversations", json=body)).json()["id"]
        m1 = await send(c, cid, "write")
        after1 = state_of(ws)
        m2 = await send(c, cid, "shell")
        assert (ws / "a.txt").read_bytes() == b"two\n" and not (ws / "gone.txt").exists()
        listed = (await c.get(f"/api/conversations/{cid}/changes")).json()["changes"]
        assert [e["item"] for e in listed] == [m1, m2]
        assert files_of(listed[0]) == {"new/made.txt": "added"}
        assert files_of(listed[1]) == {"a.txt": "modified", "gone.txt": "deleted"}
        diff = (await c.get(f"/api/conversations/{cid}/changes", params={"item": m2, "path": "a.txt"})).json()
        assert "-one" in diff["diff"] and "+two" in diff["diff"]
        for bad in ({"item": "nope"}, {"path": "a.txt"}, {"item": m2, "path": "nope"}):
            r = await c.get(f"/api/conversations/{cid}/changes", params=bad)
            assert r.status_code in (400, 404) and r.json()["code"] in ("bad_request", "not_found"), bad
        for bad_body in ({}, {"item": m1}, {"item": 5, "files": True},
                         {"item": "nope", "files": True, "conversation": True}):
            r = await c.post(f"/api/conversations/{cid}/rewind", json=bad_body)
            assert r.status_code in (400, 404), (bad_body, r.text)
        # The fork goes on by itself; the original keeps its items.
        count = len((await c.get(f"/api/conversations/{cid}")).json()["items"])
        fork = (await c.post(f"/api/conversations/{cid}/fork", json={"item": m1}))
        assert fork.status_code == 201 and fork.json()["title"] == "undo (fork)"
        fid = fork.json()["id"]
        assert [i["id"] for i in fork.json()["items"]][0] == m1
        await send(c, fid, "hello")
        assert len((await c.get(f"/api/conversations/{cid}")).json()["items"]) == count
        assert (await c.post(f"/api/conversations/{cid}/fork", json={"item": "nope"})).status_code == 404
        # The person edits a.txt: the rewind of m2 names it and changes nothing.
        (ws / "a.txt").write_bytes(b"mine\n")
        listed = (await c.get(f"/api/conversations/{cid}/changes")).json()["changes"]
        assert [f["changed_since"] for f in listed[1]["files"] if f["path"] == "a.txt"] == [True]
        r = await c.post(f"/api/conversations/{cid}/rewind", json={"item": m2, "files": True})
        assert r.status_code == 409 and r.json()["code"] == "changed_since" and r.json()["paths"] == ["a.txt"]
        assert (ws / "a.txt").read_bytes() == b"mine\n" and not (ws / "gone.txt").exists()
        r = await c.post(f"/api/conversations/{cid}/rewind", json={"item": m2, "files": True, "force": True})
        assert r.status_code == 200, r.text
        assert state_of(ws) == after1
        undo = r.json()["files"]["rewind"]
        # The rewind is undone by rewinding to it.
        r = await c.post(f"/api/conversations/{cid}/rewind", json={"item": undo, "files": True})
        assert r.status_code == 200, r.text
        assert (ws / "a.txt").read_bytes() == b"mine\n" and not (ws / "gone.txt").exists()
    # After a restart: changes still listed, the rewind to m1 (files and conversation) goes through.
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        listed = (await c.get(f"/api/conversations/{cid}/changes")).json()["changes"]
        assert [e["item"] for e in listed][:2] == [m1, m2]
        r = await c.post(f"/api/conversations/{cid}/rewind", json={"item": m1, "files": True, "conversation": True,
                                                                  "force": True})
        assert r.status_code == 200, r.text
        assert state_of(ws) == start
        assert m1 not in [i["id"] for i in (await c.get(f"/api/conversations/{cid}")).json()["items"]]
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "killme"})
        with trio.fail_after(20):
            while not (ws / "killed.txt").exists():
                await trio.sleep(0.02)
        r2 = await c.post(f"/api/conversations/{cid}/rewind", json={"item": r.json()["item"]["id"], "files": True})
        assert r2.status_code == 409 and r2.json()["code"] == "busy"
        m3 = r.json()["item"]["id"]
        d.proc.kill()
        await d.proc.wait()
    # After a kill -9 mid-run: the checkpoint before it still restores.
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        await wait_http_state(c, cid, "idle", "error")
        listed = (await c.get(f"/api/conversations/{cid}/changes")).json()["changes"]
        assert files_of([e for e in listed if e["item"] == m3][0]) == {"killed.txt": "added"}
        r = await c.post(f"/api/conversations/{cid}/rewind", json={"item": m3, "files": True})
        assert r.status_code == 200, r.text
        assert state_of(ws) == start
