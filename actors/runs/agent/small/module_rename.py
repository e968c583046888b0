"""The whole command of a request to rename a Python module or package: the file or
folder moved to its new name (`mv`), and every import of it and every use of it by its
dotted name, in the workspace's Python files, written with the new name (`sed`).

Asked to rename a package and sort out its imports, SmolLM2-135M edited one import to a
name of its own making and left the old one in use. Which files import the module, and
where, is Python's parser's to say, so the one command is known:

    mv old_pkg new_pkg && sed -i -E -e 's/^(\\s*(from|import)\\s+)old_pkg\\b/\\1new_pkg/' \\
        -e 's/\\bold_pkg\\./new_pkg./g' run.py new_pkg/a.py

None where the old name is not a module of the workspace (a file `old.py`, or a folder
with Python files), the new name is taken (as a file or a folder), a file imports the
module in a form this cannot write again (`import a, old_pkg`), or writes the old name
and a dot in a string (`"old_pkg.log"`: the sed would change it). `import old_pkg as o`
becomes `import new_pkg as o`, its uses by the other name as they were.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH

_NAME = r"`?(?P<{}>[A-Za-z_]\w*)(?:\.py)?/?`?"
# "rename the birds package to fowl", "rename module util to helpers", "rename util.py to helpers.py".
_RENAME = re.compile(r"\b(?:rename|move)\s+(?:the\s+)?(?:(?:python\s+)?(?:package|module|folder|file|dir(?:ectory)?)"
                     r"\s+)?" + _NAME.format("old") + r"(?:\s+(?:package|module|folder))?\s+(?:to|as|into)\s+"
                     + _NAME.format("new") + r"(?![\w/.-])", re.IGNORECASE)
# The imports and uses to write again: said so, or a package renamed.
_IMPORTS = re.compile(r"\bimports?\b|\bstill\s+(?:works?|runs?)\b|\bpackage\b|\bmodule\b|\breferences?\b|"
                      r"\beverywhere\b", re.IGNORECASE)


def rename_module_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                           is_file: Callable[[str], bool], is_dir: Callable[[str], bool]) -> dict[str, list[str]]:
    """The whole command of a request to rename a module or package of the workspace
    and its imports; none otherwise."""
    said = _RENAME.search(asked)
    if said is None or not _IMPORTS.search(asked):
        return {}
    old, new = said.group("old"), said.group("new")
    if old == new:
        return {}
    source = old if is_dir(old) else f"{old}.py" if is_file(f"{old}.py") else None
    target = new if source == old else f"{new}.py"
    if source is None or any(is_file(n) or is_dir(n) for n in (new, f"{new}.py")):
        return {}  # (taken: as a module, or a package, the new name would be two)
    files = [(p, t) for p, t in texts() if p.endswith(".py")]
    if source == old and not any(p.startswith(old + "/") for p, _ in files):
        return {}  # (a folder with no Python in it: no package)
    touched: list[str] = []
    for path, text in files:
        uses = _uses(text, old)
        if uses is None:
            return {}
        if uses:
            moved = new + path[len(old):] if source == old and path.startswith(old + "/") else \
                target if path == source else path
            if not PLAIN_PATH.fullmatch(moved):
                return {}
            touched.append(moved)
    command = f"mv {source} {target}"
    if touched:
        command += (f" && sed -i -E -e 's/^(\\s*(from|import)\\s+){old}\\b/\\1{new}/' -e 's/\\b{old}\\./{new}./g' "
                    + " ".join(sorted(touched)))
    return {"mv": [command]}


def _uses(text: str, old: str) -> bool | None:
    """Whether the Python `text` imports the module `old` (or one of its own); None where
    it does in a form the command cannot write again, writes the name and a dot in a
    string, or does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    lines = text.splitlines()
    found = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(rf"\b{re.escape(old)}\.",
                                                                                          node.value):
            return None  # (a string that writes the name with a dot, "old.txt": the sed would change it)
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if node.module and not node.level else []
        mine = [n for n in names if n == old or n.startswith(old + ".")]
        if not mine:
            continue
        line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
        if len(names) > 1 or not re.match(rf"\s*(?:from|import)\s+{re.escape(old)}\b", line) \
                or node.lineno != node.end_lineno:
            return None
        found = True
    return found

