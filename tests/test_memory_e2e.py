"""Memories over HTTP against the real daemon with a scripted model: written in one
conversation, found in another of the same workspace and not in another workspace;
refused in read_only until the person allows it; listed, changed and forgotten through
/api/workspaces/<id>/memories, every bad request a 4xx {error, code}; kept across a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.daemon_proc import run_daemon
from tests.test_e2e import write_script
from tests.waiting import wait_http_state

FACT = "Build with make dist; the tests run with make check."


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


SCRIPT = {"token_delay": 0, "default": {"text": "Done."}, "rounds": [
    {"when": "remember-build", "tool_calls": [call("memory_write", text=FACT, tags=["build"])]},
    {"when": "recall-here", "tool_calls": [call("memory_search", query="how to build")]},
    {"when": "recall-there", "tool_calls": [call("memory_search", query="how to build")]},
    {"when": "ro-remember-1", "tool_calls": [call("memory_write", text="Read-only note one.")]},
    {"when": "ro-remember-2", "tool_calls": [call("memory_write", text="Read-only note two.")]},
    {"when": "recall-after-restart", "tool_calls": [call("memory_search", query="make")]},
]}


def tool_card(body: dict[str, Any]) -> dict[str, Any]:
    return [i for i in body["items"] if i["kind"] == "tool"][-1]


async def test_a_memory_is_found_in_its_workspace_only_and_kept(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    script = write_script(tmp_path, SCRIPT)
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        ws_a = (await c.post("/api/workspaces", json={"path": str(a)})).json()
        ws_b = (await c.post("/api/workspaces", json={"path": str(b)})).json()
        assert ws_a["memory_in_read_only"] is False

        async def say(ws: dict[str, Any], mode: str, text: str) -> dict[str, Any]:
            cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": mode})).json()["id"]
            assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": text})).status_code == 202
            return await wait_http_state(c, cid, "idle", "error")

        card = tool_card(await say(ws_a, "ask", "remember-build"))
        assert card["state"] == "done" and card["result"].startswith("Remembered as m")
        card = tool_card(await say(ws_a, "ask", "recall-here"))
        assert card["state"] == "done" and FACT in card["result"] and "not instructions" in card["result"]
        card = tool_card(await say(ws_b, "ask", "recall-there"))
        assert card["state"] == "done" and FACT not in card["result"] and card["result"].startswith("No memory")

        # read_only: refused until the person allows it for the workspace.
        card = tool_card(await say(ws_a, "read_only", "ro-remember-1"))
        assert card["state"] == "error" and "read-only" in card["result"]
        r = await c.patch(f"/api/workspaces/{ws_a['id']}", json={"memory_in_read_only": True})
        assert r.status_code == 200 and r.json()["memory_in_read_only"] is True
        card = tool_card(await say(ws_a, "read_only", "ro-remember-2"))
        assert card["state"] == "done", card["result"]

        listed = (await c.get(f"/api/workspaces/{ws_a['id']}/memories")).json()
        assert [m["text"] for m in listed] == ["Read-only note two.", FACT]
        assert listed[1]["tags"] == ["build"] and listed[1]["conversation"]
        assert (await c.get(f"/api/workspaces/{ws_b['id']}/memories")).json() == []
        mid = listed[0]["id"]
        base = f"/api/workspaces/{ws_a['id']}/memories"

        # Bad requests: 4xx {error, code}, nothing changed.
        bad = [
            (c.patch(f"{base}/{mid}", content=b"{not json"), 400),
            (c.patch(f"{base}/{mid}", json=[]), 400),
            (c.patch(f"{base}/{mid}", json={}), 400),
            (c.patch(f"{base}/{mid}", json={"text": "  "}), 400),
            (c.patch(f"{base}/{mid}", json={"text": "x" * 2001}), 400),
            (c.patch(f"{base}/{mid}", json={"tags": ["Not A Tag"]}), 400),
            (c.patch(f"{base}/{mid}", json={"tags": "build"}), 400),
            (c.patch(f"{base}/{mid}", json={"text": 5}), 400),
            (c.patch(f"{base}/nope", json={"text": "x"}), 404),
            (c.patch(f"/api/workspaces/{ws_b['id']}/memories/{mid}", json={"text": "x"}), 404),
            (c.delete(f"{base}/nope"), 404),
            (c.get("/api/workspaces/nope/memories"), 404),
        ]
        for request, status in bad:
            r = await request
            assert r.status_code == status, (r.request.url, r.text)
            assert set(r.json()) >= {"error", "code"} and r.json()["error"]
        assert (await c.get(base)).json() == listed

        r = await c.patch(f"{base}/{mid}", json={"text": "Read-only note, changed.", "tags": ["notes"]})
        assert r.status_code == 200 and r.json()["text"] == "Read-only note, changed." and r.json()["tags"] == ["notes"]
        r = await c.delete(f"{base}/{mid}")
        assert r.status_code == 200 and r.json() == {"deleted": mid}
        assert [m["text"] for m in (await c.get(base)).json()] == [FACT]

    # A restart keeps them, and the workspace's setting.
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        workspaces = {w["id"]: w for w in (await c.get("/api/workspaces")).json()}
        assert workspaces[ws_a["id"]]["memory_in_read_only"] is True
        cid = (await c.post("/api/conversations", json={"workspace": ws_a["id"], "mode": "ask"})).json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "recall-after-restart"})
        card = tool_card(await wait_http_state(c, cid, "idle", "error"))
        assert FACT in card["result"]
