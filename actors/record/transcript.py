"""A conversation's record as it lives in memory: its info, its items, the approvals
that wait, and what is not saved yet.

It also keeps the info's count of cards waiting for the person (`waiting_cards`, what
a list of conversations shows): counted from the items when it is made, then moved by
each change of an item (a `conversation` event says each new count), so a count read
from the index after a restart is the one its items give.

Every change goes through this class, which publishes it (`conversation`, `item` and
`delta` events) and counts it for the saver. A run changes the conversation only
through these methods; the conversation actor (actors/conversations/actor.py) owns one
`Transcript` and its saver writes what `changes()` says is new.

Trio runs one task at a time, so the methods need no lock: each is a whole change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

import attrs
import trio

from actors import notices
from actors.errors import NotFound
from actors.ids import now
from actors.record import cards
from actors.record.cards import ASK_USER
from actors.record.items import (
    ConversationInfo,
    ConversationRecord,
    ConversationState,
    EndReason,
    Item,
    NoticeLevel,
    notice_item,
)


class Publisher(Protocol):
    def publish(self, name: str, data: object, *, local_only: bool = False) -> object: ...


# What a card waits for: a person's yes or no (an approval), their answer to a question,
# or a client's result for a call of its tool (`client`: the conversation stays `running`).
WaitKind = Literal["approval", "question", "client"]


@attrs.define(eq=False)
class _Wait:
    kind: WaitKind
    event: trio.Event = attrs.Factory(trio.Event)
    answered: bool = False
    answer: object = None


class Transcript:
    """See the module docstring."""

    def __init__(
        self, record: ConversationRecord, bus: Publisher, *,
        on_change: Callable[[bool], None] | None = None, waits_of: Transcript | None = None,
    ) -> None:
        """`on_change(urgent)` is told of every change (a helper's record, kept on its
        parent's card); `waits_of`: the transcript whose approvals this one's cards wait
        in (a helper's cards are answered through its parent conversation)."""
        self._items: list[Item] = list(record.items)
        waiting = sum(cards_waiting(i) for i in self._items)
        self._info = record.info if record.info.waiting_cards == waiting else attrs.evolve(
            record.info, waiting_cards=waiting)
        self._bus = bus
        self._on_change = on_change
        self._waits_of = waits_of
        self._waits: dict[str, _Wait] = {}
        self._version = 0
        self._urgent = False
        self._changed = trio.Event()
        # Set while the daemon shuts down: a card its stop ends was not the person's to stop.
        self._daemon_stopping = False

    # ---- reading ----

    @property
    def id(self) -> str:
        return self._info.id

    @property
    def info(self) -> ConversationInfo:
        return self._info

    @property
    def items(self) -> tuple[Item, ...]:
        return tuple(self._items)

    @property
    def count(self) -> int:
        """How many items (without copying them)."""
        return len(self._items)

    @property
    def local_only(self) -> bool:
        """See ConversationInfo.local_only."""
        return self._info.local_only

    def record(self) -> ConversationRecord:
        return ConversationRecord(self._info, tuple(self._items))

    def to_json(self) -> dict[str, Any]:
        out = self._info.to_json()
        out["items"] = [i.to_json() for i in self._items]
        return out

    def position(self, item_id: str) -> int | None:
        for i in range(len(self._items) - 1, -1, -1):
            if self._items[i].id == item_id:
                return i
        return None

    def find(self, item_id: str) -> Item | None:
        pos = self.position(item_id)
        return None if pos is None else self._items[pos]

    def item(self, item_id: str) -> Item:
        """The item; KeyError when it is not (any more) in the conversation."""
        pos = self.position(item_id)
        if pos is None:
            raise KeyError(item_id)
        return self._items[pos]

    def has_notice(self, text: str) -> bool:
        return any(i.kind == "notice" and i.text == text for i in self._items)

    # ---- changing ----

    def set_info(self, **changes: Any) -> None:
        """Change the conversation's fields; a `conversation` event when one a client
        lists changed."""
        before = (self._info.title, self._info.state)
        self._info = attrs.evolve(self._info, updated=now(), **changes)
        self._touch(urgent=True)
        if (self._info.title, self._info.state) != before or set(changes) - {"title", "state"}:
            self.publish_info()

    def publish_info(self) -> None:
        info = self._info
        self._bus.publish(
            "conversation",
            info_event(info),
            local_only=self.local_only,
        )

    @property
    def daemon_stopping(self) -> bool:
        """The daemon is shutting down (a helper's record asks its parent's)."""
        return self._waits_of.daemon_stopping if self._waits_of is not None else self._daemon_stopping

    def daemon_stops(self) -> None:
        """The run's stop that follows is the daemon's shutdown, not the person's (for
        good: a conversation the daemon closes starts no run again)."""
        self._daemon_stopping = True

    def upsert(self, item: Item, *, urgent: bool, publish: bool = True) -> None:
        """Add the item, or replace the one of its id. `urgent`: saved durably at once
        (an item completed); otherwise with the next interim save (a streaming item).
        A card that ends without running gets who ended it and the person's words for
        its result (notices.card_end), whichever part of the daemon ended it."""
        item = with_card_end(item, daemon_stopping=self.daemon_stopping)
        pos = self.position(item.id)
        before = 0
        if pos is None:
            self._items.append(item)
        else:
            before = cards_waiting(self._items[pos])
            self._items[pos] = item
        self._touch(urgent=urgent)
        if publish:
            self.publish_item(item)
        self._count_waiting(cards_waiting(item) - before)

    def update(self, item_id: str, *, urgent: bool = True, **changes: Any) -> Item | None:
        """Change fields of an item that is there (None when it is gone)."""
        current = self.find(item_id)
        if current is None:
            return None
        item = attrs.evolve(current, **changes)
        self.upsert(item, urgent=urgent)
        return item

    def publish_task_event(self, name: str, data: dict[str, Any]) -> object:
        """A helper's `item` or `delta` event, as an event of this conversation."""
        return self._bus.publish(name, {**data, "conversation": self.id}, local_only=self.local_only)

    def publish_item(self, item: Item) -> None:
        """Send an `item` event without storing the item (a card ended live only)."""
        self._bus.publish("item", {"conversation": self.id, "item": item.to_json()}, local_only=self.local_only)

    def prefill(self, done: int, total: int) -> None:
        """How far the model has read the round's prompt, before it writes: a `prefill`
        event, not stored (the next `delta` or `item` supersedes it)."""
        self._bus.publish("prefill", {"conversation": self.id, "done": done, "total": total},
                          local_only=self.local_only)

    def turn_line(self, behind: str | None) -> None:
        """Where the run's round stands on the model's turn line: queued `behind` the
        turn of another conversation (its id), or reached (None). A `turn_line` event,
        not stored."""
        self._bus.publish("turn_line", {"conversation": self.id, "behind": behind}, local_only=self.local_only)

    def delta(self, item_id: str, *, text: str = "", reasoning: str = "") -> None:
        data: dict[str, Any] = {"conversation": self.id, "item": item_id}
        if text:
            data["text"] = text
        if reasoning:
            data["reasoning"] = reasoning
        self._bus.publish("delta", data, local_only=self.local_only)

    def insert_before(self, before_id: str, item: Item) -> None:
        """Add an item just before another (a compaction's summary before the kept part)."""
        pos = self.position(before_id)
        if pos is None:
            raise KeyError(before_id)
        self._items.insert(pos, item)
        self._touch(urgent=True)
        self.publish_item(item)
        self._count_waiting(cards_waiting(item))

    def drop(self, item_id: str) -> None:
        pos = self.position(item_id)
        if pos is not None:
            gone = cards_waiting(self._items[pos])
            del self._items[pos]
            self._touch(urgent=False)
            self._count_waiting(-gone)

    def drop_from(self, item_id: str) -> Item:
        """Drop the item and everything after it; the item dropped (KeyError when absent)."""
        pos = self.position(item_id)
        if pos is None:
            raise KeyError(item_id)
        first = self._items[pos]
        gone = sum(cards_waiting(i) for i in self._items[pos:])
        del self._items[pos:]
        self._touch(urgent=True)
        self._count_waiting(-gone)
        return first

    def _count_waiting(self, change: int) -> None:
        """The items changed the count of cards waiting by `change`: the info takes the
        new count (its time is not the change's: a card's wait is not an edit of the
        conversation), saved at once, and a `conversation` event says it."""
        if change:
            self._info = attrs.evolve(self._info, waiting_cards=self._info.waiting_cards + change)
            self.mark_urgent()
            self.publish_info()

    def publish_plan(self, text: str) -> None:
        """A `plan` event: the plan as it stands (its text, revision and state)."""
        data = {"conversation": self.id, **cards.view(text, self._info.plan, self._info.plan_mode)}
        self._bus.publish("plan", data, local_only=self.local_only)

    def notice(self, text: str, level: NoticeLevel = "info", end_reason: EndReason | None = None) -> None:
        self.upsert(notice_item(text, level, end_reason), urgent=True)

    # ---- approvals ----

    async def wait_answer(self, card_id: str, kind: WaitKind) -> tuple[bool, object]:
        """Wait for the person's answer to the card: (True, the answer), or (False, None)
        when the wait was ended without one (`cancel_approvals`). The conversation reads
        `waiting` while any card waits. Cancelled: the card stops waiting, nothing else."""
        if self._waits_of is not None:
            return await self._waits_of.wait_answer(card_id, kind)
        slot = self._waits[card_id] = _Wait(kind)
        if self._info.state != "waiting" and kind != "client":
            self.set_info(state="waiting")
        try:
            await slot.event.wait()
        finally:
            self._waits.pop(card_id, None)
            if self._info.state == "waiting" and not any(w.kind != "client" for w in self._waits.values()):
                # A run is going while its end is not told (end_reason None); else the card
                # was a background helper's, after the run's answer (run_tools/background.py).
                self.set_info(state="running" if self._info.end_reason is None else "idle")
        return slot.answered, slot.answer

    async def wait_approval(self, card_id: str) -> cards.Decision | None:
        """An approval's answer (yes or no, and what the person said with a no), or None
        when the wait ended without one."""
        answered, answer = await self.wait_answer(card_id, "approval")
        if not answered:
            return None
        return answer if isinstance(answer, cards.Decision) else cards.Decision(bool(answer))

    def answer(self, card_id: str, value: object, kind: WaitKind = "approval") -> None:
        """The person's answer; NotFound when that card is not waiting for one of `kind`."""
        slot = self._waits.get(card_id)
        if slot is None or slot.kind != kind or slot.event.is_set():
            what = {"approval": "an approval", "question": "an answer", "client": "a result"}[kind]
            raise NotFound(f"That card is not waiting for {what}.")
        slot.answered, slot.answer = True, value
        slot.event.set()

    def request_client(self, card: Item, timeout_s: float) -> None:
        """A `tool_request` event: the card's call waits for its client's result
        (POST .../tool_result), at most `timeout_s`."""
        self._bus.publish("tool_request", {
            "conversation": self.id, "item": card.id, "call_id": card.call_id, "name": card.tool,
            "arguments": card.args or {}, "timeout_s": timeout_s,
        }, local_only=self.local_only)

    def cancel_approvals(self) -> None:
        """End every wait without an answer."""
        for slot in self._waits.values():
            slot.event.set()

    def waiting_for(self, card_id: str) -> WaitKind | None:
        """What the card waits for in a run going now, or None."""
        slot = self._waits.get(card_id)
        return slot.kind if slot is not None and not slot.event.is_set() else None

    # ---- what is not saved yet (read by the conversation's saver) ----

    @property
    def version(self) -> int:
        """Counts every change; the saver compares it with what it wrote last."""
        return self._version

    def _touch(self, *, urgent: bool) -> None:
        self._version += 1
        self._urgent = self._urgent or urgent
        self._changed.set()
        if self._on_change is not None:
            self._on_change(urgent)

    def mark_urgent(self) -> None:
        """Have the next save happen at once and durably (a flush)."""
        self._urgent = True
        self._changed.set()

    @property
    def urgent(self) -> bool:
        return self._urgent

    async def wait_changed(self) -> None:
        """Wait until something changed since the last `take_changes`."""
        await self._changed.wait()

    async def wait_urgent(self) -> None:
        """Wait until a change that must be saved at once (or a flush)."""
        while not self._urgent:
            self._changed = trio.Event()
            await self._changed.wait()

    def take_changes(self) -> tuple[int, bool]:
        """(the version to save, whether durably) and start counting afresh."""
        self._changed = trio.Event()
        urgent, self._urgent = self._urgent, False
        return self._version, urgent


def cards_waiting(item: Item) -> int:
    """How many cards of the item wait for the person: a tool card waiting, and on a
    `task` card, its helper's cards that wait (answered through this conversation)."""
    if item.kind != "tool":
        return 0
    own = int(item.state == "waiting")
    if not item.task:
        return own
    helper = item.task.get("items") or ()
    return own + sum(1 for i in helper
                     if isinstance(i, dict) and i.get("kind") == "tool" and i.get("state") == "waiting")


# Cards a person can still answer after a restart (a question, a proposed plan): the
# answer starts a run that goes on from it.
ANSWERABLE_AFTER_RESTART = (ASK_USER, cards.EXIT_PLAN)


def info_event(info: ConversationInfo) -> dict[str, Any]:
    """A `conversation` event's data: what a list of conversations shows and what a
    page needs to follow the run (its todo list, why the last run ended)."""
    return {
        "id": info.id, "title": info.title, "state": info.state, "updated": info.updated,
        "todos": [t.to_json() for t in info.todos], "end_reason": info.end_reason,
        "plan_mode": info.plan_mode, "plan": info.plan.to_json() if info.plan is not None else None,
        "goal": info.goal.to_json() if info.goal is not None else None,
        "context": {"used": info.context[0], "size": info.context[1]} if info.context else None,
        "waiting_cards": info.waiting_cards,
        "budget": info.budget.to_json() if info.budget is not None else None,
    }


def _helper_working(item: Item) -> bool:
    return item.kind == "tool" and bool(item.task) and (item.task or {}).get("state") in ("waiting", "running")


def _helper_ended(info: ConversationInfo, item: Item) -> Item:
    """A helper that was working at a restart: its own record ends too (its items, their
    states); one in the background (its card done already) says why in its items."""
    assert item.task is not None
    inner = restored(ConversationRecord(attrs.evolve(info, state="running", end_reason=None),
                                        tuple(Item.from_json(i) for i in item.task.get("items") or ())))
    background = item.state == "done"
    kept = [i.to_json() for i in inner.items if background or i.kind != "notice" or i.text != notices.RESTARTED]
    return attrs.evolve(item, task={**item.task, "state": "stopped", "items": kept})


def with_card_end(item: Item, *, daemon_stopping: bool = False) -> Item:
    """`item`, with `ended_by` and `person_text` when it is a card that ended without
    running on one of the daemon's refusals (notices.card_end); as it was otherwise."""
    if item.kind != "tool" or item.state not in ("denied", "error", "done") or item.result is None:
        return item
    if item.ended_by is not None or item.person_text is not None:
        return item
    by, person = notices.card_end(item.result, daemon_stopping=daemon_stopping)
    if by is None and person is None:
        return item
    return attrs.evolve(item, ended_by=by, person_text=person)


def restored(record: ConversationRecord) -> ConversationRecord:
    """A record read at start: a conversation that was running reads `idle` with a
    notice; what was in flight ends (a card that waited for a person `denied`, a call
    that was being written or run `error`), so its history is whole."""
    info = record.info
    if info.state not in ("running", "waiting"):
        # No run was going, but a helper in the background may have been working.
        if not any(_helper_working(i) for i in record.items):
            return record
        ended = tuple(_helper_ended(info, i) if _helper_working(i) else i for i in record.items)
        return ConversationRecord(attrs.evolve(info, updated=now()), ended)
    items: list[Item] = []
    question = False
    for item in record.items:
        if item.kind == "assistant" and (item.streaming or item.checking):
            item = attrs.evolve(item, streaming=False, checking=None)
        elif item.kind == "tool" and item.state == "waiting" and item.tool in ANSWERABLE_AFTER_RESTART:
            question = True  # still answerable: the answer starts a run that goes on from it
        elif item.kind == "tool" and item.state == "waiting":
            item = with_card_end(attrs.evolve(item, state="denied", result=notices.DENIED_RESTARTED))
        elif item.kind == "tool" and item.state == "waiting_client":
            item = with_card_end(attrs.evolve(item, state="error", result=notices.CLIENT_RESTARTED))
        elif item.kind == "tool" and item.state in ("composing", "running"):
            item = with_card_end(attrs.evolve(item, state="error", result=notices.ERROR_RESTARTED))
        if _helper_working(item):
            item = _helper_ended(info, item)
        items.append(item)
    if info.end_reason is None:  # a run was going (a question restored before has a reason)
        items.append(notice_item(notices.RESTARTED, "warn", "stopped"))
    state: ConversationState = "waiting" if question else "idle"
    info = attrs.evolve(info, state=state, end_reason="stopped", updated=now(),
                        waiting_cards=sum(cards_waiting(i) for i in items))
    return ConversationRecord(info, tuple(items))
