"""End to end: the real daemon process on port 0, over HTTP, SSE and a WebSocket."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio
import trio_websocket

from actors.record.cards import MAX_FEEDBACK_CHARS
from bmoe_daemon import __version__
from tests.daemon_proc import SSE, run_daemon
from tests.waiting import read_saved, wait_http_state

SCRIPT = {
    "token_delay": 0.002,
    "rounds": [
        {"when": "hello", "text": "Hello from the script.", "reasoning": "Greet."},
        {"when": "hang", "hang": True, "delay": 0.01},
        {"when": "write", "tool_calls": [{"name": "note", "arguments": {"path": "out.txt", "text": "written"}}]},
        {"when": "write", "text": "Wrote it."},
        {"when": "pause", "tool_calls": [{"name": "pause", "arguments": {"seconds": 60}}]},
        {"when": "slow", "text": "tick " * 400, "delay": 0.02},
    ],
}


def write_script(tmp_path: Path, script: dict | None = None) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script or SCRIPT))
    return path


@pytest.fixture
async def scripted(tmp_path):
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path))) as d:
        yield d


async def test_health_and_errors(scripted):
    async with scripted.client() as c:
        r = await c.get("/health")
        # A scripted model runs nowhere (no device) and is never let go for idleness.
        body = r.json()
        assert isinstance(body.pop("sandbox"), dict)  # tests/test_e2e_sandbox.py looks inside
        assert r.status_code == 200 and body == {"status": "ok", "version": __version__, "model": "scripted",
                                                 "device": None, "loaded": True, "model_state": "loaded"}
        r = await c.get("/api/nothing-here")
        assert r.status_code == 404 and r.json()["code"] == "not_found"
        for path in ("/api/conversations/nope", "/api/conversations/nope/messages", "/api/conversations/nope/stop"):
            r = await c.post(path, json={"text": "x"}) if path.endswith(("messages", "stop")) else await c.get(path)
            assert r.status_code == 404 and r.json()["code"] == "not_found", path
        r = await c.delete("/api/conversations/nope")
        assert r.status_code == 404
        r = await c.delete("/api/workspaces/nope")
        assert r.status_code == 404
        r = await c.patch("/api/conversations/nope", json={"title": "x"})
        assert r.status_code == 404


BAD_BODIES = [b"", b"not json", b"[1,2]", b'"text"', b"{", b'{"mode": 5}', b'{"mode": "sideways"}',
              b'{"route": "nope"}', b'{"items": [{"kind": "tool", "text": "x"}]}', b'{"title": 7}', b'{"workspace": 3}']


async def test_malformed_requests_are_400_and_change_nothing(scripted, tmp_path):
    async with scripted.client() as c:
        conv = (await c.post("/api/conversations", json={"title": "keep"})).json()
        before = sorted(os.listdir(scripted.data_dir / "agent" / "conversations"))
        for body in BAD_BODIES:
            r = await c.post("/api/conversations", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 400, (body, r.text)
            assert r.json()["code"] == "bad_request" and r.json()["error"]
        cid = conv["id"]
        for path, bodies in {
            f"/api/conversations/{cid}/messages": [b"", b"{}", b'{"text": 5}', b'{"text": "x", "images": "no"}',
                                                   b'{"text": "x", "images": ["http://x"]}', b"[]"],
            f"/api/conversations/{cid}/edit": [b"{}", b'{"item": 1, "text": "x"}'],
            f"/api/conversations/{cid}/approval": [b"{}", b'{"item": "x", "decision": "maybe"}'],
            "/api/workspaces": [b"{}", b'{"path": 5}', b"nope"],
        }.items():
            for body in bodies:
                r = await c.post(path, content=body, headers={"content-type": "application/json"})
                assert r.status_code == 400, (path, body, r.text)
                assert set(r.json()) == {"error", "code"}
        for body in (b'{"mode": "x"}', b'{"title": 1}', b"[]", b'{"workspace": "missing"}'):
            r = await c.patch(f"/api/conversations/{cid}", content=body)
            assert r.status_code == 400, (body, r.text)
        r = await c.post("/api/workspaces", json={"path": str(tmp_path / "missing")})
        assert r.status_code == 400 and r.json()["code"] == "not_a_folder"
        images = ["data:image/png;base64,AAAA"]
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "x", "images": images})
        assert r.status_code == 400 and r.json()["code"] == "no_vision"
        after = sorted(os.listdir(scripted.data_dir / "agent" / "conversations"))
        assert after == before
        got = (await c.get(f"/api/conversations/{cid}")).json()
        assert got["items"] == [] and got["title"] == "keep" and got["mode"] == "ask"
        listed = (await c.get("/api/conversations")).json()
        assert [x["id"] for x in listed] == [cid]
        assert not (scripted.data_dir / "agent" / "workspaces.json").exists()


async def test_message_streams_over_sse(scripted):
    async with scripted.client() as c, trio.open_nursery() as nursery:
        sse = SSE(c)
        await nursery.start(sse.run)
        conv = (await c.post("/api/conversations", json={})).json()
        r = await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "hello there"})
        assert r.status_code == 202
        user = r.json()["item"]
        assert user["kind"] == "user" and user["text"] == "hello there"
        running = await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["state"] == "running")
        await sse.wait_for(lambda e: e[0] > running[0] and e[1] == "conversation" and e[2]["state"] == "idle")
        deltas = [e for e in sse.events if e[1] == "delta"]
        assert "".join(e[2].get("text", "") for e in deltas) == "Hello from the script."
        assert "".join(e[2].get("reasoning", "") for e in deltas) == "Greet."
        ids = [e[0] for e in sse.events]
        assert ids == list(range(ids[0], ids[0] + len(ids)))
        body = (await c.get(f"/api/conversations/{conv['id']}")).json()
        assert [i["kind"] for i in body["items"]] == ["user", "assistant"]
        assert body["items"][1]["text"] == "Hello from the script." and body["items"][1]["reasoning"] == "Greet."
        assert body["title"] == "hello there"
        nursery.cancel_scope.cancel()


async def test_busy_stop_and_replay(scripted):
    async with scripted.client() as c:
        conv = (await c.post("/api/conversations", json={})).json()
        cid = conv["id"]
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "hang on"})
        assert r.status_code == 202
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "again"})
        assert r.status_code == 409 and r.json()["code"] == "busy"
        r = await c.delete(f"/api/conversations/{cid}")
        assert r.status_code == 409
        r = await c.patch(f"/api/conversations/{cid}", json={"route": "p/m"})
        assert r.status_code == 409
        r = await c.post(f"/api/conversations/{cid}/stop")
        assert r.status_code == 200 and r.json() == {"stopped": True}
        body = await wait_http_state(c, cid, "idle")
        assert body["items"][-1]["kind"] == "notice"
        r = await c.post(f"/api/conversations/{cid}/stop")
        assert r.json() == {"stopped": False}
        # Replay: everything after an id, then live.
        async with trio.open_nursery() as nursery:
            sse = SSE(c, headers={"Last-Event-ID": "0"})
            await nursery.start(sse.run)
            await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["state"] == "idle")
            first = sse.events[0][0]
            assert first == 1
            nursery.cancel_scope.cancel()
        async with trio.open_nursery() as nursery:
            sse = SSE(c, headers={"Last-Event-ID": "3"})
            await nursery.start(sse.run)
            await sse.wait_for(lambda e: True)
            assert sse.events[0][0] == 4
            nursery.cancel_scope.cancel()
        r = await c.get("/api/events", headers={"Last-Event-ID": "abc"})
        assert r.status_code == 400
        r = await c.delete(f"/api/conversations/{cid}")
        assert r.status_code == 200
        assert (await c.get(f"/api/conversations/{cid}")).status_code == 404
        assert not (scripted.data_dir / "agent" / "conversations" / f"{cid}.json").exists()


async def test_workspace_approval_and_edit_over_http(scripted, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    async with scripted.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        assert ws["path"] == str(folder.resolve()) and ws["name"] == "project"
        again = (await c.post("/api/workspaces", json={"path": str(folder) + "/."})).json()
        assert again["id"] == ws["id"]
        assert [w["id"] for w in (await c.get("/api/workspaces")).json()] == [ws["id"]]
        conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"})).json()
        cid = conv["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "write please"})
        body = await wait_http_state(c, cid, "waiting")
        card = body["items"][-1]
        assert card["kind"] == "tool" and card["state"] == "waiting" and card["title"] == "Write out.txt"
        assert not (folder / "out.txt").exists()
        r = await c.post(f"/api/conversations/{cid}/approval", json={"item": "nope", "decision": "approve"})
        assert r.status_code == 404
        r = await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve"})
        assert 200 <= r.status_code < 300
        body = await wait_http_state(c, cid, "idle")
        assert (folder / "out.txt").read_text() == "written"
        assert body["items"][-1]["text"] == "Wrote it."
        # edit the first message: it and everything after go, then it is sent again
        first = body["items"][0]["id"]
        r = await c.post(f"/api/conversations/{cid}/edit", json={"item": first, "text": "hello again"})
        assert r.status_code == 202
        body = await wait_http_state(c, cid, "idle")
        assert [i["kind"] for i in body["items"]] == ["user", "assistant"]
        assert body["items"][1]["text"] == "Hello from the script."
        # forgetting the workspace touches no file
        r = await c.delete(f"/api/workspaces/{ws['id']}")
        assert r.status_code == 200 and (folder / "out.txt").exists()


async def test_a_denied_calls_reason_over_http(scripted, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    async with scripted.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"})).json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "write please"})
        card = (await wait_http_state(c, cid, "waiting"))["items"][-1]
        for bad in (7, ["no"], "x" * (MAX_FEEDBACK_CHARS + 1)):
            r = await c.post(f"/api/conversations/{cid}/approval",
                             json={"item": card["id"], "decision": "deny", "feedback": bad})
            assert r.status_code == 400 and r.json()["code"] == "bad_request", bad
        assert (await c.get(f"/api/conversations/{cid}")).json()["items"][-1]["state"] == "waiting"
        r = await c.post(f"/api/conversations/{cid}/approval",
                         json={"item": card["id"], "decision": "deny", "feedback": "Not in this folder."})
        assert r.status_code == 200
        body = await wait_http_state(c, cid, "idle")
        denied = next(i for i in body["items"] if i["id"] == card["id"])
        assert denied["state"] == "denied"
        assert denied["result"].startswith("The person denied this call: Not in this folder.")
        assert not (folder / "out.txt").exists()


async def test_websocket_carries_the_same_events(scripted):
    host, port = scripted.url.removeprefix("http://").rsplit(":", 1)
    async with scripted.client() as c:
        conv = (await c.post("/api/conversations", json={})).json()
        async with trio_websocket.open_websocket(host, int(port), "/api/ws", use_ssl=False) as ws:
            await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "hello"})
            got = []
            with trio.fail_after(10):
                while True:
                    msg = json.loads(await ws.get_message())
                    got.append(msg)
                    if msg["event"] == "conversation" and msg["data"]["state"] == "idle":
                        break
            text = "".join(m["data"].get("text", "") for m in got if m["event"] == "delta")
            assert text == "Hello from the script."
            assert all(isinstance(m["id"], int) for m in got)


async def test_debug_actors_lists_the_tree(scripted):
    async with scripted.client() as c:
        conv = (await c.post("/api/conversations", json={})).json()
        await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "hang"})
        await wait_http_state(c, conv["id"], "running")
        tree = (await c.get("/api/debug/actors")).json()
        kinds = {ch["kind"]: ch for ch in tree["children"]}
        assert kinds["engine"]["state"] == "generating" and kinds["engine"]["run"] == conv["id"]
        convs = kinds["hub"]["children"]
        mine = next(x for x in convs if x["id"] == conv["id"])
        assert mine["state"] == "running" and mine["run"] and mine["mailbox"] == 0
        # Every kind of actor the daemon runs is in the tree.
        assert {"engine", "hub", "mcp-servers", "acp-agents", "scheduler"} <= set(kinds), sorted(kinds)
        await c.post(f"/api/conversations/{conv['id']}/stop")


async def test_origin_and_key(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("s3cret-key-value\n")
    script = write_script(tmp_path)
    async with run_daemon(tmp_path / "data", "--scripted", str(script), "--api-key-file", str(key_file)) as d:
        async with d.client() as c:
            assert (await c.get("/health")).status_code == 200
            r = await c.get("/api/conversations")
            assert r.status_code == 401 and r.json()["code"] == "unauthorized"
            r = await c.get("/api/conversations", headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401
            auth = {"Authorization": "Bearer s3cret-key-value"}
            r = await c.get("/api/conversations", headers=auth)
            assert r.status_code == 200
            r = await c.post("/api/conversations", json={}, headers={**auth, "Origin": "https://evil.example"})
            assert r.status_code == 403 and r.json()["code"] == "forbidden_origin"
            # Another port of this computer is another site.
            r = await c.post("/api/conversations", json={}, headers={**auth, "Origin": "http://localhost:3000"})
            assert r.status_code == 403 and r.json()["code"] == "forbidden_origin"
            own = d.url.rstrip("/")  # a page the daemon served itself
            r = await c.post("/api/conversations", json={}, headers={**auth, "Origin": own})
            assert r.status_code == 201
            assert "s3cret" not in r.text
        proc_cmdline = await trio.Path(f"/proc/{d.proc.pid}/cmdline").read_bytes()
        assert b"s3cret" not in proc_cmdline
    assert "s3cret" not in d.stderr()
    assert "serving on" in d.log_file() and "s3cret" not in d.log_file()


async def test_sigterm_stops_runs_with_a_notice(tmp_path):
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(write_script(tmp_path))) as d:
        async with d.client() as c:
            conv = (await c.post("/api/conversations", json={})).json()
            await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "slow please"})
            with trio.fail_after(10):
                while True:
                    body = (await c.get(f"/api/conversations/{conv['id']}")).json()
                    if len(body["items"]) >= 2 and len(body["items"][1].get("text", "")) > 20:
                        break
                    await trio.sleep(0.02)
        d.proc.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            code = await d.proc.wait()
        assert code == 0
    saved = read_saved(data / "agent" / "conversations" / f"{conv['id']}.json")
    assert saved["state"] == "idle"
    assert saved["items"][1]["streaming"] is False and saved["items"][1]["text"].startswith("tick")
    assert saved["items"][-1]["kind"] == "notice" and "shut down" in saved["items"][-1]["text"]


async def test_kill_9_loses_no_completed_item(tmp_path):
    data = tmp_path / "data"
    script = write_script(tmp_path)
    async with run_daemon(data, "--scripted", str(script)) as d:
        async with d.client() as c:
            conv = (await c.post("/api/conversations", json={"mode": "full"})).json()
            cid = conv["id"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "pause for a while"})
            with trio.fail_after(10):
                while True:
                    body = (await c.get(f"/api/conversations/{cid}")).json()
                    if any(i["kind"] == "tool" and i["state"] == "running" for i in body["items"]):
                        break
                    await trio.sleep(0.02)
            completed = [i for i in body["items"] if i["kind"] in ("user", "assistant")]
            d.proc.kill()
            await d.proc.wait()
    async with run_daemon(data, "--scripted", str(script)) as d:
        async with d.client() as c:
            body = (await c.get(f"/api/conversations/{cid}")).json()
    assert body["state"] == "idle"
    got = {i["id"]: i for i in body["items"]}
    for item in completed:
        assert got[item["id"]]["kind"] == item["kind"]
        assert got[item["id"]].get("text") == item.get("text")
    last = body["items"][-1]
    assert last["kind"] == "notice" and "stopped while this conversation was running" in last["text"]
    card = next(i for i in body["items"] if i["kind"] == "tool")
    assert card["state"] == "error"


async def test_no_model_keeps_a_message_with_images(tmp_path):
    """With --no-model the message and its images are kept and the run ends with the
    no-model notice, as a text message's does; no_vision is for a model that is loaded."""
    image = "data:image/png;base64,iVBORw0KGgo="
    async with run_daemon(tmp_path / "data", "--no-model") as d, d.client() as c:
        conv = (await c.post("/api/conversations", json={})).json()
        r = await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "what is this?", "images": [image]})
        assert r.status_code == 202
        body = await wait_http_state(c, conv["id"], "error")
        user, notice = body["items"]
        assert (user["kind"], user["text"], user["images"]) == ("user", "what is this?", [image])
        assert (notice["kind"], notice["level"]) == ("notice", "error")
        assert notice["text"].startswith("No model is loaded")
        # /v1 says what is missing too: the model, not the images.
        r = await c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": image}}]}]})
        assert (r.status_code, r.json()["code"]) == (409, "no_model")


async def test_a_conversation_cannot_start_with_too_many_messages(scripted):
    async with scripted.client() as c:
        items = [{"kind": "user", "text": "x"}] * 2001
        r = await c.post("/api/conversations", json={"items": items})
        assert r.status_code == 400 and "at most 2000" in r.json()["error"]
        assert (await c.get("/api/conversations")).json() == []
        r = await c.post("/api/conversations", content=b"[" * 100_000 + b"]" * 100_000)
        assert r.status_code == 400 and r.json()["code"] == "bad_request"
