"""OpenCode itself as a conversation's agent, through `opencode acp` from the catalog.

The daemon starts OpenCode over ACP in the workspace; OpenCode's own config (a
temporary HOME and XDG_CONFIG_HOME) points its model at a loopback OpenAI-compatible
scripted server (tests/openai_stub.py) and makes its edits ask (`permission.edit:
ask`). OpenCode runs offline as in tests/test_e2e_opencode.py: no npm registry, no
models.dev fetch, no update check, every proxy-aware request but loopback sent to a
closed port. `.ci/run` installs it (OPENCODE_BIN); without it these tests are skipped
(failed, under BMOE_REQUIRE_PEERS: tests/peers.py).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import trio

from tests.daemon_proc import SSE, DaemonProcess, run_daemon
from tests.openai_stub import OpenAIStub, Received, answer, call_chunks, chunk
from tests.peers import need_peer
from tests.waiting import saved_record

RUN_TIMEOUT_S = 120
OFFLINE = {
    "npm_config_offline": "true",
    "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
    "OPENCODE_DISABLE_SHARE": "true",
    **{name: "http://127.0.0.1:9" for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
ANSWER = "Hello from the stub model, through OpenCode over ACP."
DONE = "The file is written."
TITLE = "A short title"


def opencode_binary() -> str | None:
    local = Path.home() / ".cache" / "bmoe-daemon" / "ci" / "opencode" / "node_modules" / ".bin" / "opencode"
    for candidate in (os.environ.get("OPENCODE_BIN"), shutil.which("opencode"), str(local)):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(autouse=True)
def opencode() -> str:
    """OpenCode's program, for every test here; `need_peer` without it."""
    binary = opencode_binary()
    if binary is None:
        need_peer("OpenCode is not installed (.ci/run installs npm's opencode-ai and names it in OPENCODE_BIN)")
    return binary


class ChoosingStub(OpenAIStub):
    """The stub, its reply chosen from each request (OpenCode also asks for a title,
    in an order of its own)."""

    def __init__(self, choose: Callable[[Received], dict[str, Any]]) -> None:
        super().__init__()
        self.choose = choose

    def reply_for(self, request: Received) -> dict[str, Any]:
        return self.choose(request)


def is_title_request(req: Received) -> bool:
    body = req.body or {}
    return not body.get("tools")


def has_tool_result(req: Received) -> bool:
    return any(m.get("role") == "tool" for m in (req.body or {}).get("messages", []))


def tool_call_reply(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    chunks = [chunk({"role": "assistant"}), *call_chunks(0, "call_stub_1", name, json.dumps(arguments))]
    chunks.append(chunk({}, "tool_calls"))
    return {"chunks": chunks}


@attrs.define
class Setup:
    d: DaemonProcess
    c: httpx.AsyncClient
    sse: SSE
    ws: Path
    ws_id: str
    stub: ChoosingStub


def write_opencode_config(config_home: Path, base_url: str) -> None:
    folder = config_home / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"stub": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Stub",
            "options": {"baseURL": base_url, "apiKey": "not-needed"},
            "models": {"stub-model": {"name": "Stub model", "tool_call": True,
                                      "limit": {"context": 64000, "output": 4000}}},
        }},
        "model": "stub/stub-model",
        "small_model": "stub/stub-model",
        "permission": {"edit": "ask", "bash": "ask"},
        "autoupdate": False,
        "share": "disabled",
    }))


@asynccontextmanager
async def opencode_daemon(tmp_path: Path, choose: Callable[[Received], dict[str, Any]]) -> AsyncIterator[Setup]:
    binary = opencode_binary()
    assert binary is not None
    home, config_home = tmp_path / "home", tmp_path / "home" / ".config"
    home.mkdir()
    ws = tmp_path / "project"
    ws.mkdir()
    stub = ChoosingStub(choose)
    async with trio.open_nursery() as outer:
        await outer.start(stub.run)
        write_opencode_config(config_home, stub.base_url)
        env = {
            "HOME": str(home), "XDG_CONFIG_HOME": str(config_home), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
            "npm_config_cache": str(tmp_path / "npm-cache"),
            "PATH": f"{Path(binary).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **OFFLINE,
        }
        async with run_daemon(tmp_path / "data", "--no-model", env=env) as d, d.client() as c, d.client() as sc, \
                trio.open_nursery() as nursery:
            sse = SSE(sc)
            await nursery.start(sse.run)
            r = await c.post("/api/workspaces", json={"path": str(ws)})
            assert r.status_code in (200, 201), r.text
            yield Setup(d, c, sse, ws.resolve(), r.json()["id"], stub)
            nursery.cancel_scope.cancel()
        outer.cancel_scope.cancel()


async def wait_state(s: Setup, cid: str, states: tuple[str, ...]) -> dict[str, Any]:
    with trio.fail_after(RUN_TIMEOUT_S):
        while True:
            conv = (await s.c.get(f"/api/conversations/{cid}")).json()
            if conv["state"] in states:
                return conv
            await trio.sleep(0.1)


async def start(s: Setup, mode: str, text: str) -> str:
    r = await s.c.get("/api/agent")
    row = next(a for a in r.json()["agents"] if a["id"] == "opencode")
    assert row["available"] is True, row
    r = await s.c.post("/api/conversations", json={"workspace": s.ws_id, "mode": mode, "agent": "opencode"})
    assert r.status_code == 201, r.text
    cid = r.json()["id"]
    r = await s.c.post(f"/api/conversations/{cid}/messages", json={"text": text})
    assert r.status_code == 202, r.text
    return cid


def failure_context(s: Setup) -> str:
    return s.d.stderr()[-6000:]


async def test_a_prompt_to_opencode_streams_into_items(tmp_path):
    def choose(req: Received) -> dict[str, Any]:
        return answer(TITLE) if is_title_request(req) else answer(ANSWER)

    async with opencode_daemon(tmp_path, choose) as s:
        cid = await start(s, "ask", "Say hello.")
        conv = await wait_state(s, cid, ("idle", "error"))
        assert conv["state"] == "idle", (conv["items"], failure_context(s))
        texts = [i["text"] for i in conv["items"] if i["kind"] == "assistant"]
        assert any(ANSWER in t for t in texts), (conv["items"], failure_context(s))
        deltas = [e[2] for e in s.sse.events if e[1] == "delta" and e[2]["conversation"] == cid]
        assert ANSWER in "".join(d.get("text", "") for d in deltas)
        assert any(r.path.endswith("/chat/completions") for r in s.stub.received)
        path = tmp_path / "data" / "agent" / "conversations" / f"{cid}.json"
        assert await saved_record(path, lambda r: r.get("acp_session"))


async def test_an_opencode_edit_waits_for_approval(tmp_path):
    target = tmp_path / "project" / "hello.txt"

    def choose(req: Received) -> dict[str, Any]:
        if is_title_request(req):
            return answer(TITLE)
        if has_tool_result(req):
            return answer(DONE)
        return tool_call_reply("write", {"filePath": str(target), "content": "hi from opencode\n"})

    async with opencode_daemon(tmp_path, choose) as s:
        cid = await start(s, "ask", "Write hello.txt.")
        conv = await wait_state(s, cid, ("waiting", "idle", "error"))
        assert conv["state"] == "waiting", (conv["items"], failure_context(s))
        card = next(i for i in conv["items"] if i["kind"] == "tool" and i["state"] == "waiting")
        assert card["tool"] == "edit"
        assert "hi from opencode" in (card.get("diff") or ""), card
        await trio.sleep(1.0)
        assert not target.exists()  # nothing is written before the answer
        r = await s.c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve"})
        assert r.status_code == 200, r.text
        conv = await wait_state(s, cid, ("idle", "error"))
        assert conv["state"] == "idle", (conv["items"], failure_context(s))
        assert target.read_text() == "hi from opencode\n"
        assert any(DONE in (i.get("text") or "") for i in conv["items"] if i["kind"] == "assistant")


def tree_of(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` (not .git): its bytes and permission bits."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mode & 0o777)
    return out


async def test_what_opencode_wrote_is_listed_and_rewound(tmp_path):
    """Issue 29 over ACP: a `full` run in which OpenCode writes a new file and rewrites
    an old one; `changes` lists both under its message, and the rewind to that message
    puts the workspace back byte for byte (modes kept)."""
    ws = tmp_path / "project"
    made, kept = ws / "notes" / "made.txt", ws / "a.txt"
    writes = [{"filePath": str(made), "content": "written by opencode\n"},
              {"filePath": str(kept), "content": "rewritten by opencode\n"}]

    def choose(req: Received) -> dict[str, Any]:
        if is_title_request(req):
            return answer(TITLE)
        done = sum(m.get("role") == "tool" for m in (req.body or {}).get("messages", []))
        if done < len(writes):
            return tool_call_reply("write", writes[done])
        return answer(DONE)

    async with opencode_daemon(tmp_path, choose) as s:
        kept.write_bytes(b"one\r\ntwo\n")
        (ws / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
        (ws / "run.sh").chmod(0o755)
        before = tree_of(ws)
        cid = await start(s, "full", "Write two files.")
        conv = await wait_state(s, cid, ("idle", "error", "waiting"))
        assert conv["state"] == "idle", (conv["items"], failure_context(s))
        assert made.read_text() == "written by opencode\n" and kept.read_text() == "rewritten by opencode\n"
        message = next(i["id"] for i in conv["items"] if i["kind"] == "user")
        r = await s.c.get(f"/api/conversations/{cid}/changes")
        assert r.status_code == 200, r.text
        listed = r.json()["changes"]
        assert [e["item"] for e in listed] == [message], listed
        files = {f["path"]: f for f in listed[0]["files"]}
        assert {p: f["status"] for p, f in files.items()} == {"notes/made.txt": "added", "a.txt": "modified"}
        assert not any(f["changed_since"] for f in files.values())
        r = await s.c.get(f"/api/conversations/{cid}/changes", params={"item": message, "path": "a.txt"})
        assert "+rewritten by opencode" in r.json()["diff"], r.text
        r = await s.c.post(f"/api/conversations/{cid}/rewind", json={"item": message, "files": True})
        assert r.status_code == 200, r.text
        assert sorted(r.json()["files"]["restored"]) == ["a.txt"]
        assert r.json()["files"]["removed"] == ["notes/made.txt"]
        assert tree_of(ws) == before
        assert not (ws / "notes").exists()
