"""actors/backends/generic_grammar.py: what the grammar cache keeps."""

from __future__ import annotations

from actors.backends.generic_grammar import MAX_GRAMMARS, GenericGrammars
from actors.engine import ToolSpec


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
