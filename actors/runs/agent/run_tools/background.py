"""Helpers in the background: `task {background: true}` answers at once with the
helper's id and the helper works on in the conversation's nursery, not in the call.

One `Background` belongs to a conversation (its actor makes it and hands it to every
run), so a helper started by one message's run keeps working past that run's answer,
and the run of a later message reads it: `get_task_output {id}` (its state and what it
has written so far), `wait_tasks {ids, timeout_s}` (waits for them to end, at most
MAX_WAIT_S; the parent holds no turn of the model while it waits), `kill_task {id}`
(a cancel of the helper's own scope: its round and its commands end as a stop ends
them). A stop of the conversation stops them all (`stop_all`); the actor's close
cancels them with its nursery, and a restart ends a card still working
(actors/record/transcript.py `restored`). Each waits for a slot like any helper
(helpers.py `_slot`), so the turn line is shared as before.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors.errors import ToolError
from actors.ids import now
from actors.model.turns import ToolSpec
from actors.record.items import Item
from actors.tools.registry import RESULT_CAP_BYTES, cap_text

if TYPE_CHECKING:  # each conversation holds a Background; the helpers' code comes with a first run
    from actors.runs.agent.run_tools.helpers import Helper

log = logging.getLogger("bmoe.helpers")

GET_OUTPUT = "get_task_output"
WAIT = "wait_tasks"
KILL = "kill_task"
NAMES = (GET_OUTPUT, WAIT, KILL)
TITLES = {GET_OUTPUT: "Read a helper's output", WAIT: "Wait for helpers", KILL: "Stop a helper"}
DEFAULT_WAIT_S = 60.0
MAX_WAIT_S = 600.0
STALL_S = 120.0  # a helper working with no progress for this long is flagged in the helper tree
KILLED = "The helper was stopped (kill_task)."
STOPPED = "The helper was stopped with the conversation."

_ID = {"type": "string", "minLength": 1, "description": "The helper's task id (its card)"}
GET_OUTPUT_SPEC = ToolSpec(
    GET_OUTPUT, "A background helper's state and what it has written so far.",
    {"type": "object", "properties": {"id": _ID}, "required": ["id"]},
)
WAIT_SPEC = ToolSpec(
    WAIT, f"Wait until background helpers end (at most timeout_s seconds, {int(MAX_WAIT_S)} at most); "
          "their states and answers.",
    {"type": "object", "properties": {
        "ids": {"type": "array", "items": _ID, "minItems": 1},
        "timeout_s": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S}}, "required": ["ids"]},
)
KILL_SPEC = ToolSpec(
    KILL, "Stop a background helper and everything it started.",
    {"type": "object", "properties": {"id": _ID}, "required": ["id"]},
)
SPECS = (GET_OUTPUT_SPEC, WAIT_SPEC, KILL_SPEC)


@attrs.define
class Working:
    """One background helper: its scope (kill_task cancels it) and its end."""

    helper: Helper
    scope: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    ended: trio.Event = attrs.field(factory=trio.Event)


class Background:
    """See the module docstring."""

    def __init__(self) -> None:
        self.nursery: trio.Nursery | None = None  # the conversation actor's, once it serves
        self._all: dict[str, Working] = {}

    @property
    def working(self) -> bool:
        """Whether a background helper has not ended yet."""
        return any(not w.ended.is_set() for w in self._all.values())

    def helpers(self) -> list[Working]:
        return list(self._all.values())

    def start(self, helper: Helper, message: str, rounds: int) -> None:
        if self.nursery is None:
            raise ToolError("Background helpers cannot start here; call task without background.")
        working = self._all[helper.card] = Working(helper)
        helper.background = True
        self.nursery.start_soon(self._work, working, message, rounds)

    async def _work(self, working: Working, message: str, rounds: int) -> None:
        try:
            with working.scope:
                await working.helper.work(message, rounds)
        except Exception:
            # A bug in a helper ends that helper, never the conversation's actor.
            log.exception("background helper %s failed", working.helper.card)
            working.helper.state = "error"
            working.helper.keep()
        finally:
            working.ended.set()

    def find(self, task: object) -> Working:
        found = self._all.get(task) if isinstance(task, str) else None
        if found is None:
            known = ", ".join(self._all) or "none yet"
            raise ToolError(f"There is no background helper {task!r}. Background helpers here: {known}.")
        return found

    def output(self, task: object) -> str:
        w = self.find(task)
        return _report(w)

    async def wait(self, args: dict[str, Any]) -> str:
        ids = args.get("ids")
        if not isinstance(ids, list) or not ids:
            raise ToolError('The call needs "ids": the task ids of the helpers to wait for.')
        found = [self.find(i) for i in ids]
        timeout = args.get("timeout_s", DEFAULT_WAIT_S)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout < 0:
            raise ToolError(f'"timeout_s" is a number of seconds from 0 to {int(MAX_WAIT_S)}.')
        with trio.move_on_after(min(float(timeout), MAX_WAIT_S)):
            for w in found:
                await w.ended.wait()
        return "\n\n".join(_report(w) for w in found)

    async def kill(self, task: object) -> str:
        w = self.find(task)
        if w.ended.is_set():
            return f"The helper had already ended ({w.helper.state})."
        w.helper.stop_notice = KILLED
        w.scope.cancel()
        await w.ended.wait()  # the helper's commands end within the stop bound of their tools
        return f"Stopped the helper {w.helper.card}."

    def stop_all(self) -> trio.Event | None:
        """A stop of the conversation: every background helper is cancelled; an event
        set once they have all ended, None when none was working."""
        going = [w for w in self._all.values() if not w.ended.is_set()]
        if not going:
            return None
        for w in going:
            w.helper.stop_notice = STOPPED
            w.scope.cancel()
        all_ended = trio.Event()

        async def watch() -> None:
            for w in going:
                await w.ended.wait()
            all_ended.set()

        assert self.nursery is not None
        self.nursery.start_soon(watch)
        return all_ended


def _report(w: Working) -> str:
    h = w.helper
    head = f"[task id: {h.card}] {h.description} — {h.state}, {h.rounds} rounds"
    if h.state in ("done", "error", "stopped"):
        from actors.runs.agent.run_tools.helpers import answer_of

        return f"{head}\n{answer_of(h.t.items)}"
    written = [i.text for i in h.t.items if i.kind == "assistant" and i.text]
    so_far = "\n".join(written[-3:]) if written else "Nothing written yet."
    return f"{head}\nSo far:\n{cap_text(so_far, RESULT_CAP_BYTES)}"


def tree(items: tuple[Item, ...], *, stall_s: float = STALL_S, at: float | None = None) -> list[dict[str, Any]]:
    """The conversation's helpers, from their cards (so those of earlier messages and of
    before a restart too), as the nodes of a tree: `parent` None is the conversation's
    own run (`message`: the message it worked). A helper cannot start another, so none
    has children yet. `stalled`: it is working and has written nothing for `stall_s`."""
    at = now() if at is None else at
    nodes: list[dict[str, Any]] = []
    message: str | None = None
    for item in items:
        if item.kind == "user":
            message = item.id
        from actors.runs.agent.run_tools.helpers import TASK

        if item.kind != "tool" or item.tool != TASK or not item.task:
            continue
        kept = item.task
        state = str(kept.get("state") or "waiting")
        progress = kept.get("progress")
        last = float(progress) if isinstance(progress, (int, float)) else item.created
        nodes.append({
            "id": item.id, "kind": kept.get("kind") or "explore", "description": kept.get("description") or "",
            "state": state, "rounds": int(kept.get("rounds") or 0), "background": bool(kept.get("background")),
            "progress": last, "stalled": state == "running" and at - last > stall_s,
            "parent": None, "message": message, "children": [],
        })
    return nodes
