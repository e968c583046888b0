"""The scheduler actor: prompts that run as conversations on a schedule.

Tasks live in `<data>/agent/tasks.json`, written whole (temporary file, fsync, rename)
after every change. The actor sleeps on trio's clock until the soonest task is due,
at most MAX_SLEEP_S at a time: trio's clock does not count a laptop's sleep, and the
wall clock may be set, so it looks at the wall clock again at least that often. Any
change to the tasks wakes it at once.

A run is a conversation made through the hub with `task` naming the task, in the
task's mode (`read_only` unless the person picked another), with the prompt sent as
an unattended message: nobody is at the screen, so an approval is answered "no" at
once (actors/conversations/actor.py counts the refusals in a notice). Its rounds line up on
the engine's turn line like any other. `last_run` records its start, conversation and
outcome (`running`, then `done`, `error` or `stopped`); a `once` task switches itself
off when its scheduled run starts. A second run of a task while one runs is `Busy`.

A task keeps its last `keep_runs` runs (DEFAULT_KEEP_RUNS unless the person sets
another number): after each run's start and end, and at start, older runs are deleted
with their files, except a run a client has open (its actor is live: read or messaged
in the last idle minutes), one running, and one waiting on a card (the hub's
`prune_runs`); those go at a later pass, once nothing holds them.

Every save, and every run's start and end, publishes a `task` event to local streams
only. The local time zone, the wall clock and the longest sleep are parameters, so
tests drive them from trio's autojump clock.
"""

from __future__ import annotations

import datetime
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors.actor import ActorStats
from actors.conversations.hub import Hub
from actors.errors import Busy, Invalid, NotFound
from actors.fs.atomic import read_own_file
from actors.ids import new_id
from actors.record.budget import Budget, budget_from_json
from actors.record.items import END_REASONS, notice_item, user_item
from actors.record.modes import MODES, Mode
from actors.scheduling.schedule import InvalidSchedule, Schedule, local_zone, next_due, parse_schedule

if TYPE_CHECKING:
    from actors.conversations.actor import Conversation

log = logging.getLogger("bmoe.scheduler")

MAX_SLEEP_S = 60.0
CLEANUP_S = 5.0
MAX_PROMPT_CHARS = 100_000
MAX_TITLE_CHARS = 200
MAX_TASKS_FILE_BYTES = 16 * 1024 * 1024
OUTCOMES = ("running", "done", "error", "stopped")
DEFAULT_KEEP_RUNS = 100  # a task's runs kept, newest first; older ones are deleted
MAX_KEEP_RUNS = 100_000

NOTICE_NO_WORKSPACE = (
    "This task's workspace was forgotten, so the task did not run. Add the folder again "
    "and pick it in the task, or give the task no workspace."
)


@attrs.frozen
class LastRun:
    at: float
    conversation: str | None
    outcome: str
    # Why its run ended (the conversation's `end_reason`: `stuck`, `max_rounds`...), once it
    # has: `outcome` says only done, error or stopped.
    end_reason: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"at": self.at, "conversation": self.conversation, "outcome": self.outcome,
                "end_reason": self.end_reason}


@attrs.frozen
class TaskSpec:
    """What a person sets on a task (a create, or the fields a change replaces)."""

    prompt: str
    schedule: Schedule
    title: str | None = None
    workspace: str | None = None
    mode: Mode = "read_only"
    route: str = "local"
    enabled: bool = True
    keep_runs: int = DEFAULT_KEEP_RUNS
    budget: Budget | None = None  # each run's (its conversation carries it; actors/record/budget.py)


@attrs.frozen
class Task:
    id: str
    title: str
    prompt: str
    workspace: str | None
    mode: Mode
    route: str
    schedule: Schedule
    enabled: bool
    created: float
    last_run: LastRun | None = None
    # Slots are counted from here: the later of the last change and the last run's start.
    since: float = 0.0
    keep_runs: int = DEFAULT_KEEP_RUNS
    budget: Budget | None = None

    def record(self) -> dict[str, object]:
        """The task as tasks.json keeps it."""
        return {
            "id": self.id, "title": self.title, "prompt": self.prompt, "workspace": self.workspace,
            "mode": self.mode, "route": self.route, "schedule": self.schedule.to_json(), "enabled": self.enabled,
            "created": self.created, "last_run": self.last_run.to_json() if self.last_run else None,
            "since": self.since, "keep_runs": self.keep_runs,
            "budget": self.budget.to_json() if self.budget is not None else None,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Task:
        """A task as tasks.json kept it; KeyError, TypeError, ValueError or
        InvalidSchedule when it does not read."""
        last = data.get("last_run")
        last_run = None
        if isinstance(last, dict):
            outcome = str(last.get("outcome") or "error")
            reason = last.get("end_reason")
            last_run = LastRun(float(last["at"]), last.get("conversation"),
                               outcome if outcome in OUTCOMES else "error",
                               reason if reason in END_REASONS else None)
        created = float(data["created"])
        mode = data.get("mode")
        keep = data.get("keep_runs")
        keep_runs = keep if isinstance(keep, int) and not isinstance(keep, bool) and 1 <= keep <= MAX_KEEP_RUNS \
            else DEFAULT_KEEP_RUNS
        return cls(
            id=str(data["id"]), title=str(data.get("title") or ""), prompt=str(data["prompt"]),
            workspace=data.get("workspace"), mode=next((m for m in MODES if m == mode), "read_only"),
            route=str(data.get("route") or "local"), schedule=parse_schedule(data["schedule"]),
            enabled=bool(data.get("enabled", True)), created=created, last_run=last_run,
            since=float(data.get("since") or created), keep_runs=keep_runs,
            budget=budget_from_json(data.get("budget")),
        )


def _title_from(prompt: str) -> str:
    line = prompt.strip().splitlines()[0] if prompt.strip() else "Task"
    return line[:60] + ("…" if len(line) > 60 else "")


class Scheduler:
    """See the module docstring."""

    def __init__(
        self,
        hub: Hub,
        path: Path,
        *,
        write_file: Callable[[Path, bytes], None],
        zone: datetime.tzinfo | None = None,
        clock: Callable[[], float] = time.time,
        max_sleep: float = MAX_SLEEP_S,
    ) -> None:
        self._hub = hub
        self._bus = hub.env.bus
        self._path = path
        self._write_file = write_file
        self._zone = zone if zone is not None else local_zone()
        self._clock = clock
        self._max_sleep = max_sleep
        self._tasks: dict[str, Task] = {}
        self._running: set[str] = set()
        self._save_lock = trio.Lock()
        self._changed = trio.Event()
        self._closing = trio.Event()
        self._stopped = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._state = "starting"

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Load the tasks, then run what is due until `shutdown()`. A run still going
        at shutdown is recorded `stopped` (the hub stops it right after)."""
        changed = self._load()
        if changed:
            await self._save()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._timer)
                for task_id in list(self._tasks):  # runs beyond the bounds kept while the daemon was stopped
                    nursery.start_soon(self._prune, task_id)
                self._state = "serving"
                task_status.started()
                await self._closing.wait()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            if self._running:
                for task_id in self._running:
                    self._set_outcome(task_id, None, "stopped")
                self._running.clear()
                with trio.move_on_after(CLEANUP_S) as cs:
                    cs.shield = True
                    await self._save()
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        """Start no more tasks; `run` returns once what runs is recorded."""
        self._state = "stopping"
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned (after `shutdown()`, or a failure)."""
        await self._stopped.wait()

    def _load(self) -> bool:
        """Read tasks.json; True when something had to be fixed (a run that was going
        when the daemon stopped reads `stopped`). An unreadable file is moved aside,
        never overwritten."""
        try:
            raw = read_own_file(self._path, MAX_TASKS_FILE_BYTES)
        except FileNotFoundError:
            return False
        except OSError as exc:  # a FIFO, a device, a folder: moved aside as unreadable
            raw = b""
            log.warning("cannot read %s: %s", self._path, exc)
        try:
            rows = json.loads(raw)
            if not isinstance(rows, list):
                raise ValueError("not a list")
        except (ValueError, UnicodeDecodeError) as exc:
            aside = self._path.with_name(f"{self._path.name}.unreadable-{int(time.time())}")
            log.warning("cannot read %s (%s); moved it to %s and starting with no tasks", self._path, exc, aside)
            self._path.rename(aside)
            return False
        fixed = False
        for row in rows:
            try:
                task = Task.from_record(row)
            except (KeyError, TypeError, ValueError, InvalidSchedule) as exc:
                log.warning("skipping a task in %s that does not read: %s", self._path, exc)
                continue
            if task.last_run is not None and task.last_run.outcome == "running":
                task = attrs.evolve(task, last_run=attrs.evolve(task.last_run, outcome="stopped"))
                fixed = True
            self._tasks[task.id] = task
        return fixed

    async def _save(self) -> None:
        """Write every task whole. Writes line up on a lock and each takes the state as
        it is when its turn comes, so the file always ends at the newest state."""
        async with self._save_lock:
            data = json.dumps([t.record() for t in self._tasks.values()], ensure_ascii=False, indent=1).encode()
            await trio.to_thread.run_sync(self._write_file, self._path, data)

    async def _commit(self, task_id: str, view: dict[str, object] | None = None) -> dict[str, object] | None:
        """After a change in memory: wake the timer, save, then publish the task as it
        was when it changed (another run may start while the write is under way).

        The timer is woken before the save awaits its thread, so its next deadline is
        right however long the write takes.
        """
        if view is None and task_id in self._tasks:
            view = self.to_json(self._tasks[task_id])
        self._changed.set()
        await self._save()
        if view is not None:
            self._bus.publish("task", view, local_only=True)
        return view

    # ---- timing ----

    def next_run(self, task: Task) -> float | None:
        if not task.enabled:
            return None
        last = task.last_run.at if task.last_run else None
        return next_due(task.schedule, since=task.since, last_run=last, zone=self._zone)

    async def _timer(self) -> None:
        while True:
            now_ = self._clock()
            soonest: float | None = None
            started = False
            for task in list(self._tasks.values()):
                if task.id in self._running or self._tasks.get(task.id) is not task:
                    continue
                try:
                    due = self.next_run(task)
                except Exception:  # a bug for one task must not stop the others, or the daemon
                    log.exception("cannot tell when task %s is due", task.id)
                    continue
                if due is None:
                    continue
                if due <= now_:
                    await self._start_scheduled(task)
                    started = True
                elif soonest is None or due < soonest:
                    soonest = due
            if started:
                continue  # the runs moved `since`: look again with the clock as it is now
            wait = self._max_sleep if soonest is None else min(max(soonest - now_, 0.0), self._max_sleep)
            with trio.move_on_after(wait):
                await self._changed.wait()
            self._changed = trio.Event()

    async def _start_scheduled(self, task: Task) -> None:
        try:
            await self._start(task, scheduled=True)
        except Exception as exc:
            # Recorded as a failed run so the slot moves on and the person sees it.
            log.warning("task %s could not start: %s", task.id, exc)
            current = self._tasks.get(task.id)
            if current is not None and task.id not in self._running:
                at = self._clock()
                self._tasks[task.id] = attrs.evolve(
                    current, last_run=LastRun(at, None, "error"), since=at,
                    enabled=current.enabled and current.schedule.kind != "once",
                )
                try:
                    await self._commit(task.id)
                except OSError as err:
                    log.error("cannot save the tasks: %s", err)

    # ---- runs ----

    async def _start(self, task: Task, *, scheduled: bool) -> dict[str, object]:
        if task.id in self._running:
            raise Busy("This task is running; wait for it to end, or stop its conversation.")
        if self._nursery is None:
            raise Invalid("The scheduler is not running.")
        at = self._clock()
        self._running.add(task.id)
        try:
            conv, outcome = await self._begin(task)
        except BaseException:
            self._running.discard(task.id)
            raise
        current = self._tasks.get(task.id, task)
        updated = attrs.evolve(
            current, last_run=LastRun(at, conv.id, outcome), since=at,
            # A `once` task switches off with its scheduled run (set now, so a daemon
            # stopped during the run does not run it again); a run by hand keeps it.
            enabled=current.enabled and not (scheduled and current.schedule.kind == "once"),
        )
        if task.id in self._tasks:
            self._tasks[task.id] = updated
        if outcome != "running":
            self._running.discard(task.id)
        view = await self._commit(task.id, self.to_json(updated))
        if self._nursery is not None:
            if outcome == "running":
                self._nursery.start_soon(self._watch, task.id, conv)
            self._nursery.start_soon(self._prune, task.id)
        assert view is not None
        return view

    async def _begin(self, task: Task) -> tuple[Conversation, str]:
        """Open the run's conversation and send the prompt; (conversation, outcome so far)."""
        if task.workspace is not None and self._hub.workspace_path(task.workspace) is None:
            # Every run leaves its conversation: this one says why nothing ran.
            items = [user_item(task.prompt), notice_item(NOTICE_NO_WORKSPACE, "error")]
            conv = await self._hub.create(mode=task.mode, route=task.route, title=task.title, items=items, task=task.id)
            return conv, "error"
        conv = await self._hub.create(
            workspace=task.workspace, mode=task.mode, route=task.route, title=task.title, task=task.id,
            budget=task.budget,
        )
        await conv.send_message(task.prompt, local=True, unattended=True)
        return conv, "running"

    async def _watch(self, task_id: str, conv: Conversation) -> None:
        outcome = await conv.wait_run_end()
        self._running.discard(task_id)
        self._set_outcome(task_id, conv.id, outcome or "error", conv.info.end_reason)
        try:
            await self._commit(task_id)
        except OSError as err:  # the next save writes it; the daemon goes on
            log.error("cannot save the tasks: %s", err)
        await self._prune(task_id)

    async def _prune(self, task_id: str) -> None:
        """Delete the task's runs beyond its `keep_runs` that nothing holds (see the
        module docstring). A failure is logged: the next pass tries again."""
        task = self._tasks.get(task_id)
        if task is None:
            return
        try:
            gone = await self._hub.prune_runs(task_id, task.keep_runs)
        except Exception:  # a run that cannot be deleted now must not end the scheduler
            log.exception("cannot delete task %s's old runs", task_id)
            return
        if gone:
            log.info("task %s: deleted %d old run(s), keeping the last %d", task_id, len(gone), task.keep_runs)

    def _set_outcome(self, task_id: str, conversation: str | None, outcome: str,
                     end_reason: str | None = None) -> None:
        task = self._tasks.get(task_id)
        if task is None or task.last_run is None or task.last_run.outcome != "running":
            return
        if conversation is not None and task.last_run.conversation != conversation:
            return
        self._tasks[task_id] = attrs.evolve(task, last_run=attrs.evolve(task.last_run, outcome=outcome,
                                                                        end_reason=end_reason))

    # ---- requests ----

    def to_json(self, task: Task) -> dict[str, object]:
        return {
            "id": task.id, "title": task.title, "prompt": task.prompt, "workspace": task.workspace,
            "mode": task.mode, "route": task.route, "schedule": task.schedule.to_json(), "enabled": task.enabled,
            "created": task.created, "last_run": task.last_run.to_json() if task.last_run else None,
            "next_run": self.next_run(task), "running": task.id in self._running, "keep_runs": task.keep_runs,
            "budget": task.budget.to_json() if task.budget is not None else None,
        }

    def tasks(self) -> list[dict[str, object]]:
        return [self.to_json(t) for t in sorted(self._tasks.values(), key=lambda t: t.created)]

    def _get(self, task_id: str) -> Task:
        task = self._tasks.get(task_id)
        if task is None:
            raise NotFound("There is no such task.")
        return task

    def get(self, task_id: str) -> dict[str, object]:
        return self.to_json(self._get(task_id))

    def _check(self, spec: TaskSpec) -> None:
        """Everything that would make the task unrunnable, before anything is saved."""
        if not spec.prompt.strip():
            raise Invalid("A task needs a prompt.")
        if len(spec.prompt) > MAX_PROMPT_CHARS:
            raise Invalid(f"A task's prompt is at most {MAX_PROMPT_CHARS} characters.")
        if spec.title is not None and len(spec.title) > MAX_TITLE_CHARS:
            raise Invalid(f"A task's title is at most {MAX_TITLE_CHARS} characters.")
        if spec.mode not in MODES:
            raise Invalid(f"Unknown mode {spec.mode!r}.")
        if spec.workspace is not None and self._hub.workspace_path(spec.workspace) is None:
            raise Invalid("There is no such workspace; add the folder first.")
        if not 1 <= spec.keep_runs <= MAX_KEEP_RUNS:
            raise Invalid(f"A task keeps between 1 and {MAX_KEEP_RUNS} of its runs (keep_runs).")

    async def create(self, spec: TaskSpec) -> dict[str, object]:
        self._check(spec)
        t = round(self._clock(), 3)
        task = Task(
            id=new_id("t"), title=(spec.title or "").strip() or _title_from(spec.prompt), prompt=spec.prompt,
            workspace=spec.workspace, mode=spec.mode, route=spec.route, schedule=spec.schedule,
            enabled=spec.enabled, created=t, since=t, keep_runs=spec.keep_runs, budget=spec.budget,
        )
        self._tasks[task.id] = task
        view = await self._commit(task.id)
        assert view is not None
        return view

    async def update(self, task_id: str, changes: dict[str, Any]) -> dict[str, object]:
        """Replace the given fields of TaskSpec; the slots count from now (or from
        the last run, when that started later: a clock set back)."""
        task = self._get(task_id)
        unknown = set(changes) - set(attrs.fields_dict(TaskSpec))
        if unknown:
            raise Invalid(f"Unknown task fields: {', '.join(sorted(unknown))}.")
        spec = TaskSpec(
            prompt=changes.get("prompt", task.prompt), schedule=changes.get("schedule", task.schedule),
            title=changes.get("title", task.title), workspace=changes.get("workspace", task.workspace),
            mode=changes.get("mode", task.mode), route=changes.get("route", task.route),
            enabled=changes.get("enabled", task.enabled), keep_runs=changes.get("keep_runs", task.keep_runs),
            budget=changes.get("budget", task.budget),
        )
        self._check(spec)
        self._tasks[task_id] = attrs.evolve(
            task, title=(spec.title or "").strip() or _title_from(spec.prompt), prompt=spec.prompt,
            workspace=spec.workspace, mode=spec.mode, route=spec.route, schedule=spec.schedule,
            enabled=spec.enabled, since=max(self._clock(), task.last_run.at if task.last_run else 0.0),
            keep_runs=spec.keep_runs, budget=spec.budget,
        )
        view = await self._commit(task_id)
        assert view is not None
        if spec.keep_runs < task.keep_runs:
            await self._prune(task_id)
        return view

    async def delete(self, task_id: str) -> None:
        """Forget a task; a run going on goes on, and its conversation stays."""
        task = self._get(task_id)
        view = {**self.to_json(task), "deleted": True}
        del self._tasks[task_id]
        await self._commit(task_id, view)

    async def run_now(self, task_id: str) -> dict[str, object]:
        """Run a task at once, whatever its schedule says; Busy while it runs."""
        return await self._start(self._get(task_id), scheduled=False)

    def statistics(self) -> ActorStats:
        return ActorStats(kind="scheduler", id="tasks", state=self._state, mailbox=0,
                          run=",".join(sorted(self._running)) or None)


__all__ = ["DEFAULT_KEEP_RUNS", "MAX_KEEP_RUNS", "LastRun", "Scheduler", "Task", "TaskSpec"]
