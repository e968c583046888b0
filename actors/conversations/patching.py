"""What a PATCH of a conversation may change, checked against the conversation as it
stands (no I/O: the conversation actor, actors/conversations/actor.py, applies the
result to its transcript)."""

from __future__ import annotations

from typing import Any

import attrs

from actors import notices
from actors.errors import Busy, Invalid
from actors.record.items import ConversationInfo, Goal


def checked_changes(
    info: ConversationInfo, changes: dict[str, Any], *, running: bool, has_items: bool, chat_only: bool,
) -> dict[str, Any]:
    """The changes to set on the conversation's info, the goal's text and `verify` made
    into a `Goal`; Invalid or Busy when the conversation, as it stands, cannot take them."""
    if changes.get("workspace") is not None and chat_only:
        raise Invalid(notices.CHAT_ONLY_NO_WORKSPACE)
    if running and ("workspace" in changes or "route" in changes):
        raise Busy("The workspace and the model route cannot change while the conversation runs.")
    if "agent" in changes and changes["agent"] != info.agent and has_items:
        raise Busy("The agent is chosen before the first message; start a new conversation for another.")
    if changes.get("agent", "builtin") != "builtin" and (info.client_tools or not info.workspace_tools):
        raise Invalid("Another agent brings its own tools; this conversation has a client's tools (or none of the "
                      "daemon's), which go with the built-in agent only. Start a new conversation for another agent.")
    if "plan_mode" in changes and running and changes["plan_mode"] != info.plan_mode:
        raise Busy("Plan mode changes between messages; stop the run first, or wait for it.")
    if "goal" in changes or "verify" in changes:
        if running:
            raise Busy("The goal changes between messages; stop the run first, or wait for it.")
        changes = dict(changes)
        given, current = "goal" in changes, info.goal
        text = changes.pop("goal", None)
        verify = changes.pop("verify", current.verify if current else True)
        if isinstance(text, str) and text.strip():
            changes["goal"] = Goal(text.strip(), verify=verify)  # a new goal starts active
        elif given:
            changes["goal"] = None  # null or "": no goal
        elif current is not None:
            changes["goal"] = attrs.evolve(current, verify=verify)
    return changes
