"""actors/model/backends/template_messages.py: the generic format's tool listing, whole or
in one line a tool when the context is small."""

from __future__ import annotations

import json

from actors.model.backends.template_messages import generic_tools_text, template_messages
from actors.model.turns import ToolSpec
from actors.tools.files import EditFile, ReadFile, WriteFile
from actors.tools.registry import Registry

GREP = ToolSpec("grep_search", "Search the files for a pattern. Slow on huge trees.\nMore words.", {
    "type": "object",
    "properties": {"pattern": {"type": "string", "description": "what to find"},
                   "case": {"enum": ["sensitive", "insensitive"]},
                   "limit": {"type": "integer", "minimum": 1}},
    "required": ["pattern"],
})


def test_a_roomy_context_gets_every_schema_whole():
    text = generic_tools_text((GREP,), limit=None)
    assert json.dumps(GREP.parameters, separators=(",", ":")) in text
    assert text == generic_tools_text((GREP,), limit=len(text))  # at the limit: still whole


def test_past_the_limit_each_tool_is_one_line_with_its_arguments():
    whole = generic_tools_text((GREP,))
    terse = generic_tools_text((GREP,), limit=len(whole) - 1)
    line = terse.splitlines()[-1]
    assert line == ('- grep_search(pattern: string, case?: "sensitive"|"insensitive", limit?: integer): '
                    "Search the files for a pattern.")
    assert "what to find" not in terse and len(terse) < len(whole)


def test_the_daemons_own_file_tools_take_far_less_room_tersely():
    specs = Registry().specs([ReadFile(), WriteFile(), EditFile()])
    whole = generic_tools_text(specs)
    terse = generic_tools_text(specs, limit=1)
    assert len(terse) < len(whole) / 2
    for spec in specs:  # every tool and every argument is still named
        line = next(x for x in terse.splitlines() if x.startswith(f"- {spec.name}("))
        assert all(name in line for name in spec.parameters.get("properties", {}))


def test_the_system_message_carries_the_listing_the_limit_chose():
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"})
    roomy = template_messages(messages, (GREP,), "generic")
    small = template_messages(messages, (GREP,), "generic", tools_chars=10)
    assert roomy[0]["content"].startswith("Be brief.") and small[0]["content"].startswith("Be brief.")
    assert small[0]["content"].endswith(generic_tools_text((GREP,), limit=10))
    assert roomy[0]["content"].endswith(generic_tools_text((GREP,)))
    assert roomy[1:] == small[1:]
