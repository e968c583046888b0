"""What the model writes in a round of the built-in run, as the conversation shows it:
its words stream into an assistant item (actors/runs/streaming.py), and a call it
writes is a `composing` card from its first piece, titled as its arguments come. When
the round ends the item is finished and the calls to run handed over in order; a
round that fails or stops ends its cards live (shown, not stored), so the history sent
next is whole."""

from __future__ import annotations

import json
from typing import Any

import attrs

from actors import notices
from actors.ids import new_id
from actors.model.turns import Piece, TurnResult
from actors.record.items import Item, ToolCall, ToolState
from actors.record.transcript import Transcript
from actors.runs.agent.compaction_turn import Compactor
from actors.runs.agent.ledger import PartialCall
from actors.runs.agent.run_tools.carrier import Call, OwnTools
from actors.runs.base import RunRequest
from actors.runs.env import Env
from actors.runs.streaming import AssistantStream


class RoundStream(AssistantStream):
    """A round's assistant item and its calls' cards; see the module docstring. The
    streaming item's fields (`assistant`, `text`, `reasoning`) are AssistantStream's."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest, own: OwnTools,
                 compactor: Compactor) -> None:
        self.t = transcript
        self.assistant: str | None = None  # the streaming assistant item's id
        self.text = ""
        self.reasoning = ""
        self._env = env
        self._req = request
        self._own = own
        self._compactor = compactor
        self._partials: dict[int, PartialCall] = {}  # calls the model is still writing

    async def on_piece(self, piece: Piece) -> None:
        """One piece of the round (engine.Emit)."""
        if piece.kind == "prefill":
            self.t.prefill(piece.done, piece.total)
        elif piece.kind == "tool_call":
            self.ensure_assistant()
            self._on_call_piece(piece)
        elif piece.kind == "retract":
            # The parser took back text it showed (it was reasoning): the item whole.
            item_id = self.ensure_assistant()
            self.text, self.reasoning = piece.text, piece.reasoning
            self.t.update(item_id, urgent=False, text=self.text, reasoning=self.reasoning)
        else:
            self.stream(piece.text, reasoning=piece.kind == "reasoning")

    def _on_call_piece(self, piece: Piece) -> None:
        partial = self._partials.get(piece.index)
        if partial is None:
            call_id = piece.call_id or new_id("call_")
            name = piece.name or "unknown"
            card = Item(
                id=new_id("i"), kind="tool", tool=name, title=self.title(name, {}), args={},
                state="composing", bytes=0, call_id=call_id,
            )
            partial = PartialCall(piece.index, call_id, name, card.id)
            self._partials[piece.index] = partial
            self.t.upsert(card, urgent=False)
        reparsed = partial.feed(piece.text)
        partial.bytes += len(piece.text.encode("utf-8"))
        changes: dict[str, Any] = {"bytes": partial.bytes}
        if reparsed:
            changes["title"] = self.title(partial.name, partial.args)
        self.t.update(partial.item_id, urgent=False, **changes)

    def title(self, name: str, args: dict[str, Any]) -> str:
        """A call's card title: the run's own tool's, the workspace tool's, or its name."""
        own = self._own.title(name, args)
        if own is not None:
            return own
        tool = self._env.registry.get(name)
        if tool is None:
            return f"Call {name}"
        try:
            return tool.title(args)
        except Exception:
            return f"Call {name}"

    def end_round(self, result: TurnResult) -> tuple[list[Call], tuple[str, ...]]:
        """Finish the streaming item; the calls to run, in order, and the tools whose
        call the answer's loop cut. An answer cut where it looped keeps the calls it had
        finished; the one it was writing is not a call (whatever backend handed it
        over): its card ends live, as the notice says."""
        calls = result.tool_calls
        cut_tools: tuple[str, ...] = ()
        if result.repeated is not None:
            calls = tuple(c for c in calls if _whole_object(c.arguments))
            kept = {c.id for c in calls}
            cut = [c.name for c in result.tool_calls if c.id not in kept]
            cut += [p.name for p in self._partials.values() if p.call_id not in {c.id for c in result.tool_calls}]
            cut_tools = tuple(dict.fromkeys(cut))
        if self.assistant is None and (calls or result.text or result.reasoning):
            self.ensure_assistant()
        if self.assistant is not None:
            ended: dict[str, Any] = {
                "text": self.text or result.text,
                "reasoning": (self.reasoning or result.reasoning) or None,
                "streaming": False,
                "tool_calls": tuple(ToolCall(c.id, c.name, c.arguments) for c in calls) or None,
                "usage": usage_of(result),
            }
            if calls:
                ended["checking"] = None  # words before a call are not an answer to check
            self.t.update(self.assistant, **ended)
        if result.prompt_tokens and self._req.helper is None:
            used = result.prompt_tokens + result.completion_tokens
            self.t.set_info(context=(used, self._compactor.context_tokens()))
        out: list[Call] = []
        by_id = {p.call_id: p for p in self._partials.values()}
        for call in calls:
            partial = by_id.pop(call.id, None)
            if partial is None:
                card = Item(id=new_id("i"), kind="tool", tool=call.name, title=call.name, args={},
                            state="composing", bytes=len(call.arguments.encode()), call_id=call.id)
                self.t.upsert(card, urgent=False)
                out.append(Call(card.id, call.name, call.arguments))
            else:
                out.append(Call(partial.item_id, call.name, call.arguments))
        for partial in by_id.values():  # cards of calls the answer did not keep
            self.end_card_live(partial.item_id, "error", notices.ERROR_ANSWER_ENDED)
        self._partials = {}
        self.assistant, self.text, self.reasoning = None, "", ""
        return out, cut_tools

    def end_card_live(self, card_id: str, state: ToolState, why: str) -> None:
        """End a card whose call was never part of a round: shown, not stored."""
        card = self.t.find(card_id)
        if card is not None:
            self.t.publish_item(attrs.evolve(card, state=state, result=why))
            self.t.drop(card_id)

    def abandon_round(self, *, stopped: bool = False) -> None:
        """Forget what a round that failed (or was stopped) streamed; its cards end live."""
        for partial in self._partials.values():
            if stopped:
                self.end_card_live(partial.item_id, "denied", notices.DENIED_PARTIAL_STOPPED)
            else:
                self.end_card_live(partial.item_id, "error", notices.ERROR_ROUND_FAILED)
        self._partials = {}
        self.end_assistant()


def usage_of(result: TurnResult) -> dict[str, int] | None:
    """An answer's token counts, as the backend reported them (none: no usage)."""
    if not result.prompt_tokens and not result.completion_tokens:
        return None
    if result.cached_tokens:
        cached = max(0, min(result.cached_tokens, result.prompt_tokens))
    else:
        cached = max(0, result.prompt_tokens - result.prefill_tokens) if result.prefill_tokens else 0
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cached_tokens": cached}


def _whole_object(arguments: str) -> bool:
    """Whether a call's arguments are a finished JSON object (not one cut mid-way)."""
    try:
        return isinstance(json.loads(arguments or "{}"), dict)
    except ValueError:
        return False
