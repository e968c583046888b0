"""ToolCallParser: text, reasoning and tool calls out of raw model output, whatever the cuts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.model.toolcalls import (
    FORMATS,
    CallArgs,
    CallEnd,
    CallStart,
    Event,
    ParsedCall,
    ParseResult,
    Reasoning,
    Retract,
    Text,
    ToolCallParser,
    detect_format,
)

# ---- helpers ----


def replay(events: list[Event]) -> tuple[str, str, list[tuple[str, str, str]], dict[int, str]]:
    """What a reader of the events ends up with; checks the order rules on the way."""
    text, reasoning = "", ""
    calls: dict[int, list[Any]] = {}
    open_call: int | None = None
    errors: dict[int, str] = {}
    for ev in events:
        if isinstance(ev, Text):
            assert ev.text
            text += ev.text
        elif isinstance(ev, Reasoning):
            assert ev.text
            reasoning += ev.text
        elif isinstance(ev, Retract):
            text, reasoning = ev.text, ev.reasoning
        elif isinstance(ev, CallStart):
            assert open_call is None, "a call started inside another"
            assert ev.index == len(calls), "calls are numbered 0, 1, 2..."
            calls[ev.index] = [ev.call_id, ev.name, ""]
            open_call = ev.index
        elif isinstance(ev, CallArgs):
            assert ev.index == open_call, "arguments outside their call"
            assert ev.text
            calls[ev.index][2] += ev.text
        elif isinstance(ev, CallEnd):
            assert ev.index == open_call
            open_call = None
            if ev.error is not None:
                errors[ev.index] = ev.error
    assert open_call is None, "a call never ended"
    return text, reasoning, [(c[0], c[1], c[2]) for c in calls.values()], errors


def parse(fmt: str, pieces: list[str], **kw: Any) -> tuple[ParseResult, list[Event]]:
    """Feed the pieces, check the events tell the same story as `result`, and that every
    call's streamed arguments were at each step a start of what they became."""
    parser = ToolCallParser(fmt, **kw)
    events: list[Event] = []
    snapshots: list[dict[int, str]] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
        snapshots.append({i: c[2] for i, c in enumerate(replay_partial(events))})
    events.extend(parser.finish())
    result = parser.result
    text, reasoning, calls, errors = replay(events)
    assert (text, reasoning) == (result.text, result.reasoning)
    assert calls == [tuple(c) for c in result.calls]
    assert errors == dict(result.errors)
    for snap in snapshots:
        for i, args in snap.items():
            assert result.calls[i].arguments.startswith(args)
    return result, events


def replay_partial(events: list[Event]) -> list[list[str]]:
    calls: list[list[str]] = []
    for ev in events:
        if isinstance(ev, CallStart):
            calls.append([ev.call_id, ev.name, ""])
        elif isinstance(ev, CallArgs):
            calls[ev.index][2] += ev.text
    return calls


def outcome(result: ParseResult) -> tuple[str, str, list[tuple[str, str, str]], dict[int, str]]:
    return result.text, result.reasoning, [(c.id, c.name, c.arguments) for c in result.calls], dict(result.errors)


_TOKEN = re.compile(r"\s*[A-Za-z0-9_]+|\s*[^\sA-Za-z0-9_]|\s+")


def tokens(s: str) -> list[str]:
    """Roughly how a BPE tokenizer cuts text (tags split into several pieces too)."""
    out = _TOKEN.findall(s)
    assert "".join(out) == s
    return out


def chars(s: str) -> list[str]:
    return list(s)


# ---- recorded-style outputs and what they must give ----

WRITE_ARGS = (
    '{"path": "src/app/main.py", "content": "def main():\\n    data = {\\"a\\": [1, 2], \\"b\\": \\"}{\\"}\\n'
    '    print(f\\"{data[\'a\']}\\")  # caf\\u00e9 \\ud83d\\ude00 \\u2014 na\\u00efve\\n"}'
)

SAMPLES: dict[str, list[tuple[str, dict[str, Any], str, tuple[Any, ...]]]] = {
    "hermes": [
        (
            "qwen3: thinking, text, two calls, text after",
            {},
            "<think>\nThe user wants the tests fixed. I should read the file first, then write it.\n</think>\n\n"
            "I'll look at the file and then write the fix.\n"
            '<tool_call>\n{"name": "read_file", "arguments": {"path": "tests/test_a.py", "range": [1, 40]}}'
            "\n</tool_call>\n"
            '<tool_call>\n{"name": "write_file", "arguments": ' + WRITE_ARGS + "}\n</tool_call>\n"
            "Done — both calls sent.",
            (
                "I'll look at the file and then write the fix.\nDone — both calls sent.",
                "The user wants the tests fixed. I should read the file first, then write it.",
                [
                    ("call_0", "read_file", '{"path": "tests/test_a.py", "range": [1, 40]}'),
                    ("call_1", "write_file", WRITE_ARGS),
                ],
                {},
            ),
        ),
        (
            "qwen2.5: a call alone, arguments before the name, nested braces in strings",
            {},
            '<tool_call>\n{"arguments": {"pattern": "def \\\\w+\\\\(\\\\)\\\\s*\\\\{", "glob": "**/*.{ts,tsx}", '
            '"opts": {"case": false, "max": 20, "ctx": null}}, "name": "grep"}\n</tool_call>',
            (
                "",
                "",
                [
                    (
                        "call_0",
                        "grep",
                        '{"pattern": "def \\\\w+\\\\(\\\\)\\\\s*\\\\{", "glob": "**/*.{ts,tsx}", '
                        '"opts": {"case": false, "max": 20, "ctx": null}}',
                    )
                ],
                {},
            ),
        ),
        (
            "plain answer with code full of < and [",
            {},
            'Use `a < b` and `x[0] <= y[1]`; HTML like <div class="t"><tool-tip></div> is fine.\n\n'
            "```python\nif a<b: print('<tool')\n```",
            (
                'Use `a < b` and `x[0] <= y[1]`; HTML like <div class="t"><tool-tip></div> is fine.\n\n'
                "```python\nif a<b: print('<tool')\n```",
                "",
                [],
                {},
            ),
        ),
        (
            "the template opened the think block",
            {"thinking_open": True},
            "Let me check the weather tool's schema: it takes a city.\n</think>\n\n"
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "São Paulo"}}\n</tool_call>',
            (
                "",
                "Let me check the weather tool's schema: it takes a city.",
                [("call_0", "get_weather", '{"city": "São Paulo"}')],
                {},
            ),
        ),
    ],
    "llama3": [
        (
            "3.1 with python tag",
            {},
            '<|python_tag|>{"name": "search_code", '
            '"parameters": {"query": "class \\"Foo\\" {", "paths": ["a/b", "c"]}}',
            ("", "", [("call_0", "search_code", '{"query": "class \\"Foo\\" {", "paths": ["a/b", "c"]}')], {}),
        ),
        (
            "3.2: type first, arguments instead of parameters, pretty-printed",
            {},
            '\n{\n  "type": "function",\n  "name": "run_tests",\n'
            '  "arguments": {\n    "path": "tests/",\n    "k": "not slow"\n  }\n}',
            ("", "", [("call_0", "run_tests", '{\n    "path": "tests/",\n    "k": "not slow"\n  }')], {}),
        ),
        (
            "two calls separated by a semicolon",
            {},
            '{"name": "ls", "parameters": {"path": "."}}; {"name": "read_file", "parameters": {"path": "README.md"}}',
            ("", "", [("call_0", "ls", '{"path": "."}'), ("call_1", "read_file", '{"path": "README.md"}')], {}),
        ),
        (
            "a plain answer",
            {},
            'The function {x} returns a dict like {"a": 1}. Ünïcödé 👍',
            ('The function {x} returns a dict like {"a": 1}. Ünïcödé 👍', "", [], {}),
        ),
        (
            "JSON that is not a call is an answer",
            {},
            '{"name": "Ada Lovelace", "born": 1815}',
            ('{"name": "Ada Lovelace", "born": 1815}', "", [], {}),
        ),
    ],
    "mistral": [
        (
            "nemo: text then two calls with ids",
            {},
            "Let me check both files.[TOOL_CALLS]"
            '[{"name": "read_file", "arguments": {"path": "a.py"}, "id": "Ab3dE6gH9"}, '
            '{"name": "write_file", "arguments": ' + WRITE_ARGS + ', "id": "zZ9yY8xX7"}]',
            (
                "Let me check both files.",
                "",
                [("Ab3dE6gH9", "read_file", '{"path": "a.py"}'), ("zZ9yY8xX7", "write_file", WRITE_ARGS)],
                {},
            ),
        ),
        (
            "a call without id, no text",
            {},
            '[TOOL_CALLS] [{"name": "list_dir", "arguments": {"path": "src/[id]/", "hidden": true}}]',
            ("", "", [("call_0", "list_dir", '{"path": "src/[id]/", "hidden": true}')], {}),
        ),
        (
            "plain answer with brackets",
            {},
            "Arrays look like [1, 2, 3] and [TOOL] is not a tag.",
            ("Arrays look like [1, 2, 3] and [TOOL] is not a tag.", "", [], {}),
        ),
    ],
    "generic": [
        (
            "a response with escapes, unicode and a surrogate pair",
            {},
            '{"response": "Here is the plan:\\n1. read \\"main.py\\" \\u2014 caf\\u00e9 \\ud83d\\ude80'
            '\\n2. fix {it} [now]\\t\\\\done"}',
            ('Here is the plan:\n1. read "main.py" — café 🚀\n2. fix {it} [now]\t\\done', "", [], {}),
        ),
        (
            "several calls",
            {},
            '{"tool_calls": [{"id": "c-1", "name": "read_file", "arguments": {"path": "x.json"}}, '
            '{"name": "write_file", "arguments": ' + WRITE_ARGS + "}]}",
            ("", "", [("c-1", "read_file", '{"path": "x.json"}'), ("call_1", "write_file", WRITE_ARGS)], {}),
        ),
        (
            "one call, reasoning first",
            {},
            '<think>Need the date.</think>\n{"tool_call": {"name": "now", "arguments": {}}}',
            ("", "Need the date.", [("call_0", "now", "{}")], {}),
        ),
        (
            "an unconstrained plain answer",
            {},
            "Sure! The answer is 42.",
            ("Sure! The answer is 42.", "", [], {}),
        ),
    ],
}

ALL = [(fmt, *s) for fmt, samples in SAMPLES.items() for s in samples]
IDS = [f"{a[0]}: {a[1]}" for a in ALL]


@pytest.mark.parametrize(("fmt", "label", "kw", "output", "expected"), ALL, ids=IDS)
def test_recorded_outputs_token_by_token(fmt: str, label: str, kw: dict[str, Any], output: str, expected: Any) -> None:
    result, _ = parse(fmt, tokens(output), **kw)
    assert outcome(result) == expected
    assert outcome(parse(fmt, [output], **kw)[0]) == expected
    assert outcome(parse(fmt, chars(output), **kw)[0]) == expected


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_two_piece_split(fmt: str) -> None:
    kw, output, expected = SAMPLES[fmt][0][1:]
    for cut in range(len(output) + 1):
        result, _ = parse(fmt, [output[:cut], output[cut:]], **kw)
        assert outcome(result) == expected, cut


@settings(max_examples=150, deadline=None)
@given(sample=st.sampled_from(ALL), data=st.data())
def test_any_split_gives_the_unsplit_parse(sample: tuple[Any, ...], data: st.DataObject) -> None:
    fmt, _, kw, output, expected = sample
    cuts = sorted(data.draw(st.lists(st.integers(0, len(output)), max_size=40)))
    pieces = [output[a:b] for a, b in zip([0, *cuts], [*cuts, len(output)], strict=False)]
    result, _ = parse(fmt, pieces, **kw)
    assert outcome(result) == expected


# ---- generated outputs ----

_tricky = st.sampled_from(
    [
        "a",
        "Z",
        " ",
        "\n",
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ":",
        ",",
        "é",
        "😀",
        "\u2028",
        "<tool_call>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "<think>",
        "</think>",
        "<|python_tag|>",
        '{"name": "x"}',
    ]
)
_strings = st.lists(_tricky, max_size=6).map("".join)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_strings, inner, max_size=3),
    max_leaves=10,
)
_names = st.from_regex(r"[a-z][a-z_0-9]{0,12}", fullmatch=True)
# Text that cannot form a tag, a leading `{` or `[TOOL_CALLS]`.
_prose = st.text(alphabet="xyz XYZ.,!?-\n<>/[]{}é", max_size=25).map(lambda s: "x" + s)


@st.composite
def rendered_call(draw: st.DrawFn, args_key: str = "arguments", with_id: str = "") -> tuple[str, str, str, str | None]:
    """A call as a model might write it: (json text, name, arguments text, id)."""
    name = draw(_names)
    args = draw(st.dictionaries(_strings, _json, max_size=4))
    args_text = json.dumps(args, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2])))
    call_id = draw(st.from_regex(r"[A-Za-z0-9]{9}", fullmatch=True)) if with_id and draw(st.booleans()) else None
    fields = [f'"name": {json.dumps(name)}', f'"{args_key}": {args_text}']
    if draw(st.booleans()):
        fields.reverse()
    if call_id is not None:  # mistral models write it last; in generic it counts only when written first
        fields.insert(len(fields) if args_key == "arguments" and with_id == "last" else 0, f'"id": "{call_id}"')
    sep = draw(st.sampled_from([", ", ",\n  ", ","]))
    return "{" + sep.join(fields) + "}", name, args_text, call_id


def expected_text(segments: list[str]) -> str:
    out = ""
    for seg in segments:
        seg = (seg if out else seg.lstrip()).rstrip()
        out += seg
    return out


@st.composite
def generated_output(draw: st.DrawFn) -> tuple[str, dict[str, Any], str, tuple[Any, ...]]:
    fmt = draw(st.sampled_from(FORMATS))
    kw: dict[str, Any] = {}
    prefix, reasoning = "", ""
    mode = draw(st.sampled_from(["none", "block", "open"]))
    if mode != "none":
        body = draw(_prose)
        reasoning = body.strip()
        if mode == "open":
            kw["thinking_open"] = True
            prefix = body + "</think>\n\n"
        else:
            prefix = "<think>" + body + "</think>\n\n"
    n_calls = draw(st.integers(0, 3))
    calls = [
        draw(
            rendered_call(
                "parameters" if fmt == "llama3" and draw(st.booleans()) else "arguments",
                with_id={"mistral": "last", "generic": "first"}.get(fmt, ""),
            )
        )
        for _ in range(n_calls)
    ]
    expected_calls = [(cid or f"call_{i}", name, args) for i, (_, name, args, cid) in enumerate(calls)]
    texts: list[str] = []  # the text segments around the calls, as written
    if fmt == "hermes":
        texts = [draw(_prose) for _ in range(n_calls + 1)]
        texts = [t if i == 0 else "\n" + t for i, t in enumerate(texts)]
        blocks = [f"\n<tool_call>\n{c[0]}\n</tool_call>" + t for c, t in zip(calls, texts[1:], strict=True)]
        body = texts[0] + "".join(blocks)
    elif fmt == "mistral":
        texts = [draw(_prose), draw(_prose)] if calls else [draw(_prose)]
        body = texts[0] + ("[TOOL_CALLS][" + ", ".join(c[0] for c in calls) + "]" + texts[1] if calls else "")
    elif fmt == "llama3":
        if calls:
            body = draw(st.sampled_from(["", "<|python_tag|>"])) + "; ".join(c[0] for c in calls)
        else:
            texts = [draw(_prose)]
            body = texts[0]
    else:
        if calls:
            body = '{"tool_calls": [' + ", ".join(c[0] for c in calls) + "]}"
        else:
            answer = draw(_strings | _prose)
            texts = [answer]
            body = json.dumps({"response": answer}, ensure_ascii=draw(st.booleans()))
    return fmt, kw, prefix + body, (expected_text(texts), reasoning, expected_calls, {})


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=300, deadline=None)
@given(gen=generated_output(), data=st.data())
def test_generated_outputs_parse_whatever_the_cuts(gen: tuple[Any, ...], data: st.DataObject) -> None:
    fmt, kw, output, expected = gen
    whole, _ = parse(fmt, [output], **kw)
    assert outcome(whole) == expected
    for call in whole.calls:
        assert isinstance(json.loads(call.arguments), dict)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(output)), max_size=30)))
    pieces = [output[a:b] for a, b in zip([0, *cuts], [*cuts, len(output)], strict=False)]
    assert outcome(parse(fmt, pieces, **kw)[0]) == expected


# ---- malformed output ----


@pytest.mark.parametrize("fmt", FORMATS)
def test_cut_off_anywhere_never_raises(fmt: str) -> None:
    """Every prefix of a recorded output (a stop at max_tokens) parses; a call cut in its
    arguments keeps the arguments as far as they were written and says why it failed."""
    kw, output, (_, _, full_calls, _) = SAMPLES[fmt][1 if fmt == "generic" else 0][1:]
    for cut in range(len(output) + 1):
        result, _ = parse(fmt, tokens(output[:cut]), **kw)
        for i, call in enumerate(result.calls):
            if i in result.errors:
                assert result.errors[i]
            else:  # complete; its id may have been cut off (then one is made up)
                assert call[1:] == full_calls[i][1:], (cut, call)
                assert call.id in (full_calls[i][0], f"call_{i}")
            if call.name:
                assert call.name == full_calls[i][1]
                assert full_calls[i][2].startswith(call.arguments) or call.arguments == "{}" or i in result.errors


def test_cut_inside_arguments_gives_the_raw_arguments() -> None:
    out = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "x = {'
    result, events = parse("hermes", tokens(out))
    assert result.calls == (ParsedCall("call_0", "write_file", '{"path": "a.py", "content": "x = {'),)
    assert "ended before the tool call was complete" in result.errors[0]
    assert isinstance(events[-1], CallEnd) and events[-1].error


def test_invalid_json_in_a_hermes_call_is_refused_and_the_stream_goes_on() -> None:
    out = (
        'Fixing.\n<tool_call>\n{"name": "edit", "arguments": {"old": "a",, "new": "b"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "ls", "arguments": {}}\n</tool_call>\nAll done.'
    )
    result, _ = parse("hermes", tokens(out))
    assert result.text == "Fixing.\nAll done."
    assert result.calls[0] == ParsedCall("call_0", "edit", '{"old": "a",, "new": "b"}}')
    assert "not valid JSON" in result.errors[0]
    assert result.calls[1] == ParsedCall("call_1", "ls", "{}")
    assert 1 not in result.errors


def test_hermes_block_that_is_not_json_becomes_a_refused_call() -> None:
    result, _ = parse("hermes", tokens("<tool_call>\nread_file(path='a.py')\n</tool_call>"))
    assert result.calls == (ParsedCall("call_0", "", "read_file(path='a.py')"),)
    assert result.errors[0]


def test_llama3_call_broken_midway_is_shown_as_text() -> None:
    out = '{"name": "x" "parameters": {}}'
    result, _ = parse("llama3", tokens(out))
    assert (result.text, result.calls) == (out, ())


def test_arguments_that_are_not_an_object_are_refused() -> None:
    result, _ = parse("hermes", tokens('<tool_call>{"name": "a", "arguments": "{\\"p\\": 1}"}</tool_call>'))
    assert result.calls[0].arguments == '"{\\"p\\": 1}"'
    assert "JSON object" in result.errors[0]


def test_missing_closing_brace_still_runs_the_call() -> None:
    result, _ = parse("hermes", tokens('<tool_call>\n{"name": "a", "arguments": {"p": 1}\n</tool_call>\nok'))
    assert outcome(result) == ("ok", "", [("call_0", "a", '{"p": 1}')], {})


def test_a_doubled_closing_brace_before_the_closing_tag_is_dropped() -> None:
    out = '<tool_call>\n{"name": "a", "arguments": {"p": 1}}}\n</tool_call>\nok'
    assert outcome(parse("hermes", chars(out))[0]) == ("ok", "", [("call_0", "a", '{"p": 1}')], {})
    out = '<tool_call>\n{"name": "a", "arguments": {"p": 1}}} and more'
    assert outcome(parse("hermes", chars(out))[0]) == ("} and more", "", [("call_0", "a", '{"p": 1}')], {})


def test_consecutive_think_blocks_are_one_reasoning() -> None:
    out = "<think>\nFirst idea.\n</think>\n<think>Second idea.</think>\n\nThe answer."
    assert outcome(parse("hermes", tokens(out))[0]) == ("The answer.", "First idea.\n\nSecond idea.", [], {})


def test_a_call_without_name_is_refused() -> None:
    result, _ = parse("mistral", tokens('[TOOL_CALLS][{"arguments": {"p": 1}}]'))
    assert result.calls == (ParsedCall("call_0", "", '{"p": 1}'),)
    assert "no name" in result.errors[0]


@pytest.mark.parametrize(
    ("fmt", "out"),
    [
        ("hermes", '<tool_call>{"foo": 1}</tool_call>'),
        ("mistral", '[TOOL_CALLS][{"foo": 1}]'),
        ("generic", '{"tool_call": {"foo": 1}}'),
    ],
)
def test_a_call_with_neither_name_nor_arguments_is_refused(fmt: str, out: str) -> None:
    """It ends with an error and the object as its arguments (this raised ValueError)."""
    result, _ = parse(fmt, tokens(out))
    assert result.calls == (ParsedCall("call_0", "", '{"foo": 1}'),)
    assert "no name" in result.errors[0]


def test_generic_json_cut_before_anything_is_text() -> None:
    result, _ = parse("generic", tokens('{"respo'))
    assert (result.text, result.calls) == ('{"respo', ())


def test_generic_response_cut_keeps_what_was_said() -> None:
    result, _ = parse("generic", chars('{"response": "Hello \\ud83d\\ude00 wor'))
    assert (result.text, result.calls) == ("Hello 😀 wor", ())


_garbage = st.lists(
    st.sampled_from(
        [
            "{",
            "}",
            "[",
            "]",
            '"',
            "\\",
            ":",
            ",",
            " ",
            "\n",
            "a",
            "1",
            "null",
            '"name"',
            '"arguments"',
            '"parameters"',
            '"id"',
            '"response"',
            '"tool_calls"',
            '"tool_call"',
            "<tool_call>",
            "</tool_call>",
            "[TOOL_CALLS]",
            "<think>",
            "</think>",
            "<|python_tag|>",
            "\\u",
            "d83d",
            "<",
            "é",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), output=_garbage, thinking_open=st.booleans(), data=st.data())
def test_garbage_never_raises_and_splits_do_not_matter(
    fmt: str, output: str, thinking_open: bool, data: st.DataObject
) -> None:
    whole, _ = parse(fmt, [output], thinking_open=thinking_open)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(output)), max_size=20)))
    pieces = [output[a:b] for a, b in zip([0, *cuts], [*cuts, len(output)], strict=False)]
    assert outcome(parse(fmt, pieces, thinking_open=thinking_open)[0]) == outcome(whole)


# ---- streaming behaviour ----


def test_text_that_cannot_start_a_tag_is_emitted_at_once() -> None:
    parser = ToolCallParser("hermes")
    assert parser.feed("Hello, a < b and x[0]") == [Text("Hello, a < b and x[0]")]
    assert parser.feed(" then <tool") == [Text(" then")]  # "<tool" could still be a tag
    assert parser.feed("s> here") == [Text(" <tools> here")]


def test_arguments_stream_while_written() -> None:
    parser = ToolCallParser("hermes")
    assert parser.feed('<tool_call>\n{"name": "write_file", "arguments": {"content": "ab') == [
        CallStart(0, "call_0", "write_file"),
        CallArgs(0, '{"content": "ab'),
    ]
    assert parser.feed("cd") == [CallArgs(0, "cd")]
    assert parser.feed('"}}\n</tool_call>') == [CallArgs(0, '"}'), CallEnd(0, None)]


def test_call_start_waits_for_the_name() -> None:
    parser = ToolCallParser("hermes")
    assert parser.feed('<tool_call>{"arguments": {"a": [1, ') == []
    assert parser.feed('2]}, "name": "f"}') == [
        CallStart(0, "call_0", "f"),
        CallArgs(0, '{"a": [1, 2]}'),
        CallEnd(0, None),
    ]


def test_generic_response_streams_decoded() -> None:
    parser = ToolCallParser("generic")
    out = []
    for piece in ['{"resp', 'onse": "caf', "\\u00", "e9 \\", '"q\\"', " \\ud83d", "\\ude00", '!"}']:
        out.append("".join(e.text for e in parser.feed(piece) if isinstance(e, Text)))
    assert out == ["", "caf", "", "é", ' "q"', "", " 😀", "!"]


def test_closing_think_without_opening_retracts_the_text() -> None:
    parser = ToolCallParser("hermes")
    events = parser.feed("The user asks for X.\nSo I ")
    assert events == [Text("The user asks for X.\nSo I")]
    events = parser.feed("answer.</think>\n\nHere is X.")
    assert events == [Retract("", "The user asks for X.\nSo I answer."), Text("Here is X.")]
    parser.finish()
    assert (parser.result.text, parser.result.reasoning) == ("Here is X.", "The user asks for X.\nSo I answer.")


def test_finish_twice_and_feed_after_finish() -> None:
    parser = ToolCallParser("mistral")
    parser.feed("hi [TOOL")
    assert parser.finish() == [Text(" [TOOL")]
    assert parser.finish() == []
    with pytest.raises(RuntimeError):
        parser.feed("more")


def test_unknown_format() -> None:
    with pytest.raises(ValueError):
        ToolCallParser("chatml")


# ---- detect_format ----

QWEN25 = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}# Tools\\n\\nYou may call one or more functions...<tools>"
    "{%- for tool in tools %}{{- tool | tojson }}{%- endfor %}</tools>\\n\\n"
    "For each function call, return a json object "
    'with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": '
    '<function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n{%- endif %}'
)
MISTRAL_NEMO = (
    "{%- for message in loop_messages %}{%- if message['role'] == 'user' %}{%- if tools is not none %}[AVAILABLE_TOOLS]"
    "{{- tools|tojson }}[/AVAILABLE_TOOLS]{%- endif %}[INST]{{- message['content'] }}[/INST]"
    "{%- elif message.tool_calls "
    "is defined %}{{- '[TOOL_CALLS][' }}{%- for tool_call in message.tool_calls %}{{- tool_call.function|tojson }}"
    "{%- endfor %}{{- ']' + eos_token }}{%- endif %}{%- endfor %}"
)
LLAMA31 = (
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{%- if builtin_tools is defined %}{{- 'Environment: ipython\\n' }}"
    "{%- endif %}{%- if tool_call.name in builtin_tools %}"
    "{{- '<|python_tag|>' + tool_call.name + '.call(' }}{%- else %}"
    "{{- '{\"name\": \"' + tool_call.name + '\", ' }}{{- '\"parameters\": ' }}"
    "{{- tool_call.arguments | tojson }}{%- endif %}"
)
LLAMA32 = (
    "{{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}{{- 'Respond in the format {\"name\": function name, "
    "\"parameters\": dictionary of argument name and its value}.' }}{{- '<|eot_id|>' }}"
)
SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\\nYou are "
    "a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + "
    "message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
)
LLAMA3_NO_TOOLS = (
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim }}"
)


@pytest.mark.parametrize(
    ("template", "fmt"),
    [
        (QWEN25, "hermes"),
        (MISTRAL_NEMO, "mistral"),
        (LLAMA31, "llama3"),
        (LLAMA32, "llama3"),
        (SMOLLM2, "generic"),
        (LLAMA3_NO_TOOLS, "generic"),
        (None, "generic"),
        ("", "generic"),
    ],
    ids=["qwen2.5", "mistral-nemo", "llama3.1", "llama3.2", "smollm2", "llama3-no-tools", "none", "empty"],
)
def test_detect_format(template: str | None, fmt: str) -> None:
    assert detect_format(template) == fmt


# ---- what a chat template is given (actors/model/backends/local.py) ----

# The tool parts of Mistral-Nemo's template, as the GGUF ships it: it refuses an id
# that is not 9 characters, in a call and in a result.
MISTRAL_NEMO_TOOLS = (
    "{%- for message in messages %}{%- if message['role'] == 'user' %}[INST]{{- message['content'] }}[/INST]"
    "{%- elif message['role'] == 'assistant' and message.tool_calls is defined and message.tool_calls %}"
    "{{- '[TOOL_CALLS][' }}{%- for tool_call in message.tool_calls %}{%- set out = tool_call.function|tojson %}"
    "{{- out[:-1] }}{%- if not tool_call.id is defined or tool_call.id|length != 9 %}"
    "{{- raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}{%- endif %}"
    "{{- ', \"id\": \"' + tool_call.id + '\"}' }}{%- if not loop.last %}{{- ', ' }}{%- else %}"
    "{{- ']' + eos_token }}{%- endif %}{%- endfor %}"
    "{%- elif message['role'] == 'assistant' %}{{- message['content'] + eos_token }}"
    "{%- elif message['role'] == 'tool' %}{{- '[TOOL_RESULTS]{\"content\": ' + message.content|string + ', ' }}"
    "{%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}"
    "{{- raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}{%- endif %}"
    "{{- '\"call_id\": \"' + message.tool_call_id + '\"}[/TOOL_RESULTS]' }}{%- endif %}{%- endfor %}"
)
QWEN25_CALLS = (
    "{%- for message in messages %}{%- if message.role == 'assistant' and message.tool_calls %}"
    "{%- for tool_call in message.tool_calls %}{%- set tool_call = tool_call.function %}"
    "<tool_call>\n{\"name\": \"{{ tool_call.name }}\", \"arguments\": {{ tool_call.arguments | tojson }}}\n</tool_call>"
    "{%- endfor %}{%- else %}{{ message.content }}{%- endif %}{%- endfor %}"
)


def _format(template: str, msgs: list[dict[str, Any]]) -> str:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template=template, eos_token="</s>", bos_token="<s>")(messages=msgs).prompt


def _history(call_id: str, arguments: str) -> tuple[dict[str, Any], ...]:
    return (
        {"role": "user", "content": "Say hi."},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "echo", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": call_id, "content": "hi"},
    )


@pytest.mark.parametrize("call_id", ["call_0", "call_1", "i_4f2a9c81d0e34b7a", "", "abcdefghi"])
def test_a_mistral_template_gets_9_character_ids_that_still_pair_call_and_result(call_id: str) -> None:
    from actors.model.backends.local import template_messages

    prompt = _format(MISTRAL_NEMO_TOOLS, template_messages(_history(call_id, '{"text": "hi"}'), (), "mistral"))
    (given,) = re.findall(r'"id": "([^"]*)"', prompt)
    (result_id,) = re.findall(r'"call_id": "([^"]*)"', prompt)
    assert re.fullmatch(r"[A-Za-z0-9]{9}", given) and given == result_id
    if call_id == "abcdefghi":
        assert given == call_id  # an id that conforms is kept
    # Other formats keep the ids as they are.
    (other,) = template_messages(_history(call_id, "{}"), (), "hermes")[1]["tool_calls"]
    assert other["id"] == call_id


def test_mistral_ids_of_two_calls_stay_apart() -> None:
    from actors.model.backends.local import template_call_id

    ids = {template_call_id(f"call_{i}", "mistral") for i in range(1000)}
    assert len(ids) == 1000
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)


@given(st.text(max_size=40))
def test_template_call_id_is_9_letters_or_digits_for_mistral_and_stable(call_id: str) -> None:
    from actors.model.backends.local import template_call_id

    given_id = template_call_id(call_id, "mistral")
    assert re.fullmatch(r"[A-Za-z0-9]{9}", given_id) and given_id == template_call_id(call_id, "mistral")
    assert template_call_id(call_id, "llama3") == call_id


@pytest.mark.parametrize(
    ("arguments", "written"),
    [('{"text": "hi"}', '{"text": "hi"}'), ('{"text": "unfinished', "{}"), ("[1, 2]", "{}"), ("", "{}")],
)
def test_a_template_writes_the_arguments_as_an_object(arguments: str, written: str) -> None:
    from actors.model.backends.local import template_messages

    prompt = _format(QWEN25_CALLS, template_messages(_history("call_0", arguments), (), "hermes"))
    assert f'"arguments": {written}}}' in prompt


def test_content_parts_reach_a_local_template_as_text() -> None:
    from actors.model.backends.local import IMAGE_LEFT_OUT, template_messages

    parts = [{"type": "text", "text": "What is this?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]
    (msg,) = template_messages(({"role": "user", "content": parts},), (), "hermes")
    assert msg == {"role": "user", "content": f"What is this?\n{IMAGE_LEFT_OUT}"}
    assert "base64" not in _format(SMOLLM2, [msg])
