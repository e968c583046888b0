"""The assistant item a run streams words into, and the `delta` events that carry them
to the screen: one shape for the built-in run (actors/runs/agent/round_stream.py) and for a run of
another agent (actors/runs/acp.py)."""

from __future__ import annotations

import attrs

from actors.ids import new_id
from actors.record.items import Item
from actors.record.transcript import Transcript


class AssistantStream:
    """Part of a run: the streaming assistant item (`assistant`, its id, None when there
    is none) and the text and reasoning it has so far. The run sets these, and resets
    them when it ends the item."""

    t: Transcript
    assistant: str | None
    text: str
    reasoning: str
    checking = False  # the run checks an answer before it is shown (Item.checking)

    def ensure_assistant(self) -> str:
        """The streaming assistant item's id; the item is made (empty) when there is none."""
        if self.assistant is None:
            item = Item(id=new_id("i"), kind="assistant", text="", reasoning="", streaming=True,
                        checking=True if self.checking else None)
            self.assistant = item.id
            self.t.upsert(item, urgent=False)
        return self.assistant

    def stream(self, text: str, *, reasoning: bool) -> None:
        """Add `text` to the item's text (or its reasoning): the item is updated but not
        published whole, the piece is published as a `delta`. Empty text: nothing."""
        if not text:
            return
        item_id = self.ensure_assistant()
        if reasoning:
            self.reasoning += text
        else:
            self.text += text
        item = self.t.item(item_id)
        self.t.upsert(attrs.evolve(item, text=self.text, reasoning=self.reasoning), urgent=False, publish=False)
        if reasoning:
            self.t.delta(item_id, reasoning=text)
        else:
            self.t.delta(item_id, text=text)

    def end_assistant(self) -> None:
        """End the streaming item: kept when it has words, dropped when it has none (a
        round that failed before its first token leaves no empty item)."""
        if self.assistant is not None:
            item = self.t.find(self.assistant)
            if item is not None and (item.text or item.reasoning):
                # An interrupted round's words are shown as they are: no check will come.
                self.t.upsert(attrs.evolve(item, streaming=False, checking=None, reasoning=item.reasoning or None),
                              urgent=True)
            elif item is not None:
                self.t.drop(self.assistant)
        self.assistant, self.text, self.reasoning = None, "", ""
