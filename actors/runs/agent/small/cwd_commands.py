"""The whole command mending a script that works only when started from its own folder:
the data files it opens by a path relative to its folder, opened by a path from its own
file (`__file__`) instead, so that it runs from wherever it is started.

Told that a script fails with FileNotFoundError unless started from its own folder,
SmolLM2-135M sent a helper with a question of the worked examples'. Which paths are
the trouble is the workspace's to say: a string of the script
(what it opens, or a name it gives a path) that names a file or folder next to the
script and none from the top of the workspace. The one command writes each such string
as a path from the script's own folder, and imports `os` where the script does not:

    sed -i -e '1i\\import os' \\
        -e "4s/'words.txt'/os.path.join(os.path.dirname(os.path.abspath(__file__)), 'words.txt')/" tools/lookup.py

None where the request does not read as this trouble, or no script has such a path.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, is_test, path_literals
from actors.runs.agent.small.name_slips import import_line
from actors.runs.agent.small.slip_base import one_line

# The trouble, in the words people report it.
_ASKS = re.compile(
    r"\b(?:only|unless|first|have\s+to|need\s+to|must)\b[^.?!]*\bcd\b|\bcd\b[^.?!]*\b(?:first|only|before)\b|"
    r"\bworking\s+dir(?:ectory)?\b|\bcwd\b|FileNotFoundError|\bno\s+such\s+file\b|"
    r"\b(?:only\s+)?works?\s+(?:if|when)\s+(?:I|you)\s+(?:am\s+|are\s+)?(?:in|inside|run\s+it\s+from)\b|"
    r"\bfrom\s+(?:the\s+)?(?:top|root|parent|another|other|any|a\s+different|outside)\b[^.?!]*"
    r"\b(?:folder|dir(?:ectory)?|place|level)\b|\bfrom\s+(?:any|every)where\b",
    re.IGNORECASE)
_HERE = "os.path.join(os.path.dirname(os.path.abspath(__file__)), {})"


def cwd_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                 exists: Callable[[str], bool]) -> dict[str, list[str]]:
    """The whole command of a report that a script runs only from its own folder."""
    if not _ASKS.search(asked):
        return {}
    commands: list[str] = []
    mended: list[str] = []
    for path, text in texts():
        if not path.endswith(".py") or is_test(path) or "/" not in path or not PLAIN_PATH.fullmatch(path):
            continue
        edits = _edits(path, text, exists)
        if edits:
            commands.append(f"sed -i {' '.join(edits)} {path}")
            mended.append(path)
    if not commands or len(mended) > 3:
        return {}
    told = f"echo 'Made the paths {' and '.join(mended)} opens relative to its own folder.'"
    return {"sed": [" && ".join([*commands, told])]}


def _edits(path: str, text: str, exists: Callable[[str], bool]) -> list[str]:
    """The `sed -e` expressions that write `path`'s strings naming a file next to it as
    paths from its own folder, `import os` first where it has none; [] where none."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    if "__file__" in text:
        return []  # (it finds its folder already)
    folder = posixpath.dirname(path)
    found = [c for c, value in path_literals(tree) if _nearby(value, folder, exists)]
    edits: list[str] = []
    lines = text.splitlines()
    if len({a.lineno for a in found}) != len(found):
        return []  # (two on one line: the second's place moves with the first's)
    for arg in sorted(found, key=lambda a: a.lineno):
        if arg.lineno != arg.end_lineno or arg.end_col_offset is None:
            return []
        said = lines[arg.lineno - 1][arg.col_offset:arg.end_col_offset]
        slip = one_line(path, arg.lineno, said, _HERE.format(said), "", frozenset(),
                        nth=lines[arg.lineno - 1][:arg.col_offset].count(said) + 1)
        if slip is None:
            return []
        edits.extend(slip.edits)
    if not edits:
        return []
    imported = any(isinstance(n, ast.Import) and any(a.name == "os" and not a.asname for a in n.names)
                   for n in tree.body)
    at = import_line(tree)
    first = [] if imported else [f"-e '{at}a\\import os'" if at else "-e '1i\\import os'"]
    return first + edits


def _nearby(value: str, folder: str, exists: Callable[[str], bool]) -> bool:
    """Whether `value` is a relative path naming something in `folder` (the script's) and
    nothing from the top of the workspace."""
    if not value or value.startswith(("/", "~")) or "\n" in value or len(value) > 200 or ".." in value.split("/"):
        return False
    return exists(posixpath.normpath(posixpath.join(folder, value))) and not exists(posixpath.normpath(value))
