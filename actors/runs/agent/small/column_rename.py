"""The whole command of a request to rename a CSV file's column ("rename the qty column
in orders.csv to quantity"), the code that reads it by name following.

Asked so, SmolLM2-135M edited the header into another name of its own and left the
script that reads the column by its old name to break. The header says where the column
is, and the workspace's Python files that read the file name the column in quotes, so
the command is known: the header's line written anew, the quoted name replaced in the
code that reads the file:

    sed -i -e '1c\\id,quantity,price' orders.csv && sed -i -e 's/\\(['"'"'"]\\)qty\\1/\\1quantity\\1/g' report.py

None where the file quotes its header, no column or more than one has the old name, one
has the new name already, or the file is not there.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH

_RENAME = re.compile(
    r"\brename\s+(?:the\s+)?[\"'`]?(?P<old>[\w.-]+)[\"'`]?\s+(?:column|field|header)\b.*?\bto\s+[\"'`]?(?P<new>[\w.-]+)|"
    r"\brename\s+(?:the\s+)?(?:column|field|header)\s+[\"'`]?(?P<old2>[\w.-]+)[\"'`]?.*?\bto\s+[\"'`]?(?P<new2>[\w.-]+)",
    re.IGNORECASE)
_CSV = re.compile(r"(?<![\w./-])([\w./-]+\.csv)\b", re.IGNORECASE)


def column_commands(asked: str, read: Callable[[str], str | None],
                    texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The command renaming the column `asked` names in the CSV file it names (`read`
    reads a file of the workspace), and the quoted name in the Python files (`texts`:
    (path, text) of each) that read that file; none where it is no such request."""
    m = _RENAME.search(asked)
    if m is None:
        return {}
    old, new = (m.group("old") or m.group("old2")), (m.group("new") or m.group("new2")).rstrip(".")
    named = [n for n in _CSV.findall(asked) if PLAIN_PATH.fullmatch(n)]
    if len(named) != 1 or not re.fullmatch(r"[\w.-]+", new) or old == new:
        return {}
    path = named[0]
    text = read(path)
    if text is None or "\r" in text.split("\n", 1)[0]:
        return {}
    header = text.split("\n", 1)[0]
    fields = header.split(",")
    if '"' in header or "'" in header or fields.count(old) != 1 or new in fields:
        return {}
    renamed = ",".join(new if f == old else f for f in fields)
    parts = [f"sed -i -e {shlex.quote(chr(92).join(['1c', renamed]))} {shlex.quote(path)}"]
    base = posixpath.basename(path)
    quoted = re.compile(rf"(['\"]){re.escape(old)}\1")
    readers = [p for p, t in texts() if p.endswith(".py") and PLAIN_PATH.fullmatch(p) and base in t
               and quoted.search(t)]
    swap = "s/\\(['\"]\\)" + re.sub(r"([.])", r"\\\1", old) + "\\1/\\1" + new + "\\1/g"
    parts += [f"sed -i -e {shlex.quote(swap)} {shlex.quote(p)}" for p in readers]
    told = f"Renamed the column {old} to {new} in {path}" + (
        f", and its name in {', '.join(readers)}." if readers else ".")
    return {"sed": [" && ".join([*parts, f"echo {shlex.quote(told)}"])]}
