"""Splits a model's streamed output into reasoning and answer text.

Reasoning sits between `<think>` and `</think>` (some templates open the block in
the prompt, so the answer may begin inside it). A tag can arrive split across
pieces, so the splitter holds back a tail that could still become one. Pure: feed
text in, get (kind, text) pieces out.
"""

from __future__ import annotations

from typing import Literal

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"

SplitKind = Literal["text", "reasoning"]


class ThinkSplitter:
    def __init__(self, *, start_in_reasoning: bool = False) -> None:
        self._in_reasoning = start_in_reasoning
        self._held = ""

    def feed(self, text: str) -> list[tuple[SplitKind, str]]:
        out: list[tuple[SplitKind, str]] = []
        buf = self._held + text
        self._held = ""
        while buf:
            tag = CLOSE_TAG if self._in_reasoning else OPEN_TAG
            kind: SplitKind = "reasoning" if self._in_reasoning else "text"
            at = buf.find(tag)
            if at >= 0:
                if at:
                    out.append((kind, buf[:at]))
                buf = buf[at + len(tag) :]
                self._in_reasoning = not self._in_reasoning
                continue
            keep = _partial_suffix(buf, tag)
            if len(buf) > keep:
                out.append((kind, buf[: len(buf) - keep]))
            self._held = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[tuple[SplitKind, str]]:
        """What is still held back, once the stream ended."""
        held, self._held = self._held, ""
        if not held:
            return []
        return [("reasoning" if self._in_reasoning else "text", held)]


def _partial_suffix(buf: str, tag: str) -> int:
    """The length of the longest end of `buf` that is a proper start of `tag`."""
    for n in range(min(len(buf), len(tag) - 1), 0, -1):
        if buf.endswith(tag[:n]):
            return n
    return 0
