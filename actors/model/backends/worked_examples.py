"""Worked examples for a small model in the generic format: short exchanges, each a
request, the call that does it, its result and the answer, put between the system
message and the conversation.

A model of a few hundred million parameters does not follow a description of a
format as well as it copies one it has seen done. Without them SmolLM2-135M copied the
descriptions' own words into its calls (`exec_shell_command {"command":
"get_info"}`, a grep for the description's example pattern) and rarely answered after
a call. The examples show the tools' grammar (read and answer, write, an edit of two lines,
run, run then write, a helper, search) on neutral material, a sailing club's files,
that no job of a person resembles; each is shown only when its tools are offered.
"""

from __future__ import annotations

import json
import re
from typing import Any

# (the request, its calls as (tool, arguments, result), the answer). The first call's
# tool must be offered for the example to be shown, and every other one's.
Example = tuple[str, tuple[tuple[str, dict[str, Any], str], ...], str]
EXAMPLES: tuple[Example, ...] = (
    ("How long is the route in harbour.md?",
     (("read_file", {"path": "harbour.md"}, "1→# Harbour\n2→route: 14 km\n3→buoys: 6\n"),),
     "The route in harbour.md is 14 km."),
    ("Make a file tide.txt that says low at noon",
     (("write_file", {"path": "tide.txt", "content": "low at noon"}, "Created tide.txt: 1 lines, 11 bytes."),),
     "I created tide.txt. It says: low at noon"),
    ("In boat.ini set sail to white and crew to 4",
     (("read_file", {"path": "boat.ini"}, "1→sail = red\n2→crew = 3\n3→mast = 2\n"),
      ("edit_file", {"path": "boat.ini", "edits": [{"old_text": "sail = red", "new_text": "sail = white"},
                                                   {"old_text": "crew = 3", "new_text": "crew = 4"}]},
       "Edited boat.ini.")),
     "boat.ini now has sail = white and crew = 4."),
    ("Run python3 knots.py and tell me the output",
     (("exec_shell_command", {"command": "python3 knots.py"}, "bowline: 3 ways\n\n[exit code: 0]"),),
     "It printed: bowline: 3 ways"),
    ("Save what python3 knots.py prints in knots.txt",
     (("exec_shell_command", {"command": "python3 knots.py"}, "bowline: 3 ways\n\n[exit code: 0]"),
      ("write_file", {"path": "knots.txt", "content": "bowline: 3 ways"}, "Created knots.txt: 1 lines, 15 bytes.")),
     "I ran knots.py and saved what it printed, bowline: 3 ways, in knots.txt."),
    ("Use a helper to find where moon_phase is defined.",
     (("task", {"description": "Find moon_phase", "prompt": "Find the file that defines the function moon_phase."},
       "astro/sky.py defines moon_phase (line 12)."),),
     "A helper found it: moon_phase is defined in astro/sky.py."),
    ("Where is moon_phase defined?",
     (("grep_search", {"pattern": "def moon_phase"}, "astro/sky.py:12:def moon_phase(day):\n"),),
     "moon_phase is defined in astro/sky.py (line 12)."),
)


def _string_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _string_values(v)]
    if isinstance(value, list):
        return [s for v in value for s in _string_values(v)]
    return []


# The examples' own argument values (their paths, texts, commands, patterns). A small
# model copied them into its calls (a grep for the example's pattern when asked about
# another name), so a call's argument may not be one of them, exactly, unless the
# person wrote it (generic_grammar.with_banned). Only whole values: the words in them
# stay free for the person's own job.
EXAMPLE_VALUES: tuple[str, ...] = tuple(dict.fromkeys(
    v for _, calls, _ in EXAMPLES for _, args, _ in calls for v in _string_values(args)))


def example_values(messages: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> tuple[str, ...]:
    """The EXAMPLE_VALUES that the person's messages (`messages`, without the examples)
    do not hold: the values a call may not take."""
    said = " ".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant")
    said = said.lower()
    return tuple(v for v in EXAMPLE_VALUES if v.lower() not in said)


def _words(text: str) -> set[str]:
    """The words of `text` by their first four letters (`defines` is `defined`)."""
    return {w[:4] for w in re.findall(r"[a-z0-9_]+", text.lower())}


def example_messages(tool_names: set[str], request: str = "") -> list[dict[str, Any]]:
    """The examples whose tools are all among `tool_names`, as template messages of
    the generic format (calls and a reply written as the model writes them), the one
    whose request shares most words with `request` last (a small model follows the
    nearest example most). `request` is the conversation's first, so that the order
    holds for all its messages (and the prompt's cache with it)."""
    wanted = _words(request)

    def likeness(example: Example) -> float:
        words = _words(example[0])
        return len(words & wanted) / (len(words | wanted) or 1)

    out: list[dict[str, Any]] = []
    for asked, calls, answer in sorted(EXAMPLES, key=likeness):
        if any(tool not in tool_names for tool, _, _ in calls):
            continue
        out.append({"role": "user", "content": asked})
        for tool, args, result in calls:
            call = {"tool_calls": [{"name": tool, "arguments": args}]}
            out.append({"role": "assistant", "content": json.dumps(call, ensure_ascii=False)})
            out.append({"role": "tool", "content": result})
        out.append({"role": "assistant", "content": json.dumps({"response": answer}, ensure_ascii=False)})
    return out

