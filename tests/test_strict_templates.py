"""Every chat template renders every history (issue 30): a strict template (tests/strict_templates.py:
alternation, no system role, a result right after each call, three roles only, one call
to an answer) renders the history of every flow that gives a new shape, through the
run's own history (actors/runs/agent/history.py) and the local backend's template
(actors/model/backends/chat_template.py); a real render, no model loaded."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from strict_templates import BROKEN, BROKEN_WORDS, CHATML, STRICT
from test_history import item_lists

from actors import notices
from actors.model.backends.chat_template import ChatTemplate
from actors.record.items import Item, ToolCall
from actors.runs.agent import history

SYSTEM = "You are a coding agent."


def person(n: int, text: str) -> Item:
    return Item(id=f"u{n}", kind="user", text=text)


def calls(n: int, *ids: str, text: str = "", tool: str = "read_file") -> Item:
    return Item(id=f"a{n}", kind="assistant", text=text,
                tool_calls=tuple(ToolCall(i, tool, '{"path": "a.py"}') for i in ids))


def card(n: int, call_id: str, result: str, state: str = "done", tool: str = "read_file") -> Item:
    return Item(id=f"t{n}", kind="tool", tool=tool, call_id=call_id, state=state, result=result)  # type: ignore[arg-type]


def notice(n: int, text: str, *, for_model: bool = False) -> Item:
    return Item(id=f"n{n}", kind="notice", text=text, level="info", for_model=for_model or None)


def answer(n: int, text: str) -> Item:
    return Item(id=f"a{n}", kind="assistant", text=text)


SUMMARY = {"summary": "The person asked for a fix in a.py; it was read.", "tokens_before": 900}

# Each flow's items as the conversation holds them when its next round is rendered.
FLOWS: dict[str, list[Item]] = {
    "a stop before any answer": [
        person(1, "Fix the bug in a.py"), notice(1, notices.STOPPED), person(2, "Only the first function"),
    ],
    "two stopped runs": [
        person(1, "Fix the bug in a.py"), notice(1, notices.STOPPED), person(2, "Only the first function"),
        notice(2, notices.STOPPED), person(3, "And keep the tests"),
    ],
    "a compaction": [
        Item(id="u0", kind="user", text="Old request", compacted=True),
        Item(id="a0", kind="assistant", text="Old answer", compacted=True),
        Item(id="c1", kind="notice", text="Compacted.", level="info", compaction=SUMMARY),
        person(1, "Now fix the bug in a.py"),
    ],
    "a resume": [
        person(1, "Fix the bug in a.py"), calls(1, "call_1"),
        card(1, "call_1", notices.ERROR_RUNNING_STOPPED, state="error"),
    ],
    "an edit": [  # the second message edited after a stop: what followed it is gone
        person(1, "Fix the bug in a.py"), notice(1, notices.STOPPED), person(2, "Only the second function"),
    ],
    "a deny with feedback": [
        person(1, "Fix the bug in a.py"), calls(1, "call_1", tool="write_file"),
        card(1, "call_1", notices.DENIED_BY_PERSON_SAYING.format(why="write b.py instead"), state="denied",
             tool="write_file"),
    ],
    "a deny then the person's message": [
        person(1, "Fix the bug in a.py"), calls(1, "call_1", tool="write_file"),
        card(1, "call_1", notices.DENIED_BY_PERSON, state="denied", tool="write_file"),
        notice(1, notices.STOPPED), person(2, "Write b.py instead"),
    ],
    "a notice for the model after a result": [
        person(1, "Fix the bug in a.py"), calls(1, "call_1"), card(1, "call_1", "def f(): pass"),
        notice(1, "You made the same call again; its result is above.", for_model=True),
    ],
    "a notice for the model after an answer": [
        person(1, "Fix the bug in a.py"), answer(1, "Done."),
        notice(1, "The goal is not reached yet: the tests fail.", for_model=True),
    ],
    "a helper's result": [
        person(1, "Find where PORT is set"), calls(1, "call_1", tool="task"),
        card(1, "call_1", "PORT is set in config.py, line 3.", tool="task"),
    ],
    "parallel calls answered": [
        person(1, "Compare a.py and b.py"), calls(1, "call_1", "call_2", text="Reading both."),
        card(1, "call_1", "A"), card(2, "call_2", "B"),
    ],
    "an answer cut, continued": [
        person(1, "Explain a.py"), answer(1, "It starts with"),
        notice(1, notices.CONTINUE_CUT, for_model=True),
    ],
}


def template(source: str) -> ChatTemplate:
    return ChatTemplate(source, eos="<|im_end|>", bos="")


def assert_in_order(prompt: str, texts: list[str]) -> None:
    at = 0
    for text in texts:
        found = prompt.find(text, at)
        assert found >= 0, (text, prompt)
        at = found + len(text)


@pytest.mark.parametrize("flow", list(FLOWS))
@pytest.mark.parametrize("kind", list(STRICT))
def test_a_strict_template_renders_the_history_of_every_flow(kind: str, flow: str) -> None:
    items = FLOWS[flow]
    msgs = tuple(history.messages(items, SYSTEM))
    rendered = template(STRICT[kind]).render(msgs)
    # Nothing is lost: the system prompt, the person's words whole and in order, every result.
    said = [i.text or "" for i in items if i.kind == "user" and not i.compacted]
    assert_in_order(rendered.prompt, [SYSTEM, *said])
    for item in items:
        if item.kind == "tool":
            assert (item.result or "") in rendered.prompt


@pytest.mark.parametrize("flow", list(FLOWS))
def test_a_template_that_takes_everything_gets_the_history_as_it_was(flow: str) -> None:
    msgs = tuple(history.messages(FLOWS[flow], SYSTEM))
    prompt = template(CHATML).render(msgs).prompt
    assert prompt.count("<|im_start|>") == len(msgs) + 1  # one block a message, and the answer's


@settings(max_examples=60, deadline=None)
@given(item_lists())
def test_any_history_renders_in_the_strictest_template(items: list[Item]) -> None:
    t = template(STRICT["strictest"])
    msgs = tuple(history.messages(items, SYSTEM))
    prompt = t.render(msgs).prompt
    assert_in_order(prompt, [SYSTEM, *(m["content"] for m in msgs if m["role"] == "user" and m["content"])])


def test_a_template_that_renders_nothing_names_the_model_and_its_own_words() -> None:
    from actors.errors import TurnFailed

    t = ChatTemplate(BROKEN, eos="<|im_end|>", bos="", model="gemma-strict")
    with pytest.raises(TurnFailed) as err:
        t.render(tuple(history.messages(FLOWS["two stopped runs"], SYSTEM)))
    assert "gemma-strict" in str(err.value) and BROKEN_WORDS in str(err.value)
    assert "models page" in str(err.value)
