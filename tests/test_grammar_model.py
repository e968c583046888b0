"""The grammar a call is held to on the bundled model (SmolLM2-135M via llama.cpp): for
random tool schemas, every call the model makes under it parses as strict JSON (no raw
control character in a string) and validates against the tool's schema: required keys,
types, enums and bounds."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import jsonschema
import pytest

from actors.model.backends.local import LocalBackend
from actors.model.turns import ToolSpec, TurnInput
from tests.test_model import model_path  # noqa: F401 (a fixture)

pytestmark = pytest.mark.model

SCHEMAS = 12
WORDS = ("path", "name", "count", "mode", "tags", "text", "force", "limit", "colour", "title")


def random_property(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("string", "bounded string", "integer", "boolean", "enum", "array"))
    if kind == "string":
        return {"type": "string"}
    if kind == "bounded string":
        low = rng.randrange(0, 4)
        return {"type": "string", "minLength": low, "maxLength": low + rng.randrange(1, 30)}
    if kind == "integer":
        low = rng.randrange(-50, 50)
        return {"type": "integer", "minimum": low, "maximum": low + rng.randrange(1, 200)}
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "enum":
        choices = ["red", "green", "blue", "fast", "slow", "all"]
        return {"type": "string", "enum": rng.sample(choices, rng.randrange(2, 5))}
    return {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": rng.randrange(1, 4)}


def random_schema(rng: random.Random) -> dict[str, Any]:
    names = rng.sample(WORDS, rng.randrange(1, 5))
    props = {n: random_property(rng) for n in names}
    required = [n for n in names if rng.random() < 0.7]
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


async def test_every_call_under_the_grammar_is_strict_json_of_its_schema(model_path):  # noqa: F811
    rng = random.Random(20261201)
    backend = await LocalBackend.load(model_path, n_ctx=2048)

    async def emit(piece):
        pass

    checked = 0
    try:
        for n in range(SCHEMAS):
            schema = random_schema(rng)
            tool = ToolSpec(f"tool_{n}", "Does the job with the arguments given.", schema)
            messages = ({"role": "user", "content": "Call the tool. Write a line break\nand a tab\tin any text."},)
            turn = TurnInput(messages, (tool,), max_tokens=160, temperature=1.3, tool_choice="required")
            result = await backend.generate(turn, emit, threading.Event())
            if result.finish_reason == "length":
                continue  # cut by max_tokens: not a finished call to judge
            assert result.finish_reason == "tool_calls", (schema, result)
            for call in result.tool_calls:
                assert call.name == tool.name
                args = json.loads(call.arguments)  # strict: a raw control character fails here
                jsonschema.validate(args, schema)
                checked += 1
    finally:
        await backend.aclose()
    assert checked >= SCHEMAS // 2, f"only {checked} calls finished within max_tokens"


async def test_a_string_in_a_call_never_holds_a_raw_control_character(model_path):  # noqa: F811
    """The model pushed hard towards a line break and a tab (their tokens' logits
    raised) still writes them, inside a call's strings, only as JSON's escapes."""
    import trio

    backend = await LocalBackend.load(model_path, n_ctx=2048)
    try:
        tool = ToolSpec("note", "Writes a note.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                     "required": ["text"]})
        grammar = backend.grammars.get((tool,), required=True)
        llm = backend._llm
        raw = [t for t in range(llm.n_vocab())
               if any(ch in llm.detokenize([t]).decode("utf-8", "ignore") for ch in "\n\t\r")]
        assert raw  # the vocabulary has such tokens: the bias below has something to push
        prompt = backend.render(({"role": "user", "content": "Write a note of several lines."},), (tool,))[0]

        def sample() -> str:
            out = llm.create_completion(prompt, max_tokens=60, temperature=0.8, grammar=grammar,
                                        logit_bias={t: 8.0 for t in raw})
            return str(out["choices"][0]["text"])

        for _ in range(3):
            text = await trio.to_thread.run_sync(sample)
            body = text[text.find('"text"'):]
            assert not any(ch in body for ch in "\n\t\r"), repr(text)
            if text.rstrip().endswith("}"):
                json.loads(text)  # strict
    finally:
        await backend.aclose()


async def test_a_call_to_avoid_is_never_made_again_under_the_grammar(model_path):  # noqa: F811
    """The last round's failed call, ruled out (TurnInput.avoid): the model's next call
    under the grammar is another one, still valid for the tool's schema. The todo list's
    empty list, which SmolLM2 in plan mode wrote over and over, is one of them."""
    from actors.model.backends.generic_grammar import excluding
    from actors.runs.agent.run_tools.todos_and_questions import TODO_SPEC

    rng = random.Random(20261202)
    backend = await LocalBackend.load(model_path, n_ctx=2048)

    async def emit(piece):
        pass

    cases: list[tuple[ToolSpec, dict[str, Any]]] = [(TODO_SPEC, {"todos": []})] * 3
    while len(cases) < 3 + SCHEMAS:
        schema = random_schema(rng)
        tool = ToolSpec(f"tool_{len(cases)}", "Does the job with the arguments given.", schema)
        args = {k: ([] if p.get("type") == "array" else True if p.get("type") == "boolean"
                    else p["enum"][0] if "enum" in p else "a" * p.get("minLength", 1) if p.get("type") == "string"
                    else p.get("minimum", 0)) for k, p in schema["properties"].items() if k in schema["required"]}
        if excluding(schema, args) is not None:
            cases.append((tool, args))
    checked = 0
    try:
        for tool, avoided in cases:
            messages = ({"role": "user", "content": f"Call {tool.name} with these arguments: {json.dumps(avoided)}"},)
            turn = TurnInput(messages, (tool,), max_tokens=160, temperature=1.0, tool_choice="required",
                             avoid=((tool.name, avoided),))
            result = await backend.generate(turn, emit, threading.Event())
            if result.finish_reason == "length":
                continue
            for call in result.tool_calls:
                args = json.loads(call.arguments)
                assert args != avoided, (tool.parameters, avoided)
                jsonschema.validate(args, tool.parameters)
                checked += 1
    finally:
        await backend.aclose()
    assert checked >= len(cases) // 2, f"only {checked} calls finished within max_tokens"


async def test_the_examples_own_values_never_reach_a_call(model_path):  # noqa: F811
    """With the worked examples shown, asked where something is (the nearest example
    searches for its own word, which SmolLM2 copied), the model's calls are none of the
    examples' own argument values (worked_examples.example_values,
    string_exclusion.with_banned); and a search ruled out is never made again while
    another of its length may be."""
    from actors.model.backends.worked_examples import EXAMPLE_VALUES, example_values

    backend = await LocalBackend.load(model_path, n_ctx=4096)
    grep = ToolSpec("grep_search", "Search the files for a text.", {
        "type": "object", "properties": {"pattern": {"type": "string"}, "include": {"type": "string"}},
        "required": ["pattern"]})
    run = ToolSpec("exec_shell_command", "Run a command.", {
        "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})

    async def emit(piece):
        pass

    made = 0
    try:
        for ask in ("Where is the function greet defined?", "Which file defines greet?",
                    "Where is greet defined? Search for it.", "Find the function greet.",
                    "Where is the function price defined?", "Which file has def main?"):
            messages = ({"role": "user", "content": ask},)
            # As a run leads the model (actors/runs/agent/small/leader.py): the backend decides none of it.
            turn = TurnInput(messages, (grep, run), max_tokens=60, temperature=1.0,
                             avoid=(("grep_search", {"pattern": "def greet"}),), examples=True, terse_tools=True,
                             banned=example_values(messages))
            result = await backend.generate(turn, emit, threading.Event())
            if result.finish_reason == "length":  # a call cut at max_tokens is no call (sampled: on
                continue  # another CPU, the same seed wrote a longer pattern)
            for call in result.tool_calls:
                args = json.loads(call.arguments)
                assert not any(v in EXAMPLE_VALUES for v in args.values()), (ask, args)
                assert args != {"pattern": "def greet"}
                made += 1
    finally:
        await backend.aclose()
    assert made >= 3, f"only {made} of the answers were calls"


async def test_a_path_that_must_exist_can_only_name_a_file_of_the_workspace(model_path, tmp_path):  # noqa: F811
    """read_file and edit_file under the grammar with the workspace's real names
    (TurnInput.names, from actors/runs/agent/real_names.py): asked for a file that is not there, or
    with a placeholder, the model can only name one that is; write_file, whose path
    is a new name, stays free; a failed read of one file rules that one out next."""
    from actors.runs.agent.real_names import call_names, workspace_files
    from actors.tools.files import EditFile, ReadFile, WriteFile

    for rel in ("config.py", "lib.py", "app.py", "docs/notes.md"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    files = workspace_files(tmp_path)
    assert files == ("app.py", "config.py", "lib.py", "docs/notes.md")
    tools = (ReadFile(), EditFile(), WriteFile())
    specs = tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
    names = call_names(tools, files)
    assert [(tool, arg) for tool, arg, _ in names] == [("read_file", "path"), ("edit_file", "path")]
    backend = await LocalBackend.load(model_path, n_ctx=2048)

    async def emit(piece):
        pass

    asks = ["Read the file data.txt.", "Read path.file please", "Show me src/main.rs", "Edit path_to_file to say hi",
            "Read the config", "Write hello.txt containing hi", "Open README.md"]
    seen: dict[str, set[str]] = {"read_file": set(), "edit_file": set(), "write_file": set()}
    try:
        for ask in asks:
            turn = TurnInput(({"role": "user", "content": ask},), specs, max_tokens=200, temperature=1.0,
                             tool_choice="required", names=names)
            result = await backend.generate(turn, emit, threading.Event())
            if result.finish_reason == "length":  # a write's content cut short: no whole call to read
                continue
            for call in result.tool_calls:
                path = json.loads(call.arguments).get("path")
                seen[call.name].add(path)
                if call.name in ("read_file", "edit_file"):
                    assert path in files, (ask, call.name, path)
        # A failed read of config.py is not made again: the call changes (another real
        # file, or a range of lines added), and still names a real file.
        turn = TurnInput(({"role": "user", "content": "Read config.py"},), specs[:1], max_tokens=200,
                         temperature=1.0, tool_choice="required", names=names,
                         avoid=(("read_file", {"path": "config.py"}),))
        again = 0
        for _ in range(6):
            result = await backend.generate(turn, emit, threading.Event())
            if result.finish_reason == "length":
                continue
            for call in result.tool_calls:
                again += 1
                args = json.loads(call.arguments)
                assert args != {"path": "config.py"} and args.get("path") in files, args
        assert again >= 2, "the read after a failure never finished within max_tokens"
    finally:
        await backend.aclose()
    assert seen["read_file"] or seen["edit_file"], "the model made no call of a file tool"


async def test_a_small_models_edit_can_only_replace_a_line_of_a_file_it_read(model_path, tmp_path):  # noqa: F811
    """edit_file under a small model's shape (actors/runs/agent/small/steps.py `edit_shape`,
    TurnInput.shapes): asked for any change, the model names the file it read and,
    as old_text, one of its lines; each such edit applies (the line is found once)."""
    from actors.runs.agent.small import steps as small_steps
    from actors.tools.files import EditFile
    from actors.tools.registry import ToolContext

    text = 'PORT = 8080\nHOST = "localhost"\nDEBUG = False\n'
    (tmp_path / "config.py").write_text(text)
    tool = EditFile()
    shape = small_steps.edit_shape([("config.py", text)])
    assert shape is not None
    asks = ["Change PORT to 9090", "Set DEBUG to True in settings.py", "Replace path_to_file with new_text",
            "Edit the file"]
    applied = 0
    async with bundled(model_path) as backend:
        made = await shaped_calls(backend, tool, shape, asks, max_tokens=200)
    for args in made:
        assert args["path"] == "config.py"
        (tmp_path / "config.py").write_text(text)
        ctx = ToolContext(conversation="c", workspace=tmp_path.resolve(), mode="full")
        await tool.run(args, ctx)  # every old_text is found once
        applied += 1
    assert applied >= 2, f"only {applied} edits finished within max_tokens"


async def test_a_small_models_edit_asked_to_set_a_value_writes_it(model_path, tmp_path):  # noqa: F811
    """edit_file held to write a value the request asks to be set (set_values.hold_values
    on steps.edit_shape): each edit the model makes, sampled, is a line that names what is
    set with one of the values written in, and applies (held to write a value anywhere
    in new_text, it wrote 200 tokens around one)."""
    from actors.runs.agent.small import set_values
    from actors.runs.agent.small import steps as small_steps
    from actors.tools.files import EditFile
    from actors.tools.registry import ToolContext

    text = "SIZE = 'small'\nSPEED = 30\nCOLOUR = 'grey'\n"
    asks = ["in tuning.py set SIZE to 'large' and SPEED to 45", "set SPEED to 45 and SIZE to 'large' in tuning.py",
            "tuning.py: SIZE to 'large', SPEED to 45"]
    tool = EditFile()
    made = []
    async with bundled(model_path) as backend:
        for ask in asks:
            values = small_steps.target_values(ask)
            assert values == ["large", "45"] or values == ["45", "large"], values
            shape = set_values.hold_values(small_steps.edit_shape([("tuning.py", text)]), {"tuning.py": text}, values,
                                           set_values.request_words(ask, values))
            made += [(args, values) for args in await shaped_calls(backend, tool, shape, [ask], max_tokens=200)]
    assert made, "no edit finished within max_tokens"
    for args, values in made:
        (edit,) = args["edits"]
        assert edit["new_text"] in set_values.set_lines(edit["old_text"], values), args
        assert edit["old_text"] in ("SIZE = 'small'", "SPEED = 30"), args
        (tmp_path / "tuning.py").write_text(text)
        await tool.run(args, ToolContext(conversation="c", workspace=tmp_path.resolve(), mode="full"))


async def test_tool_choice_none_in_the_generic_format_is_a_reply_with_the_tools_described(model_path):  # noqa: F811
    """A small model's answering round (tool_choice "none"): the prompt still lists the
    tools (its cached prefix is the rounds' before), and the answer is a reply, never a
    call, however much the request asks for one."""
    from actors.tools.files import ReadFile

    read = ReadFile()
    spec = ToolSpec(read.name, read.description, read.parameters)
    backend = await LocalBackend.load(model_path, n_ctx=2048)

    async def emit(piece):
        pass

    messages = ({"role": "user", "content": "Call read_file on app.py now."},)
    try:
        with_tools = backend.render(messages, (spec,))[0]
        answering = TurnInput(messages, (spec,), max_tokens=60, temperature=1.0, tool_choice="none")
        assert backend.described_tools(answering) == (spec,)
        assert "read_file" in with_tools
        for _ in range(3):
            result = await backend.generate(answering, emit, threading.Event())
            assert not result.tool_calls and result.finish_reason in ("stop", "length"), result
    finally:
        await backend.aclose()


async def test_the_worked_examples_come_with_a_context_that_has_room_for_them(model_path):  # noqa: F811
    """The bundled model is led (small/size.leads): its prompt shows the worked
    examples and its tools in one line each, as the leader dresses its turns, at a
    context of EXAMPLES_MIN_CTX tokens or more; at 2,048 the examples would crowd the
    conversation, and are left out; and on a round that must be a call. The backend
    shows what the turn asks and decides nothing itself."""
    from types import SimpleNamespace

    from actors.model.backends.worked_examples import EXAMPLES
    from actors.runs.agent.small.leader import EXAMPLES_MIN_CTX, Leader
    from actors.runs.agent.small.size import leads
    from actors.tools.files import ReadFile

    read = ReadFile()
    spec = ToolSpec(read.name, read.description, read.parameters)
    messages = ({"role": "system", "content": "You are an agent."}, {"role": "user", "content": "What is X in a.py?"})
    first_example = EXAMPLES[0].asked
    for ctx, shown in ((2048, False), (EXAMPLES_MIN_CTX, True)):
        backend = await LocalBackend.load(model_path, n_ctx=ctx)
        try:
            assert leads("local", backend)
            leader = Leader(None, SimpleNamespace(engine=SimpleNamespace(backend=backend)))  # type: ignore[arg-type]
            for choice, wanted in ((None, shown), ("required", False)):
                turn = leader.dressed(TurnInput(messages, (spec,), tool_choice=choice))
                prompt = backend.render(messages, (spec,), examples=turn.examples, terse_tools=turn.terse_tools)[0]
                assert (first_example in prompt) is wanted, (ctx, choice)
                assert "- read_file(path: string" in prompt  # one line each
            assert first_example not in backend.render(messages, (spec,))[0]  # not asked: none
        finally:
            await backend.aclose()


async def test_a_small_models_command_starts_with_a_program_it_is_offered(model_path):  # noqa: F811
    """exec_shell_command under a small model's shape (actors/runs/agent/small/commands.py):
    sampled freely, every command the model writes starts with one of the programs
    offered, with no option (none of the asks writes one), and is a valid call of the
    tool itself; with those commands ruled out (as a run rules out its failed ones), it
    writes none of them again."""
    from actors.runs.agent.small import commands
    from actors.tools.shell import ExecShellCommand

    tool = ExecShellCommand()
    offered = ["ls", "cat", "cp", "mv", "python3", "git"]
    shape = commands.command_shape(tool.parameters, offered)
    assert shape is not None
    asks = ["rename draft.txt to final.txt", "run count.py", "sudo make me a sandwich", "leave me alone",
            "make a backup copy of base.cfg"]
    async with bundled(model_path) as backend:
        made = [args["command"] for args in await shaped_calls(backend, tool, shape, asks, max_tokens=120)]
        assert all(command.split(" ")[0] in offered for command in made), made
        # None of the asks writes an option, so no word of a command is one.
        assert not any(w.startswith("-") for command in made for w in command.split(" ")[1:]), made
        assert len(made) >= 3, f"only {made} finished within max_tokens"
        # Greedy, the same ask writes the same command; with it ruled out (as a run rules
        # out its failed ones), another. (The command: greedy's other arguments, where two
        # are nearly as likely, differ between calls on some CPUs, the prompt read from the
        # cache in other batches.)
        compared = 0
        for ask in asks:
            first = await shaped_calls(backend, tool, shape, [ask], max_tokens=120, temperature=0.0)
            ruled = commands.command_shape(tool.parameters, offered, [c["command"] for c in first])
            assert ruled is not None
            other = await shaped_calls(backend, tool, ruled, [ask], max_tokens=120, temperature=0.0)
            if first and other:
                again = await shaped_calls(backend, tool, shape, [ask], max_tokens=120, temperature=0.0)
                assert [c["command"] for c in again] == [c["command"] for c in first]
                assert other[0]["command"] != first[0]["command"], (first, other)
                compared += 1
        assert compared >= 2, "too few greedy commands finished within max_tokens"


@asynccontextmanager
async def bundled(path: str) -> AsyncIterator[LocalBackend]:
    backend = await LocalBackend.load(path, n_ctx=2048)
    try:
        yield backend
    finally:
        await backend.aclose()


async def shaped_calls(backend: LocalBackend, tool: Any, shape: dict[str, Any], asks: list[str], *,
                       max_tokens: int, temperature: float = 1.0) -> list[dict[str, Any]]:
    """The calls of `tool` the model makes (sampled freely, unless `temperature` is 0:
    greedy) for each of `asks` under `shape` (TurnInput.shapes), one at most each; each
    checked to fit the shape and the tool's own parameters. An answer cut at max_tokens
    is left out."""
    spec = ToolSpec(tool.name, tool.description, tool.parameters)

    async def emit(piece):
        pass

    out = []
    for ask in asks:
        turn = TurnInput(({"role": "user", "content": ask},), (spec,), max_tokens=max_tokens, temperature=temperature,
                         tool_choice="required", shapes=((tool.name, shape),), parallel_calls=False)
        result = await backend.generate(turn, emit, threading.Event())
        if result.finish_reason == "length":
            continue
        for call in result.tool_calls:
            args = json.loads(call.arguments)
            jsonschema.validate(args, shape)
            jsonschema.validate(args, tool.parameters)  # still a valid call of the tool itself
            out.append(args)
    return out
