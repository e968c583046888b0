"""The usage ledger (actors/model/usage.py), providers' prices (actors/model/providers/
entries.py) and budgets (actors/record/budget.py): pure and file-level, no daemon."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import Invalid
from actors.model.providers.entries import Prices, check_prices
from actors.model.usage import LEDGER_FILE, Entry, Sums, UsageLedger, parse_lines, parse_since
from actors.record.budget import Budget, budget_from_json, check_budget

UTC = datetime.UTC
DAY = 86_400.0
T0 = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()


def entry(at: float = T0, conversation: str = "c1", *, task: str | None = None, route: str = "local",
          provider: str = "local", model: str = "m.gguf", p: int = 100, c: int = 10, cached: int = 0,
          cost: float | None = None) -> Entry:
    return Entry(at, conversation, task, route, provider, model, "i1", p, c, cached, cost)  # type: ignore[arg-type]


def ledger(tmp_path: Path) -> UsageLedger:
    led = UsageLedger(tmp_path, zone=UTC)
    led.load()
    return led


# ---- prices and budgets ----


def test_prices_cost_per_million_with_cached_tokens_at_their_price_or_the_input_price() -> None:
    p = Prices(input=2.0, output=8.0, cached=0.5)
    # 1,000 prompt (400 of them cached) and 500 completion tokens
    assert p.cost(1000, 500, 400) == pytest.approx((600 * 2 + 400 * 0.5 + 500 * 8) / 1e6)
    assert Prices(2.0, 8.0).cost(1000, 500, 400) == pytest.approx((1000 * 2 + 500 * 8) / 1e6)
    assert p.cost(10, 0, 50) == pytest.approx(10 * 0.5 / 1e6)  # cached never more than the prompt


@pytest.mark.parametrize("data", [
    {"input": 1}, {"output": 1}, {"input": "1", "output": 2}, {"input": -1, "output": 2},
    {"input": 1, "output": float("inf")}, {"input": 1, "output": 2, "extra": 1}, [1, 2], "cheap",
    {"input": True, "output": 2}, {"input": 1, "output": 2, "cached": "x"}, {"input": 1e9, "output": 1},
])
def test_check_prices_refuses_in_plain_words(data: object) -> None:
    with pytest.raises(Invalid, match="prices"):
        check_prices(data)


def test_check_prices_takes_both_or_none() -> None:
    assert check_prices(None) is None and check_prices({}) is None
    assert check_prices({"input": 3, "output": 15}) == Prices(3.0, 15.0, None)
    assert check_prices({"input": 0, "output": 0.6, "cached": 0.075}) == Prices(0.0, 0.6, 0.075)


@pytest.mark.parametrize("data", [
    {"tokens": 0}, {"tokens": -3}, {"tokens": 1.5}, {"tokens": "100"}, {"tokens": True}, {"cost": 0},
    {"cost": -1}, {"cost": float("nan")}, {"cost": "1"}, {"cost": 10**9}, {"tokens": 5, "dollars": 1}, [5], 5,
])
def test_check_budget_refuses_in_plain_words(data: object) -> None:
    with pytest.raises(Invalid, match="budget"):
        check_budget(data)


def test_check_budget_and_its_file_form() -> None:
    assert check_budget(None) is None and check_budget({}) is None
    assert check_budget({"tokens": None, "cost": None}) is None
    b = check_budget({"tokens": 5000, "cost": 1})
    assert b == Budget(5000, 1.0) and isinstance(b.cost, float)
    assert budget_from_json(b.to_json()) == b
    assert budget_from_json(None) is None and budget_from_json({"tokens": None, "cost": None}) is None


# ---- the ledger ----


def test_entries_survive_a_restart_and_sum_by_each_grouping(tmp_path: Path) -> None:
    led = ledger(tmp_path)
    led.append_nowait(entry(T0, "c1", p=100, c=10, cached=40))
    led.append_nowait(entry(T0 + 60, "c1", route="provider", provider="cloud", model="big", p=1000, c=100,
                            cost=0.002))
    led.append_nowait(entry(T0 + DAY, "c2", task="t1", route="provider", provider="free", model="small",
                            p=50, c=5))
    led.close()
    again = ledger(tmp_path)
    assert again.entries == 3 and again.skipped == 0
    conv = again.conversation("c1")
    assert (conv.answers, conv.prompt_tokens, conv.completion_tokens, conv.cached_tokens) == (2, 1100, 110, 40)
    assert conv.cost == pytest.approx(0.002)
    assert again.conversation("nobody") == Sums()

    by_provider = again.report("provider")
    assert [g["key"] for g in by_provider["groups"]] == ["cloud", "local", "free"]  # busiest first
    local = by_provider["local"]
    assert (local["answers"], local["tokens"], local["cost"], local["unpriced_answers"]) == (1, 110, None, 0)
    prov = by_provider["provider"]
    assert (prov["answers"], prov["tokens"], prov["unpriced_answers"]) == (2, 1155, 1)
    assert prov["cost"] == pytest.approx(0.002)  # the priced one only; the other has none, not 0
    free = next(g for g in by_provider["groups"] if g["key"] == "free")
    assert free["provider"]["cost"] is None and free["provider"]["unpriced_answers"] == 1

    assert [g["key"] for g in again.report("model")["groups"]] == ["cloud/big", "m.gguf", "free/small"]
    assert {g["key"] for g in again.report("task")["groups"]} == {None, "t1"}
    days = again.report("day")["groups"]
    assert [g["key"] for g in days] == ["2026-03-01", "2026-03-02"]
    since = again.report("day", since=T0 + DAY / 2)
    assert [g["key"] for g in since["groups"]] == ["2026-03-02"] and since["local"]["answers"] == 0
    assert again.report("conversation", conversation="c2")["provider"]["tokens"] == 55
    assert again.report("conversation", task="t1")["groups"][0]["key"] == "c2"


def test_a_line_cut_short_by_a_crash_is_skipped_and_the_next_starts_fresh(tmp_path: Path) -> None:
    led = ledger(tmp_path)
    led.append_nowait(entry(T0, "c1"))
    led.close()
    path = tmp_path / LEDGER_FILE
    whole = path.read_bytes()
    path.write_bytes(whole + entry(T0 + 1, "c2").to_line()[:25])  # the crash: half a line, no newline
    again = ledger(tmp_path)
    assert again.entries == 1 and again.skipped == 1
    again.append_nowait(entry(T0 + 2, "c3"))
    again.close()
    third = ledger(tmp_path)
    assert [e.conversation for e in parse_lines(path.read_bytes())[0]] == ["c1", "c3"]
    assert third.entries == 2 and third.skipped == 1 and third.conversation("c3").answers == 1


@given(cut=st.integers(min_value=0, max_value=2000), garbage=st.binary(max_size=40))
def test_any_cut_of_the_file_keeps_every_whole_line_before_it(cut: int, garbage: bytes) -> None:
    lines = [entry(T0 + i, f"c{i}", p=i, c=i).to_line() for i in range(12)]
    raw = b"".join(lines)
    cut = min(cut, len(raw))
    kept, _ = parse_lines(raw[:cut] + garbage.replace(b"\n", b""))
    whole = sum(1 for n in range(len(lines)) if len(b"".join(lines[: n + 1])) <= cut)
    assert [e.conversation for e in kept][:whole] == [f"c{i}" for i in range(whole)]
    assert len(kept) <= whole + 1  # the cut line can only be whole itself (cut at its end)


async def test_lines_written_while_the_file_is_read_go_after_it(tmp_path: Path) -> None:
    """The daemon serves before the ledger is read: a line written meanwhile is counted
    once, after the old ones, and a sum waits for the read."""
    first = ledger(tmp_path)
    first.append_nowait(entry(T0, "c1", p=5, c=1))
    first.close()
    led = UsageLedger(tmp_path, zone=UTC)
    led.open()
    led.append_nowait(entry(T0 + 10, "c1", p=7, c=1))
    waited = []

    async def sum_when_loaded() -> None:
        await led.wait_loaded()
        waited.append(led.conversation("c1").prompt_tokens)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sum_when_loaded)
        await trio.sleep(0.05)
        assert waited == []  # not read yet: a sum waits
        await led.read()
    assert waited == [12] and led.entries == 2
    assert [g["key"] for g in led.report("day")["groups"]] == ["2026-03-01"]
    led.close()
    again = ledger(tmp_path)
    assert again.entries == 2 and again.conversation("c1").answers == 2


async def test_record_syncs_and_concurrent_records_share_the_syncs(tmp_path: Path) -> None:
    led = ledger(tmp_path)
    async with trio.open_nursery() as nursery:
        for i in range(20):
            nursery.start_soon(led.record, entry(T0 + i, f"c{i % 3}"))
    assert led.entries == 20
    led.close()
    assert len((tmp_path / LEDGER_FILE).read_bytes().splitlines()) == 20
    assert ledger(tmp_path).conversation("c0").answers == 7


def test_an_unwritable_ledger_says_so(tmp_path: Path) -> None:
    led = UsageLedger(tmp_path, zone=UTC)
    with pytest.raises(OSError, match="not open"):
        led.append_nowait(entry())
    (tmp_path / "sub").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "sub" / LEDGER_FILE)
    with pytest.raises(OSError):
        UsageLedger(tmp_path / "sub", zone=UTC).load()  # never through a link


def test_the_file_is_one_json_object_a_line(tmp_path: Path) -> None:
    led = ledger(tmp_path)
    led.append_nowait(entry(T0, "c1", route="provider", provider="cloud", model="m", cost=0.25))
    led.close()
    (line,) = (tmp_path / LEDGER_FILE).read_text().splitlines()
    assert json.loads(line) == {"at": T0, "conversation": "c1", "task": None, "route": "provider",
                                "provider": "cloud", "model": "m", "item": "i1", "prompt_tokens": 100,
                                "completion_tokens": 10, "cached_tokens": 0, "cost": 0.25}
    assert (tmp_path / LEDGER_FILE).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("text,expected", [
    ("2026-03-01", T0 - 12 * 3600),
    ("2026-03-01T12:00", T0),
    ("2026-03-01T13:00+01:00", T0),
    ("2026-03-01T12:00:00Z", T0),
])
def test_since_is_a_local_date_or_an_iso_time(text: str, expected: float) -> None:
    assert parse_since(text, UTC) == expected


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01", "2026-02-30", "01/03/2026", "2026-03-01T25:00"])
def test_since_refuses_what_does_not_read(text: str) -> None:
    with pytest.raises(ValueError, match="since must be"):
        parse_since(text, UTC)


@pytest.mark.parametrize("amount,shown", [
    (0.0, "$0.00"), (0.25, "$0.25"), (0.004, "$0.004"), (0.0041, "$0.0041"), (0.001, "$0.001"), (0.5, "$0.50"),
    (1.5, "$1.50"), (1234.5, "$1,234.50"), (0.00004, "$0.00"),
])
def test_dollars_as_a_person_reads_them(amount: float, shown: str) -> None:
    from actors.runs.agent.meter import dollars

    assert dollars(amount) == shown
