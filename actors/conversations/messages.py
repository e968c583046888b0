"""The conversation actor's mailbox: one frozen message per request, each carrying its
reply slot (actors/conversations/actor.py serves them, one at a time)."""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors.actor import Reply
from actors.policy.rules import Offer
from actors.record.items import ConversationInfo, Goal, Item
from actors.runs.base import RunRequest


@attrs.frozen
class SendMsg:
    text: str
    images: tuple[str, ...] | None
    request: RunRequest
    reply: Reply[Item]
    edit_of: str | None = None
    plan: bool = False  # the message starts in plan mode
    goal: Goal | None = None  # the message sets the conversation's goal


@attrs.frozen
class StopMsg:
    reply: Reply[trio.Event | None]


@attrs.frozen
class ApprovalMsg:
    item: str
    approve: bool
    reply: Reply[tuple[str, Offer] | None]
    feedback: str | None = None
    local: bool = True
    always: bool = False  # approve, and keep the card's always-allow rule
    rule: dict[str, Any] | None = None  # with `always`: which of the card's offered rules (else the narrowest)


@attrs.frozen
class AnswerMsg:
    item: str
    answer: object
    local: bool
    reply: Reply[None]


@attrs.frozen
class CompactMsg:
    local: bool
    reply: Reply[None]


@attrs.frozen
class ResumeMsg:
    local: bool
    reply: Reply[None]


@attrs.frozen
class PatchMsg:
    changes: dict[str, Any]
    reply: Reply[ConversationInfo]


@attrs.frozen
class RewindMsg:
    item: str
    files: bool
    conversation: bool
    force: bool
    reply: Reply[Reply[dict[str, Any]]]  # a reply set once the rewind is done


@attrs.frozen
class DeleteMsg:
    reply: Reply[None]


Msg = SendMsg | StopMsg | ApprovalMsg | AnswerMsg | ResumeMsg | CompactMsg | PatchMsg | RewindMsg | DeleteMsg
