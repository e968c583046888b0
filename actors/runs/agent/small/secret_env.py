"""The whole command of a request to stop writing a secret in the code and read it from
an environment variable ("the api key is hardcoded in app.py, read it from APP_KEY"),
and to list the variable, without its value, in the example file the request names.

Asked so, SmolLM2-135M read the files one after another and ran scripts named after
functions. The secret is the one module-level name of a secret's kind (a token, a key,
a password) set to a text in the file, found by Python's parser; the variable is the one
the request names in capitals, else the name itself; so the command is known:

    sed -i -e '3i\\import os' -e '5c\\APP_KEY = os.environ.get("APP_KEY", "")' app.py \\
      && printf '%s\\n' 'APP_KEY=' >> .env.example && echo 'app.py reads APP_KEY from …'

None where no such name or more than one is written in the files named (or, none named,
in the workspace's), or the example file lists the variable already.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH
from actors.runs.agent.small.slip_base import first_import_line
from actors.runs.agent.small.slips import parsed

_ENV = re.compile(r"\benv(?:ironment)?\s*var(?:iable)?s?\b|\benv\b|\benviron(?:ment)?\b|(?<![\w/])\.env\b",
                  re.IGNORECASE)
_SECRET_WORD = re.compile(r"token|secret|passw(?:or)?d|\bpwd\b|api[_ ]?key|\bkey\b|credential|hard[\s-]?coded",
                          re.IGNORECASE)
_SECRET_NAME = re.compile(r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|PWD|KEY|APIKEY|CREDENTIALS?)(?:_|$)",
                          re.IGNORECASE)
_VARIABLE = re.compile(r"(?<![\w.$-])([A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])(?![\w.-])")
_EXAMPLE = re.compile(r"(?<![\w/-])((?:[\w-]+/)*\.env\.(?:example|sample|template|dist))\b", re.IGNORECASE)


def secret_commands(asked: str, named: Iterable[str],
                    texts: Callable[[], Iterable[tuple[str, str]]],
                    read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The command that has the Python file (one `named`, else any of the workspace's:
    `texts` gives (path, text) of each) read its one hard-coded secret from the
    environment variable `asked` names, and lists that variable in the example file it
    names (`read` reads it); none where it is no such request."""
    if not _ENV.search(asked) or not _SECRET_WORD.search(asked):
        return {}
    wanted = set(named)
    found = [(p, t, s) for p, t in texts() if p.endswith(".py") and PLAIN_PATH.fullmatch(p)
             and (not wanted or p in wanted) for s in _secrets(t)]
    if len(found) != 1:
        return {}
    path, text, (name, line, first_import) = found[0]
    given = [v for v in _VARIABLE.findall(asked) if v != name] or [name]
    if len(set(given)) != 1:
        return {}
    variable = given[0]
    at = min(first_import or line, line)  # (os imported before the secret's line reads it)
    edits = [] if re.search(r"^import\s+os\b", text, re.MULTILINE) else [f"{at}i\\import os"]
    edits.append(f'{line}c\\{name} = os.environ.get("{variable}", "")')
    parts = [f"sed -i {' '.join(f'-e {shlex.quote(e)}' for e in edits)} {shlex.quote(path)}"]
    told = f"{path} reads {name} from the environment variable {variable} now."
    example = _EXAMPLE.search(asked)
    if example:
        listed = read(example.group(1)) or ""
        if re.search(rf"^{re.escape(variable)}=", listed, re.MULTILINE):
            return {}
        parts.append(f"printf '%s\\n' {shlex.quote(variable + '=')} >> {shlex.quote(example.group(1))}")
        told += f" {example.group(1)} lists it, without its value."
    return {"sed": [" && ".join([*parts, f"echo {shlex.quote(told)}"])]}


def _secrets(text: str) -> list[tuple[str, int, int | None]]:
    """The module-level names of a secret's kind set to a text of their own in `text`
    (name, its line, the line of the module's first import other than __future__'s)."""
    tree = parsed(text)
    if tree is None:
        return []
    first = first_import_line(tree.body)
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) \
                and node.value.value.strip() and node.lineno == node.end_lineno \
                and _SECRET_NAME.search(node.targets[0].id):
            out.append((node.targets[0].id, node.lineno, first))
    return out
