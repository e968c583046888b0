"""Commands a small model writes that cannot be what it means, refused before they run
with words that say what to write instead (actors/runs/agent/small/leader.py asks).

- A placeholder for a path (`/path/to/x.txt`, as documentation writes one): no folder
  of the person's is called that. SmolLM2-135M, asked to rename files, ran
  `find /path/to/<its file>` again and again; the refusal names the workspace's files
  of that name, where it has some.
- The last failed command's error pasted into the next one: after `find X` said "X: No
  such file or directory", SmolLM2 ran `find X: No such file or directory`, then that
  with the error once more, each failing longer. The error is the system's words, not
  part of a command.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from actors import notices
from actors.runs.agent.ledger import SHELL_TOOL, ended_as

# A path as documentation writes one for the reader to fill in.
_PLACEHOLDER = re.compile(r"(?<![\w.-])(/?(?:path/to|your/path|path/of|full/path)(?:/[^\s'\"`;|&<>()]*)?)",
                          re.IGNORECASE)
# How many of the workspace's files of that name a refusal names.
NAMED_FILES = 3


def placeholder_refused(command: object, named: Callable[[str], list[str]]) -> str | None:
    """Why a command that holds a placeholder path may not run; None where it holds
    none. `named` gives the workspace's files of a name (its relative paths)."""
    if not isinstance(command, str):
        return None
    m = _PLACEHOLDER.search(command)
    if m is None:
        return None
    placeholder = m.group(1).rstrip(":,.")
    tail = posixpath.basename(placeholder.rstrip("/"))
    near = named(tail)[:NAMED_FILES] if "." in tail or tail not in ("to", "path", "of") else []
    files = (" The workspace has " + ", ".join(near) + ".") if near else ""
    return notices.PLACEHOLDER_REFUSED.format(path=placeholder, files=files)


# The part of an error pasted into a command that makes it the error's: a message of this
# many characters at least, between the colons an error's parts are written with.
ERROR_PART_CHARS = 12


def pasted_error_refused(command: object, previous: tuple[str, str] | None, asked: str) -> str | None:
    """Why a command may not run that holds the error the previous command failed with
    (`previous`, that command and its result) when neither that command nor the request
    holds those words; None where it may."""
    if not isinstance(command, str) or previous is None:
        return None
    before, result = previous
    if ended_as(SHELL_TOOL, "done", result) != "error":  # it exited 0 (or was never run)
        return None
    said, asked_words = " ".join(command.split()), " ".join(asked.split()).casefold()
    for part in _error_parts(result.rsplit("\n[exit code:", 1)[0]):
        if part in said and part not in before and part.casefold() not in asked_words:
            return notices.PASTED_ERROR_REFUSED.format(words=part)
    return None


def _error_parts(output: str) -> list[str]:
    """The messages of an error's lines, as `program: subject: message` writes them."""
    parts: list[str] = []
    for line in output.splitlines():
        for part in line.split(": ")[1:]:
            part = " ".join(part.split())
            if len(part) >= ERROR_PART_CHARS and part not in parts:
                parts.append(part)
    return parts
