"""actors/tools/args.py: how every tool reads its arguments."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import ToolError
from actors.tools import args


def test_string() -> None:
    assert args.string({"p": "a"}, "p") == "a"
    assert args.string({"p": ""}, "p") == ""
    assert args.string({}, "p", required=False) is None
    assert args.string({"p": ""}, "p", required=False) is None
    with pytest.raises(ToolError, match='needs "p"'):
        args.string({}, "p")
    with pytest.raises(ToolError, match="must be a string"):
        args.string({"p": 3}, "p")


@pytest.mark.parametrize(("given_", "want"), [(None, 7), (3, 3), (3.0, 3), ("12", 12), ("-2", -2)])
def test_whole_accepts(given_, want) -> None:
    assert args.whole({"n": given_}, "n", 7) == want


@pytest.mark.parametrize("bad", [True, 2.5, "two", [], {}])
def test_whole_refuses(bad) -> None:
    with pytest.raises(ToolError, match="whole number"):
        args.whole({"n": bad}, "n", 0)


def test_whole_minimum_and_optional() -> None:
    with pytest.raises(ToolError, match="1 or more"):
        args.whole({"n": 0}, "n", 5, minimum=1)
    assert args.optional_whole({}, "n") is None
    assert args.optional_whole({"n": "4"}, "n") == 4


def test_boolean() -> None:
    assert args.boolean({}, "b", True) is True
    assert args.boolean({"b": "FALSE"}, "b", True) is False
    with pytest.raises(ToolError, match="true or false"):
        args.boolean({"b": 1}, "b", False)


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", float("nan"), float("inf"), "x"])
def test_clamped_refuses_what_is_not_a_finite_number(bad) -> None:
    with pytest.raises(ToolError, match="must be a number"):
        args.clamped({"t": bad}, "t", 30, 600)


@given(st.one_of(st.none(), st.integers(-10**9, 10**9), st.floats(allow_nan=True, allow_infinity=True),
                 st.booleans(), st.text(max_size=8)))
def test_clamped_stays_in_range_or_refuses(value) -> None:
    try:
        got = args.clamped({"t": value}, "t", 30, 600)
    except ToolError as exc:
        assert "must be a number" in str(exc)
        return
    assert 1 <= got <= 600
