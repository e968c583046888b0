"""End to end: usage and budgets over HTTP on the real daemon process, with the scripted
local model and real provider routes to an OpenAI-compatible server on 127.0.0.1
(tests/openai_stub.py). GET /api/usage sums what the answers' `usage` says, prices only
where a provider has them, by every grouping and since a time; a budget ends a run
(`end_reason: budget`); `bmoe-daemon run --max-cost` exits 3 on it."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.daemon_proc import REPO, run_daemon
from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk, serving
from tests.waiting import wait_http_state

PRICES = {"input": 2.0, "output": 8.0, "cached": 0.5}  # US$ per million tokens
SIDES = ("prompt_tokens", "completion_tokens", "cached_tokens")
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    async with serving() as server:
        yield server


def usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def cost(prompt: int, completion: int, cached: int) -> float:
    return ((prompt - cached) * PRICES["input"] + cached * PRICES["cached"] + completion * PRICES["output"]) / 1e6


def summed(items: list[dict[str, Any]]) -> dict[str, int]:
    """The answers' `usage`, a helper's answers (kept on its card) included."""
    out = dict.fromkeys(SIDES, 0)
    for item in items:
        for inner in [item, *((item.get("task") or {}).get("items") or [])]:
            for key in SIDES:
                out[key] += (inner.get("usage") or {}).get(key, 0)
    return out


def sides(report_side: dict[str, Any]) -> dict[str, int]:
    return {key: report_side[key] for key in SIDES}


async def send(c: httpx.AsyncClient, cid: str, text: str, **extra: Any) -> dict[str, Any]:
    r = await c.post(f"/api/conversations/{cid}/messages", json={"text": text, **extra})
    assert r.status_code == 202, r.text
    body = await wait_http_state(c, cid, "idle", "error")
    assert body["state"] == "idle", body["items"][-1]
    return body


async def make(c: httpx.AsyncClient, **fields: Any) -> str:
    r = await c.post("/api/conversations", json=fields)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_totals_prices_groupings_and_budgets(tmp_path: Path, stub: OpenAIStub) -> None:
    script = tmp_path / "script.json"
    # A task's run makes a call first, so its budget is checked before a second round.
    tick = {"when": "tick", "tool_calls": [{"name": "echo", "arguments": {"text": "t"}}]}
    script.write_text(json.dumps({"rounds": [tick], "default": {"text": "A local answer."}}))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        for name, prices in (("Priced", PRICES), ("Free", None)):
            r = await c.post("/api/providers", json={"name": name, "base_url": stub.base_url, "models": ["m"],
                                                     **({"prices": prices} if prices else {})})
            assert r.status_code == 201, r.text
            assert r.json().get("prices") == ({**PRICES} if prices else None)
        r = await c.post("/api/providers", json={"name": "Bad", "base_url": stub.base_url, "models": ["m"],
                                                 "prices": {"input": 1}})
        assert r.status_code == 400 and "output" in r.json()["error"]

        # Three conversations: the local model (two messages), a priced provider, one without prices.
        local = await make(c)
        await send(c, local, "hello")
        await send(c, local, "again")
        priced = await make(c, route="priced/m")
        stub.replies.append({"chunks": [*call_chunks(0, "call_1", "echo", '{"text": "ping"}'), chunk({}, "tool_calls"),
                                        {"id": "x", "object": "chat.completion.chunk", "choices": [],
                                         "usage": usage(1200, 300, 200)}]})
        stub.replies.append(answer("The echo said ping.", usage=usage(1500, 20, 1200)))
        priced_body = await send(c, priced, "echo ping")
        free = await make(c, route="free/m")
        stub.replies.append(answer("Free answer.", usage=usage(500, 50)))
        free_body = await send(c, free, "hi")
        assert all(req.body["stream_options"] == {"include_usage": True} for req in stub.received)

        # Totals equal the sum of the answers' usage, conversation by conversation and in all.
        bodies = {cid: (await c.get(f"/api/conversations/{cid}")).json() for cid in (local, priced, free)}
        report = (await c.get("/api/usage", params={"by": "conversation"})).json()
        groups = {g["key"]: g for g in report["groups"]}
        assert set(groups) == {local, priced, free}
        for cid, body in bodies.items():
            side = "local" if cid == local else "provider"
            assert sides(groups[cid][side]) == summed(body["items"]), cid
            assert groups[cid][side]["answers"] == sum(1 for i in body["items"] if i.get("usage"))
        assert sides(report["local"]) == summed(bodies[local]["items"]) and report["local"]["answers"] == 2
        assert sides(report["provider"]) == {k: summed(bodies[priced]["items"])[k] + summed(bodies[free]["items"])[k]
                                             for k in SIDES}
        assert summed(priced_body["items"]) == {"prompt_tokens": 2700, "completion_tokens": 320, "cached_tokens": 1400}
        assert summed(free_body["items"])["prompt_tokens"] == 500

        # A cost only where prices were entered: none for the local model, none for Free.
        assert groups[priced]["provider"]["cost"] == pytest.approx(cost(1200, 300, 200) + cost(1500, 20, 1200))
        assert groups[free]["provider"]["cost"] is None and groups[free]["provider"]["unpriced_answers"] == 1
        assert groups[local]["local"]["cost"] is None and report["local"]["cost"] is None
        by_provider = (await c.get("/api/usage")).json()
        labels = {g["key"]: g["label"] for g in by_provider["groups"]}
        assert labels == {"local": "This computer", "priced": "Priced", "free": "Free"}
        assert {g["key"] for g in (await c.get("/api/usage?by=model")).json()["groups"]} == {
            "scripted", "priced/m", "free/m"}
        assert [g["key"] for g in (await c.get("/api/usage?by=task")).json()["groups"]] == [None]

        # By local day, and since a date or a time.
        today = datetime.date.today()
        days = (await c.get("/api/usage?by=day")).json()
        assert [g["key"] for g in days["groups"]] == [today.isoformat()]
        tomorrow = (await c.get(f"/api/usage?by=day&since={today + datetime.timedelta(days=1)}")).json()
        assert tomorrow["groups"] == [] and tomorrow["local"]["answers"] == 0 and tomorrow["provider"]["cost"] is None
        since_today = (await c.get(f"/api/usage?by=day&since={today}")).json()
        assert since_today["local"] == days["local"] and since_today["provider"] == days["provider"]
        later = datetime.datetime.now().astimezone() + datetime.timedelta(minutes=5)
        assert (await c.get("/api/usage", params={"since": later.isoformat()})).json()["groups"] == []
        one = (await c.get(f"/api/usage?conversation={priced}")).json()
        assert [g["key"] for g in one["groups"]] == ["priced"] and one["local"]["answers"] == 0

        for bad in ("by=week", "since=yesterday", "since=2026-02-30", "colour=red", "conversation="):
            r = await c.get(f"/api/usage?{bad}")
            assert r.status_code == 400 and set(r.json()) == {"error", "code"}, bad
            assert r.json()["code"] == "bad_request", bad

        # A cost budget ends the run after the answer that reaches it: the tool call it
        # made runs, the next round is never asked.
        asked = len(stub.received)
        capped = await make(c, route="priced/m", budget={"cost": 0.001})
        stub.replies.append({"chunks": [*call_chunks(0, "call_2", "echo", '{"text": "x"}'), chunk({}, "tool_calls"),
                                        {"id": "x", "object": "chat.completion.chunk", "choices": [],
                                         "usage": usage(1000, 10)}]})
        body = await send(c, capped, "spend")
        assert body["end_reason"] == "budget" and len(stub.received) == asked + 1
        notice = body["items"][-1]
        assert notice["kind"] == "notice" and notice["end_reason"] == "budget"
        assert "budget of $0.001 is used up ($0.0021 so far" in notice["text"], notice["text"]
        assert [i["state"] for i in body["items"] if i["kind"] == "tool"] == ["done"]

        # A cost budget on a provider without prices cannot be kept: nothing is asked.
        unpriceable = await make(c, route="free/m", budget={"cost": 5})
        body = await send(c, unpriceable, "spend")
        assert body["end_reason"] == "budget" and "has no prices" in body["items"][-1]["text"]
        assert len(stub.received) == asked + 1

        # A token budget already used up ends the next message's run before the model;
        # raised, Resume goes on.
        r = await c.patch(f"/api/conversations/{local}", json={"budget": {"tokens": 1}})
        assert r.status_code == 200 and r.json()["budget"] == {"tokens": 1, "cost": None}
        body = await send(c, local, "more")
        assert body["end_reason"] == "budget" and body["items"][-1]["kind"] == "notice"
        assert "this conversation's budget of 1 tokens is used up" in body["items"][-1]["text"]
        before = (await c.get(f"/api/usage?conversation={local}")).json()["local"]["answers"]
        r = await c.patch(f"/api/conversations/{local}", json={"budget": None})
        assert r.status_code == 200 and r.json()["budget"] is None
        assert (await c.post(f"/api/conversations/{local}/resume")).status_code in (200, 202)
        with trio.fail_after(10):
            while (body := (await c.get(f"/api/conversations/{local}")).json())["end_reason"] != "answered":
                await trio.sleep(0.05)
        assert (await c.get(f"/api/usage?conversation={local}")).json()["local"]["answers"] == before + 1

        for bad in ({"tokens": 0}, {"cost": -1}, {"tokens": "many"}, {"dollars": 3}, [1]):
            r = await c.patch(f"/api/conversations/{local}", json={"budget": bad})
            assert r.status_code == 400 and r.json()["code"] == "bad_request", bad
            r = await c.post("/api/conversations", json={"budget": bad})
            assert r.status_code == 400, bad

        # A task carries its budget onto each run's conversation.
        r = await c.post("/api/tasks", json={"prompt": "tick", "schedule": {"kind": "daily", "at": "03:00"},
                                             "budget": {"tokens": 5}})
        assert r.status_code == 201 and r.json()["budget"] == {"tokens": 5, "cost": None}
        task = r.json()["id"]
        assert (await c.post(f"/api/tasks/{task}/run")).status_code == 202
        with trio.fail_after(20):
            while (t := (await c.get("/api/tasks")).json()[0])["last_run"]["outcome"] == "running":
                await trio.sleep(0.05)
        run_conv = (await c.get(f"/api/conversations/{t['last_run']['conversation']}")).json()
        assert run_conv["budget"] == {"tokens": 5, "cost": None} and run_conv["end_reason"] == "budget"
        assert "task run's budget" in run_conv["items"][-1]["text"]
        by_task = (await c.get("/api/usage?by=task")).json()
        assert {g["key"] for g in by_task["groups"]} == {None, task}
        assert (await c.put(f"/api/tasks/{task}", json={"budget": {"cost": 0}})).status_code == 400

        # The ledger holds one line per answer.
        all_answers = (await c.get("/api/usage")).json()
        lines = (d.data_dir / "usage.jsonl").read_text().splitlines()
        assert len(lines) == all_answers["local"]["answers"] + all_answers["provider"]["answers"]

        # `bmoe-daemon run --max-cost` against this daemon: the run's own budget, exit 3.
        stub.replies.append({"chunks": [*call_chunks(0, "call_3", "echo", '{"text": "y"}'), chunk({}, "tool_calls"),
                                        {"id": "x", "object": "chat.completion.chunk", "choices": [],
                                         "usage": usage(2000, 10)}]})
        done = await trio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "bmoe_daemon", "run", "--json", "--data-dir", str(d.data_dir),
             "--model", "priced/m", "--max-cost", "0.002", "spend it"],
            capture_output=True, text=True, timeout=90, cwd=REPO, env=ENV))
        assert done.returncode == 3, (done.stdout[-2000:], done.stderr)
        final = json.loads(done.stdout.splitlines()[-1])
        assert final["end_reason"] == "budget" and final["usage"]["prompt_tokens"] == 2000
        assert final["usage"]["cost"] == pytest.approx(cost(2000, 10, 0))
        bad = await trio.to_thread.run_sync(lambda: subprocess.run(
            [sys.executable, "-m", "bmoe_daemon", "run", "--data-dir", str(d.data_dir), "--max-cost", "-1", "x"],
            capture_output=True, text=True, timeout=90, cwd=REPO, env=ENV))
        assert bad.returncode == 2 and "--max-cost" in bad.stderr
