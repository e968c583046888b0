"""The whole command of a request to give a class a `__repr__` (or `__str__`) that shows
what it holds: the attributes its `__init__` sets, in order, read by Python's parser.

Asked to make a class print as something readable, SmolLM2-135M wrote a method that
returned the worked example's words. What a class holds is in its `__init__`, so the
method is known, added after the class's last line (`sed`, the class named, in the file
named or the one file of the workspace that defines it):

    sed -i '9a\\\\n    def __repr__(self):\\n        return f"Boat(name={self.name!r}, size={self.size!r})"' boats.py

None where the class has the method already, has no `__init__` that sets an attribute,
or is defined in more than one file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE

_ASKS = re.compile(r"__repr__|__str__|\brepr\b|\b(?:print|show|display)s?\s+(?:\w+\s+){0,4}?(?:nicely|readabl[ey]|"
                   r"properly|something\s+(?:useful|readable|meaningful))|\breadable\s+(?:representation|output|form)\b|"
                   r"\bstring\s+(?:representation|form)\b", re.IGNORECASE)
_NAME = re.compile(r"`?\b([A-Z][A-Za-z0-9_]*)\b`?")


def class_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command of a request to give the one class it names a `__repr__` (or,
    asked for `__str__`, that), over the Python file it names, else the workspace's
    (`texts`); none otherwise."""
    if not _ASKS.search(asked):
        return {}
    method = "__str__" if "__str__" in asked or re.search(r"\bstr\b", asked) else "__repr__"
    named = set(PY_FILE.findall(asked))
    wanted = set(_NAME.findall(asked))
    found = []
    for path, text in texts():
        if not path.endswith(".py") or named and path not in named:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        found += [(path, c) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name in wanted]
    if len(found) != 1:
        return {}
    command = repr_command(*found[0], method)
    return {"sed": [command]} if command else {}


def repr_command(path: str, cls: ast.ClassDef, method: str) -> str | None:
    """The `sed` adding `method` to `cls` of `path`, after its last line: the class's name
    and each attribute its `__init__` sets, as `name=value!r`."""
    if not PLAIN_PATH.fullmatch(path) or any(isinstance(m, ast.FunctionDef) and m.name in (method, "__repr__")
                                             for m in cls.body):
        return None
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    if init is None:
        return None
    names = list(dict.fromkeys(t.attr for n in ast.walk(init) if isinstance(n, ast.Assign | ast.AnnAssign)
                               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                               if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                               and t.value.id == "self" and not t.attr.startswith("_")))
    if not names:
        return None
    indent = " " * (cls.col_offset + 4)
    shown = ", ".join(f"{n}={{self.{n}!r}}" for n in names)
    body = f'return f"{cls.name}({shown})"'
    last = cls.end_lineno or cls.lineno
    return f"sed -i '{last}a\\\\n{indent}def {method}(self):\\n{indent}    {body}' {path}"
