"""Whole commands for two edits of a Python script's shape: its print calls taken out or
commented out (those the request's words pick, "the debug prints", or all), and the
code it runs when started put under `if __name__ == "__main__":` so that importing it
runs nothing.

Asked to take the prints out of a script, SmolLM2-135M edited one line and wrote the
worked example's words into it. Which lines are print calls, and which lines are the
script's own run (after its last `def` or `class`), are the parser's to say, so the
command is known:

    sed -i -e '7d' -e '12d' app.py                                  the prints gone
    sed -i -e '7s/^\\(\\s*\\)/\\1# /' app.py                           commented out
    sed -i -e '20,23s/^\\(.\\)/    \\1/' -e '20i if __name__ == "__main__":' app.py   the guard

A print that is the only statement of its block is made `pass  # print(…)`, never
taken out nor only commented out (the block would be empty); none where a print spans
lines, or where the script's run holds
a string of several lines (its text would be indented with it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE

_PRINTS = re.compile(r"\bprint(?:s|\(\)|\s+(?:statements?|calls?|lines?))?\b", re.IGNORECASE)
_REMOVES = re.compile(r"\b(?:remove|delete|drop|strip|get\s+rid\s+of|take\s+(?:[\w']+\s+){0,3}?out|kill|"
                      r"clean\s+out|lose|ditch)\b", re.IGNORECASE)
_COMMENTS = re.compile(r"\b(?:comment(?:ed)?\s+(?:out\s+)?|disable|silence|mute)\b", re.IGNORECASE)
_GUARD = re.compile(r"\bmain\s+guard\b|__name__|\bif\s+name\s*(?:==|is)\s*main\b|"
                    r"\bimport(?:ing|ed)?\s+(?:it|\S+)\s+(?:does(?:n'?t|\s+not)|won'?t|shouldn'?t)\s+run\b|"
                    r"\bwhen\s+(?:it'?s\s+|it\s+is\s+)?(?:run|executed|started|called)\s+directly\b|"
                    # importing it runs its code; only when it is run itself, on its own, as a script
                    r"\bimport(?:ing|ed)?\b(?:\s+\S+){0,4}?\s+(?:runs|prints|executes|starts|kicks\s+off|triggers)\b|"
                    r"\bwhen\s+imported\b|\bon\s+import\b|"
                    r"\b(?:run|ran|executed|started|launched|invoked)\s+(?:directly|itself|on\s+its\s+own|"
                    r"as\s+(?:a\s+|the\s+)?(?:script|program|main))\b|\bitself\s+(?:is\s+|gets\s+)?(?:run|executed)\b",
                    re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z]{3,}")
# Words of a request about prints that do not pick which ones.
_PLAIN = frozenset({"the", "all", "and", "out", "print", "prints", "statements", "statement", "calls", "call",
                    "lines", "line", "from", "remove", "delete", "drop", "strip", "comment", "please", "every",
                    "any", "can", "you", "get", "rid", "take", "them", "each", "file", "script", "code", "those",
                    "these", "there", "that", "with", "into", "commented", "just", "leftover", "stray"})


def script_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a request to take out or comment out the prints of the one
    Python file it names (that `read` gives), or to put its run under a main guard;
    none otherwise."""
    files = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(files) != 1:
        return {}
    path, text = files[0], read(files[0]) or ""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    if _GUARD.search(asked):
        command = guard_command(path, text, tree)
    elif _PRINTS.search(asked) and (_REMOVES.search(asked) or _COMMENTS.search(asked)):
        words = {w.lower() for w in _WORD.findall(PY_FILE.sub(" ", asked))} - _PLAIN
        command = prints_command(path, text, tree, words, comment=bool(_COMMENTS.search(asked)))
    else:
        return {}
    return {"sed": [command]} if command else {}


def prints_command(path: str, text: str, tree: ast.Module, words: set[str], *, comment: bool) -> str | None:
    """The `sed` that takes out (or, `comment`, comments out) the one-line print calls of
    `path` whose text holds one of `words` (where some do; else all of them)."""
    lines = text.split("\n")
    prints: list[tuple[int, int, int]] = []  # (line, its block, how many statements the block has)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for stmt in block:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                        and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "print":
                    if stmt.end_lineno != stmt.lineno:
                        return None
                    prints.append((stmt.lineno, id(block), len(block)))
    picked = [p for p in prints if any(w in lines[p[0] - 1].lower() for w in words)]
    taken = sorted(picked or prints)
    # A block all of whose statements go keeps one as `pass` (it may not be empty).
    emptied = {b for _, b, size in taken if sum(1 for _, o, _ in taken if o == b) == size}
    kept_as_pass = {min(n for n, o, _ in taken if o == b) for b in emptied}
    chosen = [(n, n in kept_as_pass) for n, _, _ in taken]
    if not chosen:
        return None
    edits = [f"-e '{n}s/^\\(\\s*\\)\\(.*\\)/\\1pass  # \\2/'" if alone else f"-e '{n}s/^\\(\\s*\\)/\\1# /'"
             if comment else f"-e '{n}d'" for n, alone in chosen]
    return f"sed -i {' '.join(edits)} {path}"


def guard_command(path: str, text: str, tree: ast.Module) -> str | None:
    """The `sed` that puts the statements after `path`'s last definition (its run) under a
    main guard, each line of them indented; None where it has one, or there is no run."""
    body = tree.body
    if any(isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) for n in body):
        return None
    last_def = max((i for i, n in enumerate(body) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef
                                                                  | ast.ClassDef | ast.Import | ast.ImportFrom)),
                   default=-1)
    run = body[last_def + 1:]
    if not run:
        return None
    first, last = run[0].lineno, max(n.end_lineno or n.lineno for n in run)
    if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and n.lineno != n.end_lineno
           for stmt in run for n in ast.walk(stmt)):
        return None
    return (f"sed -i -e '{first},{last}s/^\\(.\\)/    \\1/' -e '{first}i if __name__ == \"__main__\":' {path}")
