"""An answer that quotes a line of a file as a search prints it (`path:N:text`) where
the file's line N does not say that now.

SmolLM2-135M often answers with a line in a search's shape: after changing a setting it
quoted the search's line from before the change ("settings.ini:7:enabled = false", the
line now reading `enabled = true`); asked why a function misbehaves, it answered with
another file's line number and a third line's text run together. A quote of the
workspace the workspace does not bear out is no answer: the person would read a line
that is not in the file. Only the search shape is judged, where the answer names its
file and line itself; a quote of the line as it stands now is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

# `path:N:text` or `path:N: text`, as grep_search and grep print a match, at a line's
# start or after a space; the text runs to the line's end.
_QUOTE = re.compile(r"(?:^|(?<=\s))((?:\./)?[\w.-]+(?:/[\w.-]+)*\.[A-Za-z][\w]{0,7}):(\d{1,6}):[ \t]*(\S[^\n]*)",
                    re.MULTILINE)
# How long a part of a line, or a line within a quote, stands for it.
PART_CHARS = 8
# How much of a quoted or real line a notice shows.
SHOWN_CHARS = 60


@attrs.frozen
class Misquote:
    """The answer quoted `path`'s line `number` as `quoted`; it reads `actual` (None:
    the file has no such line); `changed`: a change ran in the run before the answer."""

    path: str
    number: int
    quoted: str
    actual: str | None
    changed: bool = False


def misquoted(text: str, lines_of: Callable[[str], list[str] | None], *, changed: bool = False) -> Misquote | None:
    """The first quote in `text` in a search's shape whose words the file it names does
    not hold now, on its line or any other (a line's number off by some is a slip, not
    a false quote); None where every such quote is borne out (or names no file of the
    workspace: another rule judges a file that is not there). `lines_of` gives a
    workspace file's lines, None for no such file."""
    for m in _QUOTE.finditer(text):
        path, number, quoted = m.group(1), int(m.group(2)), _plain(m.group(3))
        lines = lines_of(path.removeprefix("./"))
        if lines is None or not quoted or any(_agrees(quoted, _plain(line)) for line in lines):
            continue
        actual = _plain(lines[number - 1]) if 0 < number <= len(lines) else None
        return Misquote(path=path, number=number, quoted=quoted, actual=actual, changed=changed)
    return None


def _plain(line: str) -> str:
    return " ".join(line.split())


def _agrees(quoted: str, actual: str) -> bool:
    """Whether a quote stands for the line: the same words, or a part of it as long as
    the quote (an answer may cut the line short, or go on after it in a sentence)."""
    quoted, actual = quoted.casefold(), actual.casefold()
    return quoted == actual or len(actual) >= PART_CHARS and actual in quoted \
        or len(quoted) >= PART_CHARS and quoted in actual


def shown(line: str) -> str:
    """`line` as a notice shows it: SHOWN_CHARS at most."""
    return line if len(line) <= SHOWN_CHARS else line[:SHOWN_CHARS - 1] + "\u2026"


TOLD_PREFIX = "Your answer quotes "


def told(quote: Misquote) -> str:
    """What the model is told of an answer that misquotes a file: the line as it reads
    now, and to answer from the files as they are."""
    return (f"{TOLD_PREFIX}line {quote.number} of {quote.path} as \u201c{shown(quote.quoted)}\u201d, but "
            f"{_now(quote)}. Answer from the files as they are now (read the file again if you need to), in your "
            "own words.")


def could_not(quote: Misquote) -> str:
    """What the person reads instead of an answer that still misquotes a file; after a
    change, that a change was made, to be checked (the answer about it is what failed)."""
    said = (f"its answer quoted line {quote.number} of {quote.path} as \u201c{shown(quote.quoted)}\u201d, but "
            f"{_now(quote)}")
    if quote.changed:
        return (f"The model made a change (its card shows it); {said}, so its answer is not shown. Check the "
                "change; for a better answer, try a larger model (the models page).")
    return f"The model could not do this: {said}. Try a larger model (the models page) or ask more exactly."


def _now(quote: Misquote) -> str:
    if quote.actual is None:
        return f"{quote.path} has no line {quote.number}"
    return f"that line reads \u201c{shown(quote.actual)}\u201d"
