"""Server-Sent Events without I/O: the lines of an event stream in, whole events out.

`SseEvents.feed` takes one line (its line end already cut, as actors/model/chatstream.py's
`SseLines` hands them over) and returns `(event name, data)` when a blank line ends an
event that had data: the name is `message` unless an `event:` field said otherwise,
and the data is its `data:` lines joined by `\\n`. Comments (`:` first) and other fields
(`id:`, `retry:`) are read past. An event's data larger than the limit raises WireError:
a server that never ends an event would otherwise grow it without bound.
"""

from __future__ import annotations

from actors.peers.jsonrpc import MAX_LINE_BYTES, WireError


class SseEvents:
    """See the module docstring."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._limit = limit
        self._event = ""
        self._data: list[str] = []
        self._size = 0

    def feed(self, line: str) -> tuple[str, str] | None:
        if not line:
            event, data = self._event or "message", self._data
            self._event, self._data, self._size = "", [], 0
            return (event, "\n".join(data)) if data else None
        if line.startswith(":"):
            return None
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._size += len(value) + 1
            if self._size > self._limit:
                raise WireError(f"an event of its stream is larger than {self._limit} bytes")
            self._data.append(value)
        return None
