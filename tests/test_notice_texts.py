"""Two readers, two texts: every text of actors/notices.py, as the person reads it
(notices.for_person), names no tool, no tool argument, and gives the model no
instruction. The module is walked, so a text added to it is checked without a
change here; card_end says who ended each card that did not run."""

from __future__ import annotations

import inspect
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest

from actors import notices
from actors.model.turns import ToolSpec
from actors.record.items import Item
from actors.record.transcript import with_card_end
from actors.runs.agent.run_tools import goals, helpers, plans, todos_and_questions
from actors.runs.agent.small import faults, steps
from actors.tools.files import EditFile, ReadFile, WriteFile
from actors.tools.search import search_tools
from actors.tools.shell import ExecShellCommand

SAMPLE = "sample words"


def _specs() -> list[Any]:
    tools: list[Any] = [ReadFile(), WriteFile(), EditFile(), ExecShellCommand(), *search_tools()]
    for module in (goals, helpers, plans, todos_and_questions):
        tools += [v for v in vars(module).values() if isinstance(v, ToolSpec)]
    return tools


def _names() -> tuple[set[str], set[str]]:
    """The tools' names and their arguments' names."""
    names, args = set(), set()
    for spec in _specs():
        names.add(spec.name)
        props = (spec.parameters or {}).get("properties") or {}
        args.update(props)
        for prop in props.values():  # nested ones too (edit_file's old_text, new_text)
            items = prop.get("items") if isinstance(prop, dict) else None
            if isinstance(items, dict):
                args.update(items.get("properties") or {})
    return names, args


TOOLS, ARGS = _names()
# Words of the person's language that are also an argument's name: said as words, not as code.
PLAIN_WORDS = {"path", "command", "content", "pattern", "include", "exclude", "type", "limit", "timeout", "name",
               "question", "options", "plan", "prompt", "description", "kind", "message", "completed", "goal",
               "todos", "edits", "multiple", "task", "text", "id", "reason", "literal", "verify", "to", "agent"}
# How a text speaks to the model: of "the person" in the third person, of its own answer,
# or with an order only the model can carry out.
TO_THE_MODEL = re.compile(
    r"\bthe person\b|\byour (last )?answer\b|\byou made\b|\bwhile you worked\b|\bcall (it|them) again\b"
    r"|(?:^|[.:;!?]\s+|\n)(?:Say|Write|Ask them|Go on as|Go on from|Go on working|Do not try|Use it|Look again"
    r"|Make the change|Call|Choose yourself|Read and search|Read inside|Read the file again|Name paths"
    r"|Finish them|Answer|Revise)\b",
)


class _Sample(str):
    """SAMPLE under any format spec (`{limit:,}` too)."""

    def __format__(self, spec: str) -> str:
        return str(self)


def _filled(template: str) -> str:
    fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    return template.format(**{f: _Sample(SAMPLE) for f in fields}) if fields else template


def _sample_args(fn: Any) -> Iterator[list[Any]]:
    params = list(inspect.signature(fn).parameters.values())
    kinds = [p.annotation for p in params]
    if kinds == ["int"]:
        yield from ([1], [3])
    elif kinds == ["str | None"]:
        yield from ([None], [SAMPLE])
    elif fn is notices.mode_switched:
        yield from (["ask"], ["read_only"], ["full"])
    else:
        yield [SAMPLE] * len(params)


def every_text() -> Iterator[tuple[str, str]]:
    """(name, text) for every text the module makes: its constants with their fields
    filled, and what its functions answer."""
    for name, value in vars(notices).items():
        if name.startswith("_") or name in notices.MODEL_ONLY:
            continue
        if isinstance(value, str):
            yield name, _filled(value)
        elif inspect.isfunction(value) and value.__module__ == notices.__name__ \
                and inspect.signature(value).return_annotation == "str" and value is not notices.for_person:
            for args in _sample_args(value):
                yield f"{name}{tuple(args)}", value(*args)


TEXTS = list(every_text())


def person_problem(text: str) -> str | None:
    """What in `text` is not for the person, or None."""
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if word in TOOLS and word not in PLAIN_WORDS:
            return f"names the tool {word}"
        if word in ARGS and word not in PLAIN_WORDS:
            return f"names the argument {word}"
        if "_" in word.strip("_"):
            return f"has a name in code form, {word}"
    if "`" in text or '{"' in text:
        return "has code in it"
    found = TO_THE_MODEL.search(text)
    return f"tells the model something ({found.group(0).strip()!r})" if found else None


def test_the_walk_finds_the_texts():
    names = {n.split("(")[0] for n, _ in TEXTS}
    assert {"STOPPED", "LOOPED", "DENIED_READ_ONLY", "refused_unattended", "denied_by_person"} <= names
    assert len(TEXTS) > 60


def test_the_check_catches_what_the_model_reads():
    """The check can fail: the model's own texts fail it, each for its reason."""
    assert person_problem(notices.DENIED_IN_PLAN_MODE) is not None  # names exit_plan_mode
    assert person_problem(_filled(notices.LOOPED)) is not None  # "Write it again"
    assert person_problem(notices.DENIED_BY_PERSON) is not None  # "The person denied"
    assert person_problem(goals.nudge("g", ())) is not None  # update_goal, blocked_reason
    assert person_problem(steps.answer_fault("see Config.py", exists=lambda _: False, changed=False) or "")
    assert person_problem(notices.WRITE_OVER_REFUSED.format(path="a.py")) is not None
    assert person_problem("You stopped the run here.") is None


@pytest.mark.parametrize(("name", "text"), TEXTS, ids=[n for n, _ in TEXTS])
def test_the_person_reads_their_own_words(name: str, text: str):
    shown = notices.for_person(text)
    assert shown.strip(), name
    assert person_problem(shown) is None, f"{name}: the person would read {shown!r}: {person_problem(shown)}"


def test_a_faults_person_words():
    for text in ("see Config.py there", "I have changed the port"):
        told = steps.answer_fault(text, exists=lambda _: False, changed=False)
        assert told is not None
        shown = faults.fault_for_person(told)
        assert person_problem(shown) is None, shown
    assert "Config.py" in faults.fault_for_person(
        steps.answer_fault("see Config.py", exists=lambda _: False, changed=False) or "")


@pytest.mark.parametrize(("result", "by"), [
    (notices.denied_by_person(None), "person"),
    (notices.denied_by_person("not that file"), "person"),
    (notices.DENIED_READ_ONLY, "rule"),
    (notices.BLOCKED_BY_HOOK.format(why="no"), "rule"),
    (notices.DENIED_WAITING_STOPPED, "stop"),
    (notices.DENIED_NOT_REACHED, "stop"),
    (notices.ERROR_RUNNING_STOPPED, "stop"),
    (notices.DENIED_RESTARTED, "daemon"),
    (notices.ERROR_NOT_REACHED_FAILED, "daemon"),
    (notices.ERROR_ANSWER_ENDED, "cut"),
    (notices.ERROR_ROUND_FAILED, "cut"),
    (notices.mode_switched("full") + "\n" + notices.DENIED_READ_ONLY, "rule"),
])
def test_who_ended_a_card(result: str, by: str):
    ended, person = notices.card_end(result)
    assert ended == by
    card = with_card_end(Item(id="c", kind="tool", tool="write_file", state="denied", result=result))
    assert card.ended_by == by and card.person_text == person
    assert person_problem(person or result) is None


def test_a_stop_while_the_daemon_shuts_down_is_the_daemons():
    assert notices.card_end(notices.DENIED_WAITING_STOPPED, daemon_stopping=True)[0] == "daemon"
    assert notices.card_end(notices.DENIED_BY_PERSON, daemon_stopping=True)[0] == "person"


def test_a_call_that_ran_and_failed_has_no_one_who_ended_it():
    assert notices.card_end("No such file: a.txt") == (None, None)
    card = Item(id="c", kind="tool", tool="read_file", state="error", result="No such file: a.txt")
    assert with_card_end(card) is card


def test_the_fields_round_trip():
    card = with_card_end(Item(id="c", kind="tool", tool="write_file", state="denied",
                              result=notices.DENIED_UNATTENDED))
    again = Item.from_json(card.to_json())
    assert again == card and again.to_json()["ended_by"] == "rule"
    with pytest.raises(ValueError, match="ended by"):
        Item.from_json({**card.to_json(), "ended_by": "nobody"})
