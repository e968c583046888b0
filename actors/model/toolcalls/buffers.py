"""What ToolCallParser (and its envelope reader) hold between pieces: the text and reasoning shown so far
(`Channel`: whitespace trimmed at the edges, held until more text follows),
stretches of the stream captured across pieces (`Cap`), and how much of a piece's
end could still become a tag (`partial_tail`), which is held back.
"""

from __future__ import annotations


class Channel:
    """Text or reasoning as shown: no leading whitespace, trailing whitespace held
    until more text follows (and dropped at a tag or at the end)."""

    __slots__ = ("parts", "_pending")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._pending = ""

    def write(self, s: str) -> str:
        """Take raw text; return what can be shown now."""
        if not self.parts:
            s = s.lstrip()
        body = s.rstrip()
        if not body:
            if self.parts:
                self._pending += s
            return ""
        chunk = self._pending + body
        self._pending = s[len(body) :]
        self.parts.append(chunk)
        return chunk

    def cut(self) -> None:
        self._pending = ""

    def separate(self, sep: str) -> None:
        """What follows is a new block: put `sep` before it (if anything was shown)."""
        self._pending = sep if self.parts else ""

    def reset(self) -> None:
        self.parts = []
        self._pending = ""

    def value(self) -> str:
        return "".join(self.parts)


class Cap:
    """Captures a stretch of the stream that may span pieces."""

    __slots__ = ("start", "parts")

    def __init__(self, start: int) -> None:
        self.start = start
        self.parts: list[str] = []

    def flush(self, data: str) -> None:
        self.parts.append(data[self.start :])
        self.start = 0

    def close(self, data: str, end: int) -> str:
        self.parts.append(data[self.start : end])
        return "".join(self.parts)


def partial_tail(data: str, start: int, tags: tuple[str, ...]) -> int:
    """The length of the longest end of data[start:] that is a proper start of a tag."""
    n = len(data)
    lo = max(start, n - max(map(len, tags)) + 1)
    best = 0
    for first in {t[0] for t in tags}:
        p = data.find(first, lo)
        while 0 <= p and n - p > best:
            tail = data[p:]
            if any(len(t) > len(tail) and t.startswith(tail) for t in tags):
                best = n - p
                break
            p = data.find(first, p + 1)
    return best
