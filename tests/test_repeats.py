"""actors/model/backends/repeats.py: a model's loop is noticed wherever its pieces break,
and text people write is not taken for one."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.model.backends.repeats import (
    CLOSE,
    CONTENT,
    MAX_UNIT,
    MIN_REPEATS,
    MIN_SPAN,
    RepeatWatch,
    TurnWatch,
    counting,
    shown_unit,
    smallest_unit,
    span_for,
)
from actors.model.turns import Piece

ROOT = Path(__file__).resolve().parent.parent


def fed(text: str, cuts: list[int]) -> tuple[str | None, int]:
    """The watch's answer fed `text` cut at `cuts`, and how many characters it had taken then."""
    watch, taken, start = RepeatWatch(), 0, 0
    for end in sorted({c for c in cuts if 0 < c < len(text)} | {len(text)}):
        taken = end
        unit = watch.feed(text[start:end])
        if unit is not None:
            return unit, taken
        start = end
    return None, taken


units = st.text(st.characters(codec="utf-8"), min_size=1, max_size=MAX_UNIT)


@given(prefix=st.text(max_size=50), unit=units, cuts=st.lists(st.integers(0, 3000), max_size=40))
def test_a_loop_is_caught_within_its_span_wherever_the_pieces_break(prefix, unit, cuts):
    looping = prefix + unit * (3000 // len(unit) + 2)
    found, taken = fed(looping, cuts)
    assert found is not None
    # The unit, at its shortest, starting wherever the loop stood when it was caught.
    core = smallest_unit(unit)
    assert len(found) == len(core) and found in core * 2
    # Caught once the loop fills its span: by then at most one piece more was taken.
    bounds = sorted(cuts)
    last_piece = max((b - a for a, b in zip([0, *bounds], [*bounds, len(looping)], strict=True)), default=0)
    assert taken <= len(prefix) + span_for(len(unit)) + MAX_UNIT + last_piece


@given(st.text(max_size=MIN_SPAN - 1))
def test_text_shorter_than_the_span_is_never_a_loop(text):
    assert fed(text, [])[0] is None


def test_fewer_repeats_than_the_span_are_not_a_loop():
    unit = "x" * MAX_UNIT
    assert MIN_REPEATS * MAX_UNIT >= MIN_SPAN
    near = "".join(f"{n:02d}" + unit[2:] for n in range(MIN_REPEATS - 1))  # each a little different
    assert fed(near, [])[0] is None
    assert fed(unit * MIN_REPEATS, [])[0] == "x"


@pytest.mark.slow(reason="reads every file of the project")
def test_the_projects_own_code_and_docs_are_no_loop():
    """Real text a model is asked for (code, prose, Markdown tables), fed as tokens come."""
    files = [p for p in ROOT.glob("**/*") if p.suffix in (".py", ".md", ".js", ".css", ".html", ".toml")
             and ".venv" not in p.parts and "node_modules" not in p.parts and p.is_file()]
    assert len(files) > 100
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        found, _ = fed(text, list(range(0, len(text), 3)))
        assert found is None, f"{path} read as a loop of {found!r}"
        turn = TurnWatch()
        counted = next((u for n in range(0, len(text), 3) if (u := turn.feed(Piece("text", text[n:n + 3])))), None)
        assert counted is None, f"{path} read as a count without end ({counted!r})"


def test_smallest_unit_and_how_a_notice_shows_one():
    assert smallest_unit("abab") == "ab" and smallest_unit("abc") == "abc" and smallest_unit("aaaa") == "a"
    assert shown_unit("1.") == "1." and shown_unit("a\n") == "a\\n" and shown_unit(" ") == "' '"


def every_period(tail: str) -> str | None:
    """The rule read plainly, for comparison: the smallest unit whose span at the end
    of `tail` is periodic with it."""
    for unit in range(1, MAX_UNIT + 1):
        span = span_for(unit)
        if len(tail) < span:
            return None
        window = tail[-span:]
        if window[unit:] == window[:-unit]:
            return smallest_unit(window[-unit:])
    return None


# Text with near-loops: a few units, each repeated a few times, in any order and with noise.
near_loops = st.lists(
    st.tuples(st.text("ab1. \n", min_size=1, max_size=30), st.integers(1, 12)), min_size=1, max_size=30,
).map(lambda parts: "".join(u * n for u, n in parts))


@given(text=near_loops, cuts=st.lists(st.integers(0, 3000), max_size=40))
def test_the_watch_answers_as_trying_every_period_would(text, cuts):
    watch, start = RepeatWatch(), 0
    for end in sorted({c for c in cuts if 0 < c < len(text)} | {len(text)}):
        found = watch.feed(text[start:end])
        assert found == every_period(text[:end][-len(watch.tail):]), end
        if found is not None:
            return
        start = end


def test_a_turn_watch_keeps_a_calls_content_apart_from_its_answer() -> None:
    """An answer that repeats is cut at the close bounds; a call's arguments that repeat
    a line are content until CONTENT's span; a led model's are watched closely."""
    line = "0,none,0\n"
    watch = TurnWatch()
    assert all(watch.feed(Piece("tool_call", line, index=0)) is None for _ in range(800))  # 7 KiB of rows
    assert next(u for _ in range(CONTENT.window) if (u := watch.feed(Piece("tool_call", line, index=0)))) == line
    close = TurnWatch(CLOSE)
    assert next(u for _ in range(100) if (u := close.feed(Piece("tool_call", line, index=0)))) == line
    prose = TurnWatch()
    assert next(u for _ in range(200) if (u := prose.feed(Piece("text", "ha")))) == "ha"


def test_each_call_is_watched_on_its_own() -> None:
    """Two calls that each write part of a repeat do not add up to a loop."""
    watch = TurnWatch(CLOSE)
    half = "ab" * (MIN_SPAN // 4)
    assert watch.feed(Piece("tool_call", "", index=0, call_id="a", name="x")) is None
    assert watch.feed(Piece("tool_call", half, index=0)) is None
    assert watch.feed(Piece("tool_call", "", index=1, call_id="b", name="x")) is None
    assert watch.feed(Piece("tool_call", half, index=1)) is None
    assert watch.feed(Piece("tool_call", half * 2, index=1)) == "ab"


@pytest.mark.parametrize("gap", [":", ", ", " ", "\n", "."])
def test_a_count_without_end_in_an_answer_is_caught_as_a_loop(gap):
    """SmolLM2 asked in what order stages run wrote "1:1:2:2:3:4:…" to the token limit:
    not periodic, so caught as a count once MIN_SPAN characters of it stand."""
    numbers = [1, 1, 2, 2, *range(3, 40), *range(41, 400, 2)]
    text = "The order is " + gap.join(map(str, numbers))
    watch = TurnWatch()
    found = next((n, u) for n, ch in enumerate(text) if (u := watch.feed(Piece("text", ch))))
    assert found[0] < len("The order is ") + MIN_SPAN + 20 and found[1].endswith(gap) and found[1].count(gap) == 3
    # In a call's arguments it is content (a file of numbers may be asked for).
    call = TurnWatch(CLOSE)
    assert all(call.feed(Piece("tool_call", ch, index=0)) is None for ch in gap.join(map(str, range(1, 200))))


def test_a_count_with_words_between_its_numbers_is_caught_too():
    """After a mend SmolLM2 wrote "(line 1000) (line 1001) …" to the token limit: the
    same few characters between each two numbers, caught as a count once MIN_SPAN
    characters of it stand, whatever piece of it is being written."""
    text = "calc.py:1000: SyntaxError: invalid syntax (line 1000) " + " ".join(f"(line {n})" for n in range(1001, 1200))
    watch = TurnWatch()
    found = next((n, u) for n, ch in enumerate(text) if (u := watch.feed(Piece("text", ch))))
    assert found[0] < 60 + MIN_SPAN + 40 and found[1].startswith(("10", "1)", "0)")) and found[1].count("(line ") >= 2
    assert counting("see " + ", ".join(f"step {n}" for n in range(1, 20))) is None  # too few to be a count


def test_numbers_people_read_are_no_count_without_end():
    table = "\n".join(f"| {n} | {n * 37 % 101} | {n * n} |" for n in range(1, 40))
    shuffled = ", ".join(str(n * 7919 % 1000) for n in range(1, 120))
    falling = ":".join(str(n) for n in range(300, 0, -1))
    mixed = "".join(f"{n}{':' if n % 2 else ', '}" for n in range(1, 150))
    short = "lines " + ", ".join(str(n) for n in range(1, 20))
    same = ":".join(["7"] * 200)  # a loop, but RepeatWatch's to see, not a count
    for text in (table, shuffled, falling, mixed, short, same):
        assert counting(text) is None, text[:60]
