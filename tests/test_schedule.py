"""Schedules in local time (actors/scheduling/schedule.py): every kind, daylight-saving nights,
and slots missed while the daemon was off."""

from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.scheduling.schedule import (
    MIN_EVERY_MINUTES,
    InvalidSchedule,
    Schedule,
    js_weekday,
    next_due,
    parse_schedule,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
UTC = datetime.UTC


def ts(zone, *parts) -> float:
    return datetime.datetime(*parts, tzinfo=zone).timestamp()


def local(t: float, zone) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(t, zone)


def runs(schedule: Schedule, zone, start: float, end: float) -> list[float]:
    """The runs a scheduler makes from `start` to `end` when it is always up: each
    run starts at its slot and moves `since` (and `last_run`) to it."""
    out: list[float] = []
    since, last = start, None
    while True:
        due = next_due(schedule, since=since, last_run=last, zone=zone)
        if due is None or due > end:
            return out
        out.append(due)
        since = last = due
        if schedule.kind == "once":
            return out  # it switches itself off


# ---- parsing ----


@pytest.mark.parametrize("raw, why", [
    ({"kind": "hourly"}, "kind"),
    ("daily", "object"),
    ({"kind": "interval", "every_minutes": 4}, "at least 5"),
    ({"kind": "interval", "every_minutes": 5.5}, "whole number"),
    ({"kind": "interval", "every_minutes": True}, "whole number"),
    ({"kind": "interval"}, "whole number"),
    ({"kind": "interval", "every_minutes": 10, "at": "soon"}, "YYYY-MM-DDTHH:MM"),
    ({"kind": "daily", "at": "9:00"}, "HH:MM"),
    ({"kind": "daily", "at": "24:00"}, "between"),
    ({"kind": "daily", "at": "12:60"}, "between"),
    ({"kind": "daily"}, "HH:MM"),
    ({"kind": "once", "at": "2024-02-30T10:00"}, "not a real date"),
    ({"kind": "once", "at": "2024-02-03 10:00"}, "YYYY-MM-DDTHH:MM"),
    ({"kind": "once", "at": "10:00"}, "YYYY-MM-DDTHH:MM"),
    ({"kind": "weekly", "at": "10:00", "weekdays": []}, "non-empty"),
    ({"kind": "weekly", "at": "10:00"}, "non-empty"),
    ({"kind": "weekly", "at": "10:00", "weekdays": [7]}, "0 = Sunday"),
    ({"kind": "weekly", "at": "10:00", "weekdays": [-1]}, "0 = Sunday"),
    ({"kind": "weekly", "at": "10:00", "weekdays": ["mon"]}, "0 = Sunday"),
])
def test_bad_schedules_say_why(raw, why):
    with pytest.raises(InvalidSchedule, match=why):
        parse_schedule(raw)


def test_good_schedules_parse_and_ignore_other_kinds_fields():
    s = parse_schedule({"kind": "weekly", "at": "07:05", "weekdays": [5, 1, 1], "every_minutes": 3})
    assert s == Schedule("weekly", at="07:05", weekdays=(1, 5))
    assert s.to_json() == {"kind": "weekly", "at": "07:05", "every_minutes": None, "weekdays": [1, 5]}
    assert parse_schedule({"kind": "daily", "at": "00:00", "weekdays": []}) == Schedule("daily", at="00:00")
    assert parse_schedule({"kind": "interval", "every_minutes": 5}) == Schedule("interval", every_minutes=5)


# ---- every kind ----


def test_once_is_due_at_its_local_time_even_long_after():
    s = parse_schedule({"kind": "once", "at": "2024-06-01T09:15"})
    due = next_due(s, since=ts(BERLIN, 2024, 5, 1), last_run=None, zone=BERLIN)
    assert due == ts(BERLIN, 2024, 6, 1, 9, 15)
    assert local(due, UTC).hour == 7  # summer time: UTC+2
    # Created after its time: due at once (a scheduler sees it as due now).
    assert next_due(s, since=ts(BERLIN, 2024, 7, 1), last_run=None, zone=BERLIN) == due


def test_interval_counts_from_at_then_from_the_last_run():
    s = parse_schedule({"kind": "interval", "every_minutes": 30, "at": "2024-06-01T08:00"})
    created = ts(BERLIN, 2024, 6, 1, 7, 0)
    assert next_due(s, since=created, last_run=None, zone=BERLIN) == ts(BERLIN, 2024, 6, 1, 8, 0)
    # It ran late, at 08:07: the next is 30 minutes after the run, not after the slot.
    ran = ts(BERLIN, 2024, 6, 1, 8, 7)
    assert next_due(s, since=ran, last_run=ran, zone=BERLIN) == ran + 30 * 60
    # No `at`: the first is one interval after it was made.
    plain = parse_schedule({"kind": "interval", "every_minutes": 5})
    assert next_due(plain, since=created, last_run=None, zone=BERLIN) == created + 300
    # `at` as a time of day sets the grid: made at 07:00, "every hour at 06:30" first runs at 07:30.
    daily_start = parse_schedule({"kind": "interval", "every_minutes": 60, "at": "06:30"})
    assert next_due(daily_start, since=created, last_run=None, zone=BERLIN) == ts(BERLIN, 2024, 6, 1, 7, 30)


@settings(max_examples=300, deadline=None)
@given(every=st.integers(MIN_EVERY_MINUTES, 3 * 24 * 60), hour=st.integers(0, 23), minute=st.integers(0, 59),
       offset=st.integers(0, 400 * 24 * 3600))
def test_an_interval_first_runs_within_one_interval_whatever_its_time_of_day(every, hour, minute, offset):
    """The form once kept the daily default "at 09:00" for "every 5 minutes", and the first
    run came the next morning: with a time of day, the first run is still after `since`
    and at most one interval after it."""
    s = parse_schedule({"kind": "interval", "every_minutes": every, "at": f"{hour:02d}:{minute:02d}"})
    since = ts(BERLIN, 2024, 1, 1) + offset
    first = next_due(s, since=since, last_run=None, zone=BERLIN)
    assert first is not None and since < first <= since + every * 60


def test_interval_ignores_the_clock_change():
    # Every 60 minutes across the spring-forward night is every 3600 seconds.
    s = parse_schedule({"kind": "interval", "every_minutes": 60})
    start = ts(BERLIN, 2024, 3, 30, 23, 0)
    got = runs(s, BERLIN, start, start + 6 * 3600)
    assert [b - a for a, b in zip(got, got[1:], strict=False)] == [3600.0] * (len(got) - 1)
    assert [local(t, BERLIN).hour for t in got] == [0, 1, 3, 4, 5, 6]


def test_daily_runs_once_a_day_at_its_time():
    s = parse_schedule({"kind": "daily", "at": "09:00"})
    start = ts(BERLIN, 2024, 6, 1, 12, 0)
    got = runs(s, BERLIN, start, ts(BERLIN, 2024, 6, 5, 23, 0))
    assert [(local(t, BERLIN).day, local(t, BERLIN).hour, local(t, BERLIN).minute) for t in got] == [
        (2, 9, 0), (3, 9, 0), (4, 9, 0), (5, 9, 0)]
    # Made before today's time: today's counts.
    assert next_due(s, since=ts(BERLIN, 2024, 6, 1, 8, 59), last_run=None, zone=BERLIN) == ts(BERLIN, 2024, 6, 1, 9)


def test_weekly_runs_on_its_days_counted_from_sunday():
    # 1 = Monday, 3 = Wednesday (JavaScript's getDay); 2024-06-02 is a Sunday.
    s = parse_schedule({"kind": "weekly", "at": "18:30", "weekdays": [1, 3]})
    got = runs(s, BERLIN, ts(BERLIN, 2024, 6, 2, 0, 0), ts(BERLIN, 2024, 6, 16, 0, 0))
    assert [local(t, BERLIN).strftime("%a %d %H:%M") for t in got] == [
        "Mon 03 18:30", "Wed 05 18:30", "Mon 10 18:30", "Wed 12 18:30"]
    assert js_weekday(datetime.date(2024, 6, 2)) == 0
    assert js_weekday(datetime.date(2024, 6, 8)) == 6
    sunday = parse_schedule({"kind": "weekly", "at": "08:00", "weekdays": [0]})
    assert local(next_due(sunday, since=ts(BERLIN, 2024, 6, 3), last_run=None, zone=BERLIN), BERLIN).date() == \
        datetime.date(2024, 6, 9)


# ---- daylight saving ----


@pytest.mark.parametrize("zone, day, at, expected_local", [
    # Spring forward: 02:00 -> 03:00, so 02:30 does not exist; it runs once, at 03:30.
    (BERLIN, (2024, 3, 31), "02:30", "03:30+02:00"),
    (NEW_YORK, (2024, 3, 10), "02:30", "03:30-04:00"),
    # Fall back: 03:00 -> 02:00 (Berlin) and 02:00 -> 01:00 (New York) repeat an hour;
    # the task runs once, at the first of the two.
    (BERLIN, (2024, 10, 27), "02:30", "02:30+02:00"),
    (NEW_YORK, (2024, 11, 3), "01:30", "01:30-04:00"),
])
def test_daily_runs_once_on_the_nights_the_clock_changes(zone, day, at, expected_local):
    s = parse_schedule({"kind": "daily", "at": at})
    start = ts(zone, *day) - 2 * 86400
    got = runs(s, zone, start, ts(zone, *day) + 3 * 86400)
    days = [local(t, zone).date() for t in got]
    assert len(days) == len(set(days)) == 5  # one run a day, none twice, none skipped
    on_the_day = [t for t in got if local(t, zone).date() == datetime.date(*day)]
    assert len(on_the_day) == 1
    assert local(on_the_day[0], zone).strftime("%H:%M%z")[:5] == expected_local[:5]
    assert local(on_the_day[0], zone).isoformat()[-6:] == expected_local[-6:]


def test_weekly_on_the_spring_forward_sunday():
    s = parse_schedule({"kind": "weekly", "at": "02:30", "weekdays": [0]})
    got = runs(s, BERLIN, ts(BERLIN, 2024, 3, 20), ts(BERLIN, 2024, 4, 10))
    assert [local(t, BERLIN).strftime("%m-%d %H:%M") for t in got] == ["03-24 02:30", "03-31 03:30", "04-07 02:30"]


def test_once_in_the_skipped_or_repeated_hour():
    gap = parse_schedule({"kind": "once", "at": "2024-03-31T02:30"})
    assert local(next_due(gap, since=0, last_run=None, zone=BERLIN), BERLIN).strftime("%H:%M") == "03:30"
    repeat = parse_schedule({"kind": "once", "at": "2024-10-27T02:30"})
    first = next_due(repeat, since=0, last_run=None, zone=BERLIN)
    assert local(first, UTC).strftime("%H:%M") == "00:30"  # 02:30 summer time, the first


@settings(max_examples=40, deadline=None)
@given(
    zone=st.sampled_from([BERLIN, NEW_YORK]),
    hour=st.integers(0, 23), minute=st.integers(0, 59),
    start=st.integers(int(ts(UTC, 2023, 1, 1)), int(ts(UTC, 2025, 1, 1))),
)
def test_daily_is_exactly_one_run_per_local_day(zone, hour, minute, start):
    s = Schedule("daily", at=f"{hour:02d}:{minute:02d}")
    got = runs(s, zone, float(start), float(start) + 40 * 86400)
    days = [local(t, zone).date() for t in got]
    assert len(days) in (39, 40, 41)
    assert days == sorted(set(days))
    assert all((b - a).days == 1 for a, b in zip(days, days[1:], strict=False))
    for t in got:
        seen = local(t, zone)
        # At its time, or as far past a skipped hour as the time was past its start.
        assert (seen.hour, seen.minute) == (hour, minute) or (seen.hour - 1, seen.minute) == (hour, minute)


# ---- missed while the daemon was off ----


def test_missed_daily_slots_run_once_when_next_seen():
    s = parse_schedule({"kind": "daily", "at": "09:00"})
    last = ts(BERLIN, 2024, 6, 1, 9, 0)
    back = ts(BERLIN, 2024, 6, 5, 14, 0)  # the daemon was off for four 09:00s
    due = next_due(s, since=last, last_run=last, zone=BERLIN)
    assert due <= back  # due when the daemon sees it again...
    # ...and once it has run then, the next is tomorrow's: the missed ones are gone.
    assert next_due(s, since=back, last_run=back, zone=BERLIN) == ts(BERLIN, 2024, 6, 6, 9, 0)


def test_missed_interval_and_once_run_once():
    s = parse_schedule({"kind": "interval", "every_minutes": 10})
    last = ts(BERLIN, 2024, 6, 1, 9, 0)
    back = last + 5 * 3600
    assert next_due(s, since=last, last_run=last, zone=BERLIN) <= back
    assert next_due(s, since=back, last_run=back, zone=BERLIN) == back + 600
    once = parse_schedule({"kind": "once", "at": "2024-06-01T10:00"})
    assert next_due(once, since=last, last_run=None, zone=BERLIN) <= back
