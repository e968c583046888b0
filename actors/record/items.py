"""Conversation records and their items, as immutable values.

An item is upserted by id: a change makes a new `Item` that replaces the old one in
the conversation's list. Only the fields of the item's kind are set; `to_json` leaves
the others out.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar, get_args

import attrs

from actors.ids import new_id, now
from actors.notices import EndedBy
from actors.record.budget import Budget, budget_from_json
from actors.record.client_tools import ClientTool
from actors.record.modes import MODES, Mode

ItemKind = Literal["user", "assistant", "tool", "notice"]
# `waiting_client`: a client's tool (actors/record/client_tools.py) waits for the client's result.
ToolState = Literal["composing", "running", "waiting", "waiting_client", "done", "denied", "error"]
ConversationState = Literal["idle", "running", "waiting", "error"]
NoticeLevel = Literal["info", "warn", "error"]
TodoStatus = Literal["pending", "in_progress", "completed"]
PlanState = Literal["drafting", "proposed", "approved", "rejected"]
GoalState = Literal["active", "complete", "blocked"]
# Why a run ended (`end_reason`): on the conversation and on the notice that ends it.
EndReason = Literal[
    "answered", "max_rounds", "stuck", "stopped", "error", "goal_complete", "goal_blocked", "plan_proposed", "question",
    "cut_off", "could_not", "budget",
]

KINDS: tuple[ItemKind, ...] = get_args(ItemKind)
TOOL_STATES: tuple[ToolState, ...] = get_args(ToolState)
CONVERSATION_STATES: tuple[ConversationState, ...] = get_args(ConversationState)
NOTICE_LEVELS: tuple[NoticeLevel, ...] = get_args(NoticeLevel)
TODO_STATUSES: tuple[TodoStatus, ...] = get_args(TodoStatus)
PLAN_STATES: tuple[PlanState, ...] = get_args(PlanState)
GOAL_STATES: tuple[GoalState, ...] = get_args(GoalState)
END_REASONS: tuple[EndReason, ...] = get_args(EndReason)
ENDED_BY: tuple[EndedBy, ...] = get_args(EndedBy)
FINAL_TOOL_STATES: tuple[ToolState, ...] = ("done", "denied", "error")

_ITEM_FIELDS = (
    "text",
    "reasoning",
    "streaming",
    "tool_calls",
    "images",
    "tool",
    "title",
    "args",
    "raw_args",
    "state",
    "bytes",
    "result",
    "diff",
    "file",
    "call_id",
    "shortened",
    "mcp",
    "mcp_host",
    "level",
    "end_reason",
    "for_model",
    "person_text",
    "ended_by",
    "rule",
    "rules",
    "allowed_by",
    "compacted",
    "compaction",
    "task",
    "usage",
    "not_answer",
    "checking",
)

ITEM_FIELDS: tuple[str, ...] = _ITEM_FIELDS  # every field an item may have besides id, kind and created

_L = TypeVar("_L", bound=str)


def _one_of(value: Any, allowed: tuple[_L, ...], what: str) -> _L:
    """`value` when it is one of `allowed`; ValueError otherwise (a damaged file)."""
    if value.__class__ is str and value in allowed:
        return value
    for choice in allowed:
        if value == choice:
            return choice
    raise ValueError(f"unknown {what} {value!r}")


@attrs.frozen
class ToolCall:
    id: str
    name: str
    arguments: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@attrs.frozen
class Item:
    id: str
    kind: ItemKind
    created: float = attrs.field(factory=now)
    text: str | None = None
    reasoning: str | None = None
    streaming: bool | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    images: tuple[str, ...] | None = None
    tool: str | None = None
    title: str | None = None
    args: dict[str, Any] | None = None
    raw_args: str | None = None
    state: ToolState | None = None
    bytes: int | None = None
    result: str | None = None
    diff: str | None = None
    file: str | None = None
    call_id: str | None = None
    shortened: bool | None = None
    mcp: str | None = None
    mcp_host: str | None = None  # a remote MCP server's host: the call's arguments leave the computer for it
    level: NoticeLevel | None = None
    end_reason: EndReason | None = None
    for_model: bool | None = None  # a notice the model reads too (a goal's reminder)
    # The person's words when `text` (a for-model notice) or `result` (a card that did
    # not run) is written for the model: a UI shows these instead (actors/notices.py).
    person_text: str | None = None
    ended_by: EndedBy | None = None  # a card that did not run: who or what ended it
    rule: str | None = None  # a waiting card: the always-allow rule `approve_always` keeps (the narrowest)
    # ... and every rule it offers, narrowest first: {kind, text, exact, covers} (actors/policy/rules.py)
    rules: list[dict[str, Any]] | None = None
    allowed_by: str | None = None  # a call that ran without a card because of this rule
    compacted: bool | None = None  # summarised: the model reads the compaction notice instead
    compaction: dict[str, Any] | None = None  # a compaction notice's record (actors/runs/agent/compaction_cut.py)
    task: dict[str, Any] | None = None  # a `task` card: its helper's kind, state, rounds and items
    usage: dict[str, int] | None = None  # an answer's {prompt_tokens, completion_tokens, cached_tokens}
    # An answer the run's record contradicts (a change nobody made, a file that is not
    # there): the model reads it, the person is shown the notice after it instead.
    not_answer: bool | None = None
    # An answer of a led model that is still to be checked against the record (written,
    # or being written): the person is shown that it is being checked, not its words,
    # until the check passes (the flag goes) or fails (not_answer).
    checking: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "created": self.created}
        for name in _ITEM_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if name == "tool_calls":
                value = [c.to_json() for c in value]
            elif name == "images":
                value = list(value)
            out[name] = value
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Item:
        kwargs: dict[str, Any] = {"id": str(data["id"]), "kind": _one_of(data["kind"], KINDS, "item kind")}
        if "created" in data:
            kwargs["created"] = float(data["created"])
        for name in _ITEM_FIELDS:
            if name not in data or data[name] is None:
                continue
            value = data[name]
            if name == "tool_calls":
                value = tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in value)
            elif name == "images":
                value = tuple(str(v) for v in value)
            elif name == "state":
                value = _one_of(value, TOOL_STATES, "tool state")
            elif name == "level":
                value = _one_of(value, NOTICE_LEVELS, "notice level")
            elif name == "end_reason":
                value = _one_of(value, END_REASONS, "end reason")
            elif name == "ended_by":
                value = _one_of(value, ENDED_BY, "ended by")
            kwargs[name] = value
        return cls(**kwargs)


def user_item(text: str, images: tuple[str, ...] | None = None) -> Item:
    return Item(id=new_id("i"), kind="user", text=text, images=images or None)


def notice_item(text: str, level: NoticeLevel = "info", end_reason: EndReason | None = None) -> Item:
    return Item(id=new_id("i"), kind="notice", text=text, level=level, end_reason=end_reason)


def model_notice(text: str, person_text: str, level: NoticeLevel = "info") -> Item:
    """A notice the model reads (`text`, written for it), with the person's words."""
    return Item(id=new_id("i"), kind="notice", text=text, level=level, for_model=True, person_text=person_text)


@attrs.frozen
class Todo:
    """One entry of a conversation's todo list (`todo_write`)."""

    content: str
    status: TodoStatus

    def to_json(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Todo:
        return cls(str(data["content"]), _one_of(data["status"], TODO_STATUSES, "todo status"))


@attrs.frozen
class PlanInfo:
    """Where a conversation's plan stands (its text is the plan file's)."""

    revision: int  # how many times it was proposed (each exit_plan_mode adds one)
    state: PlanState

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "state": self.state}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanInfo:
        return cls(int(data["revision"]), _one_of(data["state"], PLAN_STATES, "plan state"))


@attrs.frozen
class Goal:
    """What the conversation's runs work to reach (actors/runs/agent/run_tools/goals.py)."""

    text: str
    state: GoalState = "active"
    reason: str | None = None  # why it is blocked, or what the check said
    verify: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "state": self.state, "reason": self.reason, "verify": self.verify}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Goal:
        return cls(str(data["text"]), _one_of(data.get("state", "active"), GOAL_STATES, "goal state"),
                   data.get("reason"), bool(data.get("verify", True)))


@attrs.frozen
class ConversationInfo:
    """Everything of a conversation but its items."""

    id: str
    title: str
    workspace: str | None
    mode: Mode
    route: str
    agent: str
    state: ConversationState
    created: float
    updated: float
    task: str | None = None
    acp_session: str | None = None
    todos: tuple[Todo, ...] = ()
    end_reason: EndReason | None = None  # why the last run ended; None before one ends
    plan_mode: bool = False
    plan: PlanInfo | None = None
    goal: Goal | None = None
    instructions: tuple[str, ...] = ()  # the instruction files the last round used
    instructions_delivered: tuple[str, ...] = ()  # nested ones already given with a result
    context: tuple[int, int] | None = None  # (tokens the last round used, the context's size)
    # Its cards waiting for the person (a helper's on a task card too): kept by its
    # Transcript as cards start and stop waiting, read from the items whenever it starts.
    waiting_cards: int = 0
    # What its answers may spend before a run ends `budget` (actors/record/budget.py).
    budget: Budget | None = None
    # The tools its client brought (their handlers stay in the client), and whether the
    # daemon's own tools (files, commands, search, helpers) are offered beside them;
    # without them, MCP tools only when `mcp_tools`.
    client_tools: tuple[ClientTool, ...] = ()
    workspace_tools: bool = True
    mcp_tools: bool = False

    @property
    def local_only(self) -> bool:
        """Its events go to local subscribers only: it reaches this computer's files or
        secrets (a workspace, a provider route)."""
        return self.workspace is not None or self.route != "local"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConversationInfo:
        """The conversation as a file's head (or the index's entry) holds it. Written
        for speed as well as checks: a start with a long history makes one per
        conversation (the optional parts are read only when present)."""
        if not isinstance(data, dict):
            raise ValueError(f"a conversation is a JSON object, not {type(data).__name__}")
        get = data.get
        todos, plan, goal, context = get("todos"), get("plan"), get("goal"), get("context")
        instructions, delivered, end_reason = get("instructions"), get("instructions_delivered"), get("end_reason")
        budget = get("budget")
        client_tools, workspace_tools = get("tools"), get("workspace_tools")
        return cls(
            id=str(data["id"]),
            title=str(get("title") or ""),
            workspace=get("workspace"),
            mode=_one_of(get("mode") or "ask", MODES, "mode"),
            route=str(get("route") or "local"),
            agent=str(get("agent") or "builtin"),
            state=_one_of(get("state") or "idle", CONVERSATION_STATES, "conversation state"),
            created=float(get("created") or 0),
            updated=float(get("updated") or 0),
            task=get("task"),
            acp_session=get("acp_session"),
            todos=tuple(Todo.from_json(t) for t in todos) if todos else (),
            end_reason=_one_of(end_reason, END_REASONS, "end reason") if end_reason else None,
            plan_mode=bool(get("plan_mode")),
            plan=PlanInfo.from_json(plan) if plan else None,
            goal=Goal.from_json(goal) if goal else None,
            instructions=tuple(str(p) for p in instructions) if instructions else (),
            instructions_delivered=tuple(str(p) for p in delivered) if delivered else (),
            context=(int(context["used"]), int(context["size"])) if context else None,
            waiting_cards=int(get("waiting_cards") or 0),
            budget=budget_from_json(budget) if budget else None,
            client_tools=tuple(ClientTool.from_json(t) for t in client_tools) if client_tools else (),
            workspace_tools=workspace_tools is not False,
            mcp_tools=bool(get("mcp_tools")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "workspace": self.workspace,
            "mode": self.mode,
            "route": self.route,
            "agent": self.agent,
            "state": self.state,
            "created": self.created,
            "updated": self.updated,
            "task": self.task,
            "todos": [t.to_json() for t in self.todos],
            "end_reason": self.end_reason,
            "plan_mode": self.plan_mode,
            "plan": self.plan.to_json() if self.plan is not None else None,
            "goal": self.goal.to_json() if self.goal is not None else None,
            "instructions": list(self.instructions),
            "context": {"used": self.context[0], "size": self.context[1]} if self.context else None,
            "waiting_cards": self.waiting_cards,
            "budget": self.budget.to_json() if self.budget is not None else None,
            "tools": [t.to_json() for t in self.client_tools],
            "workspace_tools": self.workspace_tools,
            "mcp_tools": self.mcp_tools,
        }


@attrs.frozen
class ConversationRecord:
    """What the store writes: the conversation and its items."""

    info: ConversationInfo
    items: tuple[Item, ...]

    def head_json(self) -> dict[str, Any]:
        """Everything the file holds but the items: what a client is shown of the
        conversation and what only the daemon keeps."""
        out = self.info.to_json()
        out["acp_session"] = self.info.acp_session
        out["instructions_delivered"] = list(self.info.instructions_delivered)
        return out

    def to_json(self) -> dict[str, Any]:
        out = self.head_json()
        out["items"] = [i.to_json() for i in self.items]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ConversationRecord:
        info = ConversationInfo.from_json(data)  # first: it checks `data` is a conversation's
        return cls(info, tuple(Item.from_json(i) for i in data.get("items") or ()))

