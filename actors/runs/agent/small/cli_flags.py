"""The whole command of a question about what a script takes on its command line: the
options and arguments its `argparse` parser is given, in the script and in the functions
of the workspace's modules it hands its parser to, printed on one line by `grep`.

Asked what flags a script takes, SmolLM2-135M ran the script and answered with what it
printed, or named one option. Which `add_argument` calls build the script's parser is
the parser's to say (Python's), so the files to look in are known, and the one command
that lists them is shown and run as any other:

    grep -ohE -- "add_argument\\(['\\"][^'\\"]+" tool.py opts/extra.py | cut -c15- | paste -sd ' ' -

(it prints `--size --verbose input`: where the answer begins). None where the request
names no script of the workspace that builds a parser, or one it hands the parser to
cannot be found.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE

# A question about what a script takes on its command line.
_FLAGS = re.compile(r"\b(?:flags?|options?|(?:command[\s-]*line\s+)?arguments?|args|switches|cli\s+params?)\b",
                    re.IGNORECASE)
_ASKS = re.compile(r"\b(?:what|which|list|show|tell|how\s+do\s+i|does\s+\S+\s+(?:take|accept|have|support))\b",
                   re.IGNORECASE)
# Changes asked of the options, not a question about them.
_CHANGES = re.compile(r"\b(?:add|remove|rename|change|make|delete|drop|set)\b", re.IGNORECASE)


def flag_commands(asked: str, read: Callable[[str], str | None],
                  texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command of a question about the options of the one script it names."""
    if not _FLAGS.search(asked) or not _ASKS.search(asked) or _CHANGES.search(asked):
        return {}
    scripts = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(scripts) != 1:
        return {}
    files = parser_files(scripts[0], read(scripts[0]) or "", dict(texts()))
    if not files:
        return {}
    return {"grep": [f"grep -ohE -- \"add_argument\\\\(['\\\"][^'\\\"]+\" {' '.join(files)} | cut -c15- | "
                     f"paste -sd ' ' -"]}


def parser_files(path: str, text: str, files: dict[str, str]) -> list[str]:
    """`path` and the workspace's modules whose functions it hands its parser to, where
    it builds one (`argparse.ArgumentParser`) and gives it options; [] otherwise."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    parsers = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and _makes_parser(n.value)
               for t in n.targets if isinstance(t, ast.Name)}
    if not parsers:
        return []
    imported = {a.asname or a.name: n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                and not n.level for a in n.names}
    out = [path] if "add_argument" in text else []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        if not isinstance(call.func, ast.Name) or not any(isinstance(a, ast.Name) and a.id in parsers
                                                          for a in call.args):
            continue
        module = imported.get(call.func.id)
        if module is None:
            continue  # (a function of the script's own: its add_argument calls are in the script)
        where = next((p for p in (module.replace(".", "/") + ".py", module.replace(".", "/") + "/__init__.py")
                      if p in files), None)
        if where is None or not PLAIN_PATH.fullmatch(where):
            return []  # (handed to code this cannot read: the list would be short)
        if "add_argument" in files[where] and where not in out:
            out.append(where)
    return out


def _makes_parser(node: ast.expr) -> bool:
    """Whether `node` is `ArgumentParser(…)` or `argparse.ArgumentParser(…)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return isinstance(func, ast.Name) and func.id == "ArgumentParser" or isinstance(func, ast.Attribute) \
        and func.attr == "ArgumentParser"
