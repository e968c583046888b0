"""Run bookkeeping: argument parsing, partial arguments, repeated failures, partial calls."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.runs.agent.ledger import (
    PARTIAL_PARSE_LIMIT,
    REPEAT_FAILURE_LIMIT,
    FailureStreak,
    PartialCall,
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
