"""Bounded unified diffs (actors/tools/diffs.py) and what one ACP update may cost
(actors/peers/acp/updates.py): an agent's diff, input and plan are kept bounded."""

from __future__ import annotations

import json
import re
import time

from hypothesis import given
from hypothesis import strategies as st

from actors.peers.acp.updates import MAX_ARGS_BYTES, MAX_PLAN_ENTRIES, plan_text, tool_fields
from actors.tools.diffs import MAX_DIFF_LINES, bounded_unified_diff

HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply(old: str, diff: str) -> str:
    """`diff` applied to `old`, checking every context and removed line against it."""
    a = old.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = diff.splitlines(keepends=True)[2:]
    i = 0
    while i < len(lines):
        m = HUNK.match(lines[i])
        assert m, lines[i]
        start = int(m[1]) - (0 if m[2] == "0" else 1)
        out += a[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            nl = i + 1 < len(lines) and lines[i + 1].startswith("\\ No newline")
            text = line[1:] if not nl else line[1:].removesuffix("\n")
            if line[0] in " -":
                assert a[pos] == text, (a[pos], text)
                pos += 1
            if line[0] in " +":
                out.append(text)
            i += 2 if nl else 1
    return "".join(out + a[pos:])


texts = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "a", "x\n"]), max_size=30).map("".join)


@given(texts, texts, st.integers(0, 3))
def test_a_bounded_diff_turns_old_into_new(old: str, new: str, context: int) -> None:
    diff = bounded_unified_diff(old, new, "f", context=context)
    assert diff is not None
    assert (diff == "") == (old == new)
    if diff:
        assert diff.startswith("--- a/f\n+++ b/f\n")
        assert apply(old, diff) == new


def test_a_small_change_in_a_large_repetitive_file_is_diffed_at_once() -> None:
    # difflib alone: 26 s for this (every line repeats hundreds of times).
    lines = [f"a{i % 150}\n" for i in range(100_000)]
    old = "".join(lines)
    lines[50_000] = "changed\n"
    new = "".join(lines)
    started = time.process_time()
    diff = bounded_unified_diff(old, new, "f")
    assert time.process_time() - started < 1.0
    assert diff is not None and "@@ -49998,7 +49998,7 @@" in diff and apply(old, diff) == new


def test_a_large_change_gives_up_instead_of_taking_minutes() -> None:
    old = "".join(f"a{i % 150}\n" for i in range(MAX_DIFF_LINES))
    new = "".join(f"a{(i * 7) % 151}\n" for i in range(MAX_DIFF_LINES))
    started = time.process_time()
    assert bounded_unified_diff(old, new, "f") is None
    assert time.process_time() - started < 1.0


def test_an_acp_update_with_a_huge_diff_input_and_plan_stays_bounded() -> None:
    old = "".join(f"a{i % 150}\n" for i in range(20_000))
    new = "".join(f"a{(i * 7) % 151}\n" for i in range(20_000))
    update = {
        "kind": "edit",
        "title": "Edit",
        "rawInput": {"content": "x" * (2 * MAX_ARGS_BYTES)},
        "content": [{"type": "diff", "path": "/ws/f.txt", "oldText": old, "newText": new}],
    }
    started = time.process_time()
    fields = tool_fields(update, None, first=True)
    assert time.process_time() - started < 2.0  # before: difflib over 20,000 lines each way, minutes
    assert "diff" not in fields
    assert len(json.dumps(fields["args"])) < 200 and "not kept" in json.dumps(fields["args"])
    small = tool_fields({**update, "rawInput": {"path": "f"}, "content": [
        {"type": "diff", "path": "/ws/f.txt", "oldText": "a\nb\n", "newText": "a\nc\n"}]}, None, first=True)
    assert small["args"] == {"path": "f"} and small["diff"].endswith("-b\n+c\n")
    text = plan_text([{"content": "step " * 1000, "status": "pending"}] * 100_000)
    assert text is not None and text.count("\n") == MAX_PLAN_ENTRIES + 1 and len(text) < 200_000
