"""End to end: the real daemon process talks to a scripted OpenAI-compatible server
(tests/openai_stub.py, in this test's process on 127.0.0.1) through a saved provider."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.daemon_proc import SSE, run_daemon
from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk, serving, text_chunks
from tests.waiting import wait_http_state

KEY = "sk-e2e-Very-Secret-7b2e41"
SCRIPT = {"rounds": [], "default": {"text": "Local scripted answer."}}


@pytest.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    async with serving() as server:
        yield server


async def test_a_provider_conversation_end_to_end(tmp_path: Path, stub: OpenAIStub) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    provider_bodies: list[str] = []
    async with run_daemon(tmp_path / "data", "--scripted", str(script), "--log-level", "debug") as d:
        cmdline = Path(f"/proc/{d.proc.pid}/cmdline").read_bytes()
        async with d.client() as c:

            async def provider_call(method: str, path: str, **kw) -> httpx.Response:
                r = await c.request(method, path, **kw)
                provider_bodies.append(r.text)
                return r

            # Save a provider with a key; it is never given back.
            r = await provider_call("POST", "/api/providers", json={
                "name": "Stub Cloud", "base_url": stub.base_url, "models": ["stub-model"], "api_key": KEY})
            assert r.status_code == 201, r.text
            provider = r.json()
            assert provider == {"id": "stub-cloud", "name": "Stub Cloud", "base_url": stub.base_url,
                                "models": ["stub-model"], "has_key": True}
            r = await provider_call("PUT", "/api/providers/stub-cloud", json={
                "name": "Stub Cloud", "base_url": stub.base_url, "models": ["stub-model", "other"]})
            assert r.status_code == 200 and r.json()["has_key"] is True
            r = await provider_call("GET", "/api/providers")
            assert r.json() == [{**provider, "models": ["stub-model", "other"]}]
            r = await c.post("/api/conversations", json={"route": "unsaved/stub-model"})
            assert r.status_code == 400 and r.json()["code"] == "bad_request"

            # A round that calls a tool, then one that answers: both through the provider.
            stub.replies.append({"chunks": [
                *text_chunks("Let me check.", key="reasoning_content"),
                *text_chunks("Checking. "),
                *call_chunks(0, "call_e2e", "echo", '{"text": "ping"}', size=4),
                chunk({}, "tool_calls")], "delay": 0.002})
            stub.replies.append(answer("The echo said ping."))
            conv = (await c.post("/api/conversations", json={"route": "stub-cloud/stub-model"})).json()
            cid = conv["id"]
            async with trio.open_nursery() as nursery:
                sse = SSE(c)
                await nursery.start(sse.run)
                r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "Please echo ping"})
                assert r.status_code == 202
                running = await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["state"] == "running")
                await sse.wait_for(lambda e: e[0] > running[0] and e[1] == "conversation" and e[2]["state"] == "idle")
                nursery.cancel_scope.cancel()
            deltas = [e[2] for e in sse.events if e[1] == "delta" and e[2]["conversation"] == cid]
            assert "".join(x.get("text", "") for x in deltas) == "Checking. The echo said ping."
            assert "".join(x.get("reasoning", "") for x in deltas) == "Let me check."
            composing = [e[2]["item"] for e in sse.events if e[1] == "item" and e[2]["item"]["kind"] == "tool"
                         and e[2]["item"]["state"] == "composing"]
            assert composing and composing[0]["tool"] == "echo" and composing[0]["call_id"] == "call_e2e"
            body = (await c.get(f"/api/conversations/{cid}")).json()
            assert [i["kind"] for i in body["items"]] == ["user", "assistant", "tool", "assistant"]
            first, card, last = body["items"][1:]
            assert first["text"] == "Checking. " and first["reasoning"] == "Let me check."
            assert first["tool_calls"] == [{"id": "call_e2e", "name": "echo", "arguments": '{"text": "ping"}'}]
            assert (card["state"], card["result"], card["args"]) == ("done", "ping", {"text": "ping"})
            assert last["text"] == "The echo said ping." and body["state"] == "idle"

            # What reached the provider: the key in the header, the tool's result in round two.
            assert len(stub.received) == 2
            for req in stub.received:
                assert req.path == "/v1/chat/completions" and req.headers["authorization"] == f"Bearer {KEY}"
                assert req.body["model"] == "stub-model" and req.body["stream"] is True
                assert "echo" in [t["function"]["name"] for t in req.body["tools"]]
            second = stub.received[1].body["messages"]
            assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"][0]["id"] == "call_e2e"
            assert second[-1] == {"role": "tool", "tool_call_id": "call_e2e", "content": "ping"}

            # A refusal ends the run with a notice in plain words, without the key.
            stub.replies.append({"status": 401, "json": {"error": {"message": f"Bad key {KEY}"}}})
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "again"})
            body = await wait_http_state(c, cid, "error")
            notice = body["items"][-1]
            assert notice["kind"] == "notice" and notice["level"] == "error"
            assert "answered 401" in notice["text"] and "Check the key" in notice["text"]
            assert KEY not in json.dumps(body)

            # A stop mid-stream closes the provider's stream.
            stub.replies.append({"chunks": text_chunks("slow " * 300, size=5), "delay": 0.02})
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "go slowly"})
            with trio.fail_after(10):  # the answer is streaming into the conversation
                while not (await c.get(f"/api/conversations/{cid}")).json()["items"][-1].get("streaming"):
                    await trio.sleep(0.02)
            r = await c.post(f"/api/conversations/{cid}/stop")
            assert r.json() == {"stopped": True}
            with trio.fail_after(10):
                await stub.client_left.wait()
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["kind"] == "notice" and body["items"][-2]["text"].startswith("slow")

            # Forgotten: the key goes with it, and the conversation says what to do.
            r = await provider_call("DELETE", "/api/providers/stub-cloud")
            assert r.status_code == 200
            assert KEY not in (d.data_dir / "credentials.json").read_text()
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "still there?"})
            body = await wait_http_state(c, cid, "error")
            assert "not saved any more" in body["items"][-1]["text"]
            r = await provider_call("GET", "/api/providers")
            assert r.json() == []
    assert KEY.encode() not in cmdline
    assert provider_bodies and not [b for b in provider_bodies if KEY in b]
    for log in (d.stderr(), d.log_file()):
        assert "chat/completions" in log  # the debug log did see the requests go out
        assert KEY not in log
