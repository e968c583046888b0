"""The whole command of a request to show amounts of money (or any number it names the
places of) with a fixed number of decimals: the f-string fields written right after a
currency sign (`£{cost}`), in the workspace's Python files, given the format that says
how many places (`£{cost:.2f}`).

Asked for amounts with two decimals where a script printed a float's long tail,
SmolLM2-135M wrote the table of prices over as one number. The fields
that print an amount are the f-strings' to say, read by Python's parser, so the one
command is known:

    sed -i -e '9s/£{cost}/£{cost:.2f}/' -e '10s/£{total}/£{total:.2f}/' shop/ticket.py

None where the request asks for no number of places and says nothing of money, or no
field after a currency sign has no format yet.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH
from actors.runs.agent.small.slip_base import one_line

_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}
_PLACES = re.compile(r"\b(?P<n>[1-4]|one|two|three|four)\s*(?:decimal(?:\s+(?:places?|points?|digits?))?s?|dp\b|"
                     r"d\.p\.|places?\s+after\s+the\s+(?:point|dot))", re.IGNORECASE)
_MONEY = re.compile(r"\b(?:money|cents?|pence|pennies|currency|dollars?|euros?|pounds?)\b|[£$€¥]\s?\d",
                    re.IGNORECASE)
_SHOW = re.compile(r"\b(?:print|show|display|look|format|round|come\s+out|appear|decimals?)\w*", re.IGNORECASE)
_SIGNS = "£$€¥"
# Files the command may change at most.
FILES = 3


def decimals_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command that gives the amounts the workspace's f-strings print after a
    currency sign the number of decimals the request asks (2 for money)."""
    places = _PLACES.search(asked)
    if places is None and not (_MONEY.search(asked) and re.search(r"\bdecimals?\b|\d\.\d{6,}", asked)):
        return {}
    if not _SHOW.search(asked):
        return {}
    n = 2 if places is None else int(_WORDS.get(places.group("n").lower(), places.group("n")))
    commands: list[str] = []
    for path, text in texts():
        if not path.endswith(".py") or not PLAIN_PATH.fullmatch(path):
            continue
        edits = _edits(path, text, n)
        if edits is None:
            return {}
        if edits:
            commands.append(f"sed -i {' '.join(edits)} {path}")
    if not commands or len(commands) > FILES:
        return {}
    return {"sed": [" && ".join(commands)]}


def _edits(path: str, text: str, places: int) -> list[str] | None:
    """The `sed -e` expressions giving `path`'s f-string fields after a currency sign
    the format of `places` decimals; None where one cannot be written so."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    lines = text.splitlines()
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr) or node.lineno != node.end_lineno:
            continue
        line = lines[node.lineno - 1]
        for before, value in zip(node.values, node.values[1:], strict=False):
            if not (isinstance(before, ast.Constant) and isinstance(before.value, str)
                    and before.value.rstrip().endswith(tuple(_SIGNS)) and isinstance(value, ast.FormattedValue)
                    and value.format_spec is None and value.conversion == -1):
                continue
            field = "{" + ast.unparse(value.value) + "}"
            sign = before.value.rstrip()[-1]
            old = sign + before.value[len(before.value.rstrip()):] + field
            if line.count(old) != 1:
                return None
            slip = one_line(path, node.lineno, old, old[:-1] + f":.{places}f}}", "", frozenset())
            if slip is None:
                return None
            out.extend(slip.edits)
    return out
