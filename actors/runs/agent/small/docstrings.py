"""A request to give a Python file's functions docstrings, held one function an edit.

Asked to add a docstring to each function of a file, SmolLM2-135M edited the file's
last line into something else, or wrote a `def` line again with a line break after it
(refused: only spaces changed), round after round. Where the request asks for docstrings
(`asked`), edit_file's old_text is held to the `def` line of a function of the file that
has none yet (`missing`), and its new_text to that line, a line break, the body's indent
and a one-line docstring that begins with the first word of the function's name, the rest
the model's own words (`hold`); the request stays open, an
edit a function, while one is left (set_values.still_to_edit).

A held new_text is a pattern, and llama.cpp reads a pattern over the JSON string's text:
a line break is written there as `\\n`, a double quote as `\\"`
(generic_grammar.json_text_literal).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from actors.model.backends.generic_grammar import json_text_literal

_ASKED = re.compile(r"\bdoc\s*strings?\b", re.IGNORECASE)
# The docstring's own words after its first: a sentence on one line, words of letters
# (SmolLM2 wrote `""",  """` when any character would do), none of the characters the JSON
# text escapes. Its first word is the first of the function's name ("Parse" for
# `parse_args`): left free, it began with a made-up word ("Cua cua lua") and went on so.
DOC_WORDS = "( [A-Za-z0-9_(),'-]+)+[.]?"


def asked(text: str) -> bool:
    """Whether a request asks for docstrings."""
    return _ASKED.search(text) is not None


def missing(text: str) -> dict[str, str]:
    """The `def` lines of a Python file's functions that have no docstring, each with the
    indent of its body; none where the file does not parse, or a `def` spans lines."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or ast.get_docstring(node) is not None:
            continue
        head = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
        body = node.body[0]
        if body.lineno == node.lineno or not head.rstrip().endswith(":") or text.count(head) != 1:
            continue  # a body on the def's own line, a def over lines, or a line written twice
        out[head] = " " * body.col_offset
    return out


def hold(shape: dict[str, Any] | None, texts: Mapping[str, str]) -> dict[str, Any] | None:
    """`shape` (edit_file's, from steps.edit_shape) with each Python file's edit held to
    a `def` line of `missing` and new_text that line with a docstring after it; a file
    with none, or not Python, left out beside one that has; `shape` as it was where no
    file has one."""
    if shape is None:
        return None
    branches = shape.get("oneOf", [shape])
    held = [b for b in (_held(b, texts) for b in branches) if b is not None]
    if not held:
        return shape
    return held[0] if len(held) == 1 else {**shape, "oneOf": held}


def _held(branch: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any] | None:
    try:
        path = branch["properties"]["path"]["const"]
        edits = branch["properties"]["edits"]
    except (KeyError, TypeError):
        return None
    if not isinstance(path, str) or not path.endswith(".py") or path not in texts:
        return None
    heads = missing(texts[path])
    if not heads:
        return None
    items = [{"type": "object", "required": ["old_text", "new_text"], "properties": {
        "old_text": {"const": head},
        "new_text": {"type": "string", "pattern": "^" + json_text_literal(f'{head}\n{indent}"""{first_word(head)}')
                     + DOC_WORDS + json_text_literal('"""') + "$"}}} for head, indent in heads.items()]
    item = items[0] if len(items) == 1 else {"oneOf": items}
    return {**branch, "properties": {**branch["properties"], "edits": {**edits, "items": item, "maxItems": 1}}}


def first_word(head: str) -> str:
    """The first word of the function's name in its `def` line, capitalised (`_load_all`: Load)."""
    m = re.search(r"\bdef\s+_*([A-Za-z0-9]+)", head)
    return m.group(1).capitalize() if m else "Return"
