"""Where an answer begins, after a question's file was read: the facts in that file that
answer it, found by Python's own parser, each said in a sentence.

Asked which function calls a name, SmolLM2-135M read the file that calls it and
answered about something else in it ("The crew size is 4"); asked what exception a
function raises, it answered with the worked example's words; asked what a class is a
subclass of, it answered with a line of the search's, the class's name misspelt. The
file read holds the answer, and `ast` finds it: the functions whose bodies call the
name, the exceptions the function named raises, the classes the class named is made
from, the parameters or methods it has, the value a name is set to (or a parameter's
default), what it does as its docstring says (or the one expression it returns). The
answer's round is held to begin with one of them (TurnInput.reply_starts), its rest the
model's own words.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator

# "which function calls x", "what method uses x": the answer is a function's name.
_ASKS_CALLER = re.compile(r"\b(?:which|what)\s+(?:functions?|methods?)\b.*\b(?:calls?|uses?|invokes?|runs?)\b",
                          re.IGNORECASE | re.DOTALL)
# "what exception does f raise", "which error is thrown": the answer is an exception's name.
_ASKS_RAISED = re.compile(r"\b(?:which|what)\s+(?:kind\s+of\s+)?(?:exceptions?|errors?)\b", re.IGNORECASE)
# "what's X a subclass of", "what does X inherit from", "X's parent class": its bases.
_ASKS_BASES = re.compile(r"\b(?:(?:sub-?class|child)(?:ed)?\s+of|inherit(?:s|ing|ed)?(?:\s+from)?|"
                         r"derived?s?\s+from|extends?|(?:parent|base|super)[\s-]?class(?:es)?|superclass(?:es)?)\b",
                         re.IGNORECASE)
# "what arguments does f take", "which parameters": its parameters, in order.
_ASKS_PARAMETERS = re.compile(r"\b(?:which|what|how\s+many)\s+(?:arguments?|parameters?|params?|args?|inputs?)\b",
                              re.IGNORECASE)
# "what's X set to", "the value of X", "X's default": the value it is set to.
_ASKS_VALUE = re.compile(r"\b(?:set\s+to|equal\s+to|equals|assigned|value\s+(?:of|for)|default(?:s|\s+value)?|"
                         r"initial(?:ised|ized)?\s+to|what\s+(?:number|value|string))\b", re.IGNORECASE)
# "what does X do", "what is X for", "explain X": what its docstring says, or what it returns.
_ASKS_DOES = re.compile(r"\bwhat\s+(?:does|do|did)\s+\S+\s+do\b|\bwhat(?:'s|\s+is)\s+\S+\s+(?:for|used\s+for)\b|"
                        r"\b(?:explain|describe)\b|\bwhat\s+does\s+\S+\s+return\s*[?.!]*\s*$", re.IGNORECASE)
# "what methods does X override", "which are overridden": its methods a class it is made
# from (in this file or another of the workspace's) defines too.
_ASKS_OVERRIDES = re.compile(r"\b(?:overrid(?:e|es|den|ing)|redefin(?:e|es|ed|ing)|shadow(?:s|ed)?)\b", re.IGNORECASE)
# "which env variable does it read", "what environment variables do I need to set": the
# names the code reads from `os.environ` (or `os.getenv`).
_ASKS_ENVIRONMENT = re.compile(r"\b(?:env(?:ironment(?:al)?)?[\s_-]*var(?:iable)?s?|environment|env)\b",
                               re.IGNORECASE)
# "what methods does X have": its methods, in order.
_ASKS_METHODS = re.compile(r"\b(?:which|what)\s+methods?\s+(?:does|do|is|are|can|has|have)\b", re.IGNORECASE)


# The sentence each kind of answer begins with: the fact, then a full stop (held to a
# bare name, SmolLM2 ran on into it: the name became the start of a file's name it
# made up, and the answer was sent back for naming a file that is not there).
_SAID = {"caller": "{fact} calls {name}.", "raised": "{name} raises {fact}.",
         "bases": "{name} is a subclass of {fact}.", "parameters": "{name} takes {fact}.",
         "count": "{name} takes {fact} arguments.", "methods": "{name} has the methods {fact}.",
         "value": "{name} is set to {fact}.", "does": "{name}: {fact}", "overrides": "{name} overrides {fact}.",
         "environment": "The code reads the environment variable {fact}.",
         "environments": "The code reads the environment variables {fact}."}


def answer_starts(asked: str, text: str, name: str, others: Callable[[], Iterable[str]] = tuple
                  ) -> tuple[str, ...]:
    """The sentences an answer to `asked` begins with, one of them: each fact
    `answer_facts` finds said of `name` (`_SAID`), and a blank after it (without one,
    SmolLM2 ran the next sentence on, the exception's name and the next word read as a
    file's name)."""
    kind, facts = answer_facts(asked, text, name, others)
    if kind == "environment" and facts and ", " in facts[0]:
        kind = "environments"
    return tuple(_SAID[kind].format(name=name, fact=fact) + " " for fact in facts)


def answer_facts(asked: str, text: str, name: str, others: Callable[[], Iterable[str]] = tuple
                 ) -> tuple[str, tuple[str, ...]]:
    """The kind of fact `asked` asks of the `name` searched for, and the facts of it found
    in a Python file's `text`, one of them an answer: the functions that call it, asked
    which function calls it; the exceptions it raises (or the file does, where it
    defines no function of that name), asked what exception; the classes a class of
    that name is made from (`object` where it names none), asked what it is a subclass
    of; its parameters (asked how many, their number: kind `count`), or its methods, all
    in one; the value it is set to (`_values`); what it does (`_does`); the methods it
    overrides (`_overrides`: the classes it is made from looked for in the file, then in
    the `others`' texts, the workspace's other Python files); the environment variables
    the file reads (else the others do), all in one; none otherwise, or where the file
    does not parse or does not define what is asked of."""
    kind, facts = _facts(asked, text, name, others)
    return ("count" if kind == "parameters" and facts and facts[0].isdigit() else kind), facts


def _facts(asked: str, text: str, name: str, others: Callable[[], Iterable[str]]) -> tuple[str, tuple[str, ...]]:
    """`answer_facts`, the kind the first of the request's questions (`asks`)."""
    if not name.isidentifier():
        return "", ()
    asks = [kind for kind, pattern in (("environment", _ASKS_ENVIRONMENT), ("caller", _ASKS_CALLER),
                                        ("raised", _ASKS_RAISED), ("overrides", _ASKS_OVERRIDES),
                                        ("bases", _ASKS_BASES),
                                        ("parameters", _ASKS_PARAMETERS), ("methods", _ASKS_METHODS),
                                        ("value", _ASKS_VALUE), ("does", _ASKS_DOES))
            if pattern.search(asked)]
    if not asks:
        return "", ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return "", ()
    if asks[0] == "environment":
        found = _environment(tree) or [v for t in _trees(others) for v in _environment(t)]
        return asks[0], (", ".join(dict.fromkeys(found)),) if found else ()
    if asks[0] == "overrides":
        return asks[0], _overrides(tree, name, others)
    return asks[0], _found(asks[0], asked, tree, text, name)


def _trees(texts: Callable[[], Iterable[str]]) -> Iterator[ast.Module]:
    """The syntax trees of the `texts` that parse."""
    for text in texts():
        try:
            yield ast.parse(text)
        except (SyntaxError, ValueError):
            continue


def _environment(tree: ast.AST) -> list[str]:
    """The environment variables `tree` reads, in order: `os.environ["X"]`,
    `os.environ.get("X")`, `os.getenv("X")` (or `environ`, `getenv` imported bare)."""
    def environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" or \
            isinstance(node, ast.Name) and node.id == "environ"

    found = []
    for n in ast.walk(tree):
        key = None
        if isinstance(n, ast.Subscript) and environ(n.value):
            key = n.slice
        elif isinstance(n, ast.Call) and n.args and (
                isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop", "setdefault")
                and environ(n.func.value)
                or isinstance(n.func, ast.Attribute) and n.func.attr == "getenv"
                or isinstance(n.func, ast.Name) and n.func.id == "getenv"):
            key = n.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value:
            found.append((getattr(n, "lineno", 0), getattr(n, "col_offset", 0), key.value))
    return [v for *_, v in sorted(found)]


def _overrides(tree: ast.Module, name: str, others: Callable[[], Iterable[str]]) -> tuple[str, ...]:
    """The methods of the class `name` (defined in `tree`) that a class it is made from
    defines too, in its order: the classes it is made from (and theirs) looked for by name
    in `tree`, then in the `others`' trees; none where none of them is found."""
    defined = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    cls = next((c for c in defined if c.name == name), None)
    if cls is None:
        return ()
    more: list[ast.ClassDef] | None = None
    inherited: set[str] = set()
    todo, seen = [_base_name(b) for b in cls.bases], {name}
    while todo:
        base = todo.pop(0)
        if base is None or base in seen:
            continue
        seen.add(base)
        found = next((c for c in defined if c.name == base), None)
        if found is None:
            if more is None:
                more = [n for t in _trees(others) for n in ast.walk(t) if isinstance(n, ast.ClassDef)]
            found = next((c for c in more if c.name == base), None)
        if found is not None:
            inherited |= {m.name for m in found.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
            todo += [_base_name(b) for b in found.bases]
    methods = [m.name for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
               and m.name in inherited]
    return (", ".join(dict.fromkeys(methods)),) if methods else ()


def _base_name(node: ast.expr) -> str | None:
    """The name a class is made from is written with (`Base`, `mod.Base`: `Base`)."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _found(kind: str, asked: str, tree: ast.AST, text: str, name: str) -> tuple[str, ...]:
    """The facts of `kind` of `name` in the file (`tree`, from `text`)."""
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    if kind == "caller":
        return tuple(dict.fromkeys(f.name for f in functions if f.name != name and _calls(f, name)))
    if kind == "bases":
        return tuple(dict.fromkeys(ast.unparse(b) for c in classes[:1] for b in c.bases)) or (
            ("object",) if classes else ())
    if kind == "methods":
        methods = [n.name for c in classes[:1] for n in c.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        return (", ".join(methods),) if methods else ()
    if kind == "value":
        return _values(tree, text, name)
    if kind == "does":
        return _does([*functions, *classes], name)
    named = [f for f in functions if f.name == name]
    if kind == "parameters":
        init = [n for c in classes[:1] for n in c.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
        for f in named[:1] or init:
            params = [a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)
                      if a.arg not in ("self", "cls")]
            if re.search(r"\bhow\s+many\b", asked, re.IGNORECASE):
                return (str(len(params)),)
            return (", ".join(params),) if params else ()
        return ()
    scope: list[ast.AST] = list(named) or [tree]
    raised = [r for node in scope for r in _raised(node)]
    # Of several, those the request's words name most (in the exception's name, or the
    # test of the `if` that raises it: "when the slot is taken", `if slot in taken`).
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", asked)}
    score = {exc: len(words & parts) for exc, parts in raised}
    best = max(score.values(), default=0)
    return tuple(dict.fromkeys(exc for exc, _ in raised if score[exc] == best))


def _does(nodes: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef], name: str) -> tuple[str, ...]:
    """What the function or class `name` does, as its docstring's first line says it, or,
    without one, what a function of one `return` returns (`returns a + b.`)."""
    for node in nodes:
        if node.name != name:
            continue
        doc = (ast.get_docstring(node) or "").strip().split("\n", 1)[0].strip()
        if doc:
            return (doc if doc.endswith((".", "!", "?")) else doc + ".",)
        body = [n for n in node.body if not isinstance(n, ast.Pass)]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and len(body) == 1 \
                and isinstance(body[0], ast.Return) and body[0].value is not None:
            said = ast.unparse(body[0].value)
            return (f"returns {said}.",) if "\n" not in said and len(said) <= 120 else ()
    return ()


def _values(tree: ast.AST, text: str, name: str) -> tuple[str, ...]:
    """What `name` is set to in `tree` (of `text`), as the file writes it: an assignment
    to it (`name = …`, `name: T = …`, `self.name = …`), else a parameter's default; the
    first of each, at most one of them. Where none is, the one assignment to a name that
    says it another way (asked the port: `PORT`, `DEFAULT_PORT`; the version:
    `__version__`), if there is one only."""
    found = _value_of(tree, text, name)
    if found or not name.isidentifier():
        return found
    word = name.lower().strip("_")
    names = {t for node in ast.walk(tree) if isinstance(node, ast.Assign | ast.AnnAssign)
             for t in _assigned_names(node)}
    alike = {t for t in names if t.lower().strip("_") == word} or \
        {t for t in names if word in t.lower().strip("_").split("_")}  # (the same but for case, else a part)
    return _value_of(tree, text, alike.pop()) if len(alike) == 1 else ()


def _assigned_names(node: ast.Assign | ast.AnnAssign) -> list[str]:
    """The plain names (or attributes) an assignment sets."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [t.id if isinstance(t, ast.Name) else t.attr for t in targets if isinstance(t, ast.Name | ast.Attribute)]


def _value_of(tree: ast.AST, text: str, name: str) -> tuple[str, ...]:
    """`_values` of the name as written."""
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name or isinstance(t, ast.Attribute) and t.attr == name
               for t in targets):
            value = ast.get_source_segment(text, node.value) if node.value is not None else None  # type: ignore[attr-defined]
            return (value,) if value and "\n" not in value else ()
    for node in ast.walk(tree):
        if isinstance(node, ast.arguments):
            plain = [*node.posonlyargs, *node.args]
            pairs = list(zip(plain[len(plain) - len(node.defaults):], node.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d is not None]
            for arg, default in pairs:
                if arg.arg == name and default is not None:
                    value = ast.get_source_segment(text, default)
                    return (value,) if value and "\n" not in value else ()
    return ()


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
