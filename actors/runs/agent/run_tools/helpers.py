"""Helpers (subagents): a task handed to another run of the built-in agent, with a
history of its own, so the parent's context holds only the helper's answer.

`task {description, prompt, subagent_type}` starts one: `explore` (the default) gets
the read tools and the commands that need no card; `general` gets the parent's tools
under the parent's mode, its approval cards answered through the parent conversation.
A helper runs inside the parent's call, so in the parent's cancel scope: a stop of the
parent ends it, and nothing of it outlives the parent's run; with `background: true` it
runs in the conversation's nursery instead and the call answers at once (background.py).
Its items stream as events that name the parent's card (`task`) and are kept on that
card, with its progress time; the parent reads its final answer. Helpers on the local
model take turns on the engine's line, at most Env.helpers of them at once (more wait,
the card says so). A helper cannot start another. `send_subagent_message {task,
message}` goes on with a finished helper for at most CONTINUE_ROUNDS more rounds; to one
still working (in the background) it is read at its next round (`inbox`).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import trio

from actors.errors import ToolError
from actors.ids import now
from actors.model.turns import ToolSpec
from actors.record.items import ConversationInfo, ConversationRecord, Item, user_item
from actors.record.transcript import Transcript
from actors.runs.base import RunEnd, RunRequest
from actors.runs.env import Env
from actors.tools.registry import RESULT_CAP_BYTES, cap_text

TASK = "task"
SEND = "send_subagent_message"
HELPER_ROUNDS = 20
CONTINUE_ROUNDS = 8
MAX_PROMPT_CHARS = 20_000
KINDS = ("explore", "general")
HelperKind = Literal["explore", "general"]

TASK_SPEC = ToolSpec(
    TASK,
    "Hand a task to a helper with a fresh context (its answer is all you get back): `explore` (default) to "
    "search and read the workspace without changing it, `general` to do work with your tools. Several tasks "
    "in one answer run at once. Give the helper everything it needs in `prompt`.",
    {
        "type": "object",
        "properties": {
            # minLength: the local model's grammar then cannot leave them empty.
            "description": {"type": "string", "minLength": 1, "description": "The task in a few words"},
            "prompt": {"type": "string", "minLength": 1, "description": "What the helper is to do, in full"},
            "subagent_type": {"type": "string", "enum": list(KINDS)},
        },
        "required": ["description", "prompt"],
    },
)
# The task a conversation's run is offered: it may also work in the background
# (background.py). A small model is offered TASK_SPEC (small/own_tools.py small_specs).
TASK_BG_SPEC = ToolSpec(
    TASK,
    TASK_SPEC.description + " With `background: true` the call answers at once with the helper's task id and "
    "the helper works on: read it with get_task_output, wait for it with wait_tasks, stop it with kill_task.",
    {**TASK_SPEC.parameters, "properties": {**TASK_SPEC.parameters["properties"], "background": {"type": "boolean"}}},
)
SEND_SPEC = ToolSpec(
    SEND,
    "Go on with a helper that finished (its task id is in its result): send it another message.",
    {
        "type": "object",
        "properties": {"task": {"type": "string", "minLength": 1}, "message": {"type": "string", "minLength": 1}},
        "required": ["task", "message"],
    },
)
SPECS = (TASK_BG_SPEC, SEND_SPEC)

HELPER_LINES = {
    "explore": "You are a helper doing one search for another agent: read and search, change nothing. "
               "Answer with what you found, briefly and exactly (paths, names, lines); that answer is all it sees.",
    "general": "You are a helper doing one task for another agent, with its tools. "
               "Answer with what you did and found, briefly; that answer is all it sees.",
}
WAITING = "Waiting for a free helper slot."
# A helper streaming a long answer writes its card this often (its progress shows).
KEEP_STREAMING_S = 5.0


def task_args(args: dict[str, Any]) -> tuple[str, str, HelperKind]:
    description, prompt = args.get("description"), args.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ToolError('The call needs "prompt": what the helper is to do, in full.')
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ToolError(f"The prompt is {len(prompt)} characters; keep it under {MAX_PROMPT_CHARS}.")
    kind = args.get("subagent_type") or "explore"
    if kind not in KINDS:
        raise ToolError(f'"subagent_type" is explore or general (got {kind!r}).')
    text = description if isinstance(description, str) and description.strip() else prompt[:60]
    return text.strip()[:120], prompt, "explore" if kind == "explore" else "general"


class ChildRun(Protocol):
    """A helper's run, as its helper drives it."""

    @property
    def rounds(self) -> int: ...

    inbox: list[str]  # messages sent to the helper while it works (send_subagent_message)

    async def loop(self) -> None: ...

    def finish(self, stop_notice: str | None) -> RunEnd: ...


class Parent(Protocol):
    """What a helper sees of the run that started it: its record, its environment and
    request, and how it starts a run of the same agent for the helper."""

    @property
    def t(self) -> Transcript: ...

    @property
    def env(self) -> Env: ...

    @property
    def req(self) -> RunRequest: ...

    def child_run(self, transcript: Transcript, request: RunRequest) -> ChildRun: ...


class _TaskPublisher:
    """A helper's events, as events of its parent's card."""

    def __init__(self, parent: Transcript, card_id: str) -> None:
        self._parent = parent
        self._card = card_id

    def publish(self, name: str, data: object, *, local_only: bool = False) -> object:
        if name not in ("item", "delta") or not isinstance(data, dict):
            return None  # the helper's own state is told on the card
        return self._parent.publish_task_event(name, {**data, "task": self._card})


class Helper:
    """One helper of a run: its record, and its runs (the task, then any continuation)."""

    def __init__(
        self, parent: Parent, card_id: str, kind: HelperKind, description: str, items: tuple[Item, ...] = (),
        rounds: int = 0,
    ) -> None:
        self.parent = parent
        self.card = card_id
        self.kind = kind
        self.description = description
        self.rounds = rounds
        self.state = "waiting"
        self.stop_notice = "The helper was stopped with its parent."  # what its cards say when cancelled
        self.progress = now()  # when it last wrote something (the helper tree's warning reads it)
        self.background = False  # it works in the background (background.py), its card done already
        self._kept = 0.0  # when its card was last written
        self.inbox: list[str] = []  # what send_subagent_message said while it works
        p = parent.t.info
        t = now()
        info = ConversationInfo(id=f"{p.id}.{card_id}", title=description, workspace=p.workspace, mode=p.mode,
                                route=p.route, agent="builtin", state="idle", created=t, updated=t)
        self.t = Transcript(ConversationRecord(info, items), _TaskPublisher(parent.t, card_id),
                            on_change=self._changed, waits_of=parent.t)

    @classmethod
    def from_card(cls, parent: Parent, card: Item) -> Helper | None:
        """A finished helper of an earlier run, from what its card kept."""
        kept = card.task or {}
        if kept.get("state") not in ("done", "error", "stopped"):
            return None
        kind: HelperKind = "general" if kept.get("kind") == "general" else "explore"
        items = tuple(Item.from_json(i) for i in kept.get("items") or ())
        helper = cls(parent, card.id, kind, str(kept.get("description") or ""), items, int(kept.get("rounds") or 0))
        helper.state = str(kept.get("state"))
        helper.background = bool(kept.get("background"))
        progress = kept.get("progress")
        helper.progress = float(progress) if isinstance(progress, (int, float)) else card.created
        return helper

    def _changed(self, urgent: bool) -> None:
        self.progress = now()
        if urgent or self.progress - self._kept > KEEP_STREAMING_S:
            self.keep()

    def keep(self) -> None:
        """Write the helper's state and items onto the parent's card."""
        self._kept = now()
        self.parent.t.update(self.card, urgent=False, task=self.view())

    def view(self) -> dict[str, Any]:
        return {"kind": self.kind, "description": self.description, "state": self.state, "rounds": self.rounds,
                "progress": self.progress, "background": self.background, "items": [i.to_json() for i in self.t.items]}

    async def work(self, message: str, rounds: int) -> str:
        """Run the helper on `message` for at most `rounds` rounds; its final answer.
        Cancelled (the parent stopped): its cards end, it says it stopped."""
        limit = self.parent.env.helpers if self.parent.t.info.route == "local" else None
        self.state = "waiting"
        self.t.upsert(user_item(message), urgent=True)
        async with _slot(limit, self):
            self.state = "running"
            self.keep()
            req = self.parent.req
            run = self.parent.child_run(self.t, RunRequest(
                local=req.local, unattended=req.unattended, think=req.think, helper=self.kind, max_rounds=rounds))
            run.inbox = self.inbox
            stopped = True
            try:
                await run.loop()
                stopped = False
            finally:
                end = run.finish(self.stop_notice if stopped else None)
                self.rounds += run.rounds
                self.state = "stopped" if stopped else ("error" if end.state == "error" else "done")
                self.keep()
        return answer_of(self.t.items)


class _slot:
    """A helper's place among those that may run at once (none to wait for on a provider)."""

    def __init__(self, limit: trio.CapacityLimiter | None, helper: Helper) -> None:
        self._limit = limit
        self._helper = helper

    async def __aenter__(self) -> None:
        if self._limit is None:
            return
        if self._limit.available_tokens == 0:
            self._helper.parent.t.update(self._helper.card, urgent=False, result=WAITING)
            self._helper.keep()
        await self._limit.acquire_on_behalf_of(self._helper)

    async def __aexit__(self, *exc: object) -> None:
        if self._limit is not None:
            self._limit.release_on_behalf_of(self._helper)


def answer_of(items: tuple[Item, ...]) -> str:
    """What the parent reads: the helper's last answer (capped), or why there is none."""
    for item in reversed(items):
        if item.kind == "assistant" and item.text and not item.tool_calls and not item.not_answer:
            return cap_text(item.text, RESULT_CAP_BYTES)
        if item.kind == "notice" and item.level in ("warn", "error"):
            return f"The helper gave no answer: {item.text}"
    return "The helper gave no answer."
