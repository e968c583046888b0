"""Whole commands for small mends of Python code the request says in words, on the file
that holds the code it means, named or not: a search or a comparison of text made to
ignore case (`term in name`: `term.lower() in name.lower()`), a list that comes out in
the wrong order (its `sorted`/`.sort` call given or rid of `reverse=True`; where there is
none, a looped `range` that counts up made `reversed(range(…))`), and times shown on the
other clock (a `strftime` layout's 12-hour fields made 24-hour ones, or back).

Asked to make a ranking put the most points first, SmolLM2-135M searched for the
request's noun, found it in a text file and wrote the file's own path over its line.
The sort call, and whether it sorts up or down, are read by Python's parser; which way
the request wants it is in its words ("upside down" and "backwards": the other way;
"most … first", "highest first", "descending": down; "lowest first", "ascending": up):

    sed -i '2s/key=lambda p: p\\[1\\])/key=lambda p: p[1], reverse=True)/' app/ranks.py
    sed -i "1s/%I:%M %p/%H:%M/" views/show.py

None where the workspace's Python files hold more than one such call and the request's
words do not tell which (the person says), or where it sorts the way asked already.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, sed_pattern, sed_replacement

# The other way round, whatever way it is now.
_FLIP = re.compile(r"\b(?:upside[\s-]*down|backwards?|back\s+to\s+front|(?:the\s+)?wrong\s+way(?:\s+round)?|"
                   r"reversed?|inverted?|flipped|(?:in\s+)?the\s+wrong\s+order|wrong\s+order|"
                   r"(?:up|down|forwards?|backwards?|ascending|descending)\s+instead\s+of\s+(?:up|down|forwards?|"
                   r"backwards?|ascending|descending))\b", re.IGNORECASE)
_DOWN = re.compile(r"\b(?:descending|(?:most|highest|biggest|largest|greatest|top|best|newest|latest|longest|"
                   r"heaviest|oldest\s+last|high(?:er)?|big(?:ger)?|large(?:r)?|more)\b[^.?!]{0,40}?\b(?:first|"
                   r"at\s+the\s+top|on\s+top|comes?\s+first|leads?)|(?:high|big|large)\s+to\s+(?:low|small))\b",
                   re.IGNORECASE)
_UP = re.compile(r"\b(?:ascending|(?:least|lowest|smallest|fewest|oldest|earliest|shortest|lightest|low(?:er)?|"
                 r"small(?:er)?|less)\b[^.?!]{0,40}?\b(?:first|at\s+the\s+top|on\s+top|comes?\s+first|leads?)|"
                 r"(?:low|small)\s+to\s+(?:high|big|large)|a\s*(?:-|to)\s*z|alphabetical(?:ly)?)\b", re.IGNORECASE)
_ORDER = re.compile(r"\b(?:order|ordered|sort|sorted|sorting|rank|ranked|ranking|ladder|table|list|leaderboard|"
                    r"standings|first|top|counts?|counting|numbers?|goes|runs?)\b", re.IGNORECASE)
# Times on the 24-hour clock, or the 12-hour one.
_CLOCK_24 = re.compile(r"\b(?:24[\s-]*h(?:ou)?r?s?|twenty[\s-]*four[\s-]*hours?|military\s+time)\b", re.IGNORECASE)
_CLOCK_12 = re.compile(r"\b(?:12[\s-]*h(?:ou)?r?s?|twelve[\s-]*hours?|am\s*/\s*pm)\b", re.IGNORECASE)
# Text matched whatever its case ("case sensitive", "ignore case", "upper/lower case").
_ANY_CASE = re.compile(r"\bcase[\s-]*(?:in)?sensitive\b|\bignor\w*\s+(?:the\s+)?(?:upper\s*/\s*lower\s+|lower\s*/\s*"
                       r"upper\s+|capital\w*\s+|letter\s+)?case\b|\bregardless\s+of\s+(?:upper\s*/\s*lower\s+)?case\b|"
                       r"\bany\s+case\b|\bupper\s*(?:/|or|and)\s*lower\s*case\b", re.IGNORECASE)
_SEARCH = re.compile(r"\b(?:search\w*|find\w*|filter\w*|look(?:s|ing)?\s+(?:up|for)|lookup|match\w*)\b", re.IGNORECASE)
_TEXT_OPS: tuple[type[ast.cmpop], ...] = (ast.In, ast.NotIn, ast.Eq, ast.NotEq)
_TEXT_OPS_SAID: dict[type[ast.cmpop], str] = {ast.In: "in", ast.NotIn: "not in", ast.Eq: "==", ast.NotEq: "!="}
# Files looked at at most.
FIX_FILES = 40


def fix_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                 named: Iterable[str] = ()) -> dict[str, list[str]]:
    """The whole command of a request to sort the other way, to show times on the other
    clock or to match text whatever its case, over the Python files it names, else all
    the workspace's (`texts`: (path, text) of each); none otherwise."""
    clock = "24" if _CLOCK_24.search(asked) else "12" if _CLOCK_12.search(asked) else None
    way = "flip" if _FLIP.search(asked) else "down" if _DOWN.search(asked) else "up" if _UP.search(asked) else None
    case = bool(_ANY_CASE.search(asked))
    if clock is None and not case and (way is None or not _ORDER.search(asked)):
        return {}
    names = set(named)
    files = [(p, t) for p, t in texts() if p.endswith(".py") and (not names or p in names)][:FIX_FILES]
    if case:
        matches = [m for p, t in files if not p.rsplit("/", 1)[-1].startswith("test") for m in case_commands(p, t)]
        words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", asked)}
        scores = [sum(w[:5] in around.lower() for w in words) for _, around, _ in matches]
        if any(scores):  # those in the function (or file) of the most words the request says
            matches = [m for m, n in zip(matches, scores, strict=True) if n == max(scores)]
        if _SEARCH.search(asked):  # a search: a containment, not an equality
            matches = [m for m in matches if m[2]]
        return {"sed": [matches[0][0]]} if len(matches) == 1 else {}
    if clock is not None:
        found = [c for p, t in files for c in clock_commands(p, t, to_24=clock == "24")]
    else:
        assert way is not None
        found = [c for p, t in files for c in order_commands(p, t, way)]
        if not found and way in ("flip", "down"):  # no sort: a range that counts up, counted down
            found = [c for p, t in files for c in range_commands(p, t)]
        if len(found) > 1:  # of several, those in files whose words the request says
            words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", asked)}
            said = [c for c in found if any(w[:5] in c.lower() for w in words)]
            found = said or found
    return {"sed": found} if len(found) == 1 else {}


def order_commands(path: str, text: str, way: str) -> list[str]:
    """The `sed` of each one-line `sorted(…)` or `x.sort(…)` call of `path` (its `text`)
    that sorts other than `way` ("down", "up", or "flip": the other way from now), made
    to sort that way."""
    tree = _parsed(path, text)
    if tree is None:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno != node.end_lineno or not (
                isinstance(node.func, ast.Name) and node.func.id == "sorted"
                or isinstance(node.func, ast.Attribute) and node.func.attr == "sort"):
            continue
        reverse = next((k for k in node.keywords if k.arg == "reverse"), None)
        if reverse is not None and not isinstance(reverse.value, ast.Constant):
            continue
        down = reverse is not None and bool(reverse.value.value)  # type: ignore[attr-defined]
        if way == "down" and down or way == "up" and not down:
            continue
        call = ast.get_source_segment(text, node) or ""  # (offsets are of bytes: the parser's own slicing)
        if reverse is None:
            new = call[:-1].rstrip() + (", " if node.args or node.keywords else "") + "reverse=True)"
        else:
            said = ast.get_source_segment(text, reverse.value) or ""
            at = call.rfind("reverse=")
            new = call[:at] + call[at:].replace(f"reverse={said}", f"reverse={'False' if down else 'True'}", 1)
        command = _sed(path, node.lineno, call, new)
        if command:
            out.append(command)
    return out


def range_commands(path: str, text: str) -> list[str]:
    """The `sed` of each one-line `range(…)` of `path` (its `text`) that counts up (no
    step) and is looped over, made to count down (`reversed(range(…))`)."""
    tree = _parsed(path, text)
    if tree is None:
        return []
    looped = [n.iter for n in ast.walk(tree) if isinstance(n, ast.For | ast.comprehension)]
    out = []
    for node in looped:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
                and len(node.args) in (1, 2) and node.lineno == node.end_lineno:
            call = ast.get_source_segment(text, node) or ""
            command = _sed(path, node.lineno, call, f"reversed({call})")
            if command:
                out.append(command)
    return out


def clock_commands(path: str, text: str, *, to_24: bool) -> list[str]:
    """The `sed` of each line of `path` (its `text`) with a time layout in a string
    (`%I`, `%p`; or `%H` asked for the 12-hour clock) made to show the other clock."""
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        for m in re.finditer(r"(['\"])([^'\"\n]*%[IHMlk][^'\"\n]*)\1", line):
            layout = m.group(2)
            if to_24 and ("%I" in layout or "%l" in layout or "%p" in layout):
                new = re.sub(r"\s*%p", "", layout.replace("%I", "%H").replace("%l", "%k"))
            elif not to_24 and "%H" in layout and "%p" not in layout:
                new = re.sub(r"(%H(?::%M(?::%S)?)?)", r"\1 %p", layout, count=1).replace("%H", "%I")
            else:
                continue
            command = _sed(path, n, layout, new)
            if command:
                out.append(command)
    return out


def case_commands(path: str, text: str) -> list[tuple[str, str, bool]]:
    """The `sed` making each one-line comparison of text in a function of `path` (`a in
    b`, `a == b`, `a.startswith(b)`) ignore case (both sides `.lower()`), with the words
    around it (the path, the function and its parameters) and whether it looks for one
    text in another (`in`, `startswith`); none already lowered."""
    tree = _parsed(path, text)
    if tree is None:
        return []
    out = []
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        around = " ".join([path, func.name, *(a.arg for a in func.args.args)])
        for node in ast.walk(func):
            pair: tuple[ast.expr, ast.expr, str] | None = None
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _TEXT_OPS):
                pair = (node.left, node.comparators[0], _TEXT_OPS_SAID[type(node.ops[0])])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1 \
                    and node.func.attr in ("startswith", "endswith") and not node.keywords:
                pair = (node.func.value, node.args[0], node.func.attr)
            if pair is None or not isinstance(node, ast.expr) or node.lineno != node.end_lineno \
                    or not all(map(_plain_side, pair[:2])):
                continue
            old = ast.get_source_segment(text, node) or ""
            left, right = (ast.get_source_segment(text, side) or "" for side in pair[:2])
            new = f"{left}.lower().{pair[2]}({right}.lower())" if pair[2] in ("startswith", "endswith") else \
                f"{left}.lower() {pair[2]} {right}.lower()"
            command = _sed(path, node.lineno, old, new)
            if command and "lower()" not in old and "casefold()" not in old:
                out.append((command, around, pair[2] not in ("==", "!=")))
    return out


def _plain_side(node: ast.expr) -> bool:
    """Whether a side of a comparison is a name or an attribute (text a person typed or
    kept), not a literal, a number, a call or a collection."""
    return isinstance(node, ast.Name | ast.Attribute | ast.Subscript)


def _parsed(path: str, text: str) -> ast.Module | None:
    """`text`'s syntax tree, None where it does not parse or `path` is not written plainly."""
    if not PLAIN_PATH.fullmatch(path):
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _sed(path: str, line: int, old: str, new: str) -> str | None:
    """`sed -i` putting `new` in place of `old` on `line` of `path`; None where either
    would need quoting the command cannot give plainly."""
    if "'" in old + new or "\n" in old + new or not PLAIN_PATH.fullmatch(path):
        return None
    pattern, with_ = sed_pattern(old), sed_replacement(new)
    return f"sed -i '{line}s/{pattern}/{with_}/' {path}"
