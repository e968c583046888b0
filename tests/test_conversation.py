"""The run's rules, driven by the scripted engine (actors/conversations/actor.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from actors.errors import Busy, Invalid, NotFound
from actors.notices import CONTEXT_FULL as NOTICE_CONTEXT_FULL
from actors.notices import DENIED_BY_PERSON, ROUNDS_OF
from actors.notices import REPEATS as NOTICE_REPEATS
from actors.notices import SHORTENED as NOTICE_SHORTENED
from actors.record.cards import MAX_FEEDBACK_CHARS
from actors.runs.agent.ledger import MAX_ROUNDS
from actors.runs.agent.prompt import PROMPT_CAP_CHARS, system_prompt
from tests.filler import numbered
from tests.waiting import drained, read_saved, wait_for, wait_state

NOTE_HI = {"name": "note", "arguments": {"path": "a.txt", "text": "hi"}}


def kinds(conv):
    return [i.kind for i in conv.items]


def tool_items(conv):
    return [i for i in conv.items if i.kind == "tool"]


async def workspace(daemon, tmp_path: Path, agents_md: str | None = None):
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    if agents_md is not None:
        (folder / "AGENTS.md").write_text(agents_md)
    return await daemon.hub.add_workspace(str(folder))


async def test_reply_streams_and_is_saved(daemon):
    daemon.backend.push({"text": "Hello there, person.", "reasoning": "Think first."})
    conv = await daemon.hub.create()
    with daemon.bus.subscribe() as sub:
        await conv.send_message("hi")
        await wait_state(conv, "idle")
        events = drained(sub)
    assert kinds(conv) == ["user", "assistant"]
    reply = conv.items[1]
    assert reply.text == "Hello there, person."
    assert reply.reasoning == "Think first."
    assert reply.streaming is False
    deltas = [e.data for e in events if e.name == "delta"]
    assert "".join(d.get("text", "") for d in deltas) == "Hello there, person."
    assert "".join(d.get("reasoning", "") for d in deltas) == "Think first."
    assert all(d["item"] == reply.id for d in deltas)
    states = [e.data["state"] for e in events if e.name == "conversation"]
    assert states[0] == "running" and states[-1] == "idle"
    # The assistant item first appears in an item event before any delta of it.
    first_item = next(i for i, e in enumerate(events) if e.name == "item" and e.data["item"]["id"] == reply.id)
    first_delta = next(i for i, e in enumerate(events) if e.name == "delta")
    assert first_item < first_delta
    await conv.flush()
    saved = read_saved(daemon.data / "agent" / "conversations" / f"{conv.id}.json")
    assert [i["kind"] for i in saved["items"]] == ["user", "assistant"]
    assert saved["items"][1]["text"] == "Hello there, person."
    assert saved["state"] == "idle"


async def test_second_message_while_running_is_busy(daemon):
    daemon.backend.push({"hang": True})
    conv = await daemon.hub.create()
    await conv.send_message("one")
    with pytest.raises(Busy):
        await conv.send_message("two")
    assert await conv.stop() is True
    assert conv.info.state == "idle"


async def test_failed_round_before_first_token_leaves_no_empty_item(daemon):
    daemon.backend.push({"fail": "backend broke"})
    conv = await daemon.hub.create()
    await conv.send_message("hi")
    await wait_state(conv, "error")
    assert kinds(conv) == ["user", "notice"]
    assert conv.items[-1].level == "error"


async def test_tool_calls_run_and_results_reach_the_next_round(daemon):
    daemon.backend.push(
        {"tool_calls": [{"name": "echo", "arguments": {"text": "abc"}},
                        {"name": "echo", "arguments": {"text": "def"}}]},
        {"text": "done"},
    )
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    assert kinds(conv) == ["user", "assistant", "tool", "tool", "assistant"]
    tools = tool_items(conv)
    assert [t.state for t in tools] == ["done", "done"]
    assert [t.result for t in tools] == ["abc", "def"]
    assert tools[0].title == "Echo abc"
    assert conv.items[1].tool_calls and len(conv.items[1].tool_calls) == 2
    second = daemon.backend.turns[1].messages
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["abc", "def"]
    assert [m["tool_call_id"] for m in tool_msgs] == [t.call_id for t in tools]


async def test_composing_card_grows_before_the_call_runs(daemon):
    daemon.backend.push(
        {"tool_calls": [{"name": "echo", "arguments": {"text": "x" * 40}}], "delay": 0.01},
        {"text": "ok"},
    )
    conv = await daemon.hub.create()
    seen = []
    with daemon.bus.subscribe() as sub:
        await conv.send_message("go")
        await wait_state(conv, "idle")
        while True:
            try:
                ev = sub.receive_nowait()
            except trio.WouldBlock:
                break
            if ev.name == "item" and ev.data["item"]["kind"] == "tool":
                seen.append(ev.data["item"])
    composing = [s for s in seen if s["state"] == "composing"]
    assert len(composing) > 3
    sizes = [s["bytes"] for s in composing]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]
    assert any(s["title"].startswith("Echo x") for s in composing)
    assert len({s["id"] for s in seen}) == 1  # the same card runs the call
    assert [s["state"] for s in seen][-2:] == ["running", "done"]


async def test_arguments_that_are_not_an_object(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": '{"text": "cut'}]}, {"text": "sorry"})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    card = tool_items(conv)[0]
    assert card.state == "error"
    assert "not valid JSON" in card.result and "JSON object" in card.result
    assert card.raw_args == '{"text": "cut'
    assert card.args == {}
    second = daemon.backend.turns[1].messages
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"
    assert conv.items[1].tool_calls[0].arguments == '{"text": "cut'  # the record keeps what was written


async def test_unknown_tool_is_an_error_result(daemon):
    daemon.backend.push({"tool_calls": [{"name": "nope", "arguments": {}}]}, {"text": "ok"})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    card = tool_items(conv)[0]
    assert card.state == "error" and "no tool named 'nope'" in card.result


async def test_round_limit(daemon):
    # Another call each round: the same one again would be refused (ledger.Ledger.made).
    daemon.backend.push(*[{"tool_calls": [{"name": "echo", "arguments": {"text": f"again {n}"}}]}
                          for n in range(MAX_ROUNDS + 5)])
    conv = await daemon.hub.create()
    await conv.send_message("loop")
    await wait_state(conv, "idle")
    assert len(daemon.backend.turns) == MAX_ROUNDS
    assert conv.items[-1].kind == "notice" and conv.items[-1].text == ROUNDS_OF.format(n=MAX_ROUNDS)
    assert len(tool_items(conv)) == MAX_ROUNDS


async def test_three_identical_failures_stop_the_run(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"fail": "nope"}}], "repeat": 10})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    assert len(daemon.backend.turns) == 3
    assert [t.state for t in tool_items(conv)] == ["error"] * 3
    assert conv.items[-1].text == NOTICE_REPEATS


async def test_different_failures_do_not_stop_the_run(daemon):
    daemon.backend.push(
        {"tool_calls": [{"name": "echo", "arguments": {"fail": "a"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"fail": "b"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"fail": "a"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"fail": "a"}}]},
        {"text": "ok"},
    )
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    assert conv.items[-1].kind == "assistant" and conv.items[-1].text == "ok"


async def test_ask_mode_waits_for_approval_then_runs(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [NOTE_HI]}, {"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("write")
    await wait_state(conv, "waiting")
    card = tool_items(conv)[0]
    assert card.state == "waiting"
    assert not (tmp_path / "ws" / "a.txt").exists()  # nothing ran when the card appeared
    await conv.approve(card.id, True)
    await wait_state(conv, "idle")
    assert tool_items(conv)[0].state == "done"
    assert (tmp_path / "ws" / "a.txt").read_text() == "hi"
    with pytest.raises(NotFound):
        await conv.approve(card.id, True)


async def test_deny_is_read_by_the_model(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [NOTE_HI]}, {"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("write")
    await wait_state(conv, "waiting")
    await conv.approve(tool_items(conv)[0].id, False)
    await wait_state(conv, "idle")
    card = tool_items(conv)[0]
    assert card.state == "denied"
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert any(m["role"] == "tool" and "denied" in m["content"] for m in daemon.backend.turns[1].messages)


async def waiting_on_a_note(daemon, tmp_path, *after):
    """A conversation in ask mode whose run waits on NOTE_HI's approval; `after`: the rounds after it."""
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [NOTE_HI]}, *after)
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("write")
    await wait_state(conv, "waiting")
    return conv


async def test_a_deny_reason_is_read_by_the_model_in_plain_words(daemon, tmp_path):
    conv = await waiting_on_a_note(daemon, tmp_path, {"text": "ok"})
    card = tool_items(conv)[0]
    with pytest.raises(Invalid):  # too long to take: refused, and the card still waits
        await conv.approve(card.id, False, feedback="x" * (MAX_FEEDBACK_CHARS + 1))
    assert tool_items(conv)[0].state == "waiting"
    await conv.approve(card.id, False, feedback="  Write it to b.txt instead.  ")
    await wait_state(conv, "idle")
    card = tool_items(conv)[0]
    said = "The person denied this call: Write it to b.txt instead."
    assert card.state == "denied" and card.result.startswith(said)
    assert not (tmp_path / "ws" / "a.txt").exists()
    results = [m["content"] for m in daemon.backend.turns[1].messages if m["role"] == "tool"]
    assert len(results) == 1 and results[0].startswith(said)


async def test_a_blank_deny_reason_or_one_sent_with_a_yes_says_nothing_more(daemon, tmp_path):
    note_b = {"name": "note", "arguments": {"path": "b.txt", "text": "hi"}}
    conv = await waiting_on_a_note(daemon, tmp_path, {"tool_calls": [note_b]}, {"text": "ok"})
    await conv.approve(tool_items(conv)[0].id, False, feedback="   ")
    await wait_for(lambda: len(tool_items(conv)) == 2 and tool_items(conv)[1].state == "waiting")
    await conv.approve(tool_items(conv)[1].id, True, feedback="never read")
    await wait_state(conv, "idle")
    first, second = tool_items(conv)
    assert first.state == "denied" and first.result == DENIED_BY_PERSON
    assert second.state == "done" and (tmp_path / "ws" / "b.txt").read_text() == "hi"
    assert "never read" not in json.dumps(daemon.backend.turns[-1].messages)


async def test_mode_change_while_waiting_applies_to_the_next_call(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push(
        {"tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "1"}}]},
        {"tool_calls": [{"name": "note", "arguments": {"path": "b.txt", "text": "2"}}]},
        {"text": "ok"},
    )
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("write")
    await wait_state(conv, "waiting")
    await conv.patch({"mode": "full"})
    await conv.approve(tool_items(conv)[0].id, True)
    await wait_state(conv, "idle")
    assert [t.state for t in tool_items(conv)] == ["done", "done"]
    assert (tmp_path / "ws" / "b.txt").read_text() == "2"


async def test_read_only_refuses_changes_and_does_not_offer_them(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "1"}}]}, {"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="read_only")
    await conv.send_message("write")
    await wait_state(conv, "idle")
    offered = [t.name for t in daemon.backend.turns[0].tools]
    assert "note" not in offered and "echo" in offered
    card = tool_items(conv)[0]
    assert card.state == "error"  # not offered, so not a tool here
    assert not (tmp_path / "ws" / "a.txt").exists()


async def test_stop_while_waiting_denies_the_card(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "1"}}]})
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("write")
    await wait_state(conv, "waiting")
    assert await conv.stop() is True
    assert conv.info.state == "idle"
    card = tool_items(conv)[0]
    assert card.state == "denied"
    assert conv.items[-1].kind == "notice"
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert await conv.stop() is False  # nothing runs now


async def test_stop_mid_stream_then_next_message_works(daemon):
    daemon.backend.push({"text": numbered("a long answer ", 50), "delay": 0.01}, {"text": "fresh"})
    conv = await daemon.hub.create()
    await conv.send_message("one")
    await wait_for(lambda: len(conv.items) >= 2 and len(conv.items[1].text or "") > 10)
    assert await conv.stop() is True
    assert conv.items[1].streaming is False
    assert conv.info.state == "idle"
    counters = daemon.engine.counters()
    assert counters.aborted == 1
    await conv.send_message("two")
    await wait_state(conv, "idle")
    assert conv.items[-1].text == "fresh"


async def test_stop_while_composing_ends_the_card_live_only(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": numbered("y", 100)}}], "delay": 0.01})
    conv = await daemon.hub.create()
    with daemon.bus.subscribe() as sub:
        await conv.send_message("go")
        await wait_for(lambda: any(i.kind == "tool" and (i.bytes or 0) > 20 for i in conv.items))
        await conv.stop()
        events = drained(sub)
    cards = [e.data["item"] for e in events if e.name == "item" and e.data["item"]["kind"] == "tool"]
    assert cards[-1]["state"] == "denied"
    assert all(i.kind != "tool" for i in conv.items)  # the record keeps what a round decided


async def test_stop_a_running_tool(daemon):
    daemon.backend.push({"tool_calls": [{"name": "note", "arguments": {"path": "x", "sleep": 30}}]})
    # note is a change and needs a workspace; use a full-mode workspace conversation
    folder = daemon.data.parent / "w2"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    conv = await daemon.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("go")
    await wait_for(lambda: any(i.kind == "tool" and i.state == "running" for i in conv.items))
    with trio.fail_after(5):
        assert await conv.stop() is True
    assert tool_items(conv)[0].state == "error"
    assert conv.info.state == "idle"


async def test_queued_turn_withdraws_only_its_place(daemon):
    daemon.backend.push({"when": "first", "text": "slow " * 40, "delay": 0.01},
                        {"when": "third", "text": "third reply"})
    a = await daemon.hub.create()
    b = await daemon.hub.create()
    c = await daemon.hub.create()
    await a.send_message("first")
    await wait_for(lambda: len(a.items) >= 2)
    await b.send_message("second")
    await c.send_message("third")
    await wait_for(lambda: daemon.engine.statistics().mailbox == 2)
    assert await b.stop() is True  # waiting for the engine: withdraws
    await wait_state(a, "idle")
    await wait_state(c, "idle")
    assert a.items[1].text == "slow " * 40  # the running turn was not cancelled
    assert c.items[-1].text == "third reply"
    assert [i.kind for i in b.items] == ["user", "notice"]
    assert daemon.engine.counters().withdrawn == 1


async def test_no_model_keeps_the_message(tmp_path):
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.engine import Engine
    from actors.runs.env import Env
    from actors.tools.registry import Registry
    from bmoe_daemon.store import Store

    store = Store(tmp_path)
    engine = Engine(None)
    env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry(), resolve_workspace=lambda _: None)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        conv = await hub.create()
        await conv.send_message("hello?")
        await wait_state(conv, "error")
        assert kinds(conv) == ["user", "notice"]
        assert conv.items[1].level == "error" and conv.items[1].text.startswith("No model is loaded")
        hub.close()
        engine.close()


async def test_edit_drops_the_item_and_what_follows(daemon):
    daemon.backend.push({"text": "first answer"}, {"text": "second answer"})
    conv = await daemon.hub.create()
    await conv.send_message("question one")
    await wait_state(conv, "idle")
    first_user = conv.items[0].id
    await conv.send_message("question two", edit_of=first_user)
    await wait_state(conv, "idle")
    assert [(i.kind, i.text) for i in conv.items] == [("user", "question two"), ("assistant", "second answer")]
    with pytest.raises(NotFound):
        await conv.send_message("x", edit_of="nope")


async def test_context_full_shortens_oldest_long_result_one_at_a_time(daemon):
    big = "".join(f"{n:04d}\n" for n in range(400))  # 2,000 characters, and not a loop
    daemon.backend.push(
        {"tool_calls": [{"name": "echo", "arguments": {"text": big}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": big}}]},
        {"text": "answer"},
    )
    # Room for the prompt and one long result, not two.
    daemon.backend.context_chars = 3000
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle", "error")
    results = tool_items(conv)
    assert results[0].shortened is True
    notices = [i.text for i in conv.items if i.kind == "notice"]
    assert notices.count(NOTICE_SHORTENED) == 1
    assert conv.items[-1].text == "answer" or conv.info.state == "error"
    assert results[0].result == big  # the person's copy stays whole


async def test_context_full_with_nothing_to_shorten_ends_in_error(daemon):
    daemon.backend.context_chars = 10
    conv = await daemon.hub.create()
    await conv.send_message("a message that does not fit")
    await wait_state(conv, "error")
    assert conv.items[0].kind == "user"
    assert conv.items[-1].text == NOTICE_CONTEXT_FULL


async def test_system_prompt_is_short_and_names_what_it_must(daemon, tmp_path, capsys):
    ws = await workspace(daemon, tmp_path, agents_md="Use tabs.\n" + "x" * 20000)
    daemon.backend.push({"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    prompt = daemon.backend.turns[0].messages[0]["content"]
    base = prompt.split("\n\nThe project's instructions:\n")[0]
    with capsys.disabled():
        print(f"\nsystem prompt: {len(base)} characters without AGENTS.md, {len(prompt)} with it")
    assert len(base) < PROMPT_CAP_CHARS
    assert ws.path in base and "full" in base
    import datetime

    assert datetime.date.today().isoformat() in base
    assert "Use tabs." in prompt
    assert len(prompt) - len(base) <= 8 * 1024 + 80


def test_prompt_without_workspace_asks_for_a_folder():
    import datetime

    text = system_prompt(workspace=None, mode="ask", today=datetime.date(2026, 1, 1), tools=False)
    assert "ask them to open a workspace" in text
    assert len(text) < PROMPT_CAP_CHARS


async def test_system_prompt_same_for_every_round(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "ok"})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle")
    one, two = daemon.backend.turns[0].messages, daemon.backend.turns[1].messages
    assert one[0] == two[0]
    assert two[: len(one)] == one  # round 2 only appends


async def test_network_message_gets_no_workspace_tools(daemon):
    daemon.backend.push({"text": "ok"})
    conv = await daemon.hub.create()
    await conv.send_message("hi", local=False)
    await wait_state(conv, "idle")
    assert [t.name for t in daemon.backend.turns[0].tools] == ["echo"]


async def test_restart_marks_running_conversation_idle(tmp_path):
    from actors.notices import RESTARTED as NOTICE_RESTARTED
    from actors.record.items import ConversationInfo, ConversationRecord, Item
    from actors.record.transcript import restored

    info = ConversationInfo("c1", "t", None, "ask", "local", "builtin", "running", 1.0, 2.0)
    rec = ConversationRecord(info, (Item(id="i1", kind="user", text="hi"),
                                    Item(id="i2", kind="assistant", text="par", streaming=True),
                                    Item(id="i3", kind="assistant", text="held", checking=True)))
    out = restored(rec)
    assert out.info.state == "idle"
    assert out.items[1].streaming is False and out.items[1].checking is None
    assert out.items[2].checking is None  # no check will come: shown as it is
    assert out.items[-1].kind == "notice" and out.items[-1].text == NOTICE_RESTARTED


WORDS = numbered("word ", 60)


async def test_streaming_saves_are_interim_and_the_end_is_durable(daemon, monkeypatch):
    saves: list[tuple[int, bool]] = []
    real = daemon.store.save_conversation

    async def recording(record, *, durable=True):
        saves.append((len(record.items[-1].text or "") if record.items else 0, durable))
        await real(record, durable=durable)

    monkeypatch.setattr(daemon.store, "save_conversation", recording)
    daemon.backend.push({"text": WORDS, "delay": 0.02})
    conv = await daemon.hub.create()
    await conv.send_message("talk")
    await wait_state(conv, "idle", timeout=20)
    await conv.flush()
    interim = [n for n, durable in saves if not durable]
    # The reply streams for about 1.2 s: a few interim saves of the growing text, none fsynced.
    assert len(interim) >= 2 and interim == sorted(interim)
    # The last save, with the whole reply and the idle state, is durable.
    assert saves[-1] == (len(WORDS), True)
    saved = read_saved(daemon.data / "agent" / "conversations" / f"{conv.id}.json")
    assert saved["items"][-1]["text"] == WORDS and saved["state"] == "idle"


def test_the_prompt_cap_keeps_whole_lines():
    import datetime

    skills = [(f"skill-{n}", "d" * 300) for n in range(30)]
    text = system_prompt(workspace=Path("/w"), mode="ask", today=datetime.date(2026, 1, 1), tools=True, skills=skills)
    assert len(text) <= PROMPT_CAP_CHARS
    lines = text.splitlines()
    assert lines[-1].startswith("- skill-") and lines[-1].endswith("d" * 300)  # the last line is whole


def test_a_card_that_waited_when_the_daemon_died_is_restored_denied():
    from actors.notices import DENIED_RESTARTED, ERROR_RESTARTED
    from actors.record.items import ConversationInfo, ConversationRecord, Item
    from actors.record.transcript import restored

    info = ConversationInfo("c1", "t", None, "ask", "local", "builtin", "waiting", 1.0, 2.0)
    cards = [Item(id=f"t{n}", kind="tool", tool="note", call_id=f"c{n}", state=s)
             for n, s in enumerate(["waiting", "running", "composing", "done"])]
    out = restored(ConversationRecord(info, tuple(cards)))
    assert [(i.state, i.result) for i in out.items[:4]] == [
        ("denied", DENIED_RESTARTED), ("error", ERROR_RESTARTED), ("error", ERROR_RESTARTED), ("done", None)
    ]
    assert [i.ended_by for i in out.items[:4]] == ["daemon", "daemon", "daemon", None]


async def test_a_delete_is_told_to_the_streams_that_could_see_the_conversation(daemon, tmp_path):
    ws = await workspace(daemon, tmp_path)
    plain = await daemon.hub.create()
    private = await daemon.hub.create(workspace=ws.id)
    with daemon.bus.subscribe(local=True) as local, daemon.bus.subscribe(local=False) as remote:
        await daemon.hub.delete(plain.id)
        await daemon.hub.delete(private.id)
        told_local = [e.data for e in drained(local) if e.name == "conversation_deleted"]
        told_remote = [e.data for e in drained(remote) if e.name == "conversation_deleted"]
    assert told_local == [{"id": plain.id}, {"id": private.id}]
    assert told_remote == [{"id": plain.id}]  # a workspace's conversation is this computer's alone
