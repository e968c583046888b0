"""Compaction (actors/runs/agent/compaction_cut.py, actors/runs/agent/compaction_turn.py): a conversation that outgrows
the context is summarised before a round, and the run goes on."""

from __future__ import annotations

import json

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import notices
from actors.record.items import Item, ToolCall
from actors.runs.agent import compaction_cut as compaction
from actors.runs.agent import history
from tests.filler import numbered
from tests.waiting import wait_state

SUMMARY = "\n".join(f"## {s}\nshort {s.lower()}" for s in compaction.SECTIONS)
LONG = "word " * 300


def summary_round(text: str = SUMMARY) -> dict:
    # The summary turn's user message is the transcript, whose lines start "Person:".
    return {"when": "Person: ", "text": text}


async def talk(daemon, conv, n: int) -> None:
    for i in range(n):
        await conv.send_message(f"message {i}: {LONG}")
        await wait_state(conv, "idle", "error")


async def test_a_long_conversation_is_summarised_and_goes_on(daemon):
    conv = await daemon.hub.create()
    daemon.backend.default = {"text": numbered("ok ", 100)}
    await talk(daemon, conv, 3)
    daemon.backend.n_ctx = 1500  # the next round would pass 85% of it
    daemon.backend.push(summary_round())
    await conv.send_message("and now the last one")
    await wait_state(conv, "idle", "error")
    assert conv.info.state == "idle", [i.text for i in conv.items if i.kind == "notice"]
    notice = next(i for i in conv.items if i.compaction is not None)
    assert notice.compaction["summary"] == SUMMARY and notice.compaction["items_summarised"] >= 4
    assert notice.compaction["tokens_after"] < notice.compaction["tokens_before"]
    assert notice.text == notices.COMPACTED.format(n=notice.compaction["items_summarised"])
    # The record keeps every item; the model reads the summary, then the current message.
    assert [i.text for i in conv.items if i.kind == "user"][-1] == "and now the last one"
    sent = daemon.backend.turns[-1].messages
    assert sent[1]["role"] == "user" and sent[1]["content"].startswith("[A summary of the conversation so far]")
    assert sent[-1]["content"] == "and now the last one" and len(sent) == 3
    assert history.well_formed(sent) is None
    await conv.flush()
    saved = daemon.store.load_conversations()[0]
    assert sum(1 for i in saved.items if i.compacted) == notice.compaction["items_summarised"]


async def test_a_summary_without_its_sections_drops_the_items_instead(daemon):
    conv = await daemon.hub.create()
    daemon.backend.default = {"text": numbered("ok ", 100)}
    await talk(daemon, conv, 3)
    daemon.backend.n_ctx = 1500
    daemon.backend.push(summary_round("I summarised it, trust me."))
    await conv.send_message("go on")
    await wait_state(conv, "idle", "error")
    notice = next(i for i in conv.items if i.compaction is not None)
    assert notice.compaction["summary"] is None
    assert notice.text == notices.COMPACTED_DROPPED.format(n=notice.compaction["items_summarised"])
    assert compaction.DROPPED in daemon.backend.turns[-1].messages[1]["content"]
    assert conv.info.state == "idle"


async def test_a_full_context_with_nothing_to_shorten_compacts_instead_of_failing(daemon):
    """The engine refuses the round (context_full); the summary turn itself does not fit
    either, so the items are dropped, and the round then fits."""
    conv = await daemon.hub.create()
    daemon.backend.default = {"text": "ok"}
    await talk(daemon, conv, 3)
    daemon.backend.context_chars = 4_000  # the next round does not fit; n_ctx stays large
    await conv.send_message("short one")
    await wait_state(conv, "idle", "error")
    assert conv.info.state == "idle" and conv.info.end_reason == "answered"
    assert any(i.compaction is not None for i in conv.items)
    assert notices.CONTEXT_FULL not in [i.text for i in conv.items]


async def test_a_long_run_compacts_its_own_earlier_rounds_and_goes_on(daemon):
    """One message whose run makes many rounds: with nothing before the message left to
    summarise, its earlier rounds are, the message and the last round kept; the run
    ends answered, never with CONTEXT_FULL."""
    conv = await daemon.hub.create()
    daemon.backend.n_ctx = 1500
    rounds = 14  # each round's call and result take ~160 tokens: far past the context
    daemon.backend.push(*[{"tool_calls": [{"name": "echo", "arguments": {"text": f"round {n} " + numbered("r ", 150)}}]}
                          for n in range(rounds)])
    daemon.backend.default = {"text": "All rounds done."}
    await conv.send_message("echo many times")
    await wait_state(conv, "idle", "error", timeout=30)
    texts = [i.text for i in conv.items if i.kind == "notice"]
    assert conv.info.state == "idle" and conv.info.end_reason == "answered", texts
    assert notices.CONTEXT_FULL not in texts
    notes = [i for i in conv.items if i.compaction is not None]
    assert notes and all(n.compaction["summary"] is None for n in notes)  # the scripted summary is no summary
    user = next(n for n, i in enumerate(conv.items) if i.kind == "user")
    assert not conv.items[user].compacted  # the message itself is never summarised
    # (the scripted backend plays a pushed round to each summary turn as well)
    assert sum(1 for i in conv.items if i.kind == "tool" and i.state == "done") + len(notes) == rounds
    for turn in daemon.backend.turns:  # every round's prompt fits and is well-formed
        if turn.tools:
            assert history.well_formed(turn.messages) is None
            assert compaction.estimate_tokens(turn.messages, turn.tools) <= daemon.backend.n_ctx
            assert any(m["role"] == "user" and m["content"] == "echo many times" for m in turn.messages)
    # each compaction kept the round before it: its call and result were sent after it
    last = daemon.backend.turns[-1].messages
    assert last[-1]["role"] == "tool" and last[-1]["content"].startswith("round ")


def test_the_cut_is_before_the_message_or_else_inside_its_run():
    def call(n):
        return Item(id=f"a{n}", kind="assistant", text="", tool_calls=(ToolCall(f"c{n}", "echo", "{}"),))

    def result(n):
        return Item(id=f"t{n}", kind="tool", call_id=f"c{n}", state="done", result="r")

    before = [Item(id="u0", kind="user", text="first"), call(0), result(0)]
    run = [Item(id="u1", kind="user", text="now"), call(1), result(1), call(2), result(2)]
    assert compaction.cut_range(before + run) == (0, 3)
    done = [attrs.evolve(i, compacted=True) for i in before]
    assert compaction.cut_range(done + run) == (4, 6)  # after the message, before the last round
    assert compaction.cut_range(done + run[:3]) is None  # only one round: nothing to summarise
    assert compaction.cut_range(done + run[:1]) is None
    inner = done + run[:1] + [attrs.evolve(i, compacted=True) for i in run[1:3]] + run[3:]
    assert compaction.cut_range(inner) is None  # summarised already


async def test_compact_on_demand(daemon):
    conv = await daemon.hub.create()
    await conv.compact()
    await wait_state(conv, "idle")
    assert conv.items[-1].text == notices.NOTHING_TO_COMPACT
    await talk(daemon, conv, 2)
    daemon.backend.push(summary_round())
    await conv.compact()
    await wait_state(conv, "idle")
    assert any(i.compaction is not None for i in conv.items)
    assert conv.info.end_reason == "answered"  # a compaction is not a run's end


sizes = st.lists(st.integers(1, 6000), min_size=1, max_size=30)


@settings(max_examples=200)
@given(sizes, st.integers(800, 4000))
def test_after_a_compaction_the_prompt_always_fits(sizes, context):
    """For random histories whose current message fits, what is sent after the items
    before it are summarised (or dropped) stays under the trigger."""
    items: list[Item] = []
    for n, size in enumerate(sizes):
        items.append(Item(id=f"u{n}", kind="user", text="u" * size))
        items.append(Item(id=f"a{n}", kind="assistant", text="", tool_calls=(ToolCall(f"c{n}", "echo", "{}"),)))
        items.append(Item(id=f"t{n}", kind="tool", call_id=f"c{n}", state="done", result="r" * size))
    items.append(Item(id="now", kind="user", text="the current message"))
    cut = compaction.cut_point(items)
    assert cut == len(items) - 1
    summary = SUMMARY if sizes[0] % 2 else None
    record = compaction.record(summary=summary, tokens_before=0, items_summarised=cut, todos=(), plan=None,
                               files={"a.py": "x" * (context * compaction.CHARS_PER_TOKEN // 20)})
    import attrs

    kept = [attrs.evolve(i, compacted=True) for i in items[:cut]]
    notice = Item(id="n", kind="notice", text="compacted", compaction=record)
    after = history.messages([*kept, notice, items[cut]], "system prompt")
    assert history.well_formed(after) is None
    assert compaction.estimate_tokens(after) <= compaction.TRIGGER * context + len(SUMMARY)


def test_the_five_sections_are_read_and_anything_less_is_not():
    assert compaction.parse_summary(SUMMARY) is not None
    assert compaction.parse_summary(SUMMARY.replace("## Next", "## Later")) is None
    assert compaction.parse_summary(SUMMARY.replace("short next", "")) is None
    assert compaction.parse_summary("### Goal:\na\n### Done:\nb\n### Files:\nc\n### Open work:\nd\n### Next:\ne")
    assert json.dumps(compaction.record(summary=None, tokens_before=1, items_summarised=2, todos=(),
                                        plan=None, files={}))


async def test_answers_carry_their_usage_and_the_conversation_its_context(daemon):
    conv = await daemon.hub.create()
    await conv.send_message("hello")
    await wait_state(conv, "idle")
    answer = conv.items[-1]
    assert answer.usage["prompt_tokens"] > 0 and answer.usage["completion_tokens"] > 0
    assert set(answer.usage) == {"prompt_tokens", "completion_tokens", "cached_tokens"}
    context = conv.to_json()["context"]
    assert context["size"] == daemon.backend.n_ctx and 0 < context["used"] < context["size"]


async def test_an_asked_compaction_says_it_was_asked(daemon):
    conv = await daemon.hub.create()
    await talk(daemon, conv, 2)
    daemon.backend.push(summary_round())
    await conv.compact()
    await wait_state(conv, "idle")
    notice = next(i for i in conv.items if i.compaction is not None)
    assert notice.text == notices.COMPACTED_ASKED.format(n=notice.compaction["items_summarised"])


BIG_PAGE = "".join(f"<p>line {n:04d} of the page</p>\n" for n in range(1600))  # 49,600 characters, the context 12,000


async def test_a_write_file_larger_than_the_context_is_shortened_and_the_run_goes_on(real_tools, tmp_path):
    """The call's `content` alone is over three times the context: the round after it is
    refused (context_full), its arguments are sent shortened, and the run answers."""
    d = real_tools
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.context_chars = 12_000  # n_ctx stays large: only the engine's refusal says it is full
    d.backend.push({"tool_calls": [{"name": "write_file", "arguments": {"path": "page.html", "content": BIG_PAGE}}]},
                   {"text": "I wrote page.html."})
    await conv.send_message("write the page")
    await wait_state(conv, "idle", "error")
    said = [i.text for i in conv.items if i.kind == "notice"]
    assert conv.info.state == "idle" and conv.info.end_reason == "answered", said
    assert notices.CONTEXT_FULL not in said and notices.SHORTENED in said
    assert (folder / "page.html").read_text() == BIG_PAGE and conv.items[-1].text == "I wrote page.html."
    # The record keeps the call whole; the model read its head and how to see the rest.
    call = next(i for i in conv.items if i.kind == "assistant" and i.tool_calls)
    assert call.shortened is True and json.loads(call.tool_calls[0].arguments)["content"] == BIG_PAGE
    sent = next(m for m in d.backend.turns[-1].messages if m.get("tool_calls"))
    shown = json.loads(sent["tool_calls"][0]["function"]["arguments"])
    assert shown["path"] == "page.html" and shown["content"].startswith(BIG_PAGE[: history.SHORT_ARG_CHARS])
    assert "read_file shows it" in shown["content"] and len(shown["content"]) < 1000
    assert history.well_formed(d.backend.turns[-1].messages) is None


async def test_the_estimate_shortens_a_huge_call_before_any_refusal(real_tools, tmp_path):
    """A provider may not refuse a prompt that is too long (some cut it silently): when
    the estimate says it cannot fit at all, the huge call is shortened beforehand."""
    d = real_tools
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.n_ctx = 4_000  # the backend never refuses; the call alone is ~10,000 tokens
    d.backend.push({"tool_calls": [{"name": "write_file", "arguments": {"path": "page.html", "content": BIG_PAGE}}]},
                   {"text": "done"})
    await conv.send_message("write the page")
    await wait_state(conv, "idle", "error")
    assert conv.info.state == "idle" and conv.items[-1].text == "done"
    assert len(d.backend.turns) == 2 and BIG_PAGE not in json.dumps(d.backend.turns[-1].messages)


async def test_a_message_larger_than_the_context_is_shortened_last(daemon):
    """Nothing before it to compact, no result or call to shorten: the person's message
    is sent cut to its head, with a marker, and the run answers."""
    text = "Please look at this log:\n" + "an error line of the log\n" * 2000
    daemon.backend.context_chars = 12_000
    daemon.backend.push({"text": "The log repeats one error."})
    conv = await daemon.hub.create()
    await conv.send_message(text)
    await wait_state(conv, "idle", "error")
    assert conv.info.state == "idle" and conv.items[-1].text == "The log repeats one error."
    assert conv.items[0].text == text and conv.items[0].shortened is True
    content = daemon.backend.turns[-1].messages[-1]["content"]
    assert content.startswith(text[: history.SHORT_MESSAGE_CHARS]) and "was shortened to fit the context" in content
