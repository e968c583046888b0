"""Unified diffs whose cost is bounded, for texts the daemon did not write.

difflib's matcher takes time quadratic (or worse) in the lines it compares when lines
repeat: 8,000 lines each way took 3 s here, and 100,000 repetitive lines with one
changed took 26 s. `bounded_unified_diff` first sets aside the lines both texts start
and end with (one pass), diffs only what lies between (with its context lines), and
gives up, answering None, when that is still more than MAX_DIFF_LINES lines. Its hunks
carry the line numbers of the whole texts, so the diff reads as difflib's would.
"""

from __future__ import annotations

import difflib
import re

DIFF_CONTEXT_LINES = 3
MAX_DIFF_LINES = 4000  # old and new lines left to compare: difflib's worst is ~0.3 s here
_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def bounded_unified_diff(
    old: str, new: str, rel: str, *, context: int = DIFF_CONTEXT_LINES, max_lines: int = MAX_DIFF_LINES
) -> str | None:
    """The unified diff of `old` to `new` (files named a/`rel` and b/`rel`), or None
    when the lines that differ, with their context, are more than `max_lines`."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    both = min(len(a), len(b))
    head = 0
    while head < both and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < both - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    start = max(0, head - context)
    keep_tail = max(0, tail - context)
    a_mid, b_mid = a[start : len(a) - keep_tail], b[start : len(b) - keep_tail]
    if len(a_mid) + len(b_mid) > max_lines:
        return None
    out: list[str] = []
    for line in difflib.unified_diff(a_mid, b_mid, fromfile=f"a/{rel}", tofile=f"b/{rel}", n=context):
        if start and line.startswith("@@"):
            line = _HUNK.sub(
                lambda m: f"@@ -{int(m[1]) + start}{m[2] or ''} +{int(m[3]) + start}{m[4] or ''} @@", line, count=1
            )
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
