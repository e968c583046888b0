"""A run's usage and budgets (actors/runs/agent/meter.py) in-process, on the scripted
backend with a usage ledger: each answer counted once, the conversation's and the
message's budgets ending the run `budget`, a helper's answers counting for its parent,
and the conversation's budget read as it stands."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.model.usage import UsageLedger
from actors.record.budget import Budget
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.tools.registry import Registry
from bmoe_daemon.store import Store
from tests.conftest import EchoTool

ECHO = {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[tuple[Hub, ScriptedBackend, UsageLedger]]:
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    usage = UsageLedger(tmp_path / "data")
    usage.load()
    env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry([EchoTool()]),
              resolve_workspace=lambda _: None, plans=PlanFiles(store.agent_dir / "plans"),
              helpers=trio.CapacityLimiter(2), usage=usage)
    hub = Hub(env, store)
    async with trio.open_nursery() as outer:
        await outer.start(usage.run)
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            yield hub, backend, usage
            hub.close()
            engine.close()
        outer.cancel_scope.cancel()  # the ledger's task: a last sync, then it ends
    usage.close()


def used(items) -> int:
    return sum((i.usage or {}).get("prompt_tokens", 0) + (i.usage or {}).get("completion_tokens", 0)
               for i in items if i.kind == "assistant")


async def test_each_answer_is_counted_once_and_synced(stack) -> None:
    hub, backend, usage = stack
    backend.push(ECHO, {"text": "Done."})
    conv = await hub.create()
    await conv.send_message("go")
    await conv.wait_run_end()
    answers = [i for i in conv.items if i.kind == "assistant"]
    assert len(answers) == 2 and all(i.usage for i in answers)
    sums = usage.conversation(conv.id)
    assert (sums.answers, sums.tokens) == (2, used(conv.items))
    assert sums.cost is None and sums.unpriced_answers == 0  # the local model: no price, none invented
    assert sums.cached_tokens == sum(i.usage["cached_tokens"] for i in answers) > 0  # the second reused the first
    with trio.fail_after(5):  # the ledger's task syncs it; the file holds both lines
        while usage.path.read_bytes().count(b"\n") < 2:
            await trio.sleep(0.01)


async def test_a_conversation_token_budget_ends_the_run_after_the_answer_that_reaches_it(stack) -> None:
    hub, backend, usage = stack
    backend.push(ECHO, ECHO, ECHO, {"text": "Done."})
    conv = await hub.create(budget=Budget(tokens=1))
    await conv.send_message("go")
    await conv.wait_run_end()
    assert conv.info.end_reason == "budget" and len(backend.turns) == 1  # one answer, then no more asked
    notice = conv.items[-1]
    assert notice.kind == "notice" and notice.end_reason == "budget" and notice.level == "warn"
    assert "this conversation's budget of 1 tokens is used up" in notice.text and "Resume" in notice.text
    assert [i.state for i in conv.items if i.kind == "tool"] == ["done"]  # the call it made ran

    # Used up: the next message asks nothing; raised, Resume goes on.
    await conv.send_message("more")
    await conv.wait_run_end()
    assert conv.info.end_reason == "budget" and len(backend.turns) == 1
    await conv.patch({"budget": Budget(tokens=10**9)})
    await conv.resume()
    await conv.wait_run_end()
    assert conv.info.end_reason == "answered" and len(backend.turns) > 1
    assert usage.conversation(conv.id).tokens == used(conv.items)


async def test_a_message_budget_counts_that_run_only(stack) -> None:
    hub, backend, usage = stack
    conv = await hub.create()
    await conv.send_message("first")
    await conv.wait_run_end()
    spent_before = usage.conversation(conv.id).tokens
    backend.push(ECHO, ECHO, {"text": "Done."})
    # The conversation has spent more than this budget already: only this run's answers count.
    await conv.send_message("second", budget=Budget(tokens=max(1, spent_before // 2)))
    await conv.wait_run_end()
    assert conv.info.end_reason == "budget"
    assert "this message's budget" in conv.items[-1].text
    assert len(backend.turns) == 2  # "first", then one round of this run


async def test_a_cost_budget_on_the_local_model_never_ends_a_run(stack) -> None:
    hub, backend, _ = stack
    backend.push(ECHO, {"text": "Done."})
    conv = await hub.create(budget=Budget(cost=0.01))
    await conv.send_message("go")
    await conv.wait_run_end()
    assert conv.info.end_reason == "answered"  # the local model bills nothing


async def test_a_helper_s_answers_count_for_the_conversation_and_its_budget(stack, tmp_path) -> None:
    hub, backend, usage = stack
    task = {"name": "task", "arguments": {"description": "look", "prompt": "look around", "subagent_type": "explore"}}
    backend.push({"when": "delegate", "tool_calls": [task]}, {"when": "look around", "text": "Helper looked."},
                 {"when": "delegate", "text": "Parent done."})
    (tmp_path / "ws").mkdir()
    ws = await hub.add_workspace(str(tmp_path / "ws"))
    conv = await hub.create(workspace=ws.id, mode="full")
    await conv.send_message("delegate")
    await conv.wait_run_end()
    card = next(i for i in conv.items if i.kind == "tool" and i.tool == "task")
    helper_tokens = used(_helper_items(card))
    assert helper_tokens > 0 and conv.info.end_reason == "answered"
    assert usage.conversation(conv.id).tokens == used(conv.items) + helper_tokens
    assert usage.conversation(conv.id).answers == 3

    # A budget the parent's answer reaches holds its helper too: the helper asks nothing.
    backend.push({"when": "again", "tool_calls": [task]}, {"when": "look around", "text": "Not asked."},
                 {"when": "again", "text": "Not asked either."})
    await conv.patch({"budget": Budget(tokens=usage.conversation(conv.id).tokens + 1)})
    turns = len(backend.turns)
    await conv.send_message("again")
    await conv.wait_run_end()
    assert conv.info.end_reason == "budget" and len(backend.turns) == turns + 1
    card = [i for i in conv.items if i.kind == "tool" and i.tool == "task"][-1]
    helper = _helper_items(card)
    assert helper[-1].kind == "notice" and helper[-1].end_reason == "budget"


def _helper_items(card):
    from actors.record.items import Item

    return [Item.from_json(i) for i in (card.task or {}).get("items") or ()]
