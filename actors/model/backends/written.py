"""This model's recent calling answers, kept as it wrote them.

The history gives an answer that called tools back as OpenAI messages, which the
template writes in its own way; the model may have written the same call with other
spacing or key order. Rendered that way, the next prompt stops matching the tokens
generated into the KV cache at that answer, and everything after it is prefilled
again. So the raw text of each such answer is kept, and a later prompt that holds
the same answer unchanged is given that text instead.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from actors.model.backends.template_messages import object_args
from actors.model.turns import TurnResult

# Enough for the conversations whose prompts the KV cache may still hold a prefix of.
MAX_WRITTEN_REPLIES = 256

_Key = tuple[object, ...]


class WrittenReplies:
    """See the module docstring. Holds at most MAX_WRITTEN_REPLIES, the oldest going first."""

    def __init__(self) -> None:
        self._raw: OrderedDict[_Key, str] = OrderedDict()

    def apply(self, messages: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...] | None:
        """`messages` with each kept answer as written, or None when none of them is one."""
        written = tuple(self._as_written(m) for m in messages)
        if all(w is m for w, m in zip(written, messages, strict=True)):
            return None
        return written

    def _as_written(self, msg: dict[str, Any]) -> dict[str, Any]:
        """`msg` as this model wrote it, when it is one of its recent calling answers
        and the history kept it unchanged (the arguments it wrote, valid JSON): the
        raw text, so the prompt's tokens match the ones generated into the KV cache.
        Otherwise `msg` itself."""
        if msg.get("role") != "assistant" or not msg.get("tool_calls") or not self._raw:
            return msg
        raw = self._raw.get(_reply_key(msg.get("content") or "", msg["tool_calls"]))
        if raw is None:
            return msg
        return {"role": "assistant", "content": raw, "written": True}

    def remember(self, result: TurnResult, raw: str) -> None:
        """Keep `raw`, the text the model wrote for `result`, if `result` called tools."""
        if not result.tool_calls or not raw:
            return
        if any(object_args(c.arguments) is None for c in result.tool_calls):
            return  # the history shows `{}` for such a call, never these arguments
        calls = [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}} for c in result.tool_calls]
        key = _reply_key(result.text, calls)
        self._raw[key] = raw
        self._raw.move_to_end(key)
        while len(self._raw) > MAX_WRITTEN_REPLIES:
            self._raw.popitem(last=False)


def _reply_key(content: str, calls: list[dict[str, Any]]) -> _Key:
    return (content, *((c.get("id"), c["function"]["name"], c["function"]["arguments"]) for c in calls))
