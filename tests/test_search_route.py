"""GET /api/search over HTTP (bmoe_daemon/routes/search.py): a real daemon with the scripted
model; what was written is found with its snippet, bad queries are 400s, a deleted
conversation is gone, and the index is built again after it was deleted or damaged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import trio

from bmoe_daemon.fulltext import INDEX_FILE
from tests.daemon_proc import run_daemon
from tests.waiting import wait_http_state

SCRIPT = {
    "token_delay": 0.0,
    "rounds": [
        {"when": "marmalade", "text": "The quokka keeps the marmalade on the second shelf."},
        {"when": "tools", "tool_calls": [{"name": "echo", "arguments": {"text": "armadillo"}}]},
        {"when": "tools", "text": "Echoed it."},
    ],
}


async def search(c: httpx.AsyncClient, **params: Any) -> httpx.Response:
    return await c.get("/api/search", params=params)


async def wait_results(c: httpx.AsyncClient, q: str, pred: Any, timeout: float = 20) -> dict:
    """GET the search until `pred` holds for its body (the index follows saves in the background)."""
    with trio.fail_after(timeout):
        while True:
            r = await search(c, q=q)
            assert r.status_code == 200, r.text
            body = r.json()
            if pred(body):
                return body
            await trio.sleep(0.02)


def marked(hit: dict) -> list[str]:
    return [hit["snippet"][a:b] for a, b in hit["marks"]]


async def test_search_finds_words_of_messages_and_answers_and_follows_deletion(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        cid = (await c.post("/api/conversations", json={"title": "Pantry inventory"})).json()["id"]
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "where is the marmalade?"})
        assert r.status_code == 202
        asked = r.json()["item"]["id"]
        conv = await wait_http_state(c, cid, "idle")
        said = next(i["id"] for i in conv["items"] if i["kind"] == "assistant")
        # A word of the answer: its item, the conversation's title, the word marked.
        body = await wait_results(c, "quokka", lambda b: b["results"])
        [hit] = body["results"]
        assert (hit["conversation"], hit["item"], hit["kind"], hit["title"]) == (cid, said, "assistant",
                                                                                 "Pantry inventory")
        assert marked(hit) == ["quokka"] and body["next_offset"] is None and body["indexing"] is False
        # A word in both: the message and the answer; a beginning being typed; the title.
        body = await wait_results(c, "marmal", lambda b: len(b["results"]) == 2)
        assert {h["item"] for h in body["results"]} == {asked, said}
        assert all(m.lower().startswith("marmal") for h in body["results"] for m in marked(h))
        assert (await search(c, q="marmal ")).json()["results"] == []  # a whole word now: none
        body = await wait_results(c, "pantry", lambda b: b["results"])
        assert [(h["item"], h["kind"]) for h in body["results"]] == [(None, "title")]
        # A tool card is found by its title (its result is never searched: tests/test_fulltext.py).
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "tools please"})
        assert r.status_code == 202
        await wait_http_state(c, cid, "idle")
        body = await wait_results(c, "armadillo", lambda b: b["results"])
        assert [(h["kind"], marked(h)) for h in body["results"]] == [("tool", ["armadillo"])]

        # What a person types is words, never query syntax; a query that cannot be one is a 400.
        for q in ['NEAR(quokka', '"', 'quokka AND', 'col:x', '^', '*', '-quokka', '(', 'quokka"', "quokka\0x"]:
            r = await search(c, q=q)
            assert r.status_code == 200, (q, r.text)
        for params in ({}, {"q": ""}, {"q": "   "}, {"q": "\0"}, {"q": "x" * 201}, {"q": " ".join(["w"] * 17)},
                       {"q": "a", "limit": "0"}, {"q": "a", "limit": "101"}, {"q": "a", "limit": "x"},
                       {"q": "a", "offset": "-1"}, {"q": "a", "offset": "1001"}, {"q": "a", "workspace": "nope"}):
            r = await search(c, **params)
            assert r.status_code == 400 and r.json()["code"] == "bad_request" and r.json()["error"], (params, r.text)

        # Paging: 25 conversations with one word; pages of 10 do not repeat a row.
        for n in range(25):
            await c.post("/api/conversations", json={"title": f"wombat number {n}"})
        await wait_results(c, "wombat", lambda b: b["next_offset"] == 20 or len(b["results"]) == 20)
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = (await search(c, q="wombat", limit=10, offset=offset)).json()
            seen += [h["conversation"] for h in page["results"]]
            offset = page["next_offset"]
        assert len(seen) == len(set(seen)) == 25

        # Deleted: no longer found.
        assert (await c.delete(f"/api/conversations/{cid}")).status_code == 200
        await wait_results(c, "quokka", lambda b: b["results"] == [])

        keep = (await c.post("/api/conversations", json={"title": "Platypus facts"})).json()["id"]
        await wait_results(c, "platypus", lambda b: b["results"])

    # The index deleted while the daemon was stopped: built again at start.
    (data / "agent" / INDEX_FILE).unlink()
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        body = await wait_results(c, "platypus", lambda b: b["results"] and not b["indexing"])
        assert [h["conversation"] for h in body["results"]] == [keep]
        assert (await search(c, q="quokka")).json()["results"] == []
    # Damaged: the same.
    (data / "agent" / INDEX_FILE).write_bytes(b"\xff" * 10_000)
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        await wait_results(c, "platypus", lambda b: b["results"] and not b["indexing"])
        assert "building the search index from the conversation files" in d.log_file()


async def test_the_lists_q_finds_the_words_inside_in_the_lists_own_order_and_pages(tmp_path: Path) -> None:
    """GET /api/conversations?q= matches a part of the title and, from the same index, the
    words of the messages and answers: such a row carries `found` with the snippet;
    newest first and paged by the list's own cursor; `match=title` looks at titles only."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        async def listed(**params: Any) -> httpx.Response:
            r = await c.get("/api/conversations", params=params)
            assert r.status_code == 200, r.text
            return r

        inside = (await c.post("/api/conversations", json={"title": "Pantry"})).json()["id"]
        assert (await c.post(f"/api/conversations/{inside}/messages", json={"text": "marmalade?"})).status_code == 202
        await wait_http_state(c, inside, "idle")
        titled = (await c.post("/api/conversations", json={"title": "All about quokkas"})).json()["id"]
        neither = (await c.post("/api/conversations", json={"title": "Weather"})).json()["id"]
        await wait_results(c, "quokka", lambda b: len(b["results"]) == 2)  # indexed: the answer and the title

        rows = (await listed(q="quokka")).json()
        assert [r["id"] for r in rows] == [titled, inside]  # the list's order: newest first
        assert neither not in [r["id"] for r in rows]
        by_id = {r["id"]: r for r in rows}
        found = by_id[inside]["found"]
        assert found["kind"] == "assistant" and "quokka" in found["snippet"]
        assert [found["snippet"][a:b] for a, b in found["marks"]] == ["quokka"]
        assert by_id[titled]["found"]["kind"] == "title"
        # The title's own filter, as the web UI's list asks: only the title that holds it.
        rows = (await listed(q="quokka", match="title")).json()
        assert [r["id"] for r in rows] == [titled] and "found" not in rows[0]
        # Words the index cannot take (punctuation only) leave the title filter, no error.
        assert (await listed(q='"')).json() == []
        assert (await c.get("/api/conversations", params={"q": "x", "match": "body"})).status_code == 400

        # Paged by the list's cursor: 12 conversations with the word in a message, pages of 5.
        made = []
        for n in range(12):
            cid = (await c.post("/api/conversations", json={"title": f"Shelf {n}"})).json()["id"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "the quokka again"})
            await wait_http_state(c, cid, "idle")
            made.append(cid)
        await wait_results(c, "quokka", lambda b: len(b["results"]) >= 14)
        seen: list[str] = []
        before = None
        while True:
            r = await listed(q="quokka", limit=5, **({"before": before} if before else {}))
            seen += [row["id"] for row in r.json()]
            assert all("found" in row for row in r.json())
            before = r.headers.get("X-Next-Before")
            if before is None:
                break
        assert seen == [*reversed(made), titled, inside]
