"""Where an answer begins, after a question's file was read: the names in that file that
answer it, found by Python's own parser.

Asked which function calls a name, SmolLM2-135M read the file that calls it and
answered about something else in it ("The crew size is 4"); asked what exception a
function raises, it answered with the worked example's words. The file read holds the
answer, and `ast` finds it: the functions whose bodies call the name, or the exceptions
the function named raises. The answer's round is held to begin with one of them
(TurnInput.reply_starts), its rest the model's own words.
"""

from __future__ import annotations

import ast
import re

# "which function calls x", "what method uses x": the answer is a function's name.
_ASKS_CALLER = re.compile(r"\b(?:which|what)\s+(?:functions?|methods?)\b.*\b(?:calls?|uses?|invokes?|runs?)\b",
                          re.IGNORECASE | re.DOTALL)
# "what exception does f raise", "which error is thrown": the answer is an exception's name.
_ASKS_RAISED = re.compile(r"\b(?:which|what)\s+(?:kind\s+of\s+)?(?:exceptions?|errors?)\b", re.IGNORECASE)


def answer_starts(asked: str, text: str, name: str) -> tuple[str, ...]:
    """The names an answer to `asked` begins with, one of them, found in a Python file's
    `text` about the `name` searched for: the functions that call it, asked which
    function calls it; the exceptions it raises (or the file does, where it defines no
    function of that name), asked what exception; none otherwise, or where the file
    does not parse."""
    asks_caller, asks_raised = _ASKS_CALLER.search(asked), _ASKS_RAISED.search(asked)
    if not (asks_caller or asks_raised) or not name.isidentifier():
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    if asks_caller:
        return tuple(dict.fromkeys(f.name for f in functions if f.name != name and _calls(f, name)))
    named = [f for f in functions if f.name == name]
    scope: list[ast.AST] = list(named) or [tree]
    raised = [r for node in scope for r in _raised(node)]
    # Of several, those the request's words name most (in the exception's name, or the
    # test of the `if` that raises it: "when the slot is taken", `if slot in taken`).
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", asked)}
    score = {exc: len(words & parts) for exc, parts in raised}
    best = max(score.values(), default=0)
    return tuple(dict.fromkeys(exc for exc, _ in raised if score[exc] == best))

def _calls(node: ast.AST, name: str) -> bool:
    """Whether `node`'s body calls `name` (as a name, or an attribute's)."""
    return any(isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id == name or
                                            isinstance(n.func, ast.Attribute) and n.func.attr == name)
               for n in ast.walk(node))


def _raised(node: ast.AST) -> list[tuple[str, set[str]]]:
    """The exceptions `node` raises (`raise X(…)`, `raise X`, `raise m.X`), each with the
    words of its name and of the test of the `if` it is raised under, lower case."""
    out = []
    tests: dict[int, ast.expr] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.If):
            tests.update({id(b): n.test for b in ast.walk(n) if isinstance(b, ast.Raise)})
    for n in ast.walk(node):
        if isinstance(n, ast.Raise) and n.exc is not None:
            exc = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            name = exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else None
            if name is not None:
                test = tests.get(id(n))
                said = ast.unparse(test) if test is not None else ""
                out.append((name, {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name + " " + said)}))
    return out
