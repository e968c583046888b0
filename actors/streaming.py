"""The assistant item a run streams words into, and the `delta` events that carry them
to the screen: one shape for the built-in run (actors/conversation.py) and for a run of
another agent (actors/acp_run.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from actors.items import Item, new_id

if TYPE_CHECKING:
    from actors.conversation import Conversation, Env


class AssistantStream:
    """Part of a run: the streaming assistant item (`assistant`, its id, None when there
    is none) and the text and reasoning it has so far. The run sets these, and resets
    them when it ends the item."""

    c: Conversation
    env: Env
    assistant: str | None
    text: str
    reasoning: str

    def ensure_assistant(self) -> str:
        """The streaming assistant item's id; the item is made (empty) when there is none."""
        if self.assistant is None:
            item = Item(id=new_id("i"), kind="assistant", text="", reasoning="", streaming=True)
            self.assistant = item.id
            self.c._upsert(item, urgent=False)
        return self.assistant

    def stream(self, text: str, *, reasoning: bool) -> None:
        """Add `text` to the item's text (or its reasoning): the item is updated but not
        published whole, the piece is published as a `delta`. Empty text: nothing."""
        if not text:
            return
        item_id = self.ensure_assistant()
        if reasoning:
            self.reasoning += text
            delta = {"conversation": self.c.id, "item": item_id, "reasoning": text}
        else:
            self.text += text
            delta = {"conversation": self.c.id, "item": item_id, "text": text}
        item = self.c._item(item_id)
        self.c._upsert(attrs.evolve(item, text=self.text, reasoning=self.reasoning), urgent=False, publish=False)
        self.env.bus.publish("delta", delta, local_only=self.c.local_only)
