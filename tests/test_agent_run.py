"""The built-in run cut anywhere (actors/runs/agent/run.py): every card ends, the history
stays whole. Also the rules that keep a message's prompt the same across its rounds."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import attrs
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import notices
from actors.bus import Event, EventBus
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.record.items import ConversationRecord
from actors.record.transcript import restored
from actors.runs.agent import history
from actors.runs.env import Env
from actors.tools.registry import Registry
from bmoe_daemon.store import Store
from tests.conftest import EchoTool, NoteTool
from tests.waiting import wait_state

FINAL = ("done", "denied", "error")

calls = st.sampled_from([
    {"name": "echo", "arguments": {"text": "read"}},
    {"name": "echo", "arguments": {"fail": "no"}},
    {"name": "note", "arguments": {"path": "n.txt", "text": "x"}},
    {"name": "note", "arguments": '{"path": "cut'},
    {"name": "nothing", "arguments": {}},
])
rounds = st.lists(st.lists(calls, min_size=1, max_size=3), min_size=1, max_size=4)


async def _cut_run(tmp: Path, script: list[list[dict[str, Any]]], mode: str, cut: int, answers: list[bool]) -> None:
    # Rounds for the first message only ("go"); the next message is answered in words.
    backend = ScriptedBackend([{"when": "go", "text": "working", "tool_calls": r} for r in script],
                              default={"text": "All done."})
    bus = EventBus()
    engine = Engine(backend)
    store = Store(tmp / "data")
    env = Env(engine=engine, bus=bus, store=store, registry=Registry([EchoTool(), NoteTool()]),
              resolve_workspace=lambda _: None)
    hub = Hub(env, store)
    folder = tmp / "ws"
    folder.mkdir()
    snapshot: list[ConversationRecord] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        ws = await hub.add_workspace(str(folder))
        conv = await hub.create(workspace=ws.id, mode=mode)  # type: ignore[arg-type]
        answer = iter(answers)
        with bus.subscribe() as sub:
            await conv.send_message("go")
            seen = 0
            with trio.fail_after(20):
                while conv.info.state != "idle" or conv.running:
                    with trio.move_on_after(0.05):
                        event = await sub.receive()
                        if not isinstance(event, Event):
                            continue
                        seen += 1
                        if seen == cut and conv.running:
                            # What a crash at this moment would leave, and a stop here.
                            snapshot.append(conv.record())
                            nursery.start_soon(conv.stop)
                        item = event.data.get("item") if event.name == "item" else None
                        if item and item.get("state") == "waiting" and not snapshot:
                            nursery.start_soon(conv.approve, item["id"], next(answer, True))
        await wait_state(conv, "idle", "error")
        cards = [i for i in conv.items if i.kind == "tool"]
        assert all(c.state in FINAL for c in cards), [(c.tool, c.state) for c in cards]
        assert history.well_formed(history.messages(conv.items, "system")) is None
        if snapshot:
            record = snapshot[0]
            crashed = restored(attrs.evolve(record, info=attrs.evolve(record.info, state="running")))
            assert all(i.state in FINAL for i in crashed.items if i.kind == "tool")
            assert history.well_formed(history.messages(crashed.items, "system")) is None
        # The next message's round is sent a well-formed history, by the real run.
        await conv.send_message("and now?")  # no "g-o" in it: the default round
        await wait_state(conv, "idle", "error")
        assert history.well_formed(backend.turns[-1].messages) is None
        hub.close()
        engine.close()


@settings(max_examples=40)
@given(script=rounds, mode=st.sampled_from(["ask", "full"]), cut=st.integers(1, 120),
       answers=st.lists(st.booleans(), max_size=6))
def test_a_run_cut_at_any_point_leaves_every_card_ended_and_the_history_whole(
    script: list[list[dict[str, Any]]], mode: str, cut: int, answers: list[bool]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(_cut_run, Path(tmp), script, mode, cut, answers)


async def test_a_stop_while_the_first_of_three_calls_waits_ends_all_three(daemon, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    note = {"name": "note", "arguments": {"path": "a.txt"}}
    daemon.backend.push({"tool_calls": [note, note, note]}, {"text": "fine"})
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("three notes")
    await wait_state(conv, "waiting")
    await conv.stop()
    cards = [i for i in conv.items if i.kind == "tool"]
    assert [(c.state, c.result) for c in cards] == [
        ("denied", notices.DENIED_WAITING_STOPPED),
        ("denied", notices.DENIED_NOT_REACHED),
        ("denied", notices.DENIED_NOT_REACHED),
    ]
    # The person stopped the run: the cards say so (`stopped`), not that someone said no.
    assert [c.ended_by for c in cards] == ["stop"] * 3
    assert cards[0].person_text == notices.for_person(notices.DENIED_WAITING_STOPPED)
    await conv.flush()
    saved = daemon.store.load_conversations()[0]
    assert [i.state for i in saved.items if i.kind == "tool"] == ["denied"] * 3
    await conv.send_message("go on")
    await wait_state(conv, "idle")
    sent = daemon.backend.turns[-1].messages
    assert history.well_formed(sent) is None
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "tool", "tool", "user"]


async def test_repeated_failures_end_the_rest_of_the_round(daemon, tmp_path):
    fail = {"name": "echo", "arguments": {"fail": "same"}}
    note = {"name": "note", "arguments": {"path": "a.txt"}}  # a change: it waits for the failure before it
    daemon.backend.push(*[{"tool_calls": [fail]}] * 2, {"tool_calls": [fail, note]})
    folder = tmp_path / "ws"
    folder.mkdir()
    conv = await daemon.hub.create(workspace=(await daemon.hub.add_workspace(str(folder))).id, mode="full")
    await conv.send_message("fail")
    await wait_state(conv, "idle")
    cards = [i for i in conv.items if i.kind == "tool"]
    assert [c.state for c in cards] == ["error", "error", "error", "denied"]
    assert cards[-1].result == notices.DENIED_NOT_REACHED_REPEATS
    assert conv.items[-1].text == notices.REPEATS


async def test_a_mode_switch_while_a_card_waits_keeps_the_prompt_and_is_told_at_the_next_call(daemon, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    note, other = {"name": "note", "arguments": {"path": "a.txt"}}, {"name": "note", "arguments": {"path": "b.txt"}}
    daemon.backend.push({"tool_calls": [note]}, {"tool_calls": [other]}, {"text": "done"})
    conv = await daemon.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("two notes")
    await wait_state(conv, "waiting")
    await conv.patch({"mode": "read_only"})
    await conv.approve([i for i in conv.items if i.kind == "tool"][0].id, True)
    await wait_state(conv, "idle")
    systems = [t.messages[0] for t in daemon.backend.turns]
    assert len(systems) == 3 and systems[0] == systems[1] == systems[2]
    assert "Mode: ask." in systems[0]["content"]
    first, second = [i for i in conv.items if i.kind == "tool"]
    assert first.state == "done"  # approved before the switch counted
    assert second.state == "denied"
    assert second.result.startswith(notices.mode_switched("read_only"))
    assert notices.DENIED_READ_ONLY in second.result
    assert (folder / "a.txt").exists()


async def test_think_reaches_every_round_of_the_message(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"text": "ok"})
    conv = await daemon.hub.create()
    await conv.send_message("think hard", think=True)
    await wait_state(conv, "idle")
    assert [t.think for t in daemon.backend.turns] == [True, True]
    await conv.send_message("no thinking", think=False)
    await wait_state(conv, "idle")
    assert daemon.backend.turns[-1].think is False
    await conv.send_message("default")
    await wait_state(conv, "idle")
    assert daemon.backend.turns[-1].think is None


async def test_an_edit_keeps_the_message_images(daemon):
    image = "data:image/png;base64,iVBORw0KGgo="
    conv = await daemon.hub.create()
    first = await conv.send_message("what is this", images=(image,))
    await wait_state(conv, "idle")
    edited = await conv.send_message("what is this picture", edit_of=first.id)
    await wait_state(conv, "idle")
    assert edited.images == (image,)
    assert [i.images for i in conv.items if i.kind == "user"] == [(image,)]
    content = daemon.backend.turns[-1].messages[-1]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": image}}


async def test_the_shortening_notice_is_said_once_per_conversation(daemon):
    long = "line\n" * 40
    daemon.backend.context_chars = 1400
    for _ in range(2):
        daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": long}}]}, {"text": "ok"})
    conv = await daemon.hub.create()
    for text in ("one", "two"):
        await conv.send_message(text)
        await wait_state(conv, "idle", "error")
    shortened = [i for i in conv.items if i.kind == "tool" and i.shortened]
    assert shortened, "the context was meant to run short"
    assert [i.text for i in conv.items if i.kind == "notice"].count(notices.SHORTENED) == 1


async def test_reading_a_long_prompt_is_told_before_the_answer_streams(daemon):
    from tests.waiting import drained

    daemon.backend.push({"prefill": 1300, "text": "Read it."}, {"text": "Short."})
    conv = await daemon.hub.create()
    with daemon.bus.subscribe() as sub:
        await conv.send_message("a long one")
        await wait_state(conv, "idle")
        await conv.send_message("a short one")
        await wait_state(conv, "idle")
        events = [e for e in drained(sub) if isinstance(e, Event) and e.name in ("prefill", "delta")]
    reads = [e.data for e in events if e.name == "prefill"]
    assert reads == [{"conversation": conv.id, "done": n, "total": 1300} for n in (512, 1024, 1300)]
    # Every report comes before the first piece of the answer, and the short prompt has none.
    assert [e.name for e in events[:3]] == ["prefill"] * 3 and events[3].name == "delta"
    assert not any(e.name == "prefill" for e in events[4:])
