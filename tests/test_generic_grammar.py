"""actors/model/backends/generic_grammar.py: what the grammar cache keeps, and how many
calls one answer may make."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.model.backends.generic_grammar import (
    MAX_BOUND,
    MAX_GENERIC_CALLS,
    MAX_GRAMMARS,
    GenericGrammars,
    excluding,
    generic_schema,
    loosened,
)
from actors.model.toolcalls import ToolCallParser
from actors.model.turns import ToolSpec


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


def test_bounds_llama_cpp_would_refuse_are_left_out_everywhere_in_a_schema():
    big, small = MAX_BOUND + 1, MAX_BOUND
    schema = {"type": "object", "properties": {
        "text": {"type": "string", "maxLength": 5000, "minLength": 1},
        "tags": {"type": "array", "maxItems": big, "minItems": small, "items": {"type": "string", "maxLength": big}},
        "maxLength": {"type": "integer", "maximum": 10_000},  # a property so named stays
        "flag": {"type": "boolean", "maxItems": True},  # not a number: left as it is
    }, "anyOf": [{"maxProperties": 9_999}]}
    assert loosened(schema) == {"type": "object", "properties": {
        "text": {"type": "string", "minLength": 1},
        "tags": {"type": "array", "minItems": small, "items": {"type": "string"}},
        "maxLength": {"type": "integer", "maximum": 10_000},
        "flag": {"type": "boolean", "maxItems": True},
    }, "anyOf": [{}]}


def test_a_grammar_llama_cpp_refuses_falls_back_to_any_object_then_fails_in_words():
    refused: list[str] = []

    def check(text: str) -> bool:  # refuses every grammar that holds the arguments to their schema
        if '\\"x\\"' in text:  # the property's name, as the grammar quotes it
            refused.append(text)
            return False
        return True

    grammars = GenericGrammars(check)
    grammars.get((spec("t", "string"),), required=True)
    assert len(refused) == 2  # the strict one, bounds and all, then loosened: refused; the loose one taken
    with pytest.raises(Exception, match="could not be made into a grammar"):
        GenericGrammars(lambda text: False).get((spec("t", "string"),), required=True)
    with pytest.raises(Exception, match="answer's JSON schema"):
        GenericGrammars(lambda text: False).for_schema({"type": "object"})


def test_small_integer_ranges_become_choices_and_strings_exclude_control_characters():
    from actors.model.backends.generic_grammar import MAX_INT_CHOICES, STRICT_CHAR, strict_strings, with_int_ranges

    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": -2, "maximum": 2},
        "big": {"type": "integer", "minimum": 0, "maximum": MAX_INT_CHOICES},
        "given": {"type": "integer", "minimum": 0, "maximum": 3, "enum": [1]}}}
    out = with_int_ranges(schema)["properties"]
    assert out["n"]["enum"] == [-2, -1, 0, 1, 2]
    assert "enum" not in out["big"]  # too many values: the tool checks it
    assert out["given"]["enum"] == [1]
    texts: list[str] = []
    GenericGrammars(lambda text: texts.append(text) or True).get((spec("t", "string"),), required=True)
    rules = [line for line in texts[0].splitlines() if line.startswith("char ::=")]
    assert rules == [STRICT_CHAR] and "\\x00-\\x1F" in STRICT_CHAR
    assert strict_strings("root ::= x\nchar ::= [^\"]") == "root ::= x\n" + STRICT_CHAR


# ---- excluding: the call a failed round made is ruled out of the next ----

TODO_LIKE = {
    "type": "object",
    "properties": {
        "todos": {"type": "array", "maxItems": 50, "items": {"type": "object", "properties": {
            "content": {"type": "string", "minLength": 1}, "status": {"enum": ["pending", "done"]}},
            "required": ["content", "status"]}},
        "path": {"type": "string"},
        "force": {"type": "boolean"},
        "mode": {"enum": ["a", "b", "c"]},
    },
    "required": ["todos"],
}

todo = st.fixed_dictionaries(
    {"content": st.text(min_size=1, max_size=5), "status": st.sampled_from(["pending", "done"])})
todo_args = st.fixed_dictionaries(
    {"todos": st.lists(todo, max_size=4)},
    optional={"path": st.text(max_size=6), "force": st.booleans(), "mode": st.sampled_from(["a", "b", "c"])},
)


def fits(schema: dict, value: object) -> bool:
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


@pytest.mark.slow(reason="a long property test; CI runs it")
@given(avoided=todo_args, other=todo_args)
def test_excluding_rules_out_the_call_and_keeps_calls_that_differ_in_shape(avoided, other):
    narrowed = excluding(TODO_LIKE, avoided)
    assert narrowed is not None
    assert fits(TODO_LIKE, avoided) and not fits(narrowed, avoided)
    # A call that differs in what a grammar can tell (a list's length, a string's
    # length, a boolean, a choice, an optional argument given) still fits.
    differs = (len(other["todos"]) != len(avoided["todos"])
               or any(k not in avoided for k in other)
               or any(k in other and other[k] != avoided[k] and not isinstance(other[k], str)
                      for k in ("force", "mode"))
               or ("path" in other and "path" in avoided and len(other["path"]) != len(avoided["path"])))
    if differs:
        assert fits(narrowed, other), (avoided, other)
    assert not fits(narrowed, avoided)


def test_excluding_what_it_cannot_say_keeps_the_schema():
    assert excluding({"type": "number"}, 3) is None
    assert excluding({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": 1}) is None
    assert excluding({"oneOf": [{"type": "string"}]}, "x") is None
    assert excluding({"anyOf": [{"type": "number"}, {"type": "boolean"}]}, 1) is None
    assert excluding({"enum": ["a"]}, "a") is None  # nothing else is left


def test_a_failed_calls_exclusion_is_in_the_grammar_and_falls_back_when_it_cannot_be():
    tool = ToolSpec("todo_write", "", TODO_LIKE)
    schema = generic_schema((tool,), required=True, strict=True, avoid=(("todo_write", {"todos": []}),))
    empty = {"tool_calls": [{"name": "todo_write", "arguments": {"todos": []}}]}
    one = {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [{"content": "a", "status": "done"}]}}]}
    assert not fits(schema, empty) and fits(schema, one)
    assert fits(generic_schema((tool,), required=True, strict=True), empty)
    grammars = GenericGrammars()
    plain = grammars.get((tool,), required=True)
    assert grammars.get((tool,), required=True, avoid=(("todo_write", {"todos": []}),)) is not plain
    # A number cannot be ruled out: the grammar is the tool's own.
    counted = ToolSpec("count", "", {"type": "object", "properties": {"n": {"type": "integer"}}})
    assert fits(generic_schema((counted,), required=True, strict=True, avoid=(("count", {"n": 1}),)),
                {"tool_calls": [{"name": "count", "arguments": {"n": 1}}]})


def test_a_call_with_a_list_of_one_is_ruled_out_though_its_list_may_hold_one_only():
    """edit_file's edits, for a small model, are a list of exactly one edit: a refused
    edit could not be ruled out by the list's length, and SmolLM2 made it again word for
    word until the run ended stuck. Ruled out as the item, other edits still fit."""
    edit = {"type": "object", "properties": {"old_text": {"enum": ["RED = 1", "BLUE = 2"]},
                                             "new_text": {"type": "string"}}, "required": ["old_text", "new_text"]}
    shape = {"type": "object", "properties": {"path": {"const": "c.py"},
                                              "edits": {"type": "array", "items": edit, "minItems": 1,
                                                        "maxItems": 1}},
             "required": ["path", "edits"]}
    tool = ToolSpec("edit_file", "", shape)

    def edit_call(old: str, new: str) -> dict:
        return {"path": "c.py", "edits": [{"old_text": old, "new_text": new}]}

    refused = edit_call("BLUE = 2", "RED = 'x}")
    schema = generic_schema((tool,), required=True, strict=True, avoid=(("edit_file", refused),))
    answer = lambda args: {"tool_calls": [{"name": "edit_file", "arguments": args}]}  # noqa: E731
    assert not fits(schema, answer(refused))
    for other in (edit_call("BLUE = 2", "BLUE = 3"), edit_call("RED = 1", "RED = 'x}")):
        assert fits(schema, answer(other)), other
    assert GenericGrammars().get((tool,), required=True, avoid=(("edit_file", refused),)) is not None
    # A list of one whose item cannot be ruled out is kept whole, as before.
    assert excluding({"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 1}, [3]) is None


def test_a_tool_avoided_whole_is_left_out_unless_it_is_the_only_one():
    a, b = spec("a", "string"), spec("b", "string")
    call_a = {"tool_calls": [{"name": "a", "arguments": {"x": "1"}}]}
    call_b = {"tool_calls": [{"name": "b", "arguments": {"x": "1"}}]}
    schema = generic_schema((a, b), required=True, strict=True, avoid=(("a", None),))
    assert not fits(schema, call_a) and fits(schema, call_b)
    assert fits(generic_schema((a,), required=True, strict=True, avoid=(("a", None),)), call_a)


def test_a_call_of_a_tool_without_arguments_ruled_out_leaves_the_tool_out():
    """get_info takes no arguments: its one call, made already, can only be ruled out
    by leaving the tool out (SmolLM2 called it every round of a run otherwise)."""
    info = ToolSpec("get_info", "", {"type": "object", "properties": {}})
    a = spec("a", "string")
    schema = generic_schema((info, a), required=True, strict=True, avoid=(("get_info", {}),))
    assert not fits(schema, {"tool_calls": [{"name": "get_info", "arguments": {}}]})
    assert fits(schema, {"tool_calls": [{"name": "a", "arguments": {"x": "1"}}]})
    # A tool with optional arguments keeps its other calls.
    schema = generic_schema((a,), required=True, strict=True, avoid=(("a", {}),))
    assert fits(schema, {"tool_calls": [{"name": "a", "arguments": {"x": "1"}}]})


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=60)
@given(first=todo_args, second=todo_args)
def test_several_calls_of_one_tool_are_all_ruled_out(first, second):
    tool = ToolSpec("todo_write", "", TODO_LIKE)
    schema = generic_schema((tool,), required=True, strict=True,
                            avoid=(("todo_write", first), ("todo_write", second)))
    for avoided in (first, second):
        assert not fits(schema, {"tool_calls": [{"name": "todo_write", "arguments": avoided}]})
    # Bounded, however many: at most 2 * MAX_EXCLUDING_CHOICES alternatives of the tool's schema.
    assert len(json.dumps(schema)) < 40 * len(json.dumps(TODO_LIKE))


def test_a_literal_with_a_quote_or_a_backslash_is_escaped_as_llama_cpp_reads_it():
    """An enum member holding `"` (a line of a file offered as edit_file's old_text,
    `HOST = "localhost"`) or a backslash: JSON writes it `\\"`, and the grammar's
    literal must escape that backslash too, or the literal ends early and llama.cpp
    refuses the grammar (llama-cpp-python's own conversion escapes only the quote)."""
    from actors.model.backends.generic_grammar import schema_to_gbnf

    grammar = schema_to_gbnf({"enum": ['HOST = "localhost"', "a\\b"]})
    root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
    assert root == r'root ::= "\"HOST = \\\"localhost\\\"\"" | "\"a\\\\b\""'


def calls_of(schema):
    return schema["oneOf"][0]["properties"]["tool_calls"]["items"]["oneOf"]


def test_a_call_that_is_the_only_one_its_tool_can_make_is_avoided_by_leaving_the_tool_out():
    """A small model's read_file in a workspace of one file has one call: ruled out,
    the tool is left out (its grammar could not say "another file")."""
    from actors.model.backends.generic_grammar import generic_schema, only_value

    read = ToolSpec("read_file", "Read.", {"type": "object", "properties": {"path": {"type": "string"}},
                                           "required": ["path"]})
    grep = ToolSpec("grep_search", "Search.", {"type": "object", "properties": {"pattern": {"type": "string"}},
                                               "required": ["pattern"]})
    names = (("read_file", "path", ("README.md",)),)
    avoid = (("read_file", {"path": "README.md"}),)
    schema = generic_schema((read, grep), required=False, strict=True, avoid=avoid, names=names)
    called = [c["properties"]["name"]["const"] for c in calls_of(schema)]
    assert called == ["grep_search"]
    two = (("read_file", "path", ("README.md", "app.py")),)
    schema = generic_schema((read, grep), required=False, strict=True, avoid=avoid, names=two)
    called = [c["properties"]["name"]["const"] for c in calls_of(schema)]
    assert called == ["read_file", "grep_search"]  # another file is left
    assert only_value({"type": "object", "properties": {"a": {"const": 1}, "b": {"enum": ["x"]}},
                       "required": ["a", "b"]}) == ({"a": 1, "b": "x"},)
    assert only_value({"type": "object", "properties": {"a": {"const": 1}, "b": {"type": "string"}},
                       "required": ["a"]}) is None


def test_each_file_read_once_leaves_read_file_out():
    """Each file of the workspace read (each read ruled out): the last one left is not
    offered again and again (SmolLM2 read it 24 times); the tool is left out."""
    read = ToolSpec("read_file", "Read.", {"type": "object", "properties": {"path": {"type": "string"}},
                                           "required": ["path"]})
    grep = ToolSpec("grep_search", "Search.", {"type": "object", "properties": {"pattern": {"type": "string"}},
                                               "required": ["pattern"]})
    names = (("read_file", "path", ("config.py", "app.py", "lib.py")),)
    avoid = tuple(("read_file", {"path": p}) for p in ("config.py", "app.py"))
    called = [c["properties"]["name"]["const"]
              for c in calls_of(generic_schema((read, grep), required=False, strict=True, avoid=avoid, names=names))]
    assert called == ["read_file", "grep_search"]
    avoid += (("read_file", {"path": "lib.py"}),)
    called = [c["properties"]["name"]["const"]
              for c in calls_of(generic_schema((read, grep), required=False, strict=True, avoid=avoid, names=names))]
    assert called == ["grep_search"]


# Strings of a few letters, so that the values and words share characters often.
small_text = st.text(alphabet="abcAB _x", max_size=7)
words = st.lists(st.text(alphabet="abc_x", min_size=1, max_size=4), max_size=3)


@settings(max_examples=300)
@given(values=st.lists(small_text, max_size=3), banned=words, text=small_text)
def test_the_exclusion_automaton_admits_exactly_what_the_schema_does(values, banned, text):
    """A plain string's exclusions (string_without) as the automaton the grammar is
    written from: it admits a string exactly when the JSON schema does (none of the
    values; none of the words in any case)."""
    from actors.model.backends.string_exclusion import automaton_admits, exclusion_automaton, string_without

    schema = string_without({"type": "string"}, values=tuple(values), words=tuple(banned))
    assert schema is not None
    states = exclusion_automaton(tuple(values), tuple(w.lower() for w in banned))
    assert automaton_admits(states, text) == fits(schema, text), (values, banned, text)
    for value in values:
        assert not automaton_admits(states, value)


def test_a_plain_string_is_ruled_out_as_itself_and_one_with_bounds_by_its_length():
    """`def total` ruled out leaves `def greet` (the same length) in; a string with a
    bound, or a value JSON escapes, is still ruled out by its length."""
    grep = {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]}
    narrowed = excluding(grep, {"pattern": "def total"})
    assert not fits(narrowed, {"pattern": "def total"})
    assert fits(narrowed, {"pattern": "def greet"}) and fits(narrowed, {"pattern": "def totals"})
    bounded = excluding({"type": "string", "maxLength": 20}, "abc")
    assert not fits(bounded, "abc") and not fits(bounded, "xyz") and fits(bounded, "abcd")
    quoted = excluding({"type": "string"}, 'say "hi"')
    assert not fits(quoted, 'say "hi"') and fits(quoted, 'say "hi" ')
    # Twice ruled out: both values, each alone.
    twice = excluding(excluding({"type": "string"}, "a"), "b")
    assert not fits(twice, "a") and not fits(twice, "b") and fits(twice, "c")


def test_banned_values_reach_every_free_string_of_a_call_and_no_choice():
    from actors.model.backends.string_exclusion import with_banned

    shell = ToolSpec("exec_shell_command", "Run.", {
        "type": "object",
        "properties": {"command": {"type": "string"}, "mode": {"enum": ["total", "b"]},
                       "env": {"type": "array", "items": {"type": "string"}},
                       "name": {"type": "string", "maxLength": 8}},
        "required": ["command"]})
    schema = generic_schema((shell,), required=True, strict=True, banned=("total", "cat cart"))
    call = {"tool_calls": [{"name": "exec_shell_command", "arguments": {"command": "cat x"}}]}
    assert fits(schema, call)
    for args in ({"command": "cat cart"}, {"command": "ls", "env": ["a", "total"]}):
        assert not fits(schema, {"tool_calls": [{"name": "exec_shell_command", "arguments": args}]}), args
    # A banned value is banned whole: a string holding it among other words is free (a
    # person's job may need the word).
    for args in ({"command": "cat cart.py"}, {"command": "wc total.txt"}, {"command": "ls", "env": ["TOTAL"]}):
        assert fits(schema, {"tool_calls": [{"name": "exec_shell_command", "arguments": args}]}), args
    # A choice is the tool's own, and a bounded string is left as it was.
    assert fits(schema, {"tool_calls": [{"name": "exec_shell_command",
                                          "arguments": {"command": "x", "mode": "total", "name": "total"}}]})
    assert with_banned({"type": "string"}, ()) == {"type": "string"}
    # A value a grammar cannot say (a line's end) leaves the others banned.
    both = with_banned({"type": "string"}, ("a\nb", "cart"))
    assert not fits(both, "cart") and fits(both, "cat")


def test_an_excluded_string_becomes_a_grammar_llama_cpp_takes():
    """The automaton's rules parse as llama.cpp grammar text, nested in a call's schema."""
    from llama_cpp.llama_grammar import LlamaGrammar

    from actors.model.backends.generic_grammar import schema_to_gbnf, strict_strings

    grep = ToolSpec("grep_search", "Search.", {"type": "object", "properties": {
        "pattern": {"type": "string"}, "include": {"type": "string"}}, "required": ["pattern"]})
    schema = generic_schema((grep,), required=False, strict=True, avoid=(("grep_search", {"pattern": "déf ŧotal"}),),
                            banned=("total", "cat cart"))
    text = strict_strings(schema_to_gbnf(schema))
    assert "\\u0167" in text  # a character past Latin-1, in a class
    LlamaGrammar.from_string(text, verbose=False)


def test_the_examples_values_are_banned_unless_the_conversation_has_them():
    from actors.model.backends.worked_examples import EXAMPLE_VALUES, EXAMPLES, example_values

    assert example_values([{"role": "user", "content": "Which file defines greet?"}]) == EXAMPLE_VALUES
    said = [{"role": "user", "content": "What is in PLAN.TXT?"}, {"role": "assistant", "content": "altitude"},
            {"role": "tool", "content": "telescopes.csv:1:x"}]
    assert set(example_values(said)) == set(EXAMPLE_VALUES) - {"plan.txt", "telescopes.csv"}
    # Each value is one of the examples' calls' (and so nowhere else the model reads).
    def strings(value):
        return [value] if isinstance(value, str) else [s for v in (value.values() if isinstance(value, dict)
                                                                    else value) for s in strings(v)]

    assert set(EXAMPLE_VALUES) == {v for e in EXAMPLES for _, args, _ in e.calls for v in strings(args)}
