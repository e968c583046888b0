"""The grammar of a generic-format answer: with a template that has no tool syntax,
the model answers with one JSON object, a call of one of the offered tools or a
reply, and llama.cpp's sampler is held to that shape."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actors.errors import TurnFailed
from actors.model.backends.string_exclusion import (
    PLAIN_TEXT,
    exclusion_automaton,
    exclusion_rules,
    plain_string,
    string_exclusions,
    string_without,
    with_banned,
)
from actors.model.turns import ToolSpec

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from llama_cpp.llama_grammar import LlamaGrammar


# Calls one generic-format answer may make at once; the run carries out the reads
# among them side by side (CallRunner.run_round in actors/runs/agent/calls.py).
MAX_GENERIC_CALLS = 4


def generic_schema(
    tools: tuple[ToolSpec, ...],
    *,
    required: bool,
    strict: bool,
    parallel: bool = True,
    avoid: tuple[tuple[str, Any], ...] = (),
    names: tuple[tuple[str, str, tuple[str, ...]], ...] = (),
    shapes: tuple[tuple[str, dict[str, Any]], ...] = (),
    banned: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The JSON schema of a generic-format answer: calls of `tools` (one, or up to
    MAX_GENERIC_CALLS when `parallel`), or a reply. `avoid`: (tool name, arguments)
    calls the answer must not make again (`excluding`), where the schema can say so;
    arguments None: no call of that tool (unless that leaves no tool). `names`: (tool,
    argument, values) arguments held to the real names (actors/runs/agent/real_names.py), when strict.
    `shapes`: (tool, parameters) a tool's arguments held to these instead of its own
    parameters, when strict (TurnInput.shapes). `banned`: values no free string of a
    call may be, when strict (the worked examples' own argument values, `with_banned`)."""
    shaped = dict(shapes)

    def base(t: ToolSpec) -> dict[str, Any]:
        return shaped.get(t.name) or with_names(
            t.parameters, {arg: values for tool, arg, values in names if tool == t.name})

    whole = {name for name, args in avoid if args is None}
    # A tool that takes no arguments has one call only: to rule it out is to leave it out.
    whole |= {t.name for t in tools for name, args in avoid
              if name == t.name and args == {} and not t.parameters.get("properties")}
    def arguments(t: ToolSpec) -> dict[str, Any]:
        if not strict:
            return {"type": "object"}
        schema: dict[str, Any] = with_banned(base(t), banned)
        for name, args in avoid:
            if name == t.name and args is not None:
                schema = excluding(schema, args) or schema  # each that the schema can still rule out
        return schema

    if strict:
        # So has one whose arguments can take one value only (a small model's read_file
        # in a workspace of one file: SmolLM2 read README.md round after round), or
        # whose every other call is ruled out already (each of three files read, it
        # read the last one 24 times).
        for t in tools:
            one = only_value(arguments(t))
            if one is not None and (t.name, one[0]) in avoid:
                whole.add(t.name)
    tools = tuple(t for t in tools if t.name not in whole) or tools

    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": arguments(t)},
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    call_branch = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"oneOf": calls}, "minItems": 1,
                                      "maxItems": MAX_GENERIC_CALLS if parallel else 1}},
        "required": ["tool_calls"],
    }
    if required:
        return call_branch
    return {"oneOf": [call_branch, REPLY_SCHEMA]}


# A generic-format answer that is a reply: what `tool_choice: "none"` admits while the
# tools stay described (the prompt, and so its cache, is the same as the rounds before).
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"],
}


# The characters a reply held to a start may go on with: any but a double quote, a
# backslash or a control character (llama.cpp reads a pattern over the JSON string's
# text, where those would end or escape it).
_REPLY_REST = '[^"\\\\\\x00-\\x1f]*'


def reply_schema(starts: tuple[str, ...] = ()) -> dict[str, Any]:
    """REPLY_SCHEMA, its response held to begin with one of `starts` (each a text of
    the characters _REPLY_REST allows; others are left out), when any is given."""
    kept = [s for s in starts if s and re.fullmatch(_REPLY_REST, s)]
    if not kept:
        return REPLY_SCHEMA
    pattern = "^(" + "|".join(map(json_text_literal, kept)) + ")" + _REPLY_REST + "$"
    return {**REPLY_SCHEMA, "properties": {"response": {"type": "string", "pattern": pattern}}}


# Characters a pattern may hold as they are, for Python and for llama.cpp's reading of it.
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-/,:;=@%!'~#&<>`")
# How a JSON string's text writes the characters it escapes, as patterns of that text.
_JSON_ESCAPED = {'"': '\\\\"', "\\": "\\\\\\\\", "\n": "\\\\n"}


def json_text_literal(text: str) -> str:
    """A pattern that matches `text` as a JSON string's text writes it: llama.cpp reads a
    string's pattern over that text (a double quote written bare would end the string),
    so a quote is `\\"`, a backslash doubled, a line break `\\n`; a character special to
    either reading (Python's, llama.cpp's) as a class of its code; the rest as it is.
    Such a pattern matches the JSON text of a value, not the value, where those three
    characters are in it."""
    return "".join(c if c in _PLAIN or ord(c) > 0xFF else _JSON_ESCAPED.get(c) or f"[\\x{ord(c):02x}]" for c in text)


# Alternatives `excluding` writes at most, so a large object's grammar stays small.
MAX_EXCLUDING_CHOICES = 8


def excluding(schema: Any, value: Any) -> dict[str, Any] | None:
    """`schema` narrowed so that `value` no longer fits it, while every value that
    differs from it in a way a grammar can tell still fits: a list or a string of
    another length, another member of an enum, the other boolean, an object with one
    property so changed or an optional one added. None when no such narrowing is
    known (a number; a schema of alternatives; a string held to a pattern): the caller
    keeps `schema` whole.
    A plain string (no bounds, no pattern) is ruled out as that string alone
    (`string_without`); one with bounds, or a value holding a quote, a backslash or a
    control character, by its length; a list of one item by its length and, where the
    item can be, as a list of one other item. That is a grammar's aid, not a check: a
    string of the same length but other characters is then ruled out too, which a
    model meets by changing one more thing."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema:
        rest = [v for v in schema["enum"] if v != value]
        return {**schema, "enum": rest} if rest and len(rest) < len(schema["enum"]) else None
    if isinstance(schema.get("anyOf"), list) and len(schema) == 1:
        # Each alternative without it (one that cannot say so is left out).
        return _one_of([c for c in (excluding(choice, value) for choice in schema["anyOf"]) if c is not None])
    if isinstance(value, str) and plain_string(schema) and PLAIN_TEXT.fullmatch(value):
        return string_without(schema, values=(value,))  # that string alone
    if "const" in schema or any(k in schema for k in ("anyOf", "oneOf", "allOf", "$ref", "not")):
        return None
    kind = schema.get("type")
    if isinstance(value, bool):
        return {**schema, "const": not value} if kind == "boolean" else None
    if isinstance(value, (list, str)) and kind in ("array", "string"):
        if (kind == "array") != isinstance(value, list) or "pattern" in schema:
            return None  # a pattern is read before a length: one could not rule it out
        low, high = ("minItems", "maxItems") if kind == "array" else ("minLength", "maxLength")
        n = len(value)
        choices = []
        if n + 1 <= schema.get(high, n + 1):
            choices.append({**schema, low: max(n + 1, schema.get(low, 0))})
        if n >= 1 and schema.get(low, 0) <= n - 1:
            choices.append({**schema, high: min(n - 1, schema.get(high, n - 1))})
        if (kind == "array" and n == 1 and schema.get(low, 0) <= 1 <= schema.get(high, 1)
                and isinstance(schema.get("items"), dict)):
            # A list of one with that one item otherwise (an edit_file call of one edit,
            # refused, was made again word for word when only the list's length could
            # be ruled out, and a list of one edit at most has no other length).
            item = excluding(schema["items"], value[0])
            if item is not None:
                choices.append({**schema, "items": item, low: 1, high: 1})
        return _one_of(choices)
    if isinstance(value, dict) and kind == "object" and isinstance(schema.get("properties"), dict):
        props: dict[str, Any] = schema["properties"]
        required = list(schema.get("required", []))
        choices = []
        for key, sub in props.items():
            if len(choices) >= MAX_EXCLUDING_CHOICES:
                break
            if key in value:
                other = excluding(sub, value[key])
                if other is not None:
                    choices.append({**schema, "properties": {**props, key: other},
                                    "required": required + [key] if key not in required else required})
            elif key not in required:
                choices.append({**schema, "required": required + [key]})  # an optional one given now
        return _one_of(choices)
    return None


def only_value(schema: Any) -> tuple[Any] | None:
    """(value,) when `schema` admits that one value only (a const, an enum of one, an
    object whose every property is required and admits one value), else None."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return (schema["const"],)
    if isinstance(schema.get("enum"), list) and len(schema["enum"]) == 1:
        return (schema["enum"][0],)
    props = schema.get("properties")
    if schema.get("type") == "object" and isinstance(props, dict) and props and not schema.get("additionalProperties"):
        if set(schema.get("required") or ()) != set(props):
            return None
        out = {}
        for key, sub in props.items():
            one = only_value(sub)
            if one is None:
                return None
            out[key] = one[0]
        return (out,)
    return None


def _one_of(choices: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The alternatives as one schema, nested ones flattened and at most
    MAX_EXCLUDING_CHOICES * 2 kept: a grammar holding fewer still rules the value out."""
    flat: list[dict[str, Any]] = []
    for choice in choices:
        inner = choice.get("anyOf")
        flat.extend(inner if isinstance(inner, list) and len(choice) == 1 else [choice])
    flat = flat[: MAX_EXCLUDING_CHOICES * 2]
    if not flat:
        return None
    return flat[0] if len(flat) == 1 else {"anyOf": flat}


# llama.cpp refuses a grammar whose repetitions pass 2,000 (`"maxLength": 5000` alone
# does), and its sampler would then be built without one and crash. Bounds past this
# many are left out of the grammar (the tool still checks its own arguments); what
# llama.cpp still refuses falls back to any object for arguments.
MAX_BOUND = 64
_BOUNDS = frozenset({"maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"})


# llama.cpp's converter ignores an integer's minimum and maximum: a range of at most
# this many values is given to it as the list of them (larger ones the tool checks).
MAX_INT_CHOICES = 256


def with_int_ranges(schema: Any) -> Any:
    """`schema` with each small bounded integer range written as an `enum` of its values."""
    if isinstance(schema, list):
        return [with_int_ranges(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: with_int_ranges(v) for k, v in schema.items()}
    low, high = out.get("minimum"), out.get("maximum")
    if (out.get("type") == "integer" and "enum" not in out and isinstance(low, int) and isinstance(high, int)
            and not isinstance(low, bool) and not isinstance(high, bool) and 0 <= high - low < MAX_INT_CHOICES):
        out["enum"] = list(range(low, high + 1))
    return out


def loosened(schema: Any) -> Any:
    """`schema` without the bounds over MAX_BOUND (anywhere in it)."""
    if isinstance(schema, dict):
        return {
            k: loosened(v) for k, v in schema.items()
            if not (k in _BOUNDS and isinstance(v, int) and not isinstance(v, bool) and v > MAX_BOUND)
        }
    if isinstance(schema, list):
        return [loosened(v) for v in schema]
    return schema


# A JSON string's character, as JSON has it: no raw control character (the converter's
# own rule admits them, and `json.loads` then refuses the call: "Invalid control
# character"), escapes only of the kinds JSON has.
STRICT_CHAR = r'char ::= [^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
_CHAR_RULE = re.compile(r"^char ::= .*$", re.MULTILINE)


def strict_strings(grammar: str) -> str:
    """`grammar` with its strings' character rule made JSON's."""
    return _CHAR_RULE.sub(lambda _: STRICT_CHAR, grammar)


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """llama-cpp-python's conversion of a JSON schema to a grammar, with its literals
    escaped as llama.cpp reads them. Its own escapes `"` but not a backslash, so a
    constant or an enum member holding a quote (`HOST = "localhost"`, a line of a
    file offered as edit_file's old_text), JSON-encoded as `\"`, ended the literal
    early: llama.cpp refused the grammar, and the round fell back to a looser one."""
    from llama_cpp.llama_grammar import SchemaConverter

    # Its private members, checked when a model loads (llama_internals.py).
    class Converter(SchemaConverter):
        def _format_literal(self, literal: str) -> str:
            return '"' + _LITERAL_ESCAPE.sub(lambda m: _LITERAL_ESCAPES[m.group(0)], literal) + '"'

        def visit(self, schema: Any, name: str) -> str:
            # A plain string with exclusions (string_without): its automaton's rules.
            ruled = string_exclusions(schema) if plain_string(schema) and "not" in schema else None
            if ruled is None:
                return str(super().visit(schema, name))  # type: ignore[no-untyped-call]
            rules: dict[str, str] = self._rules
            prefix = f"{re.sub(r'[^a-zA-Z0-9-]+', '-', name or 'root')}-x{len(rules)}"
            rules.update(exclusion_rules(prefix, exclusion_automaton(*ruled)))
            return str(self._add_rule(name or "root", f'"\\"" {prefix}-0'))  # type: ignore[no-untyped-call]

    converter: Any = Converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)  # type: ignore[no-untyped-call]
    converter.visit(converter.resolve_refs(schema, "stdin"), "")
    return str(converter.format_grammar())


_LITERAL_ESCAPE = re.compile(r'[\\\r\n"]')
_LITERAL_ESCAPES = {"\\": "\\\\", "\r": "\\r", "\n": "\\n", '"': '\\"'}


# Whether llama.cpp takes a grammar's text (the backend asks its own vocabulary).
GrammarCheck = Callable[[str], bool]

# Grammars kept: a /v1 client chooses its tools, so what is kept is bounded.
MAX_GRAMMARS = 32


class GenericGrammars:
    """The grammars made lately, one per set of tools (converting a schema takes a
    while), the least recently used forgotten past MAX_GRAMMARS. A set of tools is
    known by its whole specification, not its names: the same names with other
    parameters make another grammar."""

    def __init__(self, check: GrammarCheck | None = None) -> None:
        self._made: dict[tuple[str, ...], LlamaGrammar] = {}
        self._check = check

    def _make(self, schema: dict[str, Any]) -> LlamaGrammar | None:
        """The grammar of `schema` with every bound, or else its loosened form (the
        only one tried without a check to ask); None when the converter or llama.cpp
        refuses them."""
        from llama_cpp.llama_grammar import LlamaGrammar

        schema = with_int_ranges(schema)
        forms = [schema, loosened(schema)] if self._check is not None else [loosened(schema)]
        for form in forms:
            try:
                text = strict_strings(schema_to_gbnf(form))
            except Exception:  # a schema the converter cannot take
                continue
            if self._check is None or self._check(text):
                return LlamaGrammar.from_string(text, verbose=False)
        return None

    def __len__(self) -> int:
        return len(self._made)

    def _keep(self, key: tuple[str, ...], made: LlamaGrammar) -> LlamaGrammar:
        self._made.pop(key, None)
        self._made[key] = made  # most recently used last
        while len(self._made) > MAX_GRAMMARS:
            self._made.pop(next(iter(self._made)))
        return made

    def get(
        self,
        tools: tuple[ToolSpec, ...],
        *,
        required: bool,
        parallel: bool = True,
        avoid: tuple[tuple[str, Any], ...] = (),
        names: tuple[tuple[str, str, tuple[str, ...]], ...] = (),
        shapes: tuple[tuple[str, dict[str, Any]], ...] = (),
        banned: tuple[str, ...] = (),
    ) -> LlamaGrammar:
        """A llama.cpp grammar that lets the answer be only well-formed tool calls of
        `tools` (one unless `parallel`) or (unless `required`) a reply: the generic
        format's JSON; not the calls of `avoid` again, where their schemas can say so,
        and no string that is one of `banned`."""
        spec = json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True, default=str)
        key = ("!tools", spec) + (("!required",) if required else ()) + (("!parallel",) if parallel else ())
        if avoid:
            key += ("!avoid", json.dumps(avoid, sort_keys=True, default=str))
        if names:
            key += ("!names", json.dumps(names))
        if shapes:
            key += ("!shapes", json.dumps(shapes, sort_keys=True))
        if banned:
            key += ("!banned", json.dumps(banned))
        made = self._made.get(key)
        if made is None:
            # The tools' own schemas (the calls to avoid ruled out; else not); else
            # (refused) any object for their arguments.
            made = (((avoid or names or shapes or banned) and self._make(generic_schema(
                        tools, required=required, strict=True, parallel=parallel, avoid=avoid, names=names,
                        shapes=shapes, banned=banned)))
                    # A shape refused: what to avoid and the real names still hold.
                    or (shapes and (avoid or names or banned) and self._make(generic_schema(
                        tools, required=required, strict=True, parallel=parallel, avoid=avoid, names=names,
                        banned=banned)))
                    or self._make(generic_schema(tools, required=required, strict=True, parallel=parallel))
                    or self._make(generic_schema(tools, required=required, strict=False, parallel=parallel)))
            if made is None:
                raise TurnFailed("The tools' names could not be made into a grammar for the local model; "
                                 "offer fewer tools, or use a model whose template has tool syntax.")
        return self._keep(key, made)

    def for_schema(self, schema: dict[str, Any]) -> LlamaGrammar:
        """A llama.cpp grammar that holds the answer to JSON of `schema` (a turn's
        `answer_schema`, such as a goal check's verdict)."""
        key = ("!schema", json.dumps(schema, sort_keys=True))
        made = self._made.get(key)
        if made is None:
            made = self._make(schema)
            if made is None:
                raise TurnFailed("The answer's JSON schema could not be made into a grammar for the local "
                                 "model; make it simpler (fewer nested bounds and choices).")
        return self._keep(key, made)


def with_names(schema: dict[str, Any], names: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """A tool's parameters schema whose named string arguments take only the given
    values (an `enum`); the schema is not changed in place."""
    props = schema.get("properties")
    if not isinstance(props, dict) or not names:
        return schema
    new_props = dict(props)
    for arg, values in names.items():
        if isinstance(new_props.get(arg), dict) and values:
            new_props[arg] = {**new_props[arg], "enum": list(values)}
    return {**schema, "properties": new_props}
