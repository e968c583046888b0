"""A helper on the bundled model (SmolLM2-135M via llama.cpp), end to end: the parent
calls `task`, the helper's rounds take their turns on the engine's line, its items
stream as events naming the card and stay on it, and the parent's result is the
helper's final answer. The model chooses between answering and calling, and which
tool: a conversation where it does not hand the task over is stopped and another one
tried, a bounded number of times."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from actors.record.items import Item
from actors.runs.agent.run_tools import helpers as subagents
from tests.daemon_proc import SSE, run_daemon
from tests.test_model import model_path  # noqa: F401 (a fixture)

pytestmark = pytest.mark.model

TRIES = 4  # conversations, each stopped once it shows the model will not hand the task over
# Each try asks in other words: the daemon's model samples from one seed (BMOE_SEED),
# so the same words in a new conversation would be the same try again.
ASKS = (
    "Use the task tool to find which file of the project prints hello.",
    "Call the task tool: a helper should find the file of this project that prints hello.",
    "With the task tool, send a helper to look for which file prints hello.",
    "Hand this to a helper through the task tool: which file of the project prints hello?",
)
OTHER_CALLS = 3  # calls of other tools before a task: this try has gone another way
FINAL = ("done", "error", "denied")


def events_of(sse: SSE, cid: str, start: int) -> list[tuple[Any, str, dict]]:
    return [e for e in sse.events[start:] if e[2].get("conversation") == cid or e[2].get("id") == cid]


async def a_handed_task(c: Any, sse: SSE, ws_id: str, ask: str, tried: list[str]) -> tuple[str, str] | None:
    """A conversation whose model called `task` and whose helper started: (its id,
    the card's id); None when the model went another way (that conversation stopped,
    what it called and how it ended added to `tried`)."""
    cid = (await c.post("/api/conversations", json={"workspace": ws_id, "mode": "read_only"})).json()["id"]
    start = len(sse.events)
    await c.post(f"/api/conversations/{cid}/messages", json={"text": ask})
    with trio.fail_after(300):
        while True:
            await trio.sleep(0.1)
            seen = events_of(sse, cid, start)
            cards = [e[2]["item"] for e in seen if e[1] == "item" and "task" not in e[2]
                     and e[2]["item"]["kind"] == "tool"]
            started = [i for i in cards if i["tool"] == subagents.TASK and i.get("task")]
            if started:
                return cid, started[0]["id"]
            others = {i["id"] for i in cards if i["tool"] != subagents.TASK}
            states = [e[2]["state"] for e in seen if e[1] == "conversation"]
            # Its creation's idle event may come after the message was sent: an end
            # counts once the run has begun.
            ended = "running" in states and states[-1] != "running"
            if ended or len(others) >= OTHER_CALLS:
                await c.post(f"/api/conversations/{cid}/stop")
                calls = [f"{i['tool']}({i.get('args')}) {i.get('state')}" for i in {i["id"]: i for i in cards}.values()]
                tried.append(f"{ask!r}: {'ended' if ended else 'stopped'} after {calls}")
                return None


async def test_the_bundled_model_hands_a_search_to_a_helper(tmp_path, model_path):  # noqa: F811
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo\nA tiny project.\n")
    (folder / "main.py").write_text("print('hello')\n")
    no_skills = tmp_path / "no-skills"  # fewer tools: a smaller grammar, sampled faster
    no_skills.mkdir()
    # One helper at a time: when the model asks for several, the first has the engine's
    # turns to itself and ends sooner. Three rounds each: the bundled model's helper
    # rarely answers sooner, and its twenty took three minutes of CI.
    args = ("--model", str(model_path), "--ctx-size", "4096", "--skills-dir", str(no_skills), "--helpers", "1",
            "--helper-rounds", "3")
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c, trio.open_nursery() as nursery:
        sse = SSE(c)
        await nursery.start(sse.run)
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        handed = None
        tried: list[str] = []
        for ask in ASKS[:TRIES]:
            handed = await a_handed_task(c, sse, ws["id"], ask, tried)
            if handed:
                break
        assert handed, f"the model never called task in {TRIES} conversations: " + "; ".join(tried)
        cid, card_id = handed
        owners: set[str] = set()

        async def watch_the_engine() -> None:
            while True:
                engine = (await c.get("/api/debug/actors")).json()["children"][0]
                assert engine["kind"] == "engine"
                if engine["run"]:
                    owners.add(engine["run"])
                await trio.sleep(0.05)

        nursery.start_soon(watch_the_engine)
        # The helper works until it answers, its rounds run out, or its run ends otherwise.
        with trio.fail_after(600):
            while True:
                body = (await c.get(f"/api/conversations/{cid}")).json()
                card = next(i for i in body["items"] if i["id"] == card_id)
                if card["state"] in FINAL:
                    break
                await trio.sleep(0.2)
        # The parent may go on with more rounds: this test is about the one helper.
        r = await c.post(f"/api/conversations/{cid}/stop")
        assert r.is_success
        with trio.fail_after(60):
            while (body := (await c.get(f"/api/conversations/{cid}")).json())["state"] == "running":
                await trio.sleep(0.1)
        nursery.cancel_scope.cancel()

    card = next(i for i in body["items"] if i["id"] == card_id)
    helper = card["task"]
    items = helper["items"]
    assert helper["state"] in ("done", "error") and helper["rounds"] >= 1
    assert items[0]["kind"] == "user" and items[0]["text"] == card["args"]["prompt"]
    assert any(i["kind"] == "assistant" for i in items)
    # Its rounds were turns on the engine's line, under the helper's own id.
    assert f"{cid}.{card_id}" in owners
    # Its items streamed as events naming the card, kept on it, never among the parent's.
    tagged = {e[2]["item"]["id"]: e[2]["item"] for e in sse.events
              if e[1] == "item" and e[2].get("task") == card_id}  # each item as last streamed
    assert {i["id"] for i in items} <= tagged.keys()
    assert not tagged.keys() & {i["id"] for i in body["items"]}
    # A card the model's answer did not keep is only streamed, ended.
    assert all(i["state"] in FINAL for k, i in tagged.items() if k not in {i["id"] for i in items})
    # The parent read the helper's final answer (or why it has none).
    answer = subagents.answer_of(tuple(Item.from_json(i) for i in items))
    assert card["result"] == f"{answer}\n\n[task id: {card_id}]"
    # Every state is final.
    assert body["state"] in ("idle", "error")
    for item in (*body["items"], *items):
        assert item.get("state") in (None, *FINAL) and not item.get("streaming"), item
