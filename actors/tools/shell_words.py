"""The words of a plain pipeline, as `/bin/sh` passes them to each program.

The tokenizer of the read-only classifier (actors/tools/classify.py): it accepts only
a pipeline of simple commands, single `|` between them, and refuses anything else the
shell would read as more than words (redirection, expansion, separators, escapes,
control characters). No I/O: an unquoted glob is only marked, the shell expands it.
"""

from __future__ import annotations

import attrs

MAX_COMMAND_CHARS = 8192  # longer lines ask; nobody types a read this long

_GLOB_CHARS = "*?["
_BLANKS = " \t"
# Outside single quotes, each of these starts something other than a plain word.
_SPECIAL = {
    ";": "`;` starts another command",
    "&": "`&` runs a job in the background or chains commands",
    "<": "`<` redirects input (or is a here-document or process substitution)",
    ">": "`>` redirects output to a file",
    "(": "`(` starts a subshell or process substitution",
    ")": "`)` closes a subshell",
    "{": "braces group commands or expand to several words",
    "}": "braces group commands or expand to several words",
    "$": "`$` expands a variable or runs a command",
    "`": "a backquote runs a command",
    "\\": "a backslash escape hides what the word is",
    "#": "`#` starts a comment",
    "~": "`~` names a home folder",
}


class NotPlain(ValueError):
    """The line is not a plain pipeline of simple commands; the text says what was found."""


@attrs.frozen
class Word:
    """One word as the program receives it, quotes removed.

    `glob_at` holds the positions of unquoted `*`, `?` and `[`, which the shell expands
    against the folder before the program runs.
    """

    text: str
    glob_at: frozenset[int] = frozenset()

    @property
    def globbed(self) -> bool:
        return bool(self.glob_at)


def split_pipeline(command: str) -> list[list[Word]]:
    """The words of each stage of a plain pipeline, as `/bin/sh` would pass them.

    Raises NotPlain for anything else: an operator other than a single `|`, an
    expansion, an escape, an unclosed quote, a control character, an empty stage.
    Inside double quotes `\\` keeps POSIX meaning (it escapes `$`, backquote, `"`
    and `\\`); `$` and backquotes there still expand, so they are refused.
    """
    if not isinstance(command, str):
        raise NotPlain("the command is not text")
    if len(command) > MAX_COMMAND_CHARS:
        raise NotPlain(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    _refuse_control_characters(command)

    stages: list[list[Word]] = [[]]
    chars: list[str] = []
    globs: set[int] = set()
    in_word = False

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            stages[-1].append(Word("".join(chars), frozenset(globs)))
        chars.clear()
        globs.clear()
        in_word = False

    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in _BLANKS:
            end_word()
            i += 1
        elif c == "|":
            if command.startswith("||", i):
                raise NotPlain("`||` runs a second command when the first fails")
            end_word()
            if not stages[-1]:
                raise NotPlain("a `|` with no command before it")
            stages.append([])
            i += 1
        elif c == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise NotPlain("a single quote is not closed")
            chars.extend(command[i + 1 : close])
            in_word = True
            i = close + 1
        elif c == '"':
            i = _read_double_quoted(command, i + 1, chars)
            in_word = True
        elif c in _SPECIAL:
            raise NotPlain(_SPECIAL[c])
        else:
            if c in _GLOB_CHARS:
                globs.add(len(chars))
            chars.append(c)
            in_word = True
            i += 1
    end_word()
    if not stages[-1]:
        raise NotPlain("a `|` with no command after it" if len(stages) > 1 else "the command is empty")
    return stages


def _refuse_control_characters(command: str) -> None:
    for c in command:
        if c in "\n\r":
            raise NotPlain("a line break separates commands")
        if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F:
            raise NotPlain("the command holds a control character")
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise NotPlain("the command is not valid Unicode text")


def _read_double_quoted(command: str, i: int, chars: list[str]) -> int:
    """Append the text of a double-quoted part starting at `i`; the index after its close."""
    n = len(command)
    while i < n:
        c = command[i]
        if c == '"':
            return i + 1
        if c == "$":
            raise NotPlain("`$` inside double quotes still expands a variable or runs a command")
        if c == "`":
            raise NotPlain("a backquote inside double quotes still runs a command")
        if c == "\\" and i + 1 < n and command[i + 1] in '$`"\\':
            chars.append(command[i + 1])
            i += 2
            continue
        chars.append(c)
        i += 1
    raise NotPlain("a double quote is not closed")
