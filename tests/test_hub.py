"""The hub over a real daemon: conversations that are not live (their items only on
disk, read at first need) answer as live ones do, and the list pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.daemon_proc import run_daemon
from tests.waiting import wait_http_state

SCRIPT = {"token_delay": 0.0, "default": {"text": "Done."}}


def _live(actors: dict[str, Any]) -> set[str]:
    hub = next(c for c in actors["children"] if c["kind"] == "hub")
    return {c["id"] for c in hub["children"]}


async def _idle(c: httpx.AsyncClient, cid: str) -> dict[str, Any]:
    conv = await wait_http_state(c, cid, "idle")
    assert conv["items"][-1].get("text") == "Done."
    return conv


async def test_a_conversation_not_yet_read_answers_as_a_live_one(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = ("--scripted", str(script))
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        ids = [(await c.post("/api/conversations", json={"title": f"n{n}"})).json()["id"] for n in range(4)]
        for cid in ids:
            assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})).status_code == 202
            await _idle(c, cid)
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
