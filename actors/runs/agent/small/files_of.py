"""What a small model's leading asks of the workspace's files (actors/runs/agent/small/leader.py):
whether a name is there, a file, one that may run, its text, whether an edit would
break it. Each blocks on the disk: call it in a thread."""

from __future__ import annotations

import ast
import os
import posixpath
import re
from itertools import islice
from pathlib import Path
from typing import Any

from actors.errors import ToolError
from actors.fs.paths import PathRefused, read_workspace_text, resolve
from actors.runs.agent.small import call_slips, guards, steps
from actors.tools.files import edits_arg, plan_edit
from actors.tools.globs import walk


def edit_refused(ws: Path, rel: str, tool: str, args: dict[str, Any], asked: str) -> str | None:
    """Why a small model's edit_file of `rel` may not go on: it changes only spaces
    (guards.spaces_only_refused), holds none of the values `asked` asks for
    (guards.value_missing_refused), or would break the file (`breaks_file`); None when
    it may, or when the call is no edit."""
    if tool != steps.EDIT_TOOL:
        return None
    spaces = guards.spaces_only_refused(tool, args, asked)
    if spaces is not None:
        return spaces
    before = read_in(ws, rel)  # read once, for both checks of the file's text
    return guards.value_missing_refused(tool, args, asked, before) or breaks_file(rel, before, args)


def breaks_file(rel: str, before: str | None, args: dict[str, Any]) -> str | None:
    """Why an edit_file call may not go on: it would break `rel` (its text `before`,
    None when not read), which parses now (guards.break_refused); None when it may, or
    when the tool itself will say why not (no such file, an old_text not there)."""
    if before is None:
        return None
    try:
        after = plan_edit(before, rel, edits_arg(args)).new
    except ToolError:
        return None
    return guards.break_refused(rel, before, after)


# A path a whole command may hold as it is: no blank, quote or character the shell reads.
PLAIN_PATH = re.compile(r"[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*")
# A Python file a request names ("fix app.py", "in `src/x.py`").
PY_FILE = re.compile(r"`?\b([\w./-]+\.py)\b`?")


def sed_pattern(text: str) -> str:
    """`text` as a `sed` basic pattern matching it as written (its `\\ / . * [ ] ^ $` escaped)."""
    return re.sub(r"([\\/.*\[\]^$])", r"\\\1", text)


def sed_replacement(text: str) -> str:
    """`text` as a `sed` replacement putting it in as written (its `\\ / &` escaped)."""
    return re.sub(r"([\\/&])", r"\\\1", text)


def read_in(ws: Path, rel: str) -> str | None:
    """The text of `rel` in the workspace (at most EDIT_FILE_BYTES), None when it is not
    there or not text. Blocking: call it in a thread."""
    try:
        return read_workspace_text(ws, rel, steps.EDIT_FILE_BYTES)
    except (PathRefused, OSError):
        return None


# How much of a file an answer's quote of it is checked against.
QUOTED_FILE_BYTES = 256 * 1024


def lines_in(ws: Path, rel: str) -> list[str] | None:
    """The lines of `rel` in the workspace as they are now, None where it is not there,
    not text, or too large to judge a quote of it by. Blocking: call it in a thread."""
    try:
        text = read_workspace_text(ws, rel, QUOTED_FILE_BYTES + 1)
    except (PathRefused, OSError):
        return None
    return None if text is None or len(text) > QUOTED_FILE_BYTES else text.splitlines()


# How many files of a name `named_in` gives at most, and how many entries it looks at.
NAMED_MAX = 5
NAMED_LOOKED_AT = 20_000


def named_in(ws: Path, name: str) -> list[str]:
    """The workspace's files called `name` (relative paths, NAMED_MAX at most). Blocking:
    call it in a thread."""
    if not name or "/" in name:
        return []
    found: list[str] = []
    for entry in islice(walk(ws, sizes=False), NAMED_LOOKED_AT):
        if entry.is_file and posixpath.basename(entry.path) == name:
            found.append(entry.path)
            if len(found) >= NAMED_MAX:
                break
    return found


def command_refused(ws: Path, command: object, asked: str, previous: tuple[str, str] | None) -> str | None:
    """Why a small model's command may not run: it removes a file the request names and
    does not ask to remove (guards.removal_refused), holds a placeholder path or the
    error the previous command (`previous`) failed with (call_slips); None where it may."""
    named = steps.named_files(asked, lambda rel: exists_in(ws, rel))
    return guards.removal_refused(command, asked, named, lambda rel: is_file_in(ws, rel)) \
        or call_slips.placeholder_refused(command, lambda name: named_in(ws, name)) \
        or call_slips.pasted_error_refused(command, previous, asked)


def runs_in(ws: Path, rel: str) -> bool:
    """Whether `rel` is a file inside the workspace that may run as a program (its mode
    lets it). Blocking: call it in a thread."""
    try:
        path = resolve(ws, rel)
        return path.is_file() and os.access(path, os.X_OK)
    except (PathRefused, OSError):
        return False


def exists_in(ws: Path, rel: str) -> bool:
    """Whether `rel` names something inside the workspace (a path that leads out of it
    does not: the tool that would use it says why). Blocking: call it in a thread."""
    try:
        return resolve(ws, rel).exists()
    except PathRefused:
        return False


def is_file_in(ws: Path, rel: str) -> bool:
    """Whether `rel` names a file inside the workspace. Blocking: call it in a thread."""
    try:
        return resolve(ws, rel).is_file()
    except PathRefused:
        return False


def is_dir_in(ws: Path, rel: str) -> bool:
    """Whether `rel` names a folder inside the workspace. Blocking: call it in a thread."""
    try:
        return resolve(ws, rel).is_dir()
    except PathRefused:
        return False


def children_in(ws: Path, rel: str) -> list[str] | None:
    """The names of what the folder `rel` of the workspace holds directly, sorted; None
    when it is no folder inside the workspace. Blocking: call it in a thread."""
    try:
        path = resolve(ws, rel)
        return sorted(entry.name for entry in os.scandir(path)) if path.is_dir() else None
    except (PathRefused, OSError):
        return None


def is_test(path: str) -> bool:
    """Whether `path` is a test file (test_*.py, *_test.py, conftest.py, or in a tests
    folder): its code is the tests', not the code under test."""
    name = path.rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" \
        or "tests" in path.split("/")[:-1]


# Calls whose first argument is a path to open or read (open, json.load, Path, os.path.exists…).
_OPENS = re.compile(r"open|load|read|Path|exists|isfile|listdir|scandir|glob", re.IGNORECASE)


def path_literals(tree: ast.Module) -> list[tuple[ast.Constant, str]]:
    """The strings of `tree` that may name a file (each with its value): what a call
    that opens or reads is given first, and what a name is given."""
    out: list[tuple[ast.Constant, str]] = []
    for node in ast.walk(tree):
        args: list[ast.expr] = []
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            args = node.args[:1] if _OPENS.search(name) else []
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            args = [node.value]
        out += [(a, a.value) for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value
                and "\n" not in a.value and not a.value.startswith(("/", "~"))]
    return out
