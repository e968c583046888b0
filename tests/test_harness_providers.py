"""The todo list, questions, plan mode and goals through a provider route: the real
daemon process and a real OpenAI-compatible HTTP server (tests/openai_stub.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.runs.agent.run_tools import goals, plans
from tests.daemon_proc import run_daemon
from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk, serving
from tests.waiting import wait_http_state

SCRIPT = {"rounds": [], "default": {"text": "Local scripted answer."}}


@pytest.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    async with serving() as server:
        yield server


def call(name: str, arguments: dict, call_id: str) -> dict:
    return {"chunks": [*call_chunks(0, call_id, name, json.dumps(arguments)), chunk({}, "tool_calls")]}


async def test_the_harness_tools_through_a_provider(tmp_path: Path, stub: OpenAIStub) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        r = await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url, "models": ["m"]})
        assert r.status_code == 201
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()

        async def conversation() -> str:
            body = {"workspace": ws["id"], "route": "stub/m", "mode": "ask"}
            return str((await c.post("/api/conversations", json=body)).json()["id"])

        # A todo list and a question.
        todos = {"todos": [{"content": "ask", "status": "in_progress"}]}
        question = {"question": "Tabs or spaces?", "options": ["tabs", "spaces"]}
        stub.replies += [call("todo_write", todos, "c1"), call("ask_user_question", question, "c2"),
                         answer("Spaces, then.")]
        cid = await conversation()
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "format it"})
        body = await wait_http_state(c, cid, "waiting")
        assert body["todos"] == todos["todos"]
        card = body["items"][-1]
        assert card["tool"] == "ask_user_question" and card["state"] == "waiting"
        r = await c.post(f"/api/conversations/{cid}/answer", json={"item": card["id"], "answer": "spaces"})
        assert r.is_success
        body = await wait_http_state(c, cid, "idle")
        assert body["items"][-1]["text"] == "Spaces, then." and body["end_reason"] == "answered"
        sent = stub.received[-1].body["messages"]
        assert sent[-1] == {"role": "tool", "tool_call_id": "c2", "content": "The person answered: spaces"}
        names = {t["function"]["name"] for t in stub.received[0].body["tools"]}
        assert {"todo_write", "ask_user_question", "enter_plan_mode"} <= names and "exit_plan_mode" not in names

        # Plan mode: the plan is written, shown, rejected once, then approved.
        stub.received.clear()
        cid = await conversation()
        path = str(data.resolve() / "agent" / "plans" / f"{cid}.md")
        stub.replies += [call("write_file", {"path": path, "content": "1. Do it\n"}, "p1"),
                         call("exit_plan_mode", {}, "p2"),
                         call("exit_plan_mode", {}, "p3"),
                         answer("Carried out.")]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "plan it", "plan": True})
        body = await wait_http_state(c, cid, "waiting")
        planned = {t["function"]["name"] for t in stub.received[0].body["tools"]}
        assert {"exit_plan_mode", "write_file", "read_file"} <= planned and "enter_plan_mode" not in planned
        assert "You are planning" in stub.received[0].body["messages"][0]["content"]
        card = body["items"][-1]
        r = await c.post(f"/api/conversations/{cid}/approval",
                         json={"item": card["id"], "decision": "deny", "feedback": "Say why."})
        assert r.is_success
        with trio.fail_after(10):
            while (body := (await c.get(f"/api/conversations/{cid}")).json())["plan"]["revision"] < 2:
                await trio.sleep(0.02)
        body = await wait_http_state(c, cid, "waiting")
        assert "Say why." in stub.received[2].body["messages"][-1]["content"]
        r = await c.post(f"/api/conversations/{cid}/approval", json={"item": body["items"][-1]["id"],
                                                                      "decision": "approve"})
        body = await wait_http_state(c, cid, "idle")
        assert body["items"][-1]["text"] == "Carried out." and body["plan"]["state"] == "approved"
        assert stub.received[-1].body["messages"][-1]["content"] == plans.APPROVED
        assert "enter_plan_mode" in {t["function"]["name"] for t in stub.received[-1].body["tools"]}

        # A goal: the completion is checked by a verifier turn asked for the verdict's schema.
        stub.received.clear()
        cid = await conversation()
        stub.replies += [call("update_goal", {"completed": True}, "g1"),
                         answer(json.dumps({"complete": True, "gaps": []}))]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "finish", "goal": "it is finished"})
        body = await wait_http_state(c, cid, "idle")
        assert body["goal"] == {"text": "it is finished", "state": "complete", "reason": None, "verify": True}
        assert body["end_reason"] == "goal_complete"
        check = stub.received[-1].body
        assert check["response_format"]["json_schema"]["schema"] == goals.VERDICT_SCHEMA
        assert "tools" not in check and check["messages"][0]["content"] == goals.VERIFIER_PROMPT


async def test_a_compaction_on_a_provider_route(tmp_path: Path, stub: OpenAIStub) -> None:
    from actors.runs.agent import compaction_cut as compaction

    summary = "\n".join(f"## {s}\nabout {s.lower()}" for s in compaction.SECTIONS)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url, "models": ["m"]})
        cid = (await c.post("/api/conversations", json={"route": "stub/m"})).json()["id"]
        for n in range(2):
            stub.replies.append(answer(f"answer {n}"))
            text = f"question {n}: " + "some detail " * 40  # the summary must be shorter than this
            await c.post(f"/api/conversations/{cid}/messages", json={"text": text})
            await wait_http_state(c, cid, "idle")
        stub.replies.append(answer(summary))
        r = await c.post(f"/api/conversations/{cid}/compact")
        assert r.status_code == 202
        body = await wait_http_state(c, cid, "idle")
        notice = next(i for i in body["items"] if i.get("compaction"))
        # The last message and its answer stay; what is before them is summarised.
        assert notice["compaction"]["summary"] == summary and notice["compaction"]["items_summarised"] == 2
        assert [i.get("compacted") for i in body["items"]] == [True, True, None, None, None]
        sent = stub.received[-1].body
        assert sent["messages"][0]["content"] == compaction.SUMMARY_PROMPT and "tools" not in sent
        assert "question 0" in sent["messages"][1]["content"]


async def test_a_provider_model_s_context_length_sets_when_it_compacts(tmp_path: Path, stub: OpenAIStub) -> None:
    """A model saved with `context_length` 4096: the conversation compacts by itself
    once its prompt passes 85% of 4,096 tokens, far below the 128,000 a model without
    one is given, and reports that size as its context."""
    from actors import notices
    from actors.runs.agent import compaction_cut as compaction

    size = 4096
    summary = "\n".join(f"## {s}\nabout {s.lower()}" for s in compaction.SECTIONS)
    stub.default = answer(summary)  # every answer, the summary's included, has the five sections
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        r = await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url,
                                                 "models": [{"id": "m", "context_length": size}]})
        assert r.status_code == 201 and r.json()["models"] == [{"id": "m", "context_length": size}]
        cid = (await c.post("/api/conversations", json={"route": "stub/m"})).json()["id"]
        sent = 0
        body: dict = {}
        while not any(i.get("compaction") for i in body.get("items", ())):
            assert sent < 20, "no compaction after 20 messages of 300 tokens"
            await c.post(f"/api/conversations/{cid}/messages", json={"text": f"question {sent}: " + "detail " * 170})
            body = await wait_http_state(c, cid, "idle", "error")
            assert body["state"] == "idle", body["items"][-1]
            sent += 1
        notice = next(i for i in body["items"] if i.get("compaction"))
        assert notice["text"] == notices.COMPACTED.format(n=notice["compaction"]["items_summarised"])
        before = notice["compaction"]["tokens_before"]
        # Past 85% of the model's own context, and nowhere near 85% of the default.
        assert compaction.TRIGGER * size < before < size + 1200 < compaction.TRIGGER * 128_000
        assert body["context"]["size"] == size
        # The summary turn was asked, then the round, with the summary in place of the items.
        requests = [r.body for r in stub.received]
        asked = next(n for n, b in enumerate(requests) if b["messages"][0]["content"] == compaction.SUMMARY_PROMPT)
        assert asked == len(requests) - 2 and "tools" not in requests[asked]
        assert requests[-1]["messages"][1]["content"].startswith("[A summary of the conversation so far]")


async def test_a_provider_s_own_count_of_the_prompt_decides_when_it_compacts(tmp_path: Path, stub: OpenAIStub) -> None:
    """The provider counted 3,600 of the model's 4,096 tokens for a prompt whose text
    the character estimate puts far lower (a tokenizer that spends more per word, or
    images): the next message compacts first, on the provider's count."""
    from actors.runs.agent import compaction_cut as compaction

    size = 4096
    summary = "\n".join(f"## {s}\nabout {s.lower()}" for s in compaction.SECTIONS)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url,
                                             "models": [{"id": "m", "context_length": size}]})
        cid = (await c.post("/api/conversations", json={"route": "stub/m"})).json()["id"]
        for n, counted in enumerate((1800, 3600)):
            stub.replies.append(answer(f"answer {n}", usage={"prompt_tokens": counted, "completion_tokens": 20,
                                                              "total_tokens": counted + 20}))
            await c.post(f"/api/conversations/{cid}/messages", json={"text": f"question {n}: " + "word " * 60})
            body = await wait_http_state(c, cid, "idle")
            assert not any(i.get("compaction") for i in body["items"])  # the estimate alone: ~150 tokens
        assert body["items"][-1]["usage"]["prompt_tokens"] == 3600
        stub.replies += [answer(summary), answer("answer 2")]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "question 2"})
        body = await wait_http_state(c, cid, "idle")
        notice = next(i for i in body["items"] if i.get("compaction"))
        assert notice["compaction"]["summary"] == summary
        assert body["items"][-1]["text"] == "answer 2"
