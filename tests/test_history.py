"""What a model is sent of a conversation (actors/runs/agent/history.py): always well-formed."""

from __future__ import annotations

import json

import attrs
from hypothesis import given
from hypothesis import strategies as st

from actors import notices
from actors.record.items import TOOL_STATES, Item, ToolCall
from actors.runs.agent import history

ids = st.sampled_from([f"call_{n}" for n in range(6)])
states = st.sampled_from(TOOL_STATES)


@st.composite
def item_lists(draw: st.DrawFn) -> list[Item]:
    """Any list a conversation might hold: cut rounds, lost cards, stray cards, a card
    of a call that reappears later, non-final states, notices between."""
    out: list[Item] = []
    for n in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["user", "assistant", "tool", "notice"]))
        if kind == "user":
            out.append(Item(id=f"u{n}", kind="user", text=draw(st.text(max_size=5))))
        elif kind == "assistant":
            calls = draw(st.lists(ids, max_size=3, unique=True))
            out.append(Item(id=f"a{n}", kind="assistant", text=draw(st.sampled_from(["", "hi"])),
                            tool_calls=tuple(ToolCall(c, "echo", draw(st.sampled_from(["{}", "{\"a\":", ""])))
                                             for c in calls) or None))
        elif kind == "tool":
            out.append(Item(id=f"t{n}", kind="tool", tool="echo", call_id=draw(ids), state=draw(states),
                            result=draw(st.text(max_size=5))))
        else:
            out.append(Item(id=f"n{n}", kind="notice", text="note", level="info"))
    return out


@given(item_lists(), st.booleans())
def test_any_items_give_well_formed_messages(items: list[Item], system: bool) -> None:
    msgs = history.messages(items, "You are an agent." if system else None)
    assert history.well_formed(msgs) is None, (items, msgs)


@given(item_lists())
def test_each_call_reads_its_own_finished_card_or_not_run(items: list[Item]) -> None:
    msgs = history.messages(items)
    answers = iter(m for m in msgs if m["role"] == "tool")
    for pos, item in enumerate(items):
        if item.kind != "assistant" or not item.tool_calls:
            continue
        later = []
        for other in items[pos + 1 :]:
            if other.kind == "assistant":
                break
            later.append(other)
        for call in item.tool_calls:
            sent = next(answers)
            card = next((c for c in later if c.kind == "tool" and c.call_id == call.id
                         and c.state in ("done", "denied", "error")), None)
            expected = history.model_result(card) if card else notices.NOT_RUN_IN_HISTORY
            assert sent == {"role": "tool", "tool_call_id": call.id, "content": expected}


def test_a_cut_round_reads_as_not_run_before_the_next_message() -> None:
    items = [
        Item(id="u1", kind="user", text="do three things"),
        Item(id="a1", kind="assistant", text="", tool_calls=(ToolCall("c1", "echo", "{}"), ToolCall("c2", "echo", "{}"),
                                                             ToolCall("c3", "echo", "{}"))),
        Item(id="t1", kind="tool", tool="echo", call_id="c1", state="done", result="one"),
        Item(id="t2", kind="tool", tool="echo", call_id="c2", state="composing"),
        Item(id="n1", kind="notice", text="Stopped.", level="info"),
        Item(id="u2", kind="user", text="go on"),
    ]
    msgs = history.messages(items)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "tool", "user"]
    assert [m.get("content") for m in msgs[2:5]] == ["one", notices.NOT_RUN_IN_HISTORY, notices.NOT_RUN_IN_HISTORY]


def test_a_cut_argument_is_shown_as_an_empty_object() -> None:
    assert history.shown_args('{"path": "a') == "{}"
    assert history.shown_args("") == "{}"
    assert history.shown_args('{"path": "a"}') == '{"path": "a"}'


def test_well_formed_names_what_is_wrong() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    assert "never answered" in (history.well_formed([{"role": "assistant", "tool_calls": [call]}]) or "")
    assert "answers no call" in (history.well_formed([{"role": "tool", "tool_call_id": "c1"}]) or "")
    assert "before the calls" in (
        history.well_formed([{"role": "assistant", "tool_calls": [call]}, {"role": "user", "content": "x"}]) or ""
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=600),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
tool_names = st.sampled_from(["write_file", "edit_file", "echo", "mcp_tool"])


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5), tool_names)
def test_shortened_arguments_are_always_an_object_with_the_same_keys(args: dict, name: str) -> None:
    shown = json.loads(history.short_args(name, json.dumps(args)))
    assert isinstance(shown, dict) and shown.keys() == args.keys()
    for before, after in zip(_strings(args), _strings(shown), strict=True):
        if len(before) <= history.SHORT_ARG_CHARS:
            assert after == before
        else:
            assert after.startswith(before[: history.SHORT_ARG_CHARS]) and "more characters not shown" in after
            assert len(after) < history.SHORT_ARG_CHARS + 200


@given(st.text(max_size=300), tool_names)
def test_shortened_arguments_of_any_text_are_an_object(raw: str, name: str) -> None:
    assert isinstance(json.loads(history.short_args(name, raw)), dict)


@given(item_lists(), st.data())
def test_shortened_items_still_give_well_formed_messages(items: list[Item], data: st.DataObject) -> None:
    marked = [attrs.evolve(i, shortened=data.draw(st.booleans())) for i in items]
    msgs = history.messages(marked, "You are an agent.")
    assert history.well_formed(msgs) is None
    for msg in msgs:
        for call in msg.get("tool_calls") or ():
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
