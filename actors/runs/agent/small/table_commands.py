"""The whole command of a request to give a CSV file a column worked out from two of its
columns ("give orders.csv a total column (qty x price)", "add a column called margin
that is price minus cost").

Asked so, SmolLM2-135M read the file, then another, then ran `touch` with a line of the
second as file names. The file's header names its columns, and the request names the
two it works from and how (times, plus, minus, divided by), so the command is known,
`awk` over the file, its numbers written to as many decimals as the columns' own:

    awk -F, -v OFS=, 'NR==1{print $0,"total";next}{printf "%s,%.2f\\n",$0,$2*$3}' orders.csv \
        > orders.csv.tmp && cat orders.csv.tmp > orders.csv && rm orders.csv.tmp

None where the file quotes a field (a comma inside one would move the columns), has a
column of that name already, or a value of those columns is not a number.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH

_CSV = re.compile(r"`?\b([\w./-]+\.csv)\b`?", re.IGNORECASE)
# The new column's name: "a total column", "a column called total", "column named 'total'".
_NEW = re.compile(r"\b(?:an?|new|the)\s+(?:new\s+)?[\"'`]?(?P<name>[A-Za-z_][\w ]{0,30}?)[\"'`]?\s+column\b|"
                  r"\bcolumn\s+(?:called|named|for|titled|headed)\s+[\"'`]?(?P<name2>[A-Za-z_]\w*)", re.IGNORECASE)
_ADDS = re.compile(r"\b(?:give|add|append|put|insert|make|create|include|compute|calculate|work\s+out)\b",
                   re.IGNORECASE)
# How the two columns make the new one.
_OPS = (("*", r"\s*(?:x|\*|×|times|multiplied\s+by|by)\s*"), ("+", r"\s*(?:\+|plus|and)\s*"),
        ("-", r"\s*(?:-|minus|less)\s*"), ("/", r"\s*(?:/|divided\s+by|over|per)\s*"))
_WORDED = (("*", r"\b(?:product|multiply|multiplying|multiplies)\s+(?:of\s+)?"),
           ("+", r"\b(?:sum|add(?:ing)?)\s+(?:of\s+)?"))
_NUMBER = re.compile(r"-?\d+(?:\.(?P<dec>\d+))?")
# Rows at most.
TABLE_ROWS = 5000


def table_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a request to give the one CSV file it names (that `read`
    gives) a column made of two of its columns; none otherwise."""
    files = [f for f in dict.fromkeys(_CSV.findall(asked)) if PLAIN_PATH.fullmatch(f)]
    new = _NEW.search(asked)
    if len(files) != 1 or new is None or not _ADDS.search(asked):
        return {}
    text = read(files[0])
    if not text:
        return {}
    name = (new.group("name") or new.group("name2") or "").strip()
    command = column_command(files[0], text, name, asked)
    return {"awk": [command]} if command else {}


def column_command(path: str, text: str, name: str, asked: str) -> str | None:
    """The `awk` that gives `path` (its `text`) the column `name`, two of its columns
    joined as `asked` says; None where that cannot be read plainly."""
    if '"' in text or "\r" in text or "'" in name or not name or len(text.splitlines()) > TABLE_ROWS:
        return None
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    head = [c.strip() for c in rows[0]]
    if name.lower() in (h.lower() for h in head) or any(len(r) != len(head) for r in rows):
        return None
    found = _columns(asked, head)
    if found is None:
        return None
    (a, op, b) = found
    decimals = 0
    for row in rows[1:]:
        for i in (a, b):
            number = _NUMBER.fullmatch(row[i].strip())
            if number is None:
                return None
            decimals = max(decimals, len(number.group("dec") or ""))
    said = f"${a + 1}{op}${b + 1}"
    if op == "/" or decimals:
        value = f'printf "%s,%.{max(decimals, 2) if op == "/" else decimals}f\\n",$0,{said}'
    else:
        value = f"print $0,{said}"
    return (f"awk -F, -v OFS=, 'NR==1{{print $0,\"{name}\";next}}{{{value}}}' {path} > {path}.tmp"
            f" && cat {path}.tmp > {path} && rm {path}.tmp")


def _columns(asked: str, head: list[str]) -> tuple[int, str, int] | None:
    """The two columns of `head` the request joins and how: "the product of a and b"
    (said in words first: its "and" is no plus), "a x b", "a times b"; None where it
    names no such two."""
    names = sorted(((h, i) for i, h in enumerate(head) if h), key=lambda hi: -len(hi[0]))
    alternatives = "|".join(re.escape(h) for h, _ in names)
    if not alternatives:
        return None
    index = {h.lower(): i for h, i in names}
    for op, worded in _WORDED:
        m = re.search(rf"{worded}(?:the\s+)?({alternatives})\s+(?:and|by|with|to)\s+(?:the\s+)?({alternatives})(?!\w)",
                      asked, re.IGNORECASE)
        if m is not None and m.group(1).lower() != m.group(2).lower():
            return index[m.group(1).lower()], op, index[m.group(2).lower()]
    for op, between in _OPS:
        m = re.search(rf"(?<!\w)({alternatives})(?!\w){between}(?<!\w)({alternatives})(?!\w)", asked, re.IGNORECASE)
        if m is not None and m.group(1).lower() != m.group(2).lower():
            return index[m.group(1).lower()], op, index[m.group(2).lower()]
    return None
