"""When a task is next due: schedules in local time, with no clock and no I/O.

A schedule is one of

    once      at "YYYY-MM-DDTHH:MM"
    interval  every `every_minutes` (at least MIN_EVERY_MINUTES) from the last run;
              the first one interval after `since`, or at `at` ("YYYY-MM-DDTHH:MM"),
              or on the grid of `at` ("HH:MM": that time of day, plus or minus whole
              intervals), so the first is never more than one interval away
    daily     at "HH:MM"
    weekly    at "HH:MM" on `weekdays` (0 = Sunday .. 6 = Saturday, as JavaScript counts)

all in the local time of a `tzinfo` the caller passes (the process's own zone in the
daemon, any zone in tests).

Slots are counted from an instant the caller keeps, `since`: the later of the task's
last change and its last run's start. A slot is due once its instant is at or before
now. So a daemon that was off past several slots finds one due slot, runs it once,
moves `since` to that run, and the next slot is the first one after it: the missed
ones are not run one by one.

Daylight saving: a local time is turned into an instant the way RFC 5545 and PEP 495
(fold=0) do. A time the clock skips (02:30 on the spring-forward night) is read with
the offset before the jump, so it lands as far past the jump as it was past the hour
(03:30); a time the clock repeats (01:30 on the fall-back night) is its first
occurrence. Each local day has exactly one instant per "HH:MM", so a daily task runs
exactly once on both nights.
"""

from __future__ import annotations

import datetime
import math
import os
import re
from typing import Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs

ScheduleKind = Literal["once", "interval", "daily", "weekly"]
KINDS: tuple[ScheduleKind, ...] = get_args(ScheduleKind)
MIN_EVERY_MINUTES = 5
MAX_EVERY_MINUTES = 366 * 24 * 60  # a year: anything longer is a `once`
# How many local days to look ahead for the next slot: a week, plus one for a zone
# that skips a whole day (Samoa, 2011-12-30), plus one behind for a day that starts late.
_LOOKAHEAD_DAYS = 9

_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$")
_TIME = re.compile(r"^(\d{2}):(\d{2})$")


class InvalidSchedule(ValueError):
    """A schedule that cannot be run; the text says what is wrong in plain words."""


@attrs.frozen
class Schedule:
    kind: ScheduleKind
    at: str | None = None
    every_minutes: int | None = None
    weekdays: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "at": self.at,
            "every_minutes": self.every_minutes,
            "weekdays": list(self.weekdays) if self.weekdays is not None else None,
        }


def parse_schedule(data: object) -> Schedule:
    """A schedule from its JSON form; raises InvalidSchedule saying what is wrong.

    Fields another kind uses are ignored (a form may send them all), and kept as None.
    """
    if not isinstance(data, dict):
        raise InvalidSchedule("schedule must be an object {kind, at, every_minutes, weekdays}.")
    kind = data.get("kind")
    if kind not in KINDS:
        raise InvalidSchedule(f"schedule.kind must be one of {', '.join(KINDS)}.")
    at = data.get("at")
    # What a schedule keeps: `at` is checked as sent, and is a str (or None) once it passed.
    at_text = at if isinstance(at, str) else None
    if kind == "once":
        _parse_datetime(at, "schedule.at")
        return Schedule("once", at=at_text)
    if kind == "interval":
        every = data.get("every_minutes")
        if isinstance(every, bool) or not isinstance(every, int):
            raise InvalidSchedule("schedule.every_minutes must be a whole number of minutes.")
        if every < MIN_EVERY_MINUTES:
            raise InvalidSchedule(f"schedule.every_minutes must be at least {MIN_EVERY_MINUTES}.")
        if every > MAX_EVERY_MINUTES:
            raise InvalidSchedule("schedule.every_minutes must be at most a year; use `once` for longer.")
        if at is not None:
            if isinstance(at, str) and _TIME.match(at):
                _parse_time(at, "schedule.at")
            else:
                _parse_datetime(at, "schedule.at")
        return Schedule("interval", at=at_text, every_minutes=every)
    _parse_time(at, "schedule.at")
    if kind == "daily":
        return Schedule("daily", at=at_text)
    days = data.get("weekdays")
    if not isinstance(days, list) or not days:
        raise InvalidSchedule("schedule.weekdays must be a non-empty list of days, 0 = Sunday .. 6 = Saturday.")
    for day in days:
        if isinstance(day, bool) or not isinstance(day, int) or not 0 <= day <= 6:
            raise InvalidSchedule("schedule.weekdays holds days 0 = Sunday .. 6 = Saturday.")
    return Schedule("weekly", at=at_text, weekdays=tuple(sorted(set(days))))


def _parse_time(value: object, where: str) -> tuple[int, int]:
    m = _TIME.match(value) if isinstance(value, str) else None
    if m is None:
        raise InvalidSchedule(f'{where} must be a time "HH:MM".')
    hour, minute = int(m[1]), int(m[2])
    if hour > 23 or minute > 59:
        raise InvalidSchedule(f'{where} must be a time "HH:MM" between 00:00 and 23:59.')
    return hour, minute


def _parse_datetime(value: object, where: str) -> datetime.datetime:
    m = _DATETIME.match(value) if isinstance(value, str) else None
    if m is None:
        raise InvalidSchedule(f'{where} must be a local date and time "YYYY-MM-DDTHH:MM".')
    try:
        return datetime.datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]))
    except ValueError:
        raise InvalidSchedule(f'{where} is not a real date and time: "{value}".') from None


def local_instant(day: datetime.date, hour: int, minute: int, zone: datetime.tzinfo) -> float:
    """The Unix time of a local wall-clock time (fold=0: see the module docstring)."""
    return datetime.datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone).timestamp()


def js_weekday(day: datetime.date) -> int:
    """0 = Sunday .. 6 = Saturday (Python's own weekday() starts at Monday = 0)."""
    return (day.weekday() + 1) % 7


def next_slot(hour: int, minute: int, after: float, zone: datetime.tzinfo,
              weekdays: tuple[int, ...] | None = None) -> float:
    """The first instant strictly after `after` whose local time is hour:minute (on one
    of `weekdays`, when given)."""
    start = datetime.datetime.fromtimestamp(after, zone).date() - datetime.timedelta(days=1)
    for i in range(_LOOKAHEAD_DAYS):
        day = start + datetime.timedelta(days=i)
        if weekdays is not None and js_weekday(day) not in weekdays:
            continue
        t = local_instant(day, hour, minute, zone)
        if t > after:
            return t
    raise AssertionError("no slot within the look-ahead")  # weekdays is never empty


def next_due(schedule: Schedule, *, since: float, last_run: float | None, zone: datetime.tzinfo) -> float | None:
    """When the task is next due, as a Unix time; None when it never will be.

    `since` is the later of the task's last change and its last run's start; `last_run`
    the start of its last run (None: it never ran). A time at or before now is due now.
    A `once` task is due at its time, however long ago that was: the scheduler switches
    it off after its run.
    """
    kind = schedule.kind
    if kind == "once":
        when = _parse_datetime(schedule.at, "at")
        return local_instant(when.date(), when.hour, when.minute, zone)
    if kind == "interval":
        assert schedule.every_minutes is not None
        every = schedule.every_minutes * 60
        if last_run is not None:
            return last_run + every
        if schedule.at is None:
            return since + every
        if _TIME.match(schedule.at):
            # The time of day sets the grid, not the first day: "every 5 minutes at 09:00"
            # made at 10:02 runs at 10:05, not at 09:00 tomorrow.
            anchor = next_slot(*_parse_time(schedule.at, "at"), since, zone)
            steps = math.ceil((anchor - since) / every) - 1
            return anchor - steps * every
        first = _parse_datetime(schedule.at, "at")
        return local_instant(first.date(), first.hour, first.minute, zone)
    hour, minute = _parse_time(schedule.at, "at")
    if kind == "daily":
        return next_slot(hour, minute, since, zone)
    if kind == "weekly":
        return next_slot(hour, minute, since, zone, schedule.weekdays)
    raise InvalidSchedule(f"unknown schedule kind {kind!r}")


def local_zone() -> datetime.tzinfo:
    """The local time zone as this process sees it, with its daylight-saving rules.

    `TZ` first (a zone name, or a path to a zone file), then /etc/localtime; where
    neither can be read (Windows without the tzdata package), the current fixed UTC
    offset, which is right until the next daylight-saving change.
    """
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        try:
            if os.path.isabs(tz):
                with open(tz, "rb") as fh:
                    return ZoneInfo.from_file(fh, key=tz)
            return ZoneInfo(tz)
        except (OSError, ValueError, ZoneInfoNotFoundError):
            pass
    try:
        with open("/etc/localtime", "rb") as fh:
            return ZoneInfo.from_file(fh, key="localtime")
    except (OSError, ValueError):
        pass
    zone = datetime.datetime.now().astimezone().tzinfo
    return zone if zone is not None else datetime.UTC
