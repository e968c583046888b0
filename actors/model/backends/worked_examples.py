"""Worked examples for a small model in the generic format: short exchanges, each a
request, the call that does it, its result and the answer, put between the system
message and the conversation.

A model of a few hundred million parameters does not follow a description of a
format as well as it copies one it has seen done. Without them SmolLM2-135M copied the
descriptions' own words into its calls (`exec_shell_command {"command":
"get_info"}`, a grep for the description's example pattern) and rarely answered after
a call. The examples show one shape each (read and answer, write, edit, run, search)
on a made-up project whose names appear nowhere else, each shown only when its tool
is offered; they are the same for every conversation, so they stay in the prompt's
cache.
"""

from __future__ import annotations

import json
import re
from typing import Any

# (the request, its calls as (tool, arguments, result), the answer). The first call's
# tool must be offered for the example to be shown, and every other one's.
Example = tuple[str, tuple[tuple[str, dict[str, Any], str], ...], str]
EXAMPLES: tuple[Example, ...] = (
    ("What value does LIMIT have in limits.py?",
     (("read_file", {"path": "limits.py"}, "1→LIMIT = 25\n2→NAME = \"shop\"\n"),),
     "LIMIT is 25."),
    ("Make a new file memo.txt with the text ready",
     (("write_file", {"path": "memo.txt", "content": "ready"}, "Created memo.txt: 1 lines, 5 bytes."),),
     "I created memo.txt with the text ready."),
    ("Set NAME in shop.py to \"store\"",
     (("read_file", {"path": "shop.py"}, "1→NAME = \"shop\"\n2→OPEN = True\n"),
      ("edit_file", {"path": "shop.py", "edits": [{"old_text": "NAME = \"shop\"", "new_text": "NAME = \"store\""}]},
       "Edited shop.py.")),
     "NAME in shop.py is now \"store\"."),
    ("Run python3 shop.py; what is the output?",
     (("exec_shell_command", {"command": "python3 shop.py"}, "open: 3 items\n\n[exit code: 0]"),),
     "It printed: open: 3 items"),
    ("Use a helper to find where the function total is defined.",
     (("task", {"description": "Find total", "prompt": "Find the file that defines the function total."},
       "cart.py defines total (line 4)."),),
     "A helper found it: total is defined in cart.py."),
    ("Where is the function total defined?",
     (("grep_search", {"pattern": "def total"}, "cart.py:4:def total(items):\n"),),
     "total is defined in cart.py (line 4)."),
)


# The made-up project's names. A small model copied them into its calls (a grep for
# `def total` when asked where greet is defined, then `include: "items"`), so a call's
# free strings may not hold them (generic_grammar.with_banned) unless the conversation
# has them: a file named cart.py, a request about a total.
MADE_UP = ("limits", "shop", "store", "memo", "cart", "total")


def made_up_words(messages: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> tuple[str, ...]:
    """The MADE_UP names that the conversation (`messages`, without the examples) has
    nowhere but in the model's own words: the ones its calls may not hold."""
    said = " ".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant").lower()
    return tuple(w for w in MADE_UP if w not in said)


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

