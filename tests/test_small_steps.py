"""A small local model led through a small job (actors/runs/agent/small/steps.py): the tools it
is offered and the arguments it is held to, the answer after a change, edit_file on
the lines of a file it read, write_file that may not replace a file unread, a command
that exited non-zero counted as failed; and the worked examples of its prompt
(actors/model/backends/worked_examples.py). The run-level tests use the scripted backend
made to say it is small; tests/test_grammar_model.py holds the real model to the
edit's shape."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors import notices
from actors.model.backends import worked_examples
from actors.model.backends.template_messages import template_messages
from actors.model.backends.worked_examples import EXAMPLE_VALUES, EXAMPLES, example_messages
from actors.model.turns import ToolSpec
from actors.runs.agent.ledger import ended_as
from actors.runs.agent.small import echo as small_echo
from actors.runs.agent.small import faults, own_tools, request_forms
from actors.runs.agent.small import guards as small_guards
from actors.runs.agent.small import steps as small_steps
from actors.runs.agent.small.leader import FAILS_TO_STOP
from actors.runs.agent.small.own_tools import SMALL_TODOS
from actors.runs.agent.small.run_record import avoided_edits
from actors.runs.agent.small.size import SMALL_MODEL_PARAMS, leads
from actors.tools.files import ReadFile
from tests.test_generic_grammar import fits
from tests.test_plan_mode import cards
from tests.test_small_set_values import fits as edit_fits
from tests.waiting import wait_state

SMALL = 135_000_000


async def small_project(d, tmp_path, files: dict[str, str], size: int = SMALL):
    d.backend.n_params = size
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    return folder, conv


async def runs_first(d, conv, asked: str, command: str, told: str) -> None:
    """`asked` sent to a led conversation whose scripted first round runs `command` (the
    whole command computed for it) and whose answer is `told`; the first round held to
    the command alone."""
    d.backend.push(call("exec_shell_command", command=command), {"text": told})
    await conv.send_message(asked)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}


def left_open(turn) -> set[str]:
    """The tools a led round may call: those offered, less those it avoids whole."""
    return {t.name for t in turn.tools} - {name for name, args in turn.avoid if args is None}


def call(name: str, **args) -> dict:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def offered(turn) -> dict[str, dict]:
    return {t.name: t.parameters for t in turn.tools}


# ---- the pieces ----


def test_the_step_after_a_round():
    assert small_steps.next_step([("done", False)]) == "answer"  # a change ran
    assert small_steps.next_step([("done", True), ("done", False)]) == "answer"
    assert small_steps.next_step([("done", True)]) == "any"  # reads alone: free
    assert small_steps.next_step([("done", False), ("error", False)]) == "any"  # a failure: free
    assert small_steps.next_step([("denied", False)]) == "any"
    assert small_steps.next_step([]) == "any"


def test_a_command_that_exited_non_zero_failed():
    assert ended_as("exec_shell_command", "done", "oops\n\n[exit code: 127]") == "error"
    assert ended_as("exec_shell_command", "done", "hi\n[exit code: 0]") == "done"
    assert ended_as("exec_shell_command", "done", "[exit code: 2]") == "done"  # not the tail the tool writes
    assert ended_as("exec_shell_command", "done", "x\n[exit code: -9]") == "error"
    # Another tool's result that happens to end so (a file's text) is its own.
    assert ended_as("read_file", "done", "log\n[exit code: 1]") == "done"
    assert ended_as("exec_shell_command", "denied", "x\n[exit code: 1]") == "denied"


def test_a_small_model_is_told_of_required_arguments_and_include_only():
    read = ReadFile()
    spec = small_steps.small_parameters(ToolSpec(read.name, read.description, read.parameters))
    assert list(spec.parameters["properties"]) == ["path"] and spec.parameters["required"] == ["path"]
    glob = ToolSpec("file_glob_search", "", {"type": "object", "properties": {
        "path": {"type": "string"}, "include": {"type": "string"}, "limit": {"type": "integer"}}, "required": []})
    assert list(small_steps.small_parameters(glob).parameters["properties"]) == ["include"]
    bare = ToolSpec("get_info", "", {"type": "object", "properties": {}})
    assert small_steps.small_parameters(bare) is bare


@given(st.lists(st.text(alphabet="ab =1\t", max_size=8), max_size=12))
def test_every_old_text_offered_occurs_once_in_its_file(lines):
    """The edit's shape offers as old_text only what edit_file can apply: text that
    occurs exactly once in the file, not blank, not too long."""
    text = "\n".join(lines) + "\n"
    shape = small_steps.edit_shape([("f.txt", text)])
    if shape is None:
        assert not any(line.strip() and text.count(line) == 1 for line in lines)
        return
    offered_lines = shape["properties"]["edits"]["items"]["properties"]["old_text"]["enum"]
    assert offered_lines and all(text.count(line) == 1 and line.strip() for line in offered_lines)
    assert shape["properties"]["path"] == {"const": "f.txt"}
    # One edit a call: two could name one line, which edit_file refuses as overlapping.
    assert shape["properties"]["edits"]["maxItems"] == 1


def test_the_edit_shape_of_several_files_is_one_branch_each():
    shape = small_steps.edit_shape([("a.py", "X = 1\n"), ("b.py", "\n\n"), ("c.py", "Y = 2\nY = 2\nZ = 3\n")])
    assert [b["properties"]["path"]["const"] for b in shape["oneOf"]] == ["a.py", "c.py"]
    assert shape["oneOf"][1]["properties"]["edits"]["items"]["properties"]["old_text"]["enum"] == ["Z = 3"]
    # new_text is not a line of the file (an edit that changes nothing).
    new_text = shape["oneOf"][1]["properties"]["edits"]["items"]["properties"]["new_text"]
    assert not fits(new_text, "Z = 3") and fits(new_text, "Z = 4")
    assert small_steps.edit_shape([]) is None


def test_the_files_seen_are_the_latest_first():
    cards_ = [("read_file", "done", {"path": "./a.py"}), ("write_file", "done", {"path": "b.txt"}),
              ("read_file", "error", {"path": "gone.py"}), ("grep_search", "done", {"pattern": "x"}),
              ("edit_file", "done", {"path": "a.py"})]
    assert small_steps.seen_files(cards_) == ["a.py", "b.txt"]


# ---- the examples ----


EVERY_TOOL = {tool for e in EXAMPLES for tool, _, _ in e.calls}


def test_the_nearest_example_comes_last_and_only_offered_tools_are_shown():
    """Nearest by the request's kind, then by the content words it shares."""
    for request, first in (("Which module holds the parser?", "grep_search"),
                           ("What does src/main.rs print first?", "read_file"),
                           ("Write notes/todo.md with three items", "write_file"),
                           ("Set the timeout in server.toml to 30", "edit_file"),
                           ("please run make test and report", "exec_shell_command"),
                           ("rename aa.txt to bb.txt", "exec_shell_command"),
                           ("Have a helper find the parser", "task"),
                           ("Use the task tool to find the parser", "task")):
        msgs = example_messages(EVERY_TOOL, request)
        assert len([m for m in msgs if m["role"] == "user"]) == len(EXAMPLES)
        assert json.loads(msgs[-3]["content"])["tool_calls"][0]["name"] == first, request
        assert worked_examples.nearest(EVERY_TOOL, request).calls[0][0] == first, request
    # Of one kind, the one that shares more content words (not function words, not extensions).
    assert worked_examples.content_words("What is the value in the telescopes.csv?") == {"value", "teles"}
    # Without write tools no example that writes; each call and reply is the generic format's JSON.
    reading = example_messages({"read_file", "grep_search"}, "x")
    assert all("edit_file" not in m["content"] and "write_file" not in m["content"] for m in reading)
    for m in reading:
        if m["role"] == "assistant":
            assert set(json.loads(m["content"])) <= {"tool_calls", "response"}


def test_each_example_is_of_the_kind_it_stands_for():
    assert {e.kind for e in EXAMPLES} == {"read", "new", "change", "run", "files", "helper", "search"}
    for e in EXAMPLES:
        assert worked_examples.request_kind(e.asked) == e.kind, e.asked


def test_a_kind_is_the_requests_form_not_its_words():
    kind = worked_examples.request_kind
    assert kind("Where is the cache cleared?") == "search" and kind("what is in notes.md") == "read"
    assert kind("Could you run the tests") == "run" and kind("move ab.txt into old/") == "files"
    assert kind("remove the third line of a.txt") == "change" and kind("create b/c.md with a title") == "new"
    assert kind("Rename the method draw to paint") == "change"
    # A question word with its verb joined on is still a question (SmolLM2 edited, asked where).
    assert kind("where's blink defined") == "search" and kind("what's at the end of b.log") == "read"
    assert kind("can you tell me how many rows b.csv has") == "read" and kind("do you know where x is") == "search"
    # Files by their kind, or by a word for them after the verb: files, and `make` of prose.
    assert kind("delete all the .tmp files, some are in sub/ too") == "files" and kind("make test") == "run"
    assert kind("the .txt files in notes/ should be .md, rename them") == "files"
    assert kind("make a backup copy of a.cfg") == "files" and kind("remove the empty folders") == "files"
    assert kind("a.cfg has a debug line, remove it") == "change"  # `it` stands for no file here
    # `go` of prose is no program: "go through …" (SmolLM2 ran `python3 log.txt` for one); `go test` is.
    assert kind("go through the parser code and list every TODO in todos.md") == "change"
    assert kind("pls go over b.py and fix the typos") == "change" and kind("go test ./...") == "run"
    assert kind("go run main.go") == "run" and kind("go build") == "run"
    assert worked_examples.file_verbs("copy a.txt, then delete b.txt; rename the function f") == ["copy", "delete"]


def test_no_example_names_an_evaluation_file_or_a_prompt_word():
    """The examples are about a project no evaluation job resembles: none of their files
    is a fixture's, and their requests and answers use no content word of an evaluation
    prompt (the first eighteen and the development half, read here, at test time)."""
    from ops.eval.more_tasks import DEV
    from ops.eval.tasks import TASKS

    tasks = TASKS + DEV

    def words_of(text: str) -> set[str]:  # a file's extension is not a word
        bare = re.sub(r"\.[a-z][a-z0-9]{0,7}\b", " ", text.lower())
        return {w.strip("'-") for w in re.findall(r"[a-z0-9_'-]+", bare)}

    prompt_words = {w for t in tasks for w in words_of(t.prompt)}
    prompt_words -= worked_examples.FUNCTION_WORDS | {""}
    shown = json.dumps([[e.asked, e.calls, e.answer] for e in EXAMPLES], ensure_ascii=False)
    for rel in {rel for task in tasks for rel in task.files}:
        for part in {rel, rel.rsplit("/", 1)[-1]} - {"__init__.py"}:
            assert not re.search(rf"(?<![\w/.]){re.escape(part)}(?!\w)", shown), part
    for e in EXAMPLES:
        words = words_of(f"{e.asked} {e.answer}")
        assert not words & prompt_words, (e.asked, words & prompt_words)


def test_the_examples_follow_the_system_message_and_keep_the_conversation_whole():
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),)
    messages = ({"role": "system", "content": "You are an agent."}, {"role": "user", "content": "What is X in a.py?"})
    plain = template_messages(messages, tools, "generic")
    shown = template_messages(messages, tools, "generic", examples=True)
    assert shown[0] == plain[0] and shown[-1] == plain[-1] and len(shown) == len(plain) + 4
    assert shown[1]["content"] != messages[1]["content"] and shown[1]["content"] in {e.asked for e in EXAMPLES}


# ---- the run ----


async def test_after_a_change_the_next_round_is_the_answer(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"})
    d.backend.push(call("write_file", path="hello.txt", content="hi"), {"text": "Created hello.txt."})
    await conv.send_message("create hello.txt containing hi")
    await wait_state(conv, "idle", "error")
    # The first round calls the nearest example's tool (write_file, for a new file).
    assert [t.tool_choice for t in d.backend.turns] == ["required", "none"]
    assert (folder / "hello.txt").read_text() == "hi" and conv.info.end_reason == "answered"
    # Its path is the new file, its text the one the request gives (set_values.given_content).
    write = dict(d.backend.turns[0].shapes)["write_file"]["properties"]
    assert write["path"] == {"enum": ["hello.txt"]} and write["content"] == {"enum": ["hi\n"]}


async def test_a_new_file_of_every_line_a_search_found_is_held_to_them(real_tools, tmp_path):
    """Asked to put every one of something into a new file, the run searches for it, and
    the write's text is held to what the search found, a line each with its file and
    line (SmolLM2 looped writing it, then wrote the file empty)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"b.py": "x = 1\n# TODO: cache it\n",
                                                     "lib/c.py": "def f():\n    pass  # TODO: name\n"})
    listing = "b.py:2: # TODO: cache it\nlib/c.py:2: pass  # TODO: name\n"
    d.backend.push(call("grep_search", pattern="TODO"), call("write_file", path="todos.md", content=listing),
                   {"text": "todos.md lists the two TODOs."})
    await conv.send_message("go through the code and put every TODO into a new todos.md, with the file and line")
    await wait_state(conv, "idle", "error")
    search, write = d.backend.turns[0], d.backend.turns[1]
    assert dict(search.shapes)["grep_search"]["properties"]["pattern"] == {"enum": ["TODO"]}
    assert dict(write.shapes)["write_file"]["properties"]["content"] == {"enum": [listing]}
    assert (folder / "todos.md").read_text() == listing and conv.info.end_reason == "answered"


async def test_after_reads_or_a_failure_the_model_may_call_again(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"})
    d.backend.push(call("read_file", path="app.py"), call("exec_shell_command", command="false"),
                   call("exec_shell_command", command="true"), {"text": "Done."})
    await conv.send_message("look and run")
    await wait_state(conv, "idle", "error")
    # The first round is a search (a change that names no file: tests/test_small_lookup.py).
    assert [t.tool_choice for t in d.backend.turns] == ["required", None, None, "none"]


async def test_a_larger_or_unknown_model_is_not_led(real_tools, tmp_path):
    for size in (SMALL_MODEL_PARAMS, 0):
        d = real_tools
        d.backend.turns.clear()
        _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"}, size=size)
        d.backend.push(call("write_file", path=f"n{size}.txt", content="hi"), {"text": "Done."})
        await conv.send_message("write")
        await wait_state(conv, "idle", "error")
        assert [t.tool_choice for t in d.backend.turns] == [None, None], size
        assert "todo_write" in offered(d.backend.turns[0]) and not d.backend.turns[0].shapes
        assert "start_line" in offered(d.backend.turns[0])["read_file"]["properties"]


async def test_a_local_model_over_a_billion_parameters_is_not_led_at_all(real_tools, tmp_path):
    """One place decides that a model is led (small/size.leads), and the backend is
    told per turn what to show: the bundled model's size gets the worked examples, the
    examples' made-up names banned, its tools tersely and one call a round; a local
    model the backend says is over 10^9 parameters gets none of it, in any round, and
    several calls a round."""
    d = real_tools
    for size, led in ((SMALL, True), (2_000_000_000, False)):
        d.backend.turns.clear()
        (tmp_path / str(size)).mkdir()
        _, conv = await small_project(d, tmp_path / str(size), {"app.py": "x = 1\n"}, size=size)
        d.backend.push(call("read_file", path="app.py"), call("write_file", path="new.txt", content="a"),
                       {"text": "Done."})
        await conv.send_message("read app.py, then write new.txt")
        await wait_state(conv, "idle", "error")
        turns = d.backend.turns
        assert len(turns) == 3, size
        for turn in turns:
            assert turn.parallel_calls is not led, size
            assert turn.examples is led and turn.terse_tools is led, size
            assert turn.banned == (EXAMPLE_VALUES if led else ()), size
        # The round after the change: the answer, greedy, for the led model only.
        assert (turns[2].tool_choice, turns[2].temperature) == (("none", 0.0) if led else (None, None)), size


async def test_with_leading_off_even_a_small_model_works_on_its_own(unled_tools, tmp_path):
    """serve --leading off: the bundled model's size gets none of the leading (no worked
    examples, no banned values, several calls a round, no answer forced after a change),
    which is what lets a set of jobs be run led and unled."""
    d = unled_tools
    _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"})
    d.backend.push(call("read_file", path="app.py"), call("write_file", path="new.txt", content="a"),
                   {"text": "Done."})
    await conv.send_message("read app.py, then write new.txt")
    await wait_state(conv, "idle", "error")
    turns = d.backend.turns
    assert len(turns) == 3
    for turn in turns:
        assert turn.parallel_calls and not turn.examples and not turn.terse_tools and turn.banned == ()
        assert (turn.tool_choice, turn.temperature) == (None, None)
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "Done."


def test_only_a_small_local_model_is_led():
    from types import SimpleNamespace

    for route, n_params, led in (("local", SMALL, True), ("local", SMALL_MODEL_PARAMS, False), ("local", 0, False),
                                 ("local", 2_000_000_000, False), ("openrouter", SMALL, False)):
        assert leads(route, SimpleNamespace(n_params=n_params)) is led, (route, n_params)
    assert not leads("local", None)  # no model: nothing to lead


async def test_a_small_model_is_offered_a_helper_only_where_one_is_asked_for(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"})
    for asked, helper in (("have a helper look at app.py", True), ("use the task tool to read app.py", True),
                          ("the task is to tidy app.py", False)):
        d.backend.push({"text": "Hi."})
        await conv.send_message(asked)
        await wait_state(conv, "idle", "error")
        assert ("task" in offered(d.backend.turns[-1])) is helper, asked
    assert own_tools.asks_helper("send a subagent to find the parser")
    assert not own_tools.asks_helper("list the tasks in todo.md")


async def test_a_small_model_is_offered_the_workspace_tools_with_their_main_arguments(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"})
    d.backend.push({"text": "Hi."})
    await conv.send_message("hello")
    await wait_state(conv, "idle", "error")
    tools = offered(d.backend.turns[0])
    assert not {"todo_write", "ask_user_question", "enter_plan_mode", "use_skill"} & set(tools)
    assert {"read_file", "write_file", "exec_shell_command"} <= set(tools)
    assert "task" not in tools  # no helper asked for
    assert list(tools["read_file"]["properties"]) == ["path"]
    assert list(tools["exec_shell_command"]["properties"]) == ["command"]


def test_a_dotted_name_in_an_error_is_no_file():
    """An error's dotted name (a module, then its class) names no file, in the request
    or an answer; a file's name ending a sentence, or with two extensions, is one."""
    assert small_steps.file_names("it crashes: json.decoder.JSONDecodeError: Expecting value") == []
    assert small_steps.file_names("urllib.request.HTTPError 404 from fetch.py") == ["fetch.py"]
    assert small_steps.file_names("pack it as out.tar.gz, then look at notes.txt.") == ["out.tar.gz", "notes.txt"]
    assert worked_examples.FILE_IN_TEXT.findall("raised json.decoder.JSONDecodeError in load.py") == ["load.py"]
    fault = small_steps.find_fault("It raises json.decoder.JSONDecodeError.", exists=lambda _: False, changed=False)
    assert fault is None


async def test_edit_file_names_only_a_file_read_and_its_lines(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\nHOST = 'x'\n", "lib.py": "y = 2\n"})
    edit = call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}])
    d.backend.push(call("read_file", path="config.py"), edit, {"text": "PORT is 9090 now."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    first, second, third = d.backend.turns
    # Before any read, edit_file is left out (the first round searches instead); after
    # the read of config.py, it may name config.py only, and an old_text of its lines:
    # here the line that names what is set, with the value asked for written in (set_values).
    assert ("edit_file", None) in first.avoid and [tool for tool, _ in first.shapes] == ["grep_search"]
    shape = dict(second.shapes)["edit_file"]  # and the command's (commands.py)
    assert shape["properties"]["path"] == {"const": "config.py"}
    assert shape["properties"]["edits"]["items"]["properties"] == {"old_text": {"const": "PORT = 8080"},
                                                                   "new_text": {"enum": ["PORT = 9090"]}}
    assert (folder / "config.py").read_text() == "PORT = 9090\nHOST = 'x'\n"
    assert third.tool_choice == "none"


async def test_write_file_may_replace_only_a_file_the_conversation_wrote(real_tools, tmp_path):
    """A small model's write_file over the person's file is refused, read or not, and
    the next round may not write at all; its own new file it may write again."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("write_file", path="config.py", content="10000"), call("read_file", path="config.py"),
                   call("write_file", path="./config.py", content="ready"),
                   call("write_file", path="new.txt", content="a"), call("write_file", path="new.txt", content="b"),
                   {"text": "Wrote new.txt."})
    await conv.send_message("rewrite config.py, or else write new.txt")
    await wait_state(conv, "idle", "error")
    states = [(c.tool, c.state) for c in cards(conv)]
    assert states == [("write_file", "error"), ("read_file", "done"), ("write_file", "error"),
                      ("write_file", "done"), ("write_file", "done")]
    assert "change it with edit_file" in cards(conv)[0].result
    assert (folder / "config.py").read_text() == "PORT = 8080\n" and (folder / "new.txt").read_text() == "b"
    turns = d.backend.turns
    assert ("write_file", None) in turns[1].avoid and ("write_file", None) in turns[3].avoid
    assert ("write_file", None) not in turns[2].avoid


async def test_a_file_the_conversation_only_edited_is_not_written_over(real_tools, tmp_path):
    """An edit does not make the person's file the model's: after editing a file of
    constants, SmolLM2 wrote it over with a file's name. Its write over the file is
    refused; a file it made it may still write again, after an edit too."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"limits.py": "LOW = 1\nHIGH = 9\n"})
    d.backend.push(
        call("read_file", path="limits.py"),
        call("edit_file", path="limits.py", edits=[{"old_text": "LOW = 1", "new_text": "LOW = 0"}]),
        call("write_file", path="limits.py", content="high.py"),
        call("write_file", path="mine.txt", content="a"),
        call("edit_file", path="mine.txt", edits=[{"old_text": "a", "new_text": "b"}]),
        call("write_file", path="mine.txt", content="c"),
        {"text": "Done."})
    await conv.send_message("in limits.py set LOW to 0, and keep a note in mine.txt")
    await wait_state(conv, "idle", "error")
    states = [(c.tool, c.state) for c in cards(conv)]
    assert ("write_file", "error") in states
    refused = next(c for c in cards(conv) if c.tool == "write_file" and c.state == "error")
    assert refused.args["path"] == "limits.py" and "change it with edit_file" in refused.result
    assert (folder / "limits.py").read_text() == "LOW = 0\nHIGH = 9\n"


def test_a_write_made_its_file_new_only_when_its_diff_starts_from_nothing():
    created = small_guards.created_files([
        ("write_file", "done", {"path": "./new.txt"}, "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+a\n"),
        ("write_file", "done", {"path": "old.txt"}, "--- a/old.txt\n+++ b/old.txt\n@@ -1 +1 @@\n-x\n+y\n"),
        ("edit_file", "done", {"path": "e.txt"}, "--- a/e.txt\n+++ b/e.txt\n@@ -0,0 +1 @@\n+a\n"),
        ("write_file", "error", {"path": "f.txt"}, None),
    ])
    assert created == {"new.txt"}


async def test_a_failed_command_is_not_run_again_until_something_changes(real_tools, tmp_path):
    """SmolLM2 ran `greet` 29 times, each exiting 127: a command that exited non-zero
    is ruled out of the next rounds like a read already made, until a change runs."""
    d = real_tools
    d.backend.n_params = SMALL_MODEL_PARAMS  # any local model: the grammar's rule, not the small model's
    folder = tmp_path / "proj"
    folder.mkdir()
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.push(call("exec_shell_command", command="greet"), call("write_file", path="greet", content="x"),
                   {"text": "Done."})
    await conv.send_message("greet")
    await wait_state(conv, "idle", "error")
    failed = ("exec_shell_command", {"command": "greet"})
    assert failed in d.backend.turns[1].avoid and failed not in d.backend.turns[2].avoid


async def test_the_same_command_failing_the_same_way_three_times_ends_the_run(real_tools, tmp_path):
    """A provider's model is not held by a grammar: the streak of identical failures
    counts a command that exited non-zero."""
    d = real_tools
    folder = tmp_path / "proj"
    folder.mkdir()
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    d.backend.push(*[call("exec_shell_command", command="exit 3")] * 3, {"text": "never"})
    await conv.send_message("run it")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "stuck" and len(cards(conv)) == 3


def test_an_answer_is_checked_against_the_files_and_the_changes_made():
    there = {"config.py", "lib.py", "src/app.ts"}.__contains__
    fault = small_steps.answer_fault
    assert "greet.py, which is not a file" in fault("greet is defined in greet.py (line 1).", exists=there,
                                                    changed=False)
    assert fault("greet is defined in lib.py and src/app.ts.", exists=there, changed=False) is None
    assert fault("greet is defined in ./lib.py.", exists=there, changed=False) is None
    assert "./greet.py, which is not a file" in fault("It is in ./greet.py.", exists=there, changed=False)
    assert "no change was made" in fault("PORT is now 9090.", exists=there, changed=False)
    assert "no change was made" in fault("I have updated config.py.", exists=there, changed=False)
    assert fault("PORT is now 9090.", exists=there, changed=True) is None
    # An answer that begins with what it did, as the files example's does, after a command that failed.
    for done in ("Removed: rm lib.py", "Moved: mv lib.py old/ exited 0.", "Sorted lib.py"):
        assert "no change was made" in fault(done, exists=there, changed=False), done
    assert fault("Removed nothing: lib.py was not there.", exists=there, changed=False) is None
    # The answer to a question claims no change, whatever its verbs; a file must still be there.
    assert fault("greet has been added to lib.py.", exists=there, changed=False, asked="Which file defines greet?") \
        is None
    assert "not a file" in fault("It has been added to xy.py.", exists=there, changed=False, asked="Which file? ")
    for fine in ("PORT is 8080.", "It printed: serving on localhost:8080", "Python 3.11, e.g. here",
                 "See example.com", "Version 1.2.3"):
        assert fault(fine, exists=there, changed=False) is None, fine


async def test_an_answer_the_record_contradicts_is_sent_back_once(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("read_file", path="config.py"), {"text": "PORT is now 9090."},
                   {"text": "PORT is now 9090, I promise."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    told = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert len(told) == 1 and "no change was made" in told[0].text
    assert told[0].text in d.backend.turns[2].messages[-1]["content"]  # the model reads it next
    # The second answer at fault too is not the person's: they read that the model could not do it.
    assert len(d.backend.turns) == 3 and conv.info.end_reason == "could_not"
    false = [i for i in conv.items if i.kind == "assistant" and i.not_answer]
    assert [i.text for i in false] == ["PORT is now 9090.", "PORT is now 9090, I promise."]
    last = conv.items[-1]
    assert last.kind == "notice" and last.end_reason == "could_not" and not last.for_model
    assert last.text == faults.could_not(faults.Fault(claim="PORT is now 9090, I promise"))
    assert "no file changed" in last.text and "larger model (the models page)" in last.text


async def test_an_answer_that_stands_after_it_was_sent_back_is_the_answer(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("read_file", path="config.py"), {"text": "It is in greet.py."},
                   {"text": "PORT is 8080, in config.py."})
    await conv.send_message("where is PORT set")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "PORT is 8080, in config.py."
    assert [i.text for i in conv.items if i.not_answer] == ["It is in greet.py."]  # the one sent back


async def test_a_led_answer_is_shown_only_once_its_check_settles(real_tools, tmp_path):
    """Every published version of a led model's answer is marked `checking` until the
    check settles: the person's screen never holds a false answer's words as the
    answer, not even while it streams; the answer that stands loses the mark; a model
    that is not led is never marked."""
    from actors.bus import Event
    from tests.waiting import drained

    d = real_tools
    _, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("read_file", path="config.py"), {"text": "It is in greet.py."},
                   {"text": "PORT is 8080, in config.py."})
    with d.bus.subscribe() as sub:
        await conv.send_message("where is PORT set")
        await wait_state(conv, "idle", "error")
        shown = [e.data["item"] for e in drained(sub)
                 if isinstance(e, Event) and e.name == "item" and e.data["item"]["kind"] == "assistant"]
    final = {i.id: i for i in conv.items}
    false_id = next(i.id for i in conv.items if i.not_answer)
    for item in shown:
        if item["id"] == false_id and item.get("text"):
            assert item.get("checking") or item.get("not_answer"), item  # never shown bare
    assert any(i.get("checking") for i in shown if i["id"] == final[conv.items[-1].id].id)  # held, then shown
    assert not any(i.checking for i in conv.items), "a mark outlived its check"
    # The model that is not led streams its answer as it comes.
    big = tmp_path / "big"
    big.mkdir()
    _, conv2 = await small_project(d, big, {"config.py": "PORT = 8080\n"}, size=8_000_000_000)
    d.backend.push({"text": "It is in config.py."})
    with d.bus.subscribe() as sub:
        await conv2.send_message("where is PORT set")
        await wait_state(conv2, "idle", "error")
        shown = [e.data["item"] for e in drained(sub)
                 if isinstance(e, Event) and e.name == "item" and e.data["item"]["kind"] == "assistant"]
    assert shown and not any(i.get("checking") for i in shown)


async def test_a_file_that_is_not_there_named_twice_is_not_the_answer(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push({"text": "It is in greet.py."}, {"text": "Yes, greet.py line 1."})
    await conv.send_message("where is greet defined")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "could_not"
    assert conv.items[-1].text == faults.could_not(faults.Fault(file="greet.py"))
    assert "greet.py, which is not a file" in conv.items[-1].text


def test_a_file_named_as_an_edits_diff_names_it_is_there():
    there = {"config.py", "a/b.py"}.__contains__
    for text in ("config.py:10: from a/config.py", "b/config.py now says 9090", "see a/b.py"):
        assert small_steps.find_fault(text, exists=there, changed=True) is None, text
    assert small_steps.find_fault("see b/app.py", exists=there, changed=True) == faults.Fault(file="b/app.py")


def test_what_the_person_reads_names_the_claim_in_its_own_sentence():
    there = {"config.py"}.__contains__
    fault = small_steps.find_fault("I read it. PORT is now 9090 in config.py! Done", exists=there, changed=False)
    assert fault == faults.Fault(claim="PORT is now 9090 in config.py")
    long = small_steps.find_fault("PORT is now " + "9" * 200, exists=there, changed=False)
    assert long is not None and long.claim is not None and len(long.claim) == small_steps.CLAIM_CHARS
    assert small_steps.find_fault("PORT is now 9090.", exists=there, changed=True) is None


def test_an_answer_to_a_change_that_only_repeats_the_tools_is_at_fault_when_nothing_changed():
    """Asked for a change when none ran, an answer with no word of its own (a search's
    line, a command's error) is at fault; one with words of its own, one after a change,
    an answer to a question, or a request that is no change, is not."""
    there = {"notes/a.txt"}.__contains__
    grep = "notes/a.txt:1:Sunday 10:00 full\n\n---\nTotal matches: 1\n"
    fault = small_steps.find_fault("notes/a.txt:1:Sunday 10:00 full", exists=there, changed=False,
                                   asked="make these unix line endings", change_asked=True, printed=grep)
    assert fault == faults.Fault(parroted="notes/a.txt:1:Sunday 10:00 full")
    error = "git: 'status.x-1.2' is not a git command. See 'git --help'.\n\n[exit code: 1]"
    assert small_steps.find_fault("git: x-1.2 is not a git command", exists=there, changed=False,
                                  change_asked=True, printed=error) is not None
    for text, changed, change_asked in (("notes/a.txt:1:Sunday 10:00 full", True, True),
                                        ("notes/a.txt:1:Sunday 10:00 full", False, False),
                                        ("notes/a.txt has nothing to convert: it ends lines with LF", False, True),
                                        ("", False, True)):
        assert small_steps.find_fault(text, exists=there, changed=changed, change_asked=change_asked,
                                      printed=grep) is None, text
    told = small_steps.answer_fault("notes/a.txt", exists=there, changed=False, change_asked=True, printed=grep)
    assert told == faults.PARROTED
    assert faults.fault_for_person(told) == notices.ANSWER_PARROTED
    assert faults.could_not(fault).startswith("The model could not do this: it changed nothing, and its answer "
                                                  "only repeated what a tool printed (\u201cnotes/a.txt:1:Sunday")


def test_any_answer_to_a_change_when_nothing_changed_is_at_fault_unless_it_says_why_not():
    """Asked for a change (no question) when none ran, an answer in words of its own is
    at fault too (`idle`); one that says it cannot, that it is so already or that there
    is nothing to change, or asks the person back, stands; so does any answer after a
    change, to a question (with or without its question mark), or to a request that is
    no change."""
    there = {"notes/a.txt"}.__contains__
    for text in ("No matches found", "The task is to make a new file with the lines", "Sorted them by year."):
        fault = small_steps.find_fault(text, exists=there, changed=False, asked="put the logs in a folder per year",
                                       change_asked=True)
        assert fault is not None and (fault.idle or fault.claim), text
    assert small_steps.find_fault("No matches found", exists=there, changed=False, asked="tidy the logs",
                                  change_asked=True) == faults.Fault(idle="No matches found")
    for text in ("I cannot tell which files are logs.", "They are in folders per year already.",
                 "There is nothing to change: every log is dated.", "Which folder holds the logs?",
                 "I don't know where the logs are"):
        assert small_steps.find_fault(text, exists=there, changed=False, asked="tidy the logs",
                                      change_asked=True) is None, text
    for asked, changed, change_asked in (("tidy the logs", True, True), ("tidy the logs", False, False),
                                         ("what unit is the timeout in", False, True),
                                         ("does the timeout use seconds", False, True),
                                         ("tidy the logs?", False, True)):
        assert small_steps.find_fault("No matches found", exists=there, changed=changed, asked=asked,
                                      change_asked=change_asked) is None, asked
    told = small_steps.answer_fault("No matches found", exists=there, changed=False, asked="tidy the logs",
                                    change_asked=True)
    assert told == faults.IDLE
    assert faults.fault_for_person(told) == notices.ANSWER_IDLE
    assert faults.could_not(faults.Fault(idle="No matches found")).startswith(
        "The model could not do this: asked for a change, it changed nothing (its answer: \u201cNo matches found")
    assert request_forms.asks_question("whats the unit here") and not request_forms.asks_question("can you tidy it")


@pytest.mark.parametrize("rounds, told, fault", [
    # A search, then its line as the answer, twice.
    ((call("grep_search", pattern="PORT"), {"text": "config.py:1:PORT = 8080"},
      call("read_file", path="config.py"), {"text": "config.py:1:PORT = 8080"}),
     faults.PARROTED, faults.Fault(parroted="config.py:1:PORT = 8080")),
    # A search for words of its own, then an answer of its own, twice.
    ((call("grep_search", pattern="todo"), {"text": "No matches found"},
      call("grep_search", pattern="later"), {"text": "No matches found"}),
     faults.IDLE, faults.Fault(idle="No matches found")),
], ids=["parroted", "idle"])
async def test_an_answer_to_a_change_that_changed_nothing_is_sent_back_then_could_not(real_tools, tmp_path, rounds,
                                                                                       told, fault):
    """Asked to change a file, the model changed nothing and answered, twice: sent back
    to make the change, then the person reads that the model could not do it (not its
    answer as the answer), the file as it was."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(*rounds)
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "could_not" and (folder / "config.py").read_text() == "PORT = 8080\n"
    sent = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert sent and sent[0].text == told
    assert conv.items[-1].text == faults.could_not(fault)


async def test_an_answer_after_a_denied_change_or_in_read_only_mode_stands(real_tools, tmp_path):
    """The person said no to the change (ask mode), or the mode lets none run (read
    only): the model's answer is no idle one, and stands."""
    d = real_tools
    folder, _ = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    ws = d.hub.workspaces()[0]
    asking = await d.hub.create(workspace=ws.id, mode="ask")
    d.backend.push(call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]),
                   {"text": "Left PORT as it was"})
    await asking.send_message("change PORT to 9090")
    await wait_state(asking, "waiting")
    await asking.approve([i for i in asking.items if i.kind == "tool"][0].id, False)
    await wait_state(asking, "idle", "error")
    assert asking.info.end_reason == "answered" and asking.items[-1].text == "Left PORT as it was"
    reading = await d.hub.create(workspace=ws.id, mode="read_only")
    d.backend.push({"text": "PORT is 8080 in config.py"})
    await reading.send_message("change PORT to 9090")
    await wait_state(reading, "idle", "error")
    assert reading.info.end_reason == "answered" and (folder / "config.py").read_text() == "PORT = 8080\n"


def test_the_examples_keep_their_order_for_the_whole_conversation():
    """Ordered by the first request, so a later message does not move them (the prompt's
    cached prefix would end at the system message)."""
    tools = tuple(ToolSpec(name, "", {"type": "object", "properties": {}})
                  for name in ("read_file", "write_file", "grep_search"))
    first = ({"role": "system", "content": "s"}, {"role": "user", "content": "Create a file a.txt containing b"})
    later = first + ({"role": "assistant", "content": "Done."},
                     {"role": "user", "content": "Which file defines greet?"})
    one = template_messages(first, tools, "generic", examples=True)
    two = template_messages(later, tools, "generic", examples=True)
    assert two[:len(one)] == one


async def test_a_file_the_request_names_may_be_edited_before_it_is_read(real_tools, tmp_path):
    """Asked to change PORT in config.py, the model may edit config.py at once (its
    lines offered), the file named before any read; a file not there is not offered."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\nHOST = 'x'\n", "lib.py": "y = 2\n"})
    edit = call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}])
    d.backend.push(edit, {"text": "PORT is 9090 now."})
    await conv.send_message("Change PORT in config.py (not in nothere.py) to 9090")
    await wait_state(conv, "idle", "error")
    shapes = dict(d.backend.turns[0].shapes)
    assert shapes["edit_file"]["properties"]["path"] == {"const": "config.py"}
    # write_file may only write the file named that is not there yet.
    assert shapes["write_file"]["properties"]["path"] == {"enum": ["nothere.py"]}
    assert (folder / "config.py").read_text() == "PORT = 9090\nHOST = 'x'\n"
    assert small_steps.named_files("see ab.py, bc.py and ab.py", {"ab.py"}.__contains__) == ["ab.py"]
    # A path written from the folder (`./`) is the same file; one outside it is none.
    assert small_steps.named_files("edit ./ab.py, then ../cd.py", {"ab.py", "cd.py"}.__contains__) == ["ab.py"]


async def test_after_a_change_only_claimed_the_next_round_must_change_a_file(real_tools, tmp_path):
    """"PORT is now 9090" after a read alone is sent back, and the next round is a call
    of edit_file (or write_file, were a new file asked for; SmolLM2 read the other files
    instead, round after round), until one changes a file (at most
    small_steps.CHANGE_ROUNDS rounds)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n", "lib.py": "y = 2\n"})
    edit = call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}])
    same = call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 8080"}])
    d.backend.push(call("read_file", path="config.py"), {"text": "PORT is now 9090."}, same, edit,
                   {"text": "PORT is 9090 now."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    turns = d.backend.turns
    # The edit that changed nothing failed: the next round still has to change a file
    # (the first round is a search: no file named).
    assert [t.tool_choice for t in turns] == ["required", None, "required", "required", "none"]
    for turn in turns[2:4]:
        left = {t.name for t in turn.tools} - {name for name, args in turn.avoid if args is None}
        assert left == {"edit_file"}
    assert (folder / "config.py").read_text() == "PORT = 9090\n" and conv.info.end_reason == "answered"


async def test_a_change_round_with_no_file_to_change_is_a_free_round_with_its_tools_held(real_tools, tmp_path):
    """A change claimed where nothing was read and no new file is asked for leaves no
    tool that changes a file to call: the round is free (not every tool offered unheld,
    as a grammar with every tool left out would), the command still held."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("get_info"), {"text": "PORT is now 9090."}, {"text": "I could not."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    assert third.tool_choice is None
    left = {t.name for t in third.tools} - {name for name, args in third.avoid if args is None}
    assert "exec_shell_command" in left and "edit_file" not in left and "write_file" not in left
    assert "exec_shell_command" in dict(third.shapes)


@pytest.mark.parametrize("asked, writes", [("fix the word in config.py", False),
                                           ("put the port of config.py in port.txt", True)])
async def test_write_file_is_offered_only_when_the_request_names_a_new_file(real_tools, tmp_path, asked, writes):
    """A request that names no file not there yet leaves write_file out of every round
    (asked to fix a word, SmolLM2 made `telescopes.csv.gz`); one that does offers it,
    the path held to that file, after it is made too (it may write its file again)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("read_file", path="config.py"), call("write_file", path="port.txt", content="8080"),
                   call("read_file", path="port.txt"), {"text": "Done."})
    await conv.send_message(asked)
    await wait_state(conv, "idle", "error")
    if writes:
        assert dict(d.backend.turns[0].shapes)["write_file"]["properties"]["path"] == {"enum": ["port.txt"]}
        assert (folder / "port.txt").read_text() == "8080"
    else:
        assert all(("write_file", None) in turn.avoid for turn in d.backend.turns)
        assert "write_file" not in dict(d.backend.turns[0].shapes)


# ---- the daemon's own words are not the person's ----

MADE_ALREADY = notices.MADE_ALREADY


def test_a_text_that_mostly_repeats_a_note_of_the_daemons_is_an_echo():
    not_made = faults.NOT_MADE_PREFIX + "notes.txt" + faults.NOT_MADE_SUFFIX
    ours = [MADE_ALREADY, not_made]
    # Said again in other words: most of its trigrams are the note's.
    assert small_echo.echoed("The notes.txt is not there yet. Make it with a tool, make it with a new file, "
                              "then answer.", ours) == small_echo.first_sentence(not_made)
    assert small_echo.echoed("You made this same call already and nothing has changed, so use it.",
                              ours) == small_echo.first_sentence(MADE_ALREADY)
    # Not an echo: a few words in common, too short to tell, or nothing of ours to repeat.
    assert small_echo.echoed("notes.txt is not there yet: I wrote the list of groceries into it.", ours) is None
    assert small_echo.echoed("Make it", ours) is None
    assert small_echo.echoed("The notes.txt is not there yet. Make it with a tool.", []) is None
    # An answer that repeats one is sent back as one that repeats words not of this conversation.
    told = small_steps.answer_fault("You made this same call already and nothing has changed, so use it.",
                                    exists=lambda _: True, changed=False, asked="what does x print?", ours=ours)
    assert told is not None and told.startswith(faults.COPIED_PREFIX)
    assert small_steps.answer_fault("x prints 4.", exists=lambda _: True, changed=False,
                                    asked="what does x print?", ours=ours) is None


def test_what_a_write_or_an_edit_would_put_in_its_file_is_checked_for_an_echo():
    ours = [MADE_ALREADY]
    echo = "You made this same call already and nothing has changed since."
    for tool, args in (("write_file", {"path": "a.txt", "content": echo}),
                       ("edit_file", {"path": "a.txt", "edits": [{"old_text": "x", "new_text": "y"},
                                                                 {"old_text": "z", "new_text": echo}]})):
        refused = small_guards.echo_refused(tool, args, ours)
        assert refused is not None and "a.txt" in refused and "repeats what this daemon told you" in refused
        assert small_guards.echo_refused(tool, {**args, "content": "x = 1", "edits": [{"old_text": "x",
                                                                                     "new_text": "x = 1"}]},
                                        ours) is None
    assert small_guards.echo_refused("exec_shell_command", {"command": echo}, ours) is None


async def test_a_small_model_may_not_write_the_daemons_note_into_a_file(real_tools, tmp_path):
    """Told that the file it was asked for is not there yet, the model writes that note
    into it: refused (the person's card says why), and the tool stays open, so its next
    write, of the file's text, runs."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {})
    d.backend.push({"text": "Done."},
                   call("write_file", path="notes.txt",
                        content="The notes.txt is not there yet. Make it with a tool, make it with a new file, "
                                "then answer."),
                   call("write_file", path="notes.txt", content="milk\neggs\n"),
                   {"text": "Wrote milk and eggs into notes.txt."})
    await conv.send_message("put milk and eggs in notes.txt")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("write_file", "error"), ("write_file", "done")]
    refused = cards(conv)[0]
    assert "repeats what this daemon told you" in refused.result
    assert refused.person_text == ("Not run: the agent was writing the daemon's own note to it into notes.txt, "
                                   "not what you asked for.")
    assert (folder / "notes.txt").read_text() == "milk\neggs\n"
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "Wrote milk and eggs into notes.txt."
    assert ("write_file", None) not in d.backend.turns[2].avoid  # not barred: its next write is the file's


async def test_an_answer_that_repeats_the_daemons_note_is_not_the_answer(real_tools, tmp_path):
    """Its call refused as made already, the model answers with the refusal in other
    words: sent back, and said again, the person reads that it could not."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"a.txt": "four\n"})
    echo = "You made this same call already and nothing has changed, so use it."
    d.backend.push(call("read_file", path="a.txt"), call("read_file", path="a.txt"), {"text": echo},
                   {"text": echo})
    await conv.send_message("what does a.txt say?")
    await wait_state(conv, "idle", "error")
    told = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert len(told) == 1 and told[0].text.startswith(faults.COPIED_PREFIX)
    assert conv.info.end_reason == "could_not"
    assert "repeated words that are not from this conversation" in conv.items[-1].text


# ---- a file the person named is not removed unasked ----


def test_the_files_a_command_removes_are_read_from_its_words():
    is_file = {"a.txt", "b.txt"}.__contains__
    removed = small_guards.removed_by
    assert removed("rm -rf a.txt", is_file) == ["a.txt"]
    assert removed("ls && sudo rm -f -- -x ./a.txt; echo done", is_file) == ["-x", "./a.txt"]
    assert removed("mv a.txt c.txt", is_file) == ["a.txt"]  # the source goes
    assert removed("mv a.txt b.txt", is_file) == ["a.txt", "b.txt"]  # and a file written over
    assert removed("X=1 unlink a.txt | cat", is_file) == ["a.txt"]
    for kept in ("cp a.txt c.txt", 'echo "rm a.txt"', "cat a.txt", 'rm "unclosed', "git rm"):
        assert removed(kept, is_file) == [], kept


def test_a_command_may_not_remove_a_file_the_request_names_unless_it_asks_to():
    is_file = {"base.cfg", "notes/a.txt"}.__contains__
    refused = small_guards.removal_refused
    asked = "make a backup copy of base.cfg named base.cfg.bak"
    for command in ("rm -rf base.cfg", "mv base.cfg base.cfg.bak", "rm ./base.cfg", "rm *.cfg", "cd . && rm base.*"):
        why = refused(command, asked, ["base.cfg"], is_file)
        assert why is not None and why.startswith("Not run: this command removes base.cfg"), command
    assert refused("cp base.cfg base.cfg.bak", asked, ["base.cfg"], is_file) is None
    assert refused("rm other.cfg", asked, ["base.cfg"], is_file) is None  # not a file the request names
    for asks in ("delete base.cfg", "Please remove base.cfg", "rename base.cfg to old.cfg", "move base.cfg to x/",
                 "clean up base.cfg", "get rid of base.cfg"):
        assert refused("rm base.cfg", asks, ["base.cfg"], is_file) is None, asks
    assert refused(["rm", "base.cfg"], asked, ["base.cfg"], is_file) is None  # not a command: the tool says why


async def test_a_small_models_command_that_removes_a_named_file_unasked_is_refused(real_tools, tmp_path):
    """Asked for a backup copy, SmolLM2 ran `rm -rf` on the file: refused, the person's
    card says why, the file stays, and the shell stays open for the copy."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"base.cfg": "x = 1\n"})
    d.backend.push(call("exec_shell_command", command="rm -rf base.cfg"),
                   call("exec_shell_command", command="cp base.cfg base.cfg.bak"),
                   {"text": "Copied base.cfg to base.cfg.bak."})
    await conv.send_message("make a backup copy of base.cfg named base.cfg.bak")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "error"),
                                                        ("exec_shell_command", "done")]
    assert cards(conv)[0].person_text == ("Not run: the command would have removed base.cfg, which you named but did "
                                          "not ask to remove.")
    assert (folder / "base.cfg").read_text() == "x = 1\n" and (folder / "base.cfg.bak").read_text() == "x = 1\n"
    assert conv.info.end_reason == "answered"


def test_a_write_of_only_a_files_name_is_refused_unless_the_request_gives_it():
    refused = small_guards.name_refused
    for name in ("Title.md", "Title.md.txt", "docs/a.md", "./b.py"):
        why = refused("write_file", {"path": "doc.md", "content": name + "\n"}, "make doc.md with a heading Title")
        assert why == f"Not written: {name} is a file's name, not the text doc.md should hold. Write the text the " \
                      "person asked for.", name
    fine = ("# Title\n", "Title\n", "see Title.md\n", "a.md\nb.md\n", "Node.js", "1.2.3", "")
    for text in fine:
        assert refused("write_file", {"path": "doc.md", "content": text}, "make doc.md with a heading Title") \
            is None, text
    assert refused("write_file", {"path": "list.txt", "content": "main.py"}, "put main.py in list.txt") is None
    assert refused("edit_file", {"path": "list.txt", "content": "main.py"}, "fix list.txt") is None
    # An edit's new text likewise, where what it replaces is no file's name.
    edit = {"path": "dirs.txt", "edits": [{"old_text": "old photos", "new_text": "dirs.txt"}]}
    assert refused("edit_file", edit, "back up old photos") == notices.NAME_AS_TEXT_REFUSED.format(
        path="dirs.txt", name="dirs.txt")
    for old, new, asked in (("data.csv", "data2.csv", "point it at the new data file"),  # a name for a name
                            ("old photos", "photos.zip", "list photos.zip instead of old photos"),  # the request's
                            ("old photos", "old photos, new photos", "add new photos")):
        assert refused("edit_file", {"path": "dirs.txt", "edits": [{"old_text": old, "new_text": new}]},
                       asked) is None, new
    # The person reads what was refused, in their words.
    why = refused("write_file", {"path": "doc.md", "content": "Title.md"}, "make doc.md")
    assert notices.card_end(why) == ("rule", "Not run: the agent was writing only a file's name (Title.md) into "
                                             "doc.md, not what you asked for.")


async def test_a_second_write_of_the_daemons_note_bars_writing_for_a_round(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {})
    echo = "The notes.txt is not there yet. Make it with a tool, make it with a new file, then answer."
    d.backend.push({"text": "Done."}, call("write_file", path="notes.txt", content=echo),
                   call("write_file", path="notes.txt", content=echo + " Then answer again."), {"text": "I could not."})
    await conv.send_message("put milk and eggs in notes.txt")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("write_file", "error"), ("write_file", "error")]
    after_first, after_second = d.backend.turns[2], d.backend.turns[3]
    assert ("write_file", None) not in after_first.avoid and ("write_file", None) in after_second.avoid


def test_an_edit_after_a_search_offers_the_lines_it_found():
    found = small_steps.search_lines("a.py:2:    y = 2\nb/c.py:1:z\n\n---\nTotal matches: 2\n")
    assert found == {"a.py": ["    y = 2"], "b/c.py": ["z"]}

    def offered_lines(text: str) -> object:
        shape = small_steps.edit_shape([("a.py", text)], only=found)
        assert shape is not None
        return shape["properties"]["edits"]["items"]["properties"]["old_text"]["enum"]

    assert offered_lines("x = 1\n    y = 2\n") == ["    y = 2"]
    assert offered_lines("x = 1\n") == ["x = 1"]  # a file without the lines found offers all its lines


async def test_a_tool_that_failed_three_calls_in_a_row_is_rested_a_round(real_tools, tmp_path):
    """Each command new (one more suffix), each failing: no call twice does not stop them;
    after three in a row the next round may not run a command."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"a.py": "print(1)\n"})
    d.backend.push(*(call("exec_shell_command", command="a.py" + ".x" * n) for n in range(3)),
                   call("read_file", path="a.py"), {"text": "a.py prints 1."})
    await conv.send_message("run a.py")
    await wait_state(conv, "idle", "error")
    turns = d.backend.turns
    assert all(("exec_shell_command", None) not in t.avoid for t in turns[:3])
    assert ("exec_shell_command", None) in turns[3].avoid
    assert ("exec_shell_command", None) not in turns[4].avoid  # a read since: the last three are not all commands


async def test_a_round_that_must_change_a_file_keeps_edit_file_though_it_failed_in_a_row(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    d.backend.push(call("read_file", path="config.py"),
                   *(call("edit_file", path="config.py", edits=[{"old_text": f"PORT = {n}", "new_text": "PORT = 9090"}])
                     for n in (1, 2, 3)),
                   {"text": "PORT is now 9090."},
                   call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]),
                   {"text": "PORT is 9090 now."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    turns = d.backend.turns
    assert ("edit_file", None) in turns[4].avoid  # rested: its last three calls failed
    assert turns[5].tool_choice == "required" and ("edit_file", None) not in turns[5].avoid  # the change round
    assert (folder / "config.py").read_text() == "PORT = 9090\n"


@pytest.mark.parametrize("size", [SMALL, SMALL_MODEL_PARAMS], ids=["led", "not-led"])
async def test_a_led_run_whose_calls_keep_failing_each_a_new_way_stops_and_says_so(real_tools, tmp_path, size):
    """Calls failing in a row, each unlike the last (a command that exits non-zero, a
    read of a file that is not there), end a small model's run after
    leader.FAILS_TO_STOP: the person reads that it could not find a way and what to try,
    and the call after is not run. A model that is not led goes on."""
    d, led = real_tools, size == SMALL
    folder, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"}, size=size)
    failing = [call("read_file", path=f"missing{n}.py") if n % 2 else
               call("exec_shell_command", command=f"ls nothing{n}") for n in range(FAILS_TO_STOP)]
    d.backend.push(*failing, call("write_file", path="new.txt", content="late"), {"text": "Done."})
    await conv.send_message("tidy the project")
    await wait_state(conv, "idle", "error")
    states = [c.state for c in cards(conv)]
    if led:
        assert len(states) == FAILS_TO_STOP and conv.info.end_reason == "stuck"
        said = [i.text for i in conv.items if i.kind == "notice"][-1]
        assert said == notices.FAILING.format(n=FAILS_TO_STOP) and "larger model" in said
        assert not (folder / "new.txt").exists()
    else:
        assert len(states) == FAILS_TO_STOP + 1 and conv.info.end_reason == "answered"
        assert (folder / "new.txt").read_text() == "late"


@pytest.mark.parametrize("size", [SMALL, SMALL_MODEL_PARAMS], ids=["led", "not-led"])
async def test_a_small_model_plans_by_reading_and_gives_the_plan_in_the_call(real_tools, tmp_path, size):
    """Planning, a led model is offered no file tool (it wrote the workspace's files
    with them, refused, and seldom the plan file) and no command (it ran `touch`,
    refused), its todo list has a step, and its prompt says to give the plan as
    exit_plan_mode's `plan`; a model that is not led keeps them (the file tools for the
    plan file, read-only commands) and may write an empty list."""
    d, led = real_tools, size == SMALL
    _, conv = await small_project(d, tmp_path, {"app.py": "x = 1\n"}, size=size)
    d.backend.push(call("todo_write", todos=[{"content": "Add greet()", "status": "pending"}]),
                   call("exit_plan_mode", plan="1. Add greet() to app.py"))
    await conv.send_message("plan a greeting in app.py", plan=True)
    await wait_state(conv, "waiting", "idle", "error")
    tools = offered(d.backend.turns[0])
    # Led, its rounds call the todo list's tool, then (the list has a step) the plan's.
    for turn, wanted in zip(d.backend.turns, ("todo_write", "exit_plan_mode"), strict=True):
        free = {t.name for t in turn.tools} - {name for name, args in turn.avoid if args is None}
        assert (free == {wanted}) is led, (wanted, free)
    assert (tools["exit_plan_mode"].get("required") == ["plan"]) is led
    assert ("write_file" in tools) is not led and ("edit_file" in tools) is not led
    assert ("exec_shell_command" in tools) is not led
    listed = tools["todo_write"]["properties"]["todos"]
    assert (listed.get("minItems") == 1 and listed["maxItems"] == SMALL_TODOS) is led
    assert "exit_plan_mode" in tools and "read_file" in tools
    system = d.backend.turns[0].messages[0]["content"]
    assert ("with write_file or edit_file" in system) is not led
    assert ("Give the plan as exit_plan_mode's `plan`" in system) is led
    assert conv.info.plan_mode and cards(conv)[-1].state == "waiting"


def test_an_edit_that_failed_is_not_offered_again():
    """A refused edit's new_text is not offered again in its file (SmolLM2 wrote the same
    refused edit three times over), nor a refused removal's line; another file's are not
    its own."""
    def fits(shape: dict, old: str, new: str) -> bool:
        return edit_fits(shape, old, new, "a.py")

    text = "x = 1\ny = 2\n"
    failed = avoided_edits([
        ("edit_file", {"path": "./a.py", "edits": [{"old_text": "x = 1", "new_text": "x = 1,"}]}),
        ("edit_file", {"path": "b.py", "edits": [{"old_text": "y = 2", "new_text": "y = 3"}]}),
        ("edit_file", None), ("read_file", {"path": "a.py"}), ("edit_file", {"path": "a.py", "edits": "x"})])
    assert failed == [("./a.py", "x = 1", "x = 1,"), ("b.py", "y = 2", "y = 3")]
    shape = small_steps.edit_shape([("a.py", text)], avoided=failed)
    assert shape is not None and not fits(shape, "x = 1", "x = 1,") and not fits(shape, "y = 2", "x = 1,")
    assert fits(shape, "x = 1", "x = 5") and fits(shape, "y = 2", "y = 3")
    removal = [("a.py", "x = 1\n", "")]
    shape = small_steps.edit_shape([("a.py", text)], removing=True, avoided=removal)
    assert shape is not None and not fits(shape, "x = 1\n", "") and fits(shape, "y = 2\n", "")
