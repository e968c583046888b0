"""actors/backends/generic_grammar.py: what the grammar cache keeps, and how many
calls one answer may make."""

from __future__ import annotations

import json

import jsonschema
import pytest

from actors.backends.generic_grammar import MAX_GENERIC_CALLS, MAX_GRAMMARS, GenericGrammars, generic_schema
from actors.engine import ToolSpec
from actors.toolcalls import ToolCallParser


def spec(name: str, kind: str) -> ToolSpec:
    return ToolSpec(name, "", {"type": "object", "properties": {"x": {"type": kind}}, "required": ["x"]})


def test_the_same_names_with_other_parameters_get_their_own_grammar():
    grammars = GenericGrammars()
    a = grammars.get((spec("t", "string"),), required=True)
    b = grammars.get((spec("t", "integer"),), required=True)
    assert a is not b
    assert grammars.get((spec("t", "string"),), required=True) is a


def test_the_cache_is_bounded_and_forgets_the_least_recently_used():
    grammars = GenericGrammars()
    first = grammars.get((spec("first", "string"),), required=True)
    for n in range(MAX_GRAMMARS + 5):
        grammars.get((spec(f"t{n}", "string"),), required=True)
        grammars.get((spec("first", "string"),), required=True)  # kept in use
    assert grammars.get((spec("first", "string"),), required=True) is first
    assert len(grammars) == MAX_GRAMMARS


def _answer(calls: int) -> dict:
    return {"tool_calls": [{"name": "t", "arguments": {"x": str(n)}} for n in range(calls)]}


def test_an_answer_may_call_up_to_four_tools_unless_parallel_calls_are_off():
    tools = (spec("t", "string"),)
    for required in (True, False):
        several = generic_schema(tools, required=required, strict=True)
        one = generic_schema(tools, required=required, strict=True, parallel=False)
        for calls in range(1, MAX_GENERIC_CALLS + 1):
            jsonschema.validate(_answer(calls), several)
        for schema, refused in ((several, MAX_GENERIC_CALLS + 1), (one, 2)):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(_answer(refused), schema)
        jsonschema.validate(_answer(1), one)
        for schema in (several, one):  # no call at all is not an answer of calls
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate({"tool_calls": []}, schema)
    assert MAX_GENERIC_CALLS == 4
    # the two bounds are two grammars
    grammars = GenericGrammars()
    assert grammars.get(tools, required=True) is not grammars.get(tools, required=True, parallel=False)
    assert len(grammars) == 2


def test_the_generic_parser_reads_each_of_four_calls_in_order():
    parser = ToolCallParser("generic")
    parser.feed(json.dumps(_answer(4)))
    parser.finish()
    assert [(c.name, json.loads(c.arguments)) for c in parser.result.calls] == [
        ("t", {"x": str(n)}) for n in range(4)]
