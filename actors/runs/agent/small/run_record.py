"""What a led run's record says: its last rounds (a loop cut, a tool failing in a row,
the edits that failed) and what it read, searched and was told (`RunRecord`); the
leader (actors/runs/agent/small/leader.py) reads them each round."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from actors import notices
from actors.record.transcript import Transcript
from actors.runs.agent.ledger import SHELL_TOOL, ended_as
from actors.runs.agent.small import request_forms, steps
from actors.runs.agent.small.files_of import exists_in
from actors.tools.globs import walk

# Calls of one tool failing in a row after which the next round may not call it: each a
# new call, so no call twice did not stop them (SmolLM2 ran `NAME.py.exe`, then with one
# more `.exe`, thirty rounds).
FAILS_IN_A_ROW = 3
# What an answer may be held to begin with of a command's output (RunRecord.printed).
PRINTED_CHARS = 160
_LOOPED_START = notices.LOOPED.split("{", 1)[0]  # the words before the unit it repeated


# Files walked at most for their names (RunRecord.known_in).
NAMES_WALKED = 20_000


def names_in(ws: Path) -> set[str]:
    """The names of the workspace's files and folders, without their folders, of at most
    NAMES_WALKED, hidden folders not entered. Blocking: call it in a thread."""
    out: set[str] = set()
    try:
        for n, entry in enumerate(walk(ws, sizes=False, prune=lambda rel: rel.rsplit("/", 1)[-1].startswith("."))):
            if n >= NAMES_WALKED:
                break
            out.add(posixpath.basename(entry.path))
    except OSError:
        pass
    return out


def after_loop(items: Sequence[Any]) -> bool:
    """Whether a run's (`items`) last round was cut for a loop (its last item the notice
    that says so)."""
    return bool(items) and items[-1].kind == "notice" and bool(items[-1].for_model) \
        and (items[-1].text or "").startswith(_LOOPED_START)


def failing_tool(items: Sequence[Any]) -> str | None:
    """The tool of a run's (`items`) last FAILS_IN_A_ROW calls when they all are of it
    and all failed (a command that exited non-zero, a call refused); else None."""
    cards = [i for i in items if i.kind == "tool"][-FAILS_IN_A_ROW:]
    tools = {c.tool for c in cards}
    if len(cards) < FAILS_IN_A_ROW or len(tools) != 1:
        return None
    failed = all(ended_as(c.tool or "", c.state or "", c.result or "") in ("error", "denied") for c in cards)
    return tools.pop() if failed else None


def avoided_edits(avoid: Iterable[tuple[str, object]]) -> list[tuple[str, str, str]]:
    """The edits of the calls a round avoids (the run's failed ones), as (path, old_text, new_text)."""
    return [(args["path"], e["old_text"], e["new_text"]) for name, args in avoid if name == steps.EDIT_TOOL
            and isinstance(args, dict) and isinstance(args.get("path"), str) and isinstance(args.get("edits"), list)
            for e in args["edits"] if isinstance(e, dict) and isinstance(e.get("old_text"), str)
            and isinstance(e.get("new_text"), str)]


class RunRecord:
    """What a led run reads of its conversation's record (`transcript`): the person's
    latest message, this run's items, its searches, what it was told."""

    def __init__(self, transcript: Transcript) -> None:
        self._t = transcript

    def asked(self) -> str:
        """The person's latest message, as text."""
        return next((i.text or "" for i in reversed(self._t.items) if i.kind == "user"), "")

    def run_items(self) -> list[Any]:
        """This run's items: those after the person's latest message."""
        items = list(self._t.items)
        last = next((n for n in range(len(items) - 1, -1, -1) if items[n].kind == "user"), -1)
        return items[last + 1:]

    def found(self) -> tuple[str, ...] | None:
        """The files the run's last call found, when it was a search that found some for
        a request asking where or which (steps.search_found); else None."""
        if not request_forms.asks_where(self.asked()):
            return None
        last = next((i for i in reversed(self.run_items()) if i.kind == "tool"), None)
        if last is None or last.tool not in steps.SEARCH_TOOLS or last.state != "done":
            return None
        pattern = (last.args or {}).get("pattern")
        return tuple(steps.search_found(last.result or "", pattern if isinstance(pattern, str) else "")) or None

    def last_ran(self, commands: Collection[str]) -> bool:
        """Whether this run's latest call was one of `commands` and it exited 0."""
        last = next((i for i in reversed(self.run_items()) if i.kind == "tool"), None)
        return last is not None and _ran(last, commands)

    def ran(self, commands: Collection[str]) -> bool:
        """Whether this run ran one of `commands` and it exited 0."""
        return any(i.kind == "tool" and _ran(i, commands) for i in self.run_items())

    def printed(self, commands: Collection[str]) -> str:
        """The first line the latest of `commands` that ran and exited 0 printed (what a
        count, a call's result, a file's line is), PRINTED_CHARS at most; empty where it
        printed nothing or none ran."""
        card = next((i for i in reversed(self.run_items()) if i.kind == "tool" and _ran(i, commands)), None)
        output = (card.result or "").rsplit("\n[exit code:", 1)[0] if card is not None else ""
        return next((line.strip() for line in output.splitlines() if line.strip()), "")[:PRINTED_CHARS]

    def known_in(self, ws: Path) -> Callable[[str], bool]:
        """Whether an answer's file is known (blocking: call it in a thread): there in the
        workspace, or named in the arguments of a call of this run that ran well (a
        command that exited 0, a write, an edit), so one gone since may be named ("Moved
        a.md to b.md", after `mv`), where the record shows it; a name without a folder
        also where it is the name of such a file in a folder (`cat.png`, after `mv
        pics/Cat.PNG pics/cat.png`), or of one there (`names_in`)."""
        acted = {posixpath.normpath(name) for i in self.run_items() if i.kind == "tool"
                 and ended_as(i.tool or "", i.state or "", i.result or "") == "done"
                 for value in (i.args or {}).values() if isinstance(value, str)
                 for name in steps.file_names(value)}
        bare = {posixpath.basename(name) for name in acted}
        names: set[str] = set()

        def known(rel: str) -> bool:
            rel = posixpath.normpath(rel)
            if exists_in(ws, rel) or rel in acted:
                return True
            if "/" in rel:
                return False
            if not names:
                names.update(names_in(ws) or {""})
            return rel in bare or rel in names
        return known

    def last_search(self) -> Any:
        """This run's latest search's card, when it ran; else None."""
        last = next((i for i in reversed(self.run_items()) if i.kind == "tool" and i.tool in steps.SEARCH_TOOLS),
                    None)
        return last if last is not None and last.state == "done" else None

    def searched(self) -> list[str]:
        """The files this run's latest search found (steps.search_found), none when its
        latest search found nothing or there was none."""
        last = self.last_search()
        if last is None:
            return []
        pattern = (last.args or {}).get("pattern")
        return steps.search_found(last.result or "", pattern if isinstance(pattern, str) else "")

    def search_result(self) -> str:
        """What this run's latest search printed; "" before any."""
        last = self.last_search()
        return "" if last is None else last.result or ""

    def searched_lines(self) -> dict[str, list[str]]:
        """The lines this run's latest search showed, by file (steps.search_lines)."""
        last = self.last_search()
        return {} if last is None else steps.search_lines(last.result or "")

    def said(self) -> str:
        """What the person and the tools said in this conversation."""
        return "\n".join((i.text or "") if i.kind == "user" else (i.result or "")
                         for i in self._t.items if i.kind in ("user", "tool"))

    def previous_command(self) -> tuple[str, str] | None:
        """The run's last command that ended, and its result; None before any."""
        card = next((i for i in reversed(self.run_items()) if i.kind == "tool" and i.tool == SHELL_TOOL
                     and i.state in ("done", "error") and i.result is not None), None)
        command = None if card is None else (card.args or {}).get("command")
        return None if card is None or not isinstance(command, str) else (command, card.result)

    def refusals(self) -> list[str]:
        """What this run's calls that did not run were told."""
        return [i.result or "" for i in self.run_items() if i.kind == "tool" and i.state not in ("done", None)]

    def ours(self) -> list[str]:
        """What the daemon told the model in this run: its notices for the model, and
        its own refusals of calls (a tool's error is the tool's, not the daemon's)."""
        return [i.text or "" for i in self.run_items() if i.kind == "notice" and i.for_model] + [
            r for r in self.refusals() if notices.card_end(r)[0] is not None]

    def seen_files(self, by: tuple[str, ...] = steps.SEEN_BY) -> list[str]:
        """The files this conversation's calls of `by` read or wrote, the latest first."""
        cards = ((i.tool, i.state, i.args) for i in reversed(self._t.items) if i.kind == "tool")
        return steps.seen_files(cards, by)


def _ran(card: Any, commands: Collection[str]) -> bool:
    """Whether a tool card is a command of `commands` that exited 0."""
    return card.tool == SHELL_TOOL and (card.args or {}).get("command") in commands \
        and ended_as(card.tool or "", card.state or "", card.result or "") == "done"
