"""Docstrings for a file's functions, asked of a small model (actors/runs/agent/small/
docstrings.py): each edit held to a function without one, new_text its `def` line and a
docstring of the model's words, the job open while one is left. The run-level test uses
the scripted backend made to say it is small."""

from __future__ import annotations

import ast
import json
import re

from llama_cpp.llama_grammar import LlamaGrammar

from actors.model.backends.generic_grammar import generic_schema, schema_to_gbnf, strict_strings
from actors.runs.agent.small import docstrings
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state

SOURCE = ("def fold(n):\n    return n * 2\n\n\ndef told(s, sep=','):\n    \"\"\"Said.\"\"\"\n    return s\n\n\n"
          "class Box:\n    def lid(self):\n        return 1\n\n\ndef one(x): return x\n")


def test_the_functions_without_a_docstring_are_found_with_their_bodys_indent():
    assert docstrings.missing(SOURCE) == {"def fold(n):": "    ", "    def lid(self):": "        "}
    assert docstrings.missing("def (:\n") == {}  # does not parse
    assert docstrings.asked("add a docstring to each function") and docstrings.asked("write doc strings")
    assert not docstrings.asked("document the API in README.md")


def test_a_held_docstring_edit_matches_its_json_text_and_compiles():
    shape = {"type": "object", "required": ["path", "edits"], "properties": {
        "path": {"const": "fo.py"}, "edits": {"type": "array", "items": {}, "minItems": 1, "maxItems": 4}}}
    held = docstrings.hold(shape, {"fo.py": SOURCE})
    assert held is not None
    items = held["properties"]["edits"]["items"]["oneOf"]
    assert [i["properties"]["old_text"]["const"] for i in items] == ["def fold(n):", "    def lid(self):"]
    pattern = items[0]["properties"]["new_text"]["pattern"]
    good = 'def fold(n):\n    """Fold it in two."""'
    assert re.fullmatch(pattern, json.dumps(good)[1:-1])
    for bad in ('def fold(n):\n    """Fold "two"."""', 'def fold(n):\n    """Double it."""',
                'def fold(n):\n    # Double it.', "def fold(n):\n",
                'def fold(n):\n    """,  """'):  # no words: SmolLM2 wrote that when anything would do
        assert not re.fullmatch(pattern, json.dumps(bad)[1:-1]), bad
    assert docstrings.hold(shape, {"fo.py": "def a():\n    \"\"\"A.\"\"\"\n"}) is shape  # none left: as it was
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(held)), verbose=False)


async def test_asked_for_docstrings_the_run_gives_each_function_one_an_edit_at_a_time(real_tools, tmp_path):
    d = real_tools
    text = "def fold(n):\n    return n * 2\n\n\ndef unfold(n):\n    return n // 2\n"
    folder, conv = await small_project(d, tmp_path, {"fo.py": text})
    d.backend.push(
        call("edit_file", path="fo.py", edits=[{"old_text": "def fold(n):",
                                                "new_text": 'def fold(n):\n    """Fold n in two."""'}]),
        call("edit_file", path="fo.py", edits=[{"old_text": "def unfold(n):",
                                                "new_text": 'def unfold(n):\n    """Unfold n, halved."""'}]),
        {"text": "Both have one now."})
    await conv.send_message("add a short docstring to each function in fo.py")
    await wait_state(conv, "idle", "error")
    first, second, third = d.backend.turns
    olds = [[i["properties"]["old_text"]["const"] for i in
             (lambda e: e.get("oneOf", [e]))(dict(t.shapes)["edit_file"]["properties"]["edits"]["items"])]
            for t in (first, second)]
    assert olds == [["def fold(n):", "def unfold(n):"], ["def unfold(n):"]]  # the one left, then none
    assert second.tool_choice == "required" and third.tool_choice == "none"
    spec = next(t for t in first.tools if t.name == "edit_file")
    shapes = (("edit_file", dict(first.shapes)["edit_file"]),)
    schema = generic_schema((spec,), required=True, strict=True, shapes=shapes)
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)
    tree = ast.parse((folder / "fo.py").read_text())
    assert [ast.get_docstring(f) for f in tree.body] == ["Fold n in two.", "Unfold n, halved."]
    assert docstrings.first_word("    async def _load_all(self):") == "Load"
    assert conv.info.end_reason == "answered"
