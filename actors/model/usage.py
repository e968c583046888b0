"""The usage ledger: one line per answer, what it used and cost, in `<data>/usage.jsonl`.

Each answer of a run (the built-in agent's rounds, its helpers' included) that reports
its token counts appends one JSON object on a line of its own (`Entry`): when, which
conversation and task, the route (`local`, or a provider's id and model), the
prompt, completion and cached tokens as the answer's `usage` has them, and its cost
in US dollars at the provider's prices when the answer was made (null where the
provider has none, and for the local model). GET /api/usage sums these (by
conversation, task, provider, model or local day, since a time) and a run's budget
reads them (actors/runs/agent/meter.py): neither reads a conversation's file.

Kept whole in memory (about 100 bytes an answer), so a sum is a pass over the entries
in memory and a conversation's total is a lookup. The daemon serves before the file is
read (`open`, then `run` reads it in a worker thread): a sum and a budget wait for it
(`wait_loaded`), and what is written meanwhile goes after what was read.
What was spent stays spent: deleting a conversation or a task's old run keeps its
lines, so a day's or a provider's total does not shrink.

Crash safety. A line is written with one `write` on a file opened `O_APPEND` (the
kernel puts it whole at the end; no other writer interleaves), so once the answer is
counted a crash of the daemon cannot lose it. The ledger's own task (`run`) then
`fdatasync`s it in a worker thread, off the event loop and without the run waiting:
one sync at a time, the lines written meanwhile sharing the next, and a last one when
the daemon stops. So a power cut can lose only the lines of the last sync's
milliseconds, and leave only the last line cut short: reading skips a line that is
not a whole entry (and counts it for `doctor`), and the next append starts on a fresh
line, so one torn line never spoils another.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
import os
from pathlib import Path
from sys import intern
from typing import Any, Literal, get_args

import attrs
import trio

log = logging.getLogger("bmoe.usage")

LEDGER_FILE = "usage.jsonl"
Grouping = Literal["conversation", "task", "provider", "model", "day"]
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)
RouteKind = Literal["local", "provider"]
FILE_MODE = 0o600  # it names the conversations
FINAL_SYNC_S = 5.0  # the last sync when the daemon stops
READ_CHUNK = 16 * 1024 * 1024
_QUARTER_HOUR_S = 900  # every time zone's offset is a whole number of quarter hours


@attrs.frozen(slots=True)
class Entry:
    """One answer's line (see the module docstring)."""

    at: float
    conversation: str
    task: str | None
    route: RouteKind
    provider: str  # "local", or the provider's id
    model: str
    item: str  # the answer's item id
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None  # US dollars; None: not priced

    def to_line(self) -> bytes:
        return (json.dumps(attrs.asdict(self), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, obj: Any) -> Entry:
        """An entry as a line holds it; ValueError (or KeyError, TypeError) when it is not one."""
        route = obj["route"]
        if route not in ("local", "provider"):
            raise ValueError("route")
        cost = obj.get("cost")
        if cost is not None and (not isinstance(cost, int | float) or not math.isfinite(cost)):
            raise ValueError("cost")
        task = obj.get("task")
        # Interned: a conversation's, a provider's, a model's name is held once however many lines repeat it.
        return cls(float(obj["at"]), intern(str(obj["conversation"])), intern(str(task)) if task is not None else None,
                   route, intern(str(obj["provider"])), intern(str(obj["model"])), str(obj.get("item") or ""),
                   _count(obj["prompt_tokens"]), _count(obj["completion_tokens"]), _count(obj.get("cached_tokens", 0)),
                   float(cost) if cost is not None else None)


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("a token count")
    return value


@attrs.define
class Sums:
    """Totals of some answers. `cost` sums the priced ones (None when none was);
    `unpriced_answers` counts a provider's answers it could not price."""

    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    unpriced_answers: int = 0

    @property
    def tokens(self) -> int:
        """What a token budget counts: prompt and completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def add(self, e: Entry) -> None:
        self.answers += 1
        self.prompt_tokens += e.prompt_tokens
        self.completion_tokens += e.completion_tokens
        self.cached_tokens += e.cached_tokens
        if e.cost is not None:
            self.cost = (self.cost or 0.0) + e.cost
        elif e.route == "provider":
            self.unpriced_answers += 1

    def merge(self, other: Sums) -> None:
        self.answers += other.answers
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost
        self.unpriced_answers += other.unpriced_answers

    def to_json(self) -> dict[str, Any]:
        return {"answers": self.answers, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cached_tokens": self.cached_tokens,
                "tokens": self.tokens, "cost": round(self.cost, 9) if self.cost is not None else None,
                "unpriced_answers": self.unpriced_answers}


def parse_lines(raw: bytes) -> tuple[list[Entry], int]:
    """The entries of a ledger's bytes, and how many lines were not whole entries."""
    entries: list[Entry] = []
    skipped = 0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            entries.append(Entry.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            skipped += 1
    return entries, skipped


def parse_since(text: str, zone: datetime.tzinfo) -> float:
    """`since` as a Unix time: a date "YYYY-MM-DD" (its local midnight) or an ISO date
    and time (local unless it says its offset or Z). ValueError saying what is wrong."""
    raw = text.strip()
    try:
        if len(raw) == 10:
            day = datetime.date.fromisoformat(raw)
            return datetime.datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()
        when = datetime.datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(f'since must be a date "YYYY-MM-DD" or an ISO date and time '
                         f'"YYYY-MM-DDTHH:MM[:SS][+HH:MM|Z]"; got {text[:40]!r}.') from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    return when.timestamp()


class UsageLedger:
    """See the module docstring. `load` reads the file (blocking: call it in a thread
    before the daemon serves); `record` appends."""

    def __init__(self, data_dir: Path, *, zone: datetime.tzinfo | None = None) -> None:
        self.path = data_dir / LEDGER_FILE
        self._zone = zone if zone is not None else datetime.UTC
        self._entries: list[Entry] = []
        self._by_conversation: dict[str, Sums] = {}
        self._of_conversation: dict[str, list[Entry]] = {}  # a conversation's own: its sums read only those
        self._fd: int | None = None
        self._torn = False  # the file does not end with a newline: the next line starts a new one
        self.skipped = 0  # lines read that were not whole entries
        self._written = 0  # lines appended, and of them fdatasync'ed
        self._synced = 0
        self._sync_lock = trio.Lock()
        self._dirty = trio.Event()  # lines were written since the syncing task last looked
        self._days: dict[int, str] = {}
        self._to_read = 0  # the file's size when opened: what `read` reads
        self._loaded = trio.Event()

    # ---- reading and writing ----

    def open(self) -> None:
        """Open the ledger for appending (made when there is none) and note how much of
        it there is to read: the lines written from now on go after it. OSError when it
        cannot be opened (through a link, say); the ledger then counts nothing, but is
        `loaded` (empty), so nothing waits for it."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
        except OSError:
            self._loaded.set()
            raise
        size = os.fstat(fd).st_size
        self._torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        self._fd, self._to_read = fd, size

    def load(self) -> None:
        """`open`, and read what the file held, at once (blocking: a test, a bench)."""
        self.open()
        self._merge(*self._read_old())

    async def read(self) -> None:
        """Read what the file held when opened, in a worker thread; `loaded` then. A read
        that fails (OSError) is logged and counts none of the old lines."""
        try:
            if self._fd is not None and not self._loaded.is_set():
                self._merge(*await trio.to_thread.run_sync(self._read_old))
        except OSError as exc:
            log.error("cannot read the usage ledger %s: %s; the answers before are not counted", self.path, exc)
        finally:
            self._loaded.set()

    async def wait_loaded(self) -> None:
        """Wait until what the file held is counted (at once after `load`)."""
        await self._loaded.wait()

    def _read_old(self) -> tuple[list[Entry], int]:
        assert self._fd is not None
        chunks, at = [], 0
        while at < self._to_read:
            chunk = os.pread(self._fd, min(self._to_read - at, READ_CHUNK), at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
        return parse_lines(b"".join(chunks))

    def _merge(self, old: list[Entry], skipped: int) -> None:
        """The entries read go before those written since `open` (they are older)."""
        newer, self._entries, self._by_conversation, self._of_conversation = (
            self._entries, [], {}, {})
        for entry in old:
            self._keep(entry)
        for entry in newer:
            self._keep(entry)
        self.skipped = skipped
        self._loaded.set()

    def append_nowait(self, entry: Entry) -> None:
        """Write the entry's line and count it (not yet synced: `record` does that).
        OSError when it cannot be written; it is then not counted either."""
        if self._fd is None:
            raise OSError("the usage ledger is not open")
        line = entry.to_line()
        if self._torn:
            line = b"\n" + line
        try:
            written = os.write(self._fd, line)
        except OSError:
            self._torn = True  # some of it may be there: the next line starts a line of its own
            raise
        if written != len(line):  # a full disk mid-line: the torn part is skipped on reading
            self._torn = True
            raise OSError(f"the usage ledger took {written} of {len(line)} bytes")
        self._torn = False
        self._written += 1
        self._keep(entry)
        self._dirty.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Read the file (`read`, started at once), then sync what is written, as it is
        written (see the module docstring), until
        cancelled; then a last sync, bounded by FINAL_SYNC_S. A sync that fails is
        logged, and the next line written tries again (the lines stay in the kernel's
        cache meanwhile)."""
        task_status.started()
        await self.read()
        try:
            while True:
                await self._dirty.wait()
                self._dirty = trio.Event()
                try:
                    await self.sync()
                except OSError as exc:
                    log.warning("cannot sync the usage ledger %s: %s", self.path, exc)
        finally:
            with trio.move_on_after(FINAL_SYNC_S) as cs:
                cs.shield = True
                try:
                    await self.sync()
                except OSError as exc:
                    log.warning("cannot sync the usage ledger %s: %s", self.path, exc)

    async def record(self, entry: Entry) -> None:
        """Append the entry and wait until it is on disk (without the syncing task)."""
        self.append_nowait(entry)
        await self.sync()

    async def sync(self) -> None:
        """Wait until every line appended so far is on disk. Cancelled: the sync under
        way finishes first (a worker thread's call is not abandoned)."""
        mine = self._written
        async with self._sync_lock:
            if self._synced >= mine or self._fd is None:
                return  # a sync that started after this line was written covered it
            upto = self._written
            await trio.to_thread.run_sync(_datasync, self._fd)
            self._synced = upto

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _keep(self, entry: Entry) -> None:
        self._entries.append(entry)
        sums = self._by_conversation.get(entry.conversation)
        if sums is None:
            sums = self._by_conversation[entry.conversation] = Sums()
            self._of_conversation[entry.conversation] = []
        sums.add(entry)
        self._of_conversation[entry.conversation].append(entry)

    # ---- sums ----

    @property
    def entries(self) -> int:
        return len(self._entries)

    def conversation(self, conversation_id: str) -> Sums:
        """Everything the conversation's answers used (a copy)."""
        found = self._by_conversation.get(conversation_id)
        return attrs.evolve(found) if found is not None else Sums()

    def day(self, at: float) -> str:
        """The local date of `at`, "YYYY-MM-DD"."""
        key = int(at // _QUARTER_HOUR_S)
        day = self._days.get(key)
        if day is None:
            day = self._days[key] = datetime.datetime.fromtimestamp(at, self._zone).date().isoformat()
        return day

    def report(self, by: Grouping, *, since: float | None = None, conversation: str | None = None,
               task: str | None = None) -> dict[str, Any]:
        """The sums, local and provider routes apart, overall and per group of `by`
        (a day's key is its local date; a conversation made by no task is in the task
        group null), of the answers since `since` (a Unix time) of one conversation or
        task when given. Groups come busiest first (by day: in date order)."""
        totals = {"local": Sums(), "provider": Sums()}
        groups: dict[str | None, dict[str, Sums]] = {}
        rows = self._entries if conversation is None else self._of_conversation.get(conversation, [])
        for e in rows:
            if (since is not None and e.at < since) or (conversation is not None and e.conversation != conversation) \
                    or (task is not None and e.task != task):
                continue
            key = self._key(by, e)
            group = groups.get(key)
            if group is None:
                group = groups[key] = {"local": Sums(), "provider": Sums()}
            group[e.route].add(e)
        for group in groups.values():
            totals["local"].merge(group["local"])
            totals["provider"].merge(group["provider"])
        if by == "day":
            order = sorted(groups, key=lambda k: k or "")
        else:
            order = sorted(groups, key=lambda k: (-(groups[k]["local"].tokens + groups[k]["provider"].tokens), k or ""))
        return {
            "by": by, "since": since,
            "local": totals["local"].to_json(), "provider": totals["provider"].to_json(),
            "groups": [{"key": k, "local": groups[k]["local"].to_json(), "provider": groups[k]["provider"].to_json()}
                       for k in order],
        }

    def _key(self, by: Grouping, e: Entry) -> str | None:
        if by == "conversation":
            return e.conversation
        if by == "task":
            return e.task
        if by == "provider":
            return e.provider
        if by == "model":
            return e.model if e.route == "local" else f"{e.provider}/{e.model}"
        return self.day(e.at)


def _datasync(fd: int) -> None:
    sync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync
    sync(fd)
