"""actors/model/backends/template_shapes.py: the shape a chat template takes, found by probe
renders, and histories put in it: nothing dropped, the person's words whole and in
order, what is not theirs marked where it is folded into their turn."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strict_templates import BROKEN, CHATML, STRICT

from actors.model.backends.chat_template import ChatTemplate
from actors.model.backends.template_shapes import (
    ORIGIN_MARKS,
    SYSTEM_MARK,
    Shape,
    escalations,
    find_shape,
    shape_messages,
)
from actors.model.turns import ORIGIN


def found(source: str) -> list[str]:
    return ChatTemplate(source, eos="<|im_end|>", bos="").shape.names()


@pytest.mark.parametrize(
    ("source", "needs"),
    [
        (CHATML, []),
        (STRICT["alternates"], ["merge_turns", "tools_as_text"]),
        (STRICT["no_system"], ["system_in_user"]),
        (STRICT["tool_after_call"], ["merge_turns"]),  # its tool syntax kept where it renders
        (STRICT["unknown_role"], ["tools_as_text"]),
        (STRICT["single_call"], ["one_call_per_turn"]),
        (STRICT["strictest"], ["merge_turns", "system_in_user", "tools_as_text"]),
        (BROKEN, ["merge_turns", "system_in_user", "one_call_per_turn", "tools_as_text", "one_turn"]),
    ],
)
def test_the_shape_is_found_by_trying_the_template(source: str, needs: list[str]) -> None:
    assert found(source) == needs


def test_the_probes_render_once_per_template_not_per_turn() -> None:
    seen: list[int] = []

    def render(msgs: list[dict[str, object]]) -> None:
        seen.append(len(msgs))

    assert find_shape(render) == Shape()
    assert len(seen) == 5  # one user message, then one probe a change


def test_escalations_add_one_change_at_a_time_and_end_with_one_turn() -> None:
    ladder = escalations(Shape(merge_turns=True))
    assert ladder[0] == Shape(merge_turns=True)
    assert [len(s.names()) for s in ladder] == [1, 2, 3, 4, 5]
    assert ladder[-1].one_turn


def test_turns_of_one_side_merge_with_the_person_s_words_whole_and_a_notice_marked() -> None:
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Fix a.py"},
        {"role": "user", "content": "Only f()", },
        {"role": "user", "content": "Tests fail.", ORIGIN: "notice"},
    ]
    out = shape_messages(msgs, Shape(merge_turns=True))
    assert [m["role"] for m in out] == ["system", "user"]
    assert out[1]["content"] == f"Fix a.py\n\nOnly f()\n\n{ORIGIN_MARKS['notice']}\nTests fail."
    assert all(ORIGIN not in m for m in out)


def test_a_summary_already_marked_is_not_marked_twice() -> None:
    summary = f"{ORIGIN_MARKS['summary']}\nEarlier: a.py was read."
    out = shape_messages([{"role": "user", "content": summary, ORIGIN: "summary"},
                          {"role": "user", "content": "Go on"}], Shape(merge_turns=True))
    assert out == [{"role": "user", "content": f"{summary}\n\nGo on"}]


def test_the_system_message_folds_into_the_first_user_turn() -> None:
    out = shape_messages([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
                         Shape(system_in_user=True))
    assert out == [{"role": "user", "content": f"{SYSTEM_MARK}\nBe brief.\n\nHi"}]


def test_parallel_calls_become_one_call_an_answer_each_followed_by_its_result() -> None:
    call = [{"id": i, "type": "function", "function": {"name": "f", "arguments": {}}} for i in ("a", "b")]
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Both.", "tool_calls": call},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "b", "content": "B"}]
    out = shape_messages(msgs, Shape(one_call_per_turn=True))
    assert [(m["role"], m.get("tool_call_id") or [c["id"] for c in m.get("tool_calls", [])]) for m in out] == [
        ("user", []), ("assistant", ["a"]), ("tool", "a"), ("assistant", ["b"]), ("tool", "b")]
    assert out[1]["content"] == "Both." and out[3]["content"] == ""


def test_an_answer_first_gets_a_user_turn_before_it() -> None:
    out = shape_messages([{"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Hi"}],
                         Shape(merge_turns=True))
    assert [m["role"] for m in out] == ["user", "assistant", "user"]


words = st.text(alphabet="abcxyz ", min_size=1, max_size=6)
turns = st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), words), max_size=10)


@given(st.lists(words, max_size=1), turns, st.sampled_from(escalations(Shape())))
def test_no_shape_drops_or_reorders_a_message_s_text(system: list[str], turns: list[tuple[str, str]],
                                                    shape: Shape) -> None:
    history = [("system", t) for t in system] + turns
    msgs = [{"role": r, "content": t, **({"tool_call_id": "x"} if r == "tool" else {})} for r, t in history]
    out = shape_messages(msgs, shape)
    joined = "\n".join(m["content"] for m in out)
    at = 0
    for _, text in history:
        found_at = joined.find(text, at)
        assert found_at >= 0
        at = found_at + len(text)
    if shape.merge_turns and shape.tools_as_text:
        sides = [m["role"] for m in out if m["role"] in ("user", "assistant")]
        assert all(a != b for a, b in zip(sides, sides[1:], strict=False))
