"""Whole commands for code nothing uses: a function nothing calls taken out (or, asked
which one it is, its `def` line shown), imports a file never uses taken out, and code
commented out taken out (the comments that say something kept).

Asked to find the function nothing calls and delete it, SmolLM2-135M searched for the
request's words and rewrote a line that was in use. Whether a name is used is a count
of the places it is written (a function written once, at its `def`, is called from
nowhere: not by name, not as an attribute, not from a string), and its lines are the
parser's, so the command is known:

    sed -i -e '9,11d' app.py                       the function nobody calls
    grep -n 'def helper' app.py                    asked which it is: its line, printed
    grep -n 'def parse(' src/io.py                 asked which function no test names
    sed -i -e '2d' -e '3s/, sys$//' app.py         the imports it never uses
    sed -i -e '4d' -e '9d' app.py                  its lines of code commented out

Functions with decorators (a framework may call them), `main`, dunders and tests are
never taken as unused; a package's `__init__.py` keeps its imports (they are what it
gives). None where more than one function could be meant and the request asks for one.
A comment is code commented out where what follows its `#` parses as Python and is more
than a word (`# total = 0`, `# print(x)`, `# def old(a):`); prose, a word, `#!`, a
`# type:` or `# noqa` note and a comment after code on its line are kept.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, is_test

_UNCALLED = re.compile(r"\b(?:nothing|nobody|no\s*one|never)\s+(?:ever\s+)?(?:calls?|uses?|called|used|runs?)\b|"
                       r"\b(?:unused|uncalled|dead|orphan(?:ed)?)\s+(?:functions?|methods?|code|helpers?)\b|"
                       r"\b(?:never|not|isn'?t|aren'?t)\s+(?:ever\s+)?(?:called|used|invoked)\b|\bdead\s+code\b",
                       re.IGNORECASE)
_IMPORTS = re.compile(r"\b(?:unused|unneeded|unnecessary|extra|stale|leftover)\s+imports?\b|"
                      r"\bimports?\s+(?:that\s+|which\s+)?(?:are\s+|is\s+)?(?:n'?t|not|never|no\s+longer)\s+"
                      r"(?:used|needed)\b|\bimports?\s+(?:that\s+)?(?:aren'?t|isn'?t)\s+(?:used|needed)\b",
                      re.IGNORECASE)
_REMOVES = re.compile(r"\b(?:delete|remove|drop|get\s+rid|strip|cut|clean|clear|tidy|prune|purge|"
                      r"take\s+(?:\w+\s+){0,4}?out|ditch|bin|lose|kill|nuke|trim)\w*\b", re.IGNORECASE)
# A function no test names ("has no test", "untested", "isn't covered").
_UNTESTED = re.compile(r"\buntested\b|\b(?:no|not|never|without|lacks?|missing|any)\s+(?:a\s+|any\s+|single\s+|"
                       r"been\s+)?(?:tests?|tested|coverage|covered)\b|(?:\bnot|n't)\s+(?:been\s+)?(?:tested|covered)\b",
                       re.IGNORECASE)
_ASKS_ONE = re.compile(r"\b(?:a|one|the)\s+(?:function|method|helper)\b", re.IGNORECASE)
_ASKS = re.compile(r"\b(?:which|what|find|show|list|tell|is\s+there|are\s+there|anything)\b", re.IGNORECASE)
# Code commented out, said in words ("the commented-out code", "old commented lines").
_COMMENTED = re.compile(r"\bcommented[\s-]*out\b|\bcommented\s+(?:code|lines?)\b|"
                        r"\b(?:old|dead|stale)\s+(?:code\s+)?comments\b", re.IGNORECASE)
# Notes for tools, kept however they parse.
_TOOL_NOTE = re.compile(r"^#\s*(?:!|-\*-|type:|noqa|pragma|fmt:|pylint:|mypy:|isort:)", re.IGNORECASE)
# Files looked at at most.
DEAD_FILES = 60


def dead_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                  named: Iterable[str] = ()) -> dict[str, list[str]]:
    """The whole command of a request about functions nothing calls, or imports a file
    does not use, in the Python files it names, else all of the workspace's (`texts`:
    (path, text) of every text file, the places a name is written counted over all)."""
    imports, uncalled = bool(_IMPORTS.search(asked)), bool(_UNCALLED.search(asked))
    if _COMMENTED.search(asked) and _REMOVES.search(asked) and not imports:
        return commented_commands(list(texts())[:DEAD_FILES], set(named))
    if _UNTESTED.search(asked) and _ASKS.search(asked) and not imports:
        return untested_commands(list(texts())[:DEAD_FILES], set(named))
    if not imports and not uncalled:
        return {}
    removes = bool(_REMOVES.search(asked))
    files = list(texts())[:DEAD_FILES]
    names = set(named)
    python = [(p, t) for p, t in files if p.endswith(".py") and PLAIN_PATH.fullmatch(p) and (not names or p in names)]
    if imports:
        commands = [c for p, t in python if p.rsplit("/", 1)[-1] != "__init__.py"
                    and (c := imports_command(p, t)) is not None]
        return {"sed": [" && ".join(commands)]} if commands and removes else {}
    found = [(p, t, f) for p, t in python for f in uncalled_functions(t, files)]
    if not found or len(found) > 1 and _ASKS_ONE.search(asked) and not re.search(r"\b(?:all|every|each)\b", asked):
        return {}
    if not removes:
        if not _ASKS.search(asked):
            return {}
        return {"grep": [" && ".join(f"grep -n 'def {f.name}(' {p}" for p, _, f in found)]}
    by_file: dict[str, list[tuple[int, int]]] = {}
    for p, t, f in found:
        by_file.setdefault(p, []).append(_lines(f, t))
    return {"sed": [" && ".join(f"sed -i {' '.join(f'-e {a},{b}d' for a, b in spans)} {p}"
                                for p, spans in by_file.items())]}


def commented_commands(files: list[tuple[str, str]], named: set[str]) -> dict[str, list[str]]:
    """The `sed` taking out of the Python files (those `named`, else all) their lines of
    code commented out (`commented_out`); none where there are none."""
    commands = []
    for path, text in files:
        if not path.endswith(".py") or not PLAIN_PATH.fullmatch(path) or named and path not in named:
            continue
        gone = commented_out(text)
        if gone:
            commands.append(f"sed -i {' '.join(f'-e {n}d' for n in gone)} {path}")
    return {"sed": [" && ".join(commands)]} if commands else {}


def commented_out(text: str) -> list[int]:
    """The numbers of the lines of `text` that are code commented out: a whole-line
    comment whose text parses as Python (a block's opening line with a body added) and is
    more than a name or a constant; not a tool's note."""
    out = []
    lines = text.split("\n")
    for n in _comment_lines(text):
        bare = lines[n - 1].strip()
        if _TOOL_NOTE.match(bare):
            continue
        code = bare.lstrip("#").strip()
        if _is_code(code) or code.endswith(":") and _is_code(code + "\n    pass"):
            out.append(n)
    return out


def _comment_lines(text: str) -> list[int]:
    """The numbers of the lines of `text` that hold a comment alone, as Python's
    tokenizer reads them (a line in a string that begins with `#` is none); none where
    it does not read."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [t.start[0] for t in tokens if t.type == tokenize.COMMENT and not t.line[:t.start[1]].strip()]


def _is_code(code: str) -> bool:
    """Whether `code` parses as Python and is more than one name, constant or word."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return bool(tree.body) and not all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Name | ast.Constant)
                                       for s in tree.body)


def untested_commands(files: list[tuple[str, str]], named: set[str]) -> dict[str, list[str]]:
    """The `def` line of each top-level function of the code (the files `named`, else
    all but the tests) that no test file uses (imported only is untested); none where
    there is no test file."""
    tests = [t for p, t in files if p.endswith(".py") and is_test(p)]
    if not tests:
        return {}
    tried = set().union(*map(_used_names, tests))
    found = []
    for path, text in files:
        if not path.endswith(".py") or is_test(path) or not PLAIN_PATH.fullmatch(path) or named and path not in named:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_") \
                    and node.name != "main" and node.name not in tried:
                found.append((path, node.name))
    return {"grep": [" && ".join(f"grep -n 'def {name}(' {path}" for path, name in found)]} if found else {}


def _used_names(text: str) -> set[str]:
    """The names a file uses (not only imports): called, passed, read as attributes."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


def uncalled_functions(text: str, files: list[tuple[str, str]]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The top-level functions of `text` written nowhere in `files` but at their `def`:
    no decorator, not `main`, not a dunder, not a test's."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.decorator_list \
                or node.name == "main" or node.name.startswith(("test", "__")):
            continue
        word = re.compile(rf"(?<![\w]){re.escape(node.name)}(?!\w)")
        if sum(len(word.findall(t)) for _, t in files) == 1:
            out.append(node)
    return out


def imports_command(path: str, text: str) -> str | None:
    """The `sed` taking out of `path` (its `text`) the names its one-line imports bind and
    it never uses (not read, not in `__all__`, not written elsewhere in it): a line all
    of whose names go deleted, another written with those it keeps; None where none goes."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.split("\n")
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    edits = []
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.end_lineno != node.lineno:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        line = lines[node.lineno - 1]
        keep = [a for a in node.names if a.name == "*" or (a.asname or a.name).split(".")[0] in used]
        if len(keep) == len(node.names):
            continue
        if not keep:
            edits.append(f"-e '{node.lineno}d'")
            continue
        said = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in keep)
        new = f"from {'.' * node.level}{node.module or ''} import {said}" if isinstance(node, ast.ImportFrom) \
            else f"import {said}"
        indent = line[:len(line) - len(line.lstrip())]
        if "'" in line or "#" in line or ";" in line or "(" in line:
            return None
        edits.append(f"-e '{node.lineno}s/.*/{indent}{new}/'")
    return f"sed -i {' '.join(edits)} {path}" if edits else None


def _lines(node: ast.FunctionDef | ast.AsyncFunctionDef, text: str) -> tuple[int, int]:
    """The lines a top-level function takes out: its own and the blank lines after it
    (those before it part what was before from what follows), or at the end of the file
    the blank lines before it."""
    lines = text.split("\n")
    first, last = node.lineno, node.end_lineno or node.lineno
    end = last
    while end < len(lines) and not lines[end].strip():
        end += 1
    if end < len(lines):
        return first, end
    while first > 1 and not lines[first - 2].strip():
        first -= 1
    return first, last
