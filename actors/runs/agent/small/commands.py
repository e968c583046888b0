"""The programs a small model's command may start with.

SmolLM2-135M's commands mostly failed before they ran: its first word was no program
(`rename`, `sudo` where there is none, a script's own name as if it were one, a
phrase of the file it had read), the shell answered "not found", and the run went on
from that. A command whose program is not there can only fail, whatever the job; so a
small model's command is held, by the grammar, to start with a program this machine
has: the usual ones of a workspace (files, text, the common interpreters and build
tools) that are on PATH, and any word of the person's request that names one; not
one that removes files unless the request asks for something to go, nor one that moves
them unless it asks to move or rename (guards.unasked_programs). What follows the
program is free (one line, without a double quote or a backslash, so the grammar's JSON
string needs no escapes; single quotes do). Only the first program of a command is
held; the mode and the sandbox decide what runs, as for any model.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Collection

# The programs a workspace's commands usually start with: those on PATH are offered.
USUAL_PROGRAMS = (
    "ls", "cat", "head", "tail", "wc", "grep", "find", "sort", "uniq", "cut", "tr", "sed", "awk", "diff",
    "cp", "mv", "rm", "mkdir", "rmdir", "touch", "ln", "chmod", "echo", "printf", "pwd", "date", "du",
    "basename", "dirname", "realpath", "stat", "file", "tee", "xargs", "tar", "gzip", "gunzip", "zip", "unzip",
    "python3", "python", "pip", "pytest", "node", "npm", "npx", "deno", "bun", "ruby", "perl", "php", "lua",
    "java", "javac", "go", "cargo", "rustc", "gcc", "g++", "cc", "make", "cmake", "bash", "sh", "git",
)
# Shell words that are no file on PATH but always there.
BUILTINS = ("cd", "test")
# A word of the request that may name a program (`ruff`, `uv`, `clang-format`).
_PROGRAM_WORD = re.compile(r"(?<![\w./-])[a-z][a-z0-9+_-]{1,30}(?![\w./-])")
# A program's name as a pattern may hold it.
_NAME = re.compile(r"[A-Za-z0-9_+-]+")
# What may follow the program: one line, no double quote or backslash, no control character.
_REST = r'[^"\\\x00-\x1f]'


def programs(asked: str, found: Callable[[str], str | None] = shutil.which,
             unasked: Collection[str] = ()) -> list[str]:
    """The programs a small model's command may start with: the usual ones `found` on
    PATH, then the words of `asked` that name one; each once, none of `unasked`."""
    out = [p for p in USUAL_PROGRAMS if found(p)]
    out += [w for w in dict.fromkeys(_PROGRAM_WORD.findall(asked)) if w not in out and found(w)]
    out += [b for b in BUILTINS if b not in out]
    return [p for p in out if p not in unasked]


def command_shape(parameters: dict[str, object], starts: list[str]) -> dict[str, object] | None:
    """exec_shell_command's parameters with its command held to start with one of
    `starts` (a program alone, or followed by a blank and the rest of one line); None
    when there is nothing to hold it to or no command argument."""
    props = parameters.get("properties")
    if not starts or not isinstance(props, dict) or not isinstance(props.get("command"), dict):
        return None
    # Only `+` of a program's name is special to a pattern (`g++`); llama.cpp's reading of
    # a pattern keeps other escapes (`\-`) as they are written.
    alternatives = "|".join(p.replace("+", "\\+") for p in starts if _NAME.fullmatch(p))
    if not alternatives:
        return None
    pattern = f"^({alternatives})( {_REST}*)?$"
    return {**parameters, "properties": {**props, "command": {"type": "string", "pattern": pattern}}}
