"""Run bookkeeping (actors/runs/agent/ledger.py): argument parsing, partial arguments,
repeated failures, partial calls, and the Ledger: what the next round rules out and when
the run is stuck."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors import notices
from actors.runs.agent.ledger import (
    AVOIDED_CALLS,
    LOOPS_IN_A_ROW,
    MADE_KEPT,
    PARTIAL_PARSE_LIMIT,
    REPEAT_FAILURE_LIMIT,
    SHELL_TOOL,
    CallEnded,
    FailureStreak,
    Forgot,
    Ledger,
    Looped,
    Nudged,
    PartialCall,
    RoundEnded,
    WriteRefused,
    ended_as,
    parse_arguments,
    parse_partial,
)

# ---- parse_arguments ----


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"path": "a.txt"}', {"path": "a.txt"}),
        ('  {"n": 1, "x": [1, {"y": null}]} \n', {"n": 1, "x": [1, {"y": None}]}),
        ("{}", {}),
        ("", {}),
        ("   \n\t", {}),
    ],
)
def test_parse_arguments_accepts_objects(raw: str, expected: dict) -> None:
    assert parse_arguments(raw) == (expected, None)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("[1, 2]", "list"),
        ('"a string"', "str"),
        ("42", "int"),
        ("4.5", "float"),
        ("null", "NoneType"),
        ("true", "bool"),
    ],
)
def test_parse_arguments_refuses_non_objects(raw: str, words: str) -> None:
    value, reason = parse_arguments(raw)
    assert value is None
    assert reason is not None and words in reason and "not an object" in reason


@pytest.mark.parametrize("raw", ['{"path": "a.tx', '{"a": 1', '{"a": 1,}', "{'a': 1}", "not json", '{"a": 1} extra'])
def test_parse_arguments_refuses_broken_json(raw: str) -> None:
    value, reason = parse_arguments(raw)
    assert value is None
    assert reason is not None and "not valid JSON" in reason and "at character" in reason


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_json_objects = st.dictionaries(st.text(max_size=8), _json_values, max_size=5)


@settings(max_examples=100, deadline=None)
@given(obj=_json_objects, ascii_only=st.booleans())
def test_parse_arguments_round_trips_any_object(obj: dict, ascii_only: bool) -> None:
    assert parse_arguments(json.dumps(obj, ensure_ascii=ascii_only)) == (obj, None)


# ---- parse_partial ----


@settings(max_examples=100, deadline=None)
@given(obj=_json_objects, ascii_only=st.booleans(), indent=st.sampled_from([None, 2]))
def test_parse_partial_on_every_prefix_returns_a_dict(obj: dict, ascii_only: bool, indent: int | None) -> None:
    raw = json.dumps(obj, ensure_ascii=ascii_only, indent=indent)
    for end in range(len(raw) + 1):
        got = parse_partial(raw[:end])
        assert isinstance(got, dict)
    assert parse_partial(raw) == obj


def test_parse_partial_shows_a_string_being_written() -> None:
    assert parse_partial('{"path": "src/ma') == {"path": "src/ma"}
    assert parse_partial('{"path": "src/main.py", "text": "he') == {"path": "src/main.py", "text": "he"}
    assert parse_partial("") == {}
    assert parse_partial("[1, 2") == {}
    assert parse_partial("garbage") == {}


@settings(max_examples=200, deadline=None)
@given(raw=st.text(max_size=40))
def test_parse_partial_never_raises_on_any_text(raw: str) -> None:
    assert isinstance(parse_partial(raw), dict)


# ---- FailureStreak ----


def test_three_identical_failures_in_a_row() -> None:
    streak = FailureStreak()
    results = [streak.record("read", '{"path": "x"}', "error", "no such file") for _ in range(REPEAT_FAILURE_LIMIT)]
    assert results == [False] * (REPEAT_FAILURE_LIMIT - 1) + [True]
    assert REPEAT_FAILURE_LIMIT == 3


def test_argument_order_and_spacing_do_not_matter() -> None:
    streak = FailureStreak()
    assert not streak.record("read", '{"a": 1, "b": 2}', "error", "boom")
    assert not streak.record("read", '{"b":2,"a":1}', "denied", "boom")
    assert streak.record("read", '{ "a" : 1 , "b" : 2 }', "error", "boom")


def test_a_success_resets() -> None:
    streak = FailureStreak()
    assert not streak.record("read", "{}", "error", "boom")
    assert not streak.record("read", "{}", "error", "boom")
    assert not streak.record("read", "{}", "done", "ok")
    assert not streak.record("read", "{}", "error", "boom")
    assert not streak.record("read", "{}", "error", "boom")
    assert streak.record("read", "{}", "error", "boom")


@pytest.mark.parametrize(
    "other",
    [
        ("write", "{}", "error", "boom"),  # another tool
        ("read", '{"p": 1}', "error", "boom"),  # other arguments
        ("read", "{}", "error", "bang"),  # another result
    ],
)
def test_a_different_failure_resets(other: tuple[str, str, str, str]) -> None:
    streak = FailureStreak()
    assert not streak.record("read", "{}", "error", "boom")
    assert not streak.record("read", "{}", "error", "boom")
    assert not streak.record(*other)
    # the new failure counts from one
    assert not streak.record(*other)
    assert streak.record(*other)


def test_unparseable_arguments_compare_as_text() -> None:
    streak = FailureStreak()
    assert not streak.record("read", "{oops", "error", "bad args")
    assert not streak.record("read", "{oops", "error", "bad args")
    assert streak.record("read", "{oops", "error", "bad args")
    other = FailureStreak()
    assert not other.record("read", "{oops", "error", "bad args")
    assert not other.record("read", "{oops ", "error", "bad args")
    assert not other.record("read", "{oops", "error", "bad args")


# ---- PartialCall ----


def make_call() -> PartialCall:
    return PartialCall(index=0, call_id="c1", name="write", item_id="i1")


def test_partial_call_feeds_and_parses() -> None:
    call = make_call()
    assert call.feed('{"path": "a') is True
    assert call.args == {"path": "a"}
    assert call.feed('.txt", "te') is True
    assert call.head == '{"path": "a.txt", "te'
    assert call.args.get("path") == "a.txt"
    assert call.feed('xt": "hi"}') is True
    assert call.args == {"path": "a.txt", "text": "hi"}
    assert call.parsed_at == len(call.head) == call.size


def test_partial_call_stops_parsing_past_the_limit() -> None:
    call = make_call()
    call.feed('{"path": "big.txt", "text": "')
    call.feed("x" * (PARTIAL_PARSE_LIMIT - call.size))
    assert call.size == PARTIAL_PARSE_LIMIT and call.parsed_at == PARTIAL_PARSE_LIMIT
    parsed = [call.feed("y\u00e9") for _ in range(1000)]
    # Past the limit a piece is never parsed again: its cost is its own length.
    assert not any(parsed)
    assert call.size == PARTIAL_PARSE_LIMIT + 2000
    assert call.bytes == 0  # the caller counts bytes (the conversation does)
    assert call.head == ""  # the long text is not kept
    assert call.args["path"] == "big.txt"  # the title keeps what it had


# ---- Ledger ----

NUDGES = 3
_names = st.sampled_from(["read_file", SHELL_TOOL, "write_file", "todo_write"])
_raws = st.sampled_from(['{"path": "a.py"}', '{"path": "b.py"}', '{"command": "greet"}', '{ "path" : "a.py" }',
                         "{}", "", "[1]", "not json", '{"path": "c.py", "n": 1}'])
_states = st.sampled_from(["done", "error", "denied"])
_results = st.sampled_from(["ok", "no such file", "out\n[exit code: 1]", "out\n[exit code: 0]",
                            notices.DENIED_BY_PERSON, "\n---\nTotal matches: 0\n",
                            "a.py:1:x\n\n---\nTotal matches: 1\n"])
_calls = st.builds(CallEnded, _names, _raws, _states, _results, read=st.booleans(), own=st.booleans(),
                   earlier=st.booleans(), again=st.booleans())
_events = st.one_of(
    _calls,
    st.just(Forgot()),
    st.builds(RoundEnded, looped=st.booleans(), cut=st.lists(_names, max_size=3).map(tuple)),
    st.builds(WriteRefused, _names),
    st.just(Looped()),
    st.just(Nudged()),
)


class Reference:
    """The bookkeeping as AgentRun kept it inline before it was a class of its own
    (commit d584c80, actors/runs/agent/run.py): avoid_again, read_once, avoided and the
    counters, written out again to hold the Ledger to it; with issue 30's rule since:
    every call made since the last change (it included, the run's own reads too) is
    kept, the latest AVOIDED_CALLS avoided, a call refused as made again kept in the
    streak and avoided (its latest AVOIDED_CALLS) until a change, a call of an earlier
    run in no streak, and a compaction forgets them."""

    def __init__(self) -> None:
        self.failed: list = []
        self.made: list = []
        self.again: list = []
        self.looped_tools: tuple = ()
        self.loops = self.nudges = 0
        self.changed = False
        self.streak = FailureStreak()

    def feed(self, e) -> str:
        if isinstance(e, RoundEnded):
            self.looped_tools = tuple(dict.fromkeys(e.cut))
            self.loops = 0 if not e.looped else self.loops
            return "go_on"
        if isinstance(e, WriteRefused):
            self.looped_tools += (e.name,)
            return "go_on"
        if isinstance(e, Forgot):
            self.made, self.again = [], []
            return "go_on"
        if isinstance(e, Looped):
            self.loops += 1
            return "stuck" if self.loops >= LOOPS_IN_A_ROW else "go_on"
        if isinstance(e, Nudged):
            if self.nudges >= NUDGES:
                return "stuck"
            self.nudges += 1
            return "go_on"
        ended = ended_as(e.name, e.state, e.result)
        try:
            args = json.loads(e.raw)
        except (json.JSONDecodeError, TypeError):
            args = None
        if e.state in ("error", "denied") and not e.again and isinstance(args, dict):
            self.failed = [f for f in self.failed if f != (e.name, args)][-(AVOIDED_CALLS - 1):] + [(e.name, args)]
        if not e.again and (e.read or not e.own):
            failed_command = ended == "error" and e.name == SHELL_TOOL
            if ended == "done" or failed_command:
                if not failed_command and not e.read:
                    self.made, self.again = [], []
                if isinstance(args, dict):
                    made = (e.name, args)
                    self.made = [r for r in self.made if r != made][-(MADE_KEPT - 1):] + [made]
        if e.again and isinstance(args, dict):
            self.again = [r for r in self.again if r != (e.name, args)][-(AVOIDED_CALLS - 1):] + [(e.name, args)]
        self.changed = self.changed or (ended == "done" and not e.read and not e.own)
        if e.earlier:
            return "go_on"
        self.nudges = 0
        return "stuck" if self.streak.record(e.name, e.raw, ended, e.result, again=e.again) else "go_on"

    def avoided(self) -> tuple:
        made = self.made[-AVOIDED_CALLS:]
        made += [r for r in self.again if r not in made]
        out = list(self.failed) + [r for r in made if r not in self.failed]
        out += [(name, None) for name in dict.fromkeys(self.looped_tools) if (name, None) not in out]
        return tuple(out)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_events, max_size=40))
def test_the_ledger_keeps_the_books_as_the_run_kept_them(events: list) -> None:
    ledger, reference = Ledger(NUDGES), Reference()
    for event in events:
        assert ledger.feed(event) == reference.feed(event), event
        assert ledger.avoided() == reference.avoided()
        assert ledger.loops == reference.loops and ledger.changed is reference.changed


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_events, max_size=40))
def test_what_is_avoided_is_bounded_and_never_twice(events: list) -> None:
    ledger = Ledger(NUDGES)
    for event in events:
        ledger.feed(event)
        avoided = ledger.avoided()
        assert len(avoided) == len({json.dumps(a, sort_keys=True) for a in avoided})
        with_args = [a for a in avoided if a[1] is not None]
        assert len(with_args) <= 3 * AVOIDED_CALLS  # failed, made, and made again
        assert all(isinstance(args, dict) for _, args in with_args)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(_events, max_size=30), name=_names, raw=_raws)
def test_a_change_that_ran_clears_the_calls_made_but_not_the_failures(events: list, name: str, raw: str) -> None:
    ledger = Ledger(NUDGES)
    for event in events:
        ledger.feed(event)
    failed_before = [a for a in ledger.avoided() if a[1] is not None]
    ledger.feed(RoundEnded())
    ledger.feed(CallEnded(name, raw, "done", "ok", read=False))
    after = [a for a in ledger.avoided() if a[1] is not None]
    assert ledger.changed
    # The reads are gone; the change itself is made (not again while nothing changed).
    change = [(name, json.loads(raw))] if raw.startswith("{") else []
    assert set(map(repr, after)) <= set(map(repr, failed_before + change))
    assert ledger.made(name, raw) is bool(change)
    assert ledger.round_calls == (("done", False),)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(_events, max_size=30), raw=_raws)
def test_a_call_of_the_runs_own_tools_that_is_no_read_is_never_one_to_avoid(events: list, raw: str) -> None:
    ledger = Ledger(NUDGES)
    for event in events:
        ledger.feed(event)
    before, changed = ledger.avoided(), ledger.changed
    ledger.feed(CallEnded("todo_write", raw, "done", "ok", read=False, own=True))
    assert ledger.avoided() == before and ledger.changed is changed  # nor a change


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_events, max_size=30), name=_names, args=st.dictionaries(
    st.sampled_from(["path", "pattern", "n", "include"]), st.one_of(st.text(max_size=5), st.integers(0, 3)),
    max_size=4), spaces=st.sampled_from(["", " ", "\n", "\t "]))
def test_no_call_twice_while_nothing_changed(events: list, name: str, args: dict, spaces: str) -> None:
    """A call that ran is made (refused again) until a change runs or a compaction
    forgets it, whatever came between that changed nothing, however its arguments are
    ordered or spaced; its refusal keeps it made and ends the run after as many
    identical failures as any other."""
    ledger = Ledger(NUDGES)
    for event in events:
        ledger.feed(event)
    raw = json.dumps(args)
    ledger.feed(CallEnded(name, raw, "done", "ok", read=True))
    reordered = spaces + json.dumps(dict(reversed(list(args.items()))), indent=spaces.count(" ") or None) + spaces
    assert ledger.made(name, raw) and ledger.made(name, reordered)
    # Spacing inside a value neither: one more space in a command is the same command.
    respaced = {k: f" {v}  x" if isinstance(v, str) else v for k, v in args.items()}
    ledger.feed(CallEnded(name, json.dumps(respaced), "done", "ok", read=True))
    assert ledger.made(name, json.dumps({k: f"{v} x" if isinstance(v, str) else v for k, v in args.items()}))
    assert (name, args) in ledger.avoided()
    for other in events:  # what changes nothing keeps it made
        if isinstance(other, CallEnded) and (other.read or other.own or other.state != "done"):
            ledger.feed(other)
        elif not isinstance(other, (CallEnded, Forgot)):
            ledger.feed(other)
    assert ledger.made(name, raw)
    verdicts = [ledger.feed(CallEnded(name, raw, "error", "again", again=True)) for _ in range(REPEAT_FAILURE_LIMIT)]
    assert verdicts[-1] == "stuck" and ledger.made(name, raw)
    ledger.feed(CallEnded("write_file", '{"path": "z"}', "done", "ok"))
    assert not ledger.made(name, raw) or (name, args) == ("write_file", {"path": "z"})
    ledger.feed(CallEnded(name, raw, "done", "ok", read=True))
    ledger.feed(Forgot())
    assert not ledger.made(name, raw)


def test_calls_of_an_earlier_run_are_made_but_in_no_streak() -> None:
    ledger = Ledger(NUDGES)
    search = CallEnded("grep", '{"pattern": "x"}', "done", "none", read=True, earlier=True)
    assert ledger.feed(search) == "go_on" and ledger.made("grep", '{ "pattern":"x" }')
    assert ledger.round_calls == () and not ledger.changed
    ledger.feed(CallEnded("write_file", '{"path": "a"}', "done", "ok", earlier=True))
    assert ledger.changed and not ledger.made("grep", '{"pattern": "x"}')
    failing = CallEnded("echo", '{"t": 1}', "error", "no", earlier=True)
    assert [ledger.feed(failing) for _ in range(REPEAT_FAILURE_LIMIT + 1)] == ["go_on"] * (REPEAT_FAILURE_LIMIT + 1)


@given(gaps=st.lists(st.integers(0, LOOPS_IN_A_ROW - 1), max_size=5))
def test_the_run_is_stuck_on_the_third_loop_in_a_row_only(gaps: list[int]) -> None:
    ledger = Ledger(NUDGES)
    for loops in gaps:  # loops fewer than the limit, each run of them ended by an answer that did not loop
        assert all(ledger.feed(Looped()) == "go_on" for _ in range(loops))
        ledger.feed(RoundEnded(looped=False))
    verdicts = []
    for _ in range(LOOPS_IN_A_ROW):
        ledger.feed(RoundEnded(looped=True))
        verdicts.append(ledger.feed(Looped()))
    assert verdicts == ["go_on"] * (LOOPS_IN_A_ROW - 1) + ["stuck"]


def test_nudges_in_a_row_end_the_run_and_a_call_starts_them_again() -> None:
    ledger = Ledger(NUDGES)
    assert [ledger.feed(Nudged()) for _ in range(NUDGES + 1)] == ["go_on"] * NUDGES + ["stuck"]
    ledger.feed(CallEnded("read_file", '{"path": "a.py"}', "done", "ok", read=True))
    assert ledger.feed(Nudged()) == "go_on"


def test_a_refused_write_and_a_cut_call_are_out_of_the_next_round_only() -> None:
    ledger = Ledger(NUDGES)
    ledger.feed(RoundEnded(looped=True, cut=("echo", "echo")))
    ledger.feed(WriteRefused("write_file"))
    assert ledger.avoided() == (("echo", None), ("write_file", None))
    assert ledger.avoided((("todo_write", None),)) == (("todo_write", None), ("echo", None), ("write_file", None))
    ledger.feed(RoundEnded())
    assert ledger.avoided() == ()


def test_a_command_that_exited_non_zero_is_avoided_until_a_change() -> None:
    ledger = Ledger(NUDGES)
    greet = CallEnded(SHELL_TOOL, '{"command": "greet"}', "done", "no\n[exit code: 127]")
    ledger.feed(greet)
    assert ledger.avoided() == ((SHELL_TOOL, {"command": "greet"}),) and not ledger.changed
    assert ledger.round_calls == (("error", False),)
    ledger.feed(CallEnded("write_file", '{"path": "greet"}', "done", "ok"))
    assert ledger.avoided() == (("write_file", {"path": "greet"}),) and ledger.changed
    assert not ledger.made(SHELL_TOOL, '{"command": "greet"}')


FAIL_LIMIT = 4


@settings(max_examples=300, deadline=None)
@given(events=st.lists(_events, max_size=40))
def test_calls_failing_in_a_row_however_they_differ_end_a_run_that_sets_a_limit(events: list) -> None:
    """With a `fail_limit`, the run ends "failing" once that many of its calls in a row
    failed, were refused or searched and found nothing (a call of an earlier run, one
    the person denied, neither counts nor breaks the row; a call that ran well does);
    every other verdict is the one without it."""
    limited, free = Ledger(NUDGES, fail_limit=FAIL_LIMIT), Ledger(NUDGES)
    row = 0
    for event in events:
        verdict, without = limited.feed(event), free.feed(event)
        if isinstance(event, CallEnded) and not event.earlier:
            ended = ended_as(event.name, event.state, event.result)
            persons = ended == "denied" and notices.card_end(event.result)[0] == "person"
            nothing = ended == "done" and "---\nTotal matches: 0\n" in event.result
            row = row + 1 if (ended in ("error", "denied") and not persons) or nothing \
                else (0 if ended == "done" else row)
        wanted = "failing" if without == "go_on" and row >= FAIL_LIMIT and isinstance(event, CallEnded) \
            and not event.earlier else without
        assert verdict == wanted, event
        assert limited.fails == row and limited.avoided() == free.avoided()


def test_new_failures_in_a_row_end_it_and_one_that_ran_starts_the_row_again() -> None:
    ledger = Ledger(NUDGES, fail_limit=FAIL_LIMIT)
    failures = [CallEnded("write_file", json.dumps({"path": "a.py", "content": "x" * n}), "error", "refused")
                for n in range(FAIL_LIMIT)]
    assert [ledger.feed(f) for f in failures[:-1]] == ["go_on"] * (FAIL_LIMIT - 1)
    for said in (notices.DENIED_BY_PERSON, notices.denied_by_person("not that file")):  # the person's no
        ledger.feed(CallEnded("edit_file", '{"path": "a.py"}', "denied", said))
    assert ledger.fails == FAIL_LIMIT - 1
    ledger.feed(CallEnded("edit_file", '{"path": "b.py"}', "denied", notices.DENIED_IN_PLAN_MODE))  # a rule's
    assert ledger.fails == FAIL_LIMIT
    ledger.feed(CallEnded("grep_search", '{"pattern": "q"}', "done", "\n---\nTotal matches: 0\n", read=True))
    assert ledger.fails == FAIL_LIMIT + 1  # a search that found nothing got nowhere too
    ledger.feed(CallEnded("read_file", '{"path": "a.py"}', "done", "x", read=True))
    assert ledger.fails == 0
    assert [ledger.feed(f) for f in failures] == ["go_on"] * (FAIL_LIMIT - 1) + ["failing"]
    command = CallEnded(SHELL_TOOL, '{"command": "make x"}', "done", "no rule\n[exit code: 2]")
    assert Ledger(NUDGES, fail_limit=1).feed(command) == "failing"  # a command that exited non-zero failed
    assert Ledger(NUDGES).feed(command) == "go_on"


def test_a_call_refused_as_made_again_is_avoided_however_long_ago_it_was_made() -> None:
    """SmolLM2 read a file, made five other calls, read it again (refused: made already)
    and twice more, to the stop: the grammar had let it, since only the latest calls made
    were avoided. A call refused so is avoided until something changes."""
    ledger = Ledger(NUDGES)
    first = ("read_file", {"path": "a.py"})
    ledger.feed(CallEnded("read_file", '{"path": "a.py"}', "done", "ok", read=True))
    for n in range(AVOIDED_CALLS + 1):
        ledger.feed(CallEnded("grep_search", json.dumps({"pattern": f"w{n}"}), "done", "none", read=True))
    assert first not in ledger.avoided() and ledger.made("read_file", '{"path": "a.py"}')
    ledger.feed(CallEnded("read_file", '{"path": "a.py"}', "error", "made already", read=True, again=True))
    assert first in ledger.avoided()
    ledger.feed(CallEnded("edit_file", '{"path": "a.py"}', "done", "edited"))  # a change: it may read again
    assert first not in ledger.avoided()
