"""What `bmoe-daemon run` prints.

`--json`: one JSON object a line, each `{"type": <event>, ...its data}` for the run's
events as /api/events sends them (`conversation`, `item`, `delta`, `prefill`, `plan`),
then the last line `{"type": "result", "result", "end_reason", "usage", "conversation"}`
(and `error` when the run failed). Plain: the answer as it streams, one line per tool
call once it has ended, notices on stderr; on a terminal with colour and a spinner while
the model reads, none of either when stdout is not a terminal.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

FINAL_STATES = ("done", "denied", "error")
SPIN_S = 0.1
FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
MARKS = {"done": ("✓", "32"), "denied": ("⊘", "33"), "error": ("✗", "31")}
MAX_TITLE_CHARS = 160
ENDED_WORDS = {"stop": "stopped", "daemon": "not run", "cut": "not run"}


def tool_line(item: dict[str, Any], *, colour: bool) -> str:
    """One line for a tool call that has ended: its mark, title and state."""
    title = (item.get("title") or item.get("tool") or "tool").replace("\n", " ")
    if len(title) > MAX_TITLE_CHARS:
        title = title[:MAX_TITLE_CHARS] + "…"
    state = item.get("state") or ""
    mark, code = MARKS.get(state, ("•", "0"))
    # Nobody said no to a call the run's stop or the daemon ended: the web UI's words.
    state = ENDED_WORDS.get(item.get("ended_by") or "", state) if state in ("denied", "error") else state
    if colour:
        return f"\x1b[{code}m{mark}\x1b[0m {title} \x1b[2m({state})\x1b[0m"
    return f"{mark} {title} ({state})"


class Output:
    """See the module docstring. `event` takes every event of the run, in order."""

    def __init__(self, *, json_lines: bool, out: TextIO | None = None, err: TextIO | None = None,
                 tty: bool | None = None) -> None:
        self.json_lines = json_lines
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self.tty = self._out.isatty() if tty is None else tty
        self._mid_line = False  # the answer's text left the cursor mid-line
        self._spin_label: str | None = None  # what the spinner says; None: no spinner
        self._spun = False  # a spinner frame is on the screen
        self._frame = 0
        self._frame_at = 0.0  # time.monotonic() of the last frame
        self._spin_lock = threading.Lock()  # a card's thread quiets the spinner the main thread turns
        self._shown_tools: set[str] = set()

    # ---- the events ----

    def event(self, name: str, data: dict[str, Any]) -> None:
        if self.json_lines:
            self._line(json.dumps({"type": name, **data}, ensure_ascii=False))
            return
        if name == "delta":
            text = data.get("text")
            if text and "task" not in data:
                self.write(text)
        elif name == "prefill":
            self.reading(f"reading {data.get('done', 0)}/{data.get('total', 0)}")
        elif name == "item":
            self._item(data.get("item") or {})

    def _item(self, item: dict[str, Any]) -> None:
        if item.get("kind") == "tool" and item.get("state") in FINAL_STATES and item.get("id") not in self._shown_tools:
            self._shown_tools.add(item["id"])
            self.line(tool_line(item, colour=self.tty))
            self.reading("")
        elif item.get("kind") == "notice" and item.get("level") in ("warn", "error"):
            self.note(item.get("text") or "")

    def result(self, final: dict[str, Any]) -> None:
        """The last line (`--json`), or the end of the answer's line (plain)."""
        if self.json_lines:
            self._line(json.dumps({"type": "result", **final}, ensure_ascii=False))
            return
        self._unspin()
        if self._mid_line:
            self._out.write("\n")
            self._mid_line = False
        self._out.flush()
        if final.get("error"):
            self.note(final["error"])

    # ---- plain writing ----

    def write(self, text: str) -> None:
        self._unspin()
        self._spin_label = None
        self._out.write(text)
        self._out.flush()
        self._mid_line = not text.endswith("\n")

    def line(self, text: str) -> None:
        """A line of its own (the answer's line ended first)."""
        self._unspin()
        if self._mid_line:
            self._out.write("\n")
            self._mid_line = False
        self._line(text)

    def note(self, text: str) -> None:
        """A line for the person on stderr (not part of the answer)."""
        self._unspin()
        if self._mid_line and self._err.isatty() and self.tty:
            self._out.write("\n")
            self._out.flush()
            self._mid_line = False
        self._err.write(f"\x1b[2m{text}\x1b[0m\n" if self.tty and self._err.isatty() else text + "\n")
        self._err.flush()

    def _line(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    # ---- the spinner ----

    def reading(self, label: str) -> None:
        """The model reads or thinks: the spinner turns with `label` (a terminal only)."""
        if not self.json_lines and self.tty:
            self._spin_label = label

    def quiet(self) -> None:
        """No spinner (a question on the terminal)."""
        with self._spin_lock:
            self._unspin()
            self._spin_label = None

    def _unspin(self) -> None:
        if self._spun:
            self._out.write("\r\x1b[K")
            self._spun = False

    def spin(self) -> None:
        """The spinner's next frame when there is one to show and SPIN_S has passed since the
        last; called between events and at least every SPIN_S while none come."""
        now = time.monotonic()
        with self._spin_lock:
            if self._spin_label is None or self._mid_line or now - self._frame_at < SPIN_S:
                return
            self._frame_at = now
            self._frame += 1
            frame = FRAMES[self._frame % len(FRAMES)]
            self._out.write(f"\r\x1b[36m{frame}\x1b[0m \x1b[2m{self._spin_label}\x1b[0m\x1b[K")
            self._out.flush()
            self._spun = True
