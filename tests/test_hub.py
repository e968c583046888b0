"""The hub over a real daemon: conversations that are not live (their items only on
disk, read at first need) answer as live ones do, and the list pages."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import trio

from tests.daemon_proc import REPO, run_daemon
from tests.waiting import wait_http_state

SCRIPT = {"token_delay": 0.0, "default": {"text": "Done."}}


def _live(actors: dict[str, Any]) -> set[str]:
    hub = next(c for c in actors["children"] if c["kind"] == "hub")
    return {c["id"] for c in hub["children"]}


async def _idle(c: httpx.AsyncClient, cid: str) -> dict[str, Any]:
    conv = await wait_http_state(c, cid, "idle")
    assert conv["items"][-1].get("text") == "Done."
    return conv


async def _answered(c: httpx.AsyncClient, count: int) -> list[str]:
    """`count` new conversations, each asked once and idle with its answer: their ids."""
    ids = [(await c.post("/api/conversations", json={"title": f"n{n}"})).json()["id"] for n in range(count)]
    for cid in ids:
        assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})).status_code == 202
        await _idle(c, cid)
    return ids


async def test_a_conversation_not_yet_read_answers_as_a_live_one(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = ("--scripted", str(script))
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        ids = await _answered(c, 4)
        before = {cid: (await c.get(f"/api/conversations/{cid}")).json() for cid in ids}
        listed = (await c.get("/api/conversations")).json()
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        assert _live((await c.get("/api/debug/actors")).json()) == set()
        assert (await c.get("/api/conversations")).json() == listed  # the list, from the index alone
        assert _live((await c.get("/api/debug/actors")).json()) == set()
        a, b, e, x = ids
        assert (await c.get(f"/api/conversations/{a}")).json() == before[a]
        assert _live((await c.get("/api/debug/actors")).json()) == {a}
        r = await c.post(f"/api/conversations/{b}/approval", json={"item": "nope", "decision": "approve"})
        assert r.status_code == 404 and r.json()["code"] == "not_found"
        r = await c.post(f"/api/conversations/{e}/edit", json={"item": before[e]["items"][0]["id"], "text": "again"})
        assert r.status_code == 202
        edited = await _idle(c, e)
        assert [i["text"] for i in edited["items"] if i["kind"] == "user"] == ["again"]
        r = await c.patch(f"/api/conversations/{x}", json={"title": "renamed"})
        assert r.status_code == 200 and r.json()["title"] == "renamed"
        assert (await c.delete(f"/api/conversations/{b}")).status_code == 200
        assert (await c.get(f"/api/conversations/{b}")).status_code == 404
        first = await c.get("/api/conversations?limit=2")
        cursor = first.headers["X-Next-Before"]
        rest = await c.get("/api/conversations", params={"limit": "2", "before": cursor})
        assert "X-Next-Before" not in rest.headers
        paged = [i["id"] for i in first.json() + rest.json()]
        assert paged == [i["id"] for i in (await c.get("/api/conversations")).json()] and sorted(paged) == sorted(
            [a, e, x])
        for bad in ("limit=0", "limit=x", "before=zzz", "task="):
            r = await c.get(f"/api/conversations?{bad}")
            assert r.status_code == 400 and r.json()["error"], bad
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        again = {i["id"]: i for i in (await c.get("/api/conversations")).json()}
        assert set(again) == {a, e, x} and again[x]["title"] == "renamed"
        assert (await c.post(f"/api/conversations/{x}/messages", json={"text": "hi"})).status_code == 202
        assert len((await _idle(c, x))["items"]) == len(before[x]["items"]) + 2


async def _wait_live(c: httpx.AsyncClient, pred: Callable[[set[str]], bool], timeout: float = 30) -> set[str]:
    """The live conversations once `pred` holds for them."""
    with trio.fail_after(timeout):
        while not pred(live := _live((await c.get("/api/debug/actors")).json())):
            await trio.sleep(0.05)
    return live


async def test_an_idle_actor_sleeps_and_wakes_with_its_items_but_a_run_or_a_card_keeps_it(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**SCRIPT, "rounds": [
        {"when": "hold on", "hang": True},
        {"when": "run it", "tool_calls": [{"name": "exec_shell_command", "arguments": {"command": "true"}}]},
    ]}))
    folder = tmp_path / "ws"
    folder.mkdir()
    # 0.6 s of quiet and an actor leaves memory.
    async with run_daemon(tmp_path / "data", "--scripted", str(script), "--idle-actor-minutes", "0.01") as d, \
            d.client() as c:
        quiet = (await c.post("/api/conversations", json={})).json()["id"]
        await c.post(f"/api/conversations/{quiet}/messages", json={"text": "hi"})
        before = await _idle(c, quiet)
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()["id"]
        held = (await c.post("/api/conversations", json={"workspace": ws, "mode": "ask"})).json()["id"]
        await c.post(f"/api/conversations/{held}/messages", json={"text": "run it"})
        card = (await wait_http_state(c, held, "waiting"))["items"][-1]
        going = (await c.post("/api/conversations", json={})).json()["id"]
        await c.post(f"/api/conversations/{going}/messages", json={"text": "hold on"})
        await wait_http_state(c, going, "running")
        witness = (await c.post("/api/conversations", json={})).json()["id"]
        # Nothing touched `held` and `going` since before `witness` was made: once it
        # sleeps, only their card and their run keep them.
        live = await _wait_live(c, lambda live: not live & {quiet, witness})
        assert {held, going} <= live
        held_view = (await c.get(f"/api/conversations/{held}")).json()
        assert held_view["state"] == "waiting" and held_view["items"][-1]["id"] == card["id"]
        assert (await c.get(f"/api/conversations/{going}")).json()["state"] == "running"
        assert (await c.get(f"/api/conversations/{quiet}")).json() == before
        assert quiet in _live((await c.get("/api/debug/actors")).json())
        # Once the card is answered and the run stopped, the asleep one wakes and runs.
        r = await c.post(f"/api/conversations/{held}/approval", json={"item": card["id"], "decision": "deny"})
        assert r.status_code == 200
        assert (await c.post(f"/api/conversations/{going}/stop")).json()["stopped"] is True
        assert (await c.post(f"/api/conversations/{quiet}/messages", json={"text": "again"})).status_code == 202
        after = await _idle(c, quiet)
        assert after["items"][: len(before["items"])] == before["items"] and len(after["items"]) == len(
            before["items"]) + 2
        # They all sleep in turn, and wake as they were.
        ended = {cid: await wait_http_state(c, cid, "idle") for cid in (held, going, quiet)}
        await _wait_live(c, lambda live: not live & {held, going, quiet})
        for cid, view in ended.items():
            assert (await c.get(f"/api/conversations/{cid}")).json() == view


def test_the_idle_minutes_are_checked_at_start(tmp_path: Path) -> None:
    for bad in ("-1", "inf", "nan", "soon"):
        done = subprocess.run(
            [sys.executable, "-m", "bmoe_daemon", "serve", "--no-model", "--port", "0",
             "--data-dir", str(tmp_path / "data"), "--idle-actor-minutes", bad],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, bad
        assert "--idle-actor-minutes" in done.stderr and "listening" not in done.stdout, bad


async def test_past_the_live_items_bound_the_quietest_sleep_first_but_a_run_or_a_card_keeps_one(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**SCRIPT, "rounds": [
        {"when": "hold on", "hang": True},
        {"when": "run it", "tool_calls": [{"name": "exec_shell_command", "arguments": {"command": "true"}}]},
    ]}))
    folder = tmp_path / "ws"
    folder.mkdir()
    seed = [{"kind": "user" if i % 2 == 0 else "assistant", "text": f"line {i}"} for i in range(40)]
    # No idle sleep at all: only the bound (100 items) puts actors to sleep.
    async with run_daemon(tmp_path / "data", "--scripted", str(script), "--idle-actor-minutes", "0",
                          "--live-items", "100") as d, d.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()["id"]
        held = (await c.post("/api/conversations", json={"workspace": ws, "mode": "ask", "items": seed})).json()["id"]
        await c.post(f"/api/conversations/{held}/messages", json={"text": "run it"})
        await wait_http_state(c, held, "waiting")
        going = (await c.post("/api/conversations", json={"items": seed})).json()["id"]
        await c.post(f"/api/conversations/{going}/messages", json={"text": "hold on"})
        await wait_http_state(c, going, "running")
        # 80-odd items held; each quiet one beyond makes the one quiet longest leave memory.
        quiet = []
        for _ in range(3):
            quiet.append((await c.post("/api/conversations", json={"items": seed})).json()["id"])
            await trio.sleep(0.05)
        live = await _wait_live(c, lambda live: not live & set(quiet[:2]))
        assert {held, going, quiet[2]} <= live
        # Opened again, the first comes back whole and the quiet one longest goes.
        first = (await c.get(f"/api/conversations/{quiet[0]}")).json()
        assert [i["text"] for i in first["items"]] == [s["text"] for s in seed]
        live = await _wait_live(c, lambda live: quiet[2] not in live)
        assert {held, going, quiet[0]} <= live
        assert (await c.get(f"/api/conversations/{held}")).json()["state"] == "waiting"
        assert (await c.get(f"/api/conversations/{going}")).json()["state"] == "running"
        assert (await c.post(f"/api/conversations/{going}/stop")).json()["stopped"] is True


def _index_heads(data: Path) -> dict[str, dict[str, Any]]:
    """The heads the index file holds, by conversation id (bmoe_daemon/store.py); none
    before it is first written."""
    path = data / "agent" / "conversations-index.json"
    lines = path.read_text().splitlines()[1:] if path.exists() else []
    return {h["id"]: h for h in (json.loads(line)["head"] for line in lines if line)}


async def test_the_cards_waiting_are_counted_again_after_the_daemon_died(tmp_path: Path) -> None:
    """The index keeps each conversation's count of cards waiting. The daemon killed
    while an approval and a question wait, the next start ends the approval and keeps
    the question: the list counts their cards as they are then, from its first answer
    on, and so does the index."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**SCRIPT, "rounds": [
        {"when": "note it", "tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "a"}}]},
        {"when": "ask me", "tool_calls": [{"name": "ask_user_question", "arguments": {"question": "Which?"}}]},
    ]}))
    folder = tmp_path / "ws"
    folder.mkdir()
    args = ("--scripted", str(script))
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()["id"]
        ids = {}
        for text in ("note it", "ask me"):
            ids[text] = (await c.post("/api/conversations", json={"workspace": ws, "mode": "ask"})).json()["id"]
            await c.post(f"/api/conversations/{ids[text]}/messages", json={"text": text})
            assert (await wait_http_state(c, ids[text], "waiting"))["waiting_cards"] == 1
        listed = {r["id"]: r for r in (await c.get("/api/conversations")).json()}
        assert [listed[ids[t]]["waiting_cards"] for t in ("note it", "ask me")] == [1, 1]
        with trio.fail_after(20):  # the index is written a moment after the change
            while [_index_heads(d.data_dir).get(ids[t], {}).get("waiting_cards") for t in ids] != [1, 1]:
                await trio.sleep(0.1)
        d.proc.kill()  # not stopped: a stop ends the run and its question with it
        await d.proc.wait()
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        listed = {r["id"]: r for r in (await c.get("/api/conversations")).json()}
        approval, question = listed[ids["note it"]], listed[ids["ask me"]]
        assert (approval["state"], approval["waiting_cards"]) == ("idle", 0)  # denied by the restart
        assert (question["state"], question["waiting_cards"]) == ("waiting", 1)  # still to answer
        assert [r["id"] for r in (await c.get("/api/conversations?state=waiting")).json()] == [ids["ask me"]]
    heads = _index_heads(tmp_path / "data")
    assert heads[ids["ask me"]]["waiting_cards"] == 1
    assert heads[ids["note it"]]["state"] == "idle"  # restored on disk at start, not only in memory
    assert "waiting_cards" not in heads[ids["note it"]]  # none: the index leaves a zero out


async def test_requests_that_wake_one_conversation_together_all_answer(tmp_path: Path) -> None:
    """A conversation not live, asked for by several requests at once (a page read again
    after a restart while the person sends): one reads it, the others wait for that
    reading, and every request answers as it would alone, never a 500."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = ("--scripted", str(script))
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        ids = await _answered(c, 3)
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        statuses: list[tuple[str, int]] = []

        async def ask(method: str, url: str, body: dict[str, Any] | None = None) -> None:
            r = await c.request(method, url, json=body)
            statuses.append((f"{method} {url}", r.status_code))

        for cid in ids:
            assert cid not in _live((await c.get("/api/debug/actors")).json())
            async with trio.open_nursery() as nursery:
                for _ in range(3):
                    nursery.start_soon(ask, "GET", f"/api/conversations/{cid}")
                nursery.start_soon(ask, "POST", f"/api/conversations/{cid}/messages", {"text": "again"})
                nursery.start_soon(ask, "GET", f"/api/conversations/{cid}/changes")
            await _idle(c, cid)
        bad = [s for s in statuses if s[1] not in (200, 202)]
        assert bad == [], repr(bad)
        assert len(statuses) == 5 * len(ids)
