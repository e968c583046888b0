"""The programs a small model's command may start with (actors/runs/agent/small/commands.py,
held by the grammar through leader.round_turn), the ones a request does not ask for
(guards.unasked_programs), and its answer naming a file its own command moved away."""

from __future__ import annotations

import functools
import re

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_cpp.llama_grammar import LlamaGrammar

from actors.model.backends.generic_grammar import excluding, generic_schema, schema_to_gbnf, strict_strings
from actors.model.turns import ToolSpec
from actors.runs.agent.small import commands, guards, lookup
from actors.tools.shell import ExecShellCommand
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

SHELL = ExecShellCommand()
ON_PATH = {"ls", "cat", "cp", "mv", "rm", "python3", "ruff", "rename", "git"}


def found(name: str) -> str | None:
    return f"/usr/bin/{name}" if name in ON_PATH else None


def test_the_usual_programs_on_path_then_the_requests_own_then_the_shells():
    ps = commands.programs("run ruff on app.py, then git-crypt and the rename tool", found)
    assert ps == ["ls", "cat", "cp", "mv", "rm", "python3", "git", "ruff", "rename", "cd", "test"]
    assert "python" not in ps and "node" not in ps  # not on this PATH
    # A file's name, a path or a word with a dot is no program of the request's.
    assert "cat" not in commands.programs("read cat.txt and ./ls", lambda n: found(n) if n != "cat" else None)
    assert commands.programs("print a.txt", found, unasked={"rm", "mv"}) == \
        ["ls", "cat", "cp", "python3", "git", "cd", "test"]
    # The workspace's scripts the request names, as the shell runs them.
    assert commands.programs("run build.sh", found, scripts=["build.sh", "./tools/gen.py", "../x.sh", "/bin/x"])[-2:] \
        == ["./build.sh", "./tools/gen.py"]


def test_a_build_tool_only_where_the_workspace_has_its_file_even_when_the_request_says_its_name():
    on_path = ON_PATH | {"make", "cargo", "npm", "node"}

    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in on_path else None

    asked = "make the docs of notes.txt, then run npm and cargo"
    assert not {"make", "npm", "cargo"} & set(commands.programs(asked, which, has_file=lambda _: False))
    assert {"make", "node"} <= set(commands.programs(asked, which, has_file={"GNUmakefile"}.__contains__))
    assert "npm" not in commands.programs(asked, which, has_file={"GNUmakefile"}.__contains__)
    both = {"package.json", "Cargo.toml"}
    assert {"npm", "cargo"} <= set(commands.programs(asked, which, has_file=both.__contains__))


def test_a_request_to_copy_move_or_delete_files_is_held_to_the_programs_that_do_it():
    on_path = ON_PATH | {"find", "mkdir", "rmdir"}

    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in on_path else None

    assert commands.programs("make a backup copy of a.cfg", which) == ["ls", "find", "cp"]
    assert commands.programs("delete every .tmp file, in subfolders too", which) == ["ls", "find", "rm", "rmdir"]
    assert commands.programs("the .txt files in notes/ should be .md, rename them", which) == \
        ["ls", "find", "mv", "mkdir"]  # notes/ is a folder: one may be made
    assert commands.programs("move a.csv into the data folder", which, unasked={"rm"}) == ["ls", "find", "mv", "mkdir"]
    # Not a verb of files: a line removed, a program run, a function renamed.
    for free in ("remove the third line of a.txt", "run count.py and save what it prints", "rename the method x to y"):
        assert "python3" in commands.programs(free, which), free


def test_a_request_naming_the_files_to_copy_move_or_delete_is_held_to_those_commands():
    files, folders = {"ab.cfg", "notes/bc.md"}, {"notes", "old"}
    named = functools.partial(commands.named_commands, is_file=files.__contains__, is_dir=folders.__contains__)
    assert named("make a backup copy of ab.cfg named ab.cfg.bak") == {"cp": ["cp ab.cfg ab.cfg.bak"], "mkdir": []}
    assert named("rename notes/bc.md to notes/cd.md") == {"mv": ["mv notes/bc.md notes/cd.md"], "mkdir": []}
    assert named("move ab.cfg into the notes folder") == {"mv": ["mv ab.cfg notes"], "mkdir": []}
    # A folder named that is not there is made first (`mv` alone would rename the file to it).
    assert named("move ab.cfg into archive/") == {"mv": ["mkdir archive && mv ab.cfg archive"], "mkdir": []}
    assert named("move ab.cfg into a new folder called keep") == {"mv": ["mkdir keep && mv ab.cfg keep"],
                                                                   "mkdir": []}
    assert named("delete ab.cfg and the old folder") == {"rm": ["rm ab.cfg"], "rmdir": ["rmdir old"], "mkdir": []}
    # Nothing named is there, or no verb of files: the commands stay free.
    for free in ("delete all the .tmp files", "copy x.txt to y.txt", "remove the DEBUG line from ab.cfg",
                 "read ab.cfg"):
        assert named(free) == {}, free
    shape = commands.command_shape(SHELL.parameters, ["ls", "cp"], ["cp ab.cfg ab.cfg.bak"],
                                   whole={"cp": ["cp ab.cfg ab.cfg.bak", "cp ab.cfg notes"], "mkdir": []})
    assert shape is not None
    pattern = shape["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "cp ab.cfg notes")
    # failed, not a whole one, or another program while a whole command is left
    for no in ("cp ab.cfg ab.cfg.bak", "cp ab.cfg", "mkdir x", "cp ab.cfg other", "ls notes"):
        assert not re.fullmatch(pattern, no), no
    spent = commands.command_shape(SHELL.parameters, ["ls", "cp"], ["cp ab.cfg ab.cfg.bak"],
                                   whole={"cp": ["cp ab.cfg ab.cfg.bak"], "mkdir": []})
    assert spent is not None  # each whole command failed: the others again, cp not
    assert re.fullmatch(spent["properties"]["command"]["pattern"], "ls notes")
    assert not re.fullmatch(spent["properties"]["command"]["pattern"], "cp ab.cfg notes")


def test_a_folder_named_is_copied_moved_or_deleted_whole(tmp_path):
    for rel in ("plants/ivy.txt", "plants/low/moss.txt", "bare/.keep-not", "ab.cfg"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    (tmp_path / "bare/.keep-not").unlink()
    (tmp_path / "cupboard").mkdir()
    (tmp_path / "cupboard/cup.txt").write_text("x\n")

    def whole(asked: str) -> dict[str, list[str]]:
        return commands.for_request(asked, tmp_path).whole

    # Copied with all it holds, to the new name it is called (no `mkdir` of that name
    # beside it: the copy would go inside it).
    assert whole("make a copy of the plants folder called plants_old") == {"cp": ["cp -r plants plants_old"],
                                                                           "mkdir": []}
    assert whole("duplicate the plants directory as plants2/")["cp"] == ["cp -r plants plants2"]
    assert whole("move the plants folder into the cupboard folder")["mv"] == ["mv plants cupboard"]
    # Deleted: an empty folder by rmdir, one that holds files by rm -r.
    assert whole("delete the bare folder") == {"rmdir": ["rmdir bare"], "mkdir": []}
    assert whole("delete the plants folder") == {"rm": ["rm -r plants"], "mkdir": []}
    # Words that say which folder name none ("a new folder named x" is x, not `new`).
    assert lookup.named_folders("put it in a new folder named crate, not the same folder") == ["crate"]
    assert lookup.named_folders("the ab folder called cd, and ef/") == ["ab", "cd", "ef"]


def test_files_of_a_kind_go_into_a_new_folder_made_first(tmp_path):
    for rel in ("one.log", "two.log", "keep.txt"):
        (tmp_path / rel).write_text("x\n")
    got = commands.for_request("move the .log files into a new folder named crate", tmp_path).whole
    assert got == {"mv": ["mkdir crate && mv one.log two.log crate"]}
    (tmp_path / "crate").mkdir()
    got = commands.for_request("move the .log files into a new folder named crate", tmp_path).whole
    assert got == {"mv": ["mv one.log two.log crate"]}


def test_a_script_run_and_what_it_prints_kept_is_one_whole_command(tmp_path):
    (tmp_path / "tally.py").write_text("print(3)\n")
    (tmp_path / "go.sh").write_text("echo hi\n")

    def kept(asked: str) -> dict[str, list[str]]:
        return commands.output_commands(asked, lambda n: (tmp_path / n).is_file(), lambda p: f"/usr/bin/{p}")

    assert kept("run tally.py and save what it prints to out.txt") == {"python3": ["python3 tally.py > out.txt"]}
    assert kept("execute go.sh, then put its output in log.txt") == {"bash": ["bash go.sh > log.txt"]}
    assert commands.for_request("run tally.py and write what it prints into sum.txt", tmp_path).whole == \
        {"python3": ["python3 tally.py > sum.txt"]}
    # Not asked to keep what it prints, no script there, or no one file to keep it in.
    for free in ("run tally.py", "save tally.py as b.py", "run gone.py and save what it prints to out.txt",
                 "run tally.py and save what it prints", "run tally.py and save what it prints to aa.txt or bb.txt"):
        assert kept(free) == {}, free
    # Asked what it prints: it is run, what it prints the answer's start (Leader._answer_starts)
    for asked in ("what does tally.py print?", "what's the output of go.sh", "what happens when I run tally.py"):
        program = "bash go.sh" if "go.sh" in asked else "python3 tally.py"
        assert kept(asked) == {program.split()[0]: [program]}, asked
    assert kept("what does tally.py print to out.txt") == {}  # (to keep it there: said so)


def test_files_named_by_their_kind_are_done_to_by_one_whole_command(tmp_path):
    for rel in ("qa.py.bak", "docs/cc.txt.bak", "docs/deep/ee.txt.bak", "notes/aa.text", "notes/bb.text",
                "top.text", "one.log", "two.log", "logs/old.log", ".hidden/xx.bak"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")

    def whole(asked: str) -> dict[str, list[str]]:
        return commands.for_request(asked, tmp_path).whole

    # Deleted: every file of the kind, in subfolders too, not in a hidden one.
    assert whole("delete all the .bak files, some are in subfolders too") == \
        {"rm": ["rm docs/cc.txt.bak docs/deep/ee.txt.bak qa.py.bak"]}
    # Renamed to another kind, under the folder named: each to its new name, one after another.
    assert whole("the .text files in notes/ should end in .md, rename them") == \
        {"mv": ["mv notes/aa.text notes/aa.md && mv notes/bb.text notes/bb.md"]}
    # Moved or copied into the folder named: those that are not there yet.
    assert whole("move the .log files into logs/") == {"mv": ["mv one.log two.log logs"]}
    assert whole("copy all .log files to the logs folder") == {"cp": ["cp one.log two.log logs"]}
    # No file of the kind, too many, or no verb of files: left to the model.
    assert whole("delete the .pyc files") == {}
    assert whole("count the .log files") == {"find": ["find . -type f -name '*.log' -not -path '*/.*' | wc -l"]}
    (tmp_path / "notes/bb.md").write_text("y\n")  # a rename would overwrite it: left to the model
    assert "mv" not in whole("the .text files in notes/ should end in .md, rename them")
    for n in range(commands.KIND_FILES + 1):
        (tmp_path / f"many{n}.tmp").write_text("")
    assert whole("delete the .tmp files") == {}


def test_a_program_that_does_nothing_alone_needs_a_word_after_it():
    starts = ["ls", "mkdir", "bash", "cp", "ruff", "./run.sh", "make"]
    shape = commands.command_shape(SHELL.parameters, starts, ["cp a", "ruff x"])
    assert shape is not None
    pattern = re.compile(shape["properties"]["command"]["pattern"])
    for alone in ("ls", "ruff", "./run.sh", "make"):  # it does something; the person named it; a script
        assert pattern.fullmatch(alone), alone
    for alone in ("mkdir", "bash", "cp"):  # usage, nothing, or input that never comes
        assert not pattern.fullmatch(alone), alone
        assert pattern.fullmatch(alone + " docs"), alone
    assert not pattern.fullmatch("cp a") and pattern.fullmatch("cp a b") and not pattern.fullmatch("ruff x")


def test_removing_and_moving_programs_only_when_the_request_asks_for_them():
    assert guards.unasked_programs("make a backup copy of base.cfg named base.cfg.bak") >= {"rm", "rmdir", "mv"}
    assert guards.unasked_programs("what does slugify return?") >= {"rm", "unlink", "shred", "mv"}
    renaming = guards.unasked_programs("rename draft.txt to final.txt")
    assert "mv" not in renaming and "rm" in renaming  # a rename moves, it removes nothing
    assert "mv" not in guards.unasked_programs("move report.csv into data") and \
        "rm" in guards.unasked_programs("move report.csv into data")
    for asking in ("delete old.log", "remove the build folder", "clean up the tmp files", "rm x.txt",
                   "get rid of notes.bak", "please drop cache.db"):
        assert guards.unasked_programs(asking) == frozenset(), asking


def test_the_command_is_held_to_start_with_a_program_and_stay_one_line():
    starts = ["ls", "g++", "clang-format", "python3", "./run.sh", "a b"]
    shape = commands.command_shape(SHELL.parameters, starts, options=True)
    bare = commands.command_shape(SHELL.parameters, starts)  # the request writes no option
    assert shape is not None and set(shape["properties"]) == set(SHELL.parameters["properties"])
    assert bare is not None

    def fits(command: str, held: dict = shape) -> bool:
        try:
            jsonschema.validate({"command": command}, held)
        except jsonschema.ValidationError:
            return False
        return True

    for ok in ("ls", "ls -l | wc -l", "g++ -o x x.c", "./run.sh", "./run.sh --fast", "clang-format -i a.c",
               "python3 count.py > result.txt", "python3 -c 'print(1)'"):
        assert fits(ok), ok
        assert fits(ok, bare) is (" -" not in ok), ok  # no option unless the request writes one
    for bad in ("lsx", "count.py", "sudo cp a b", "rename a b", "a b", "./runxsh", "./run.shx", "ls\nrm -rf /",
                'echo "x"', "ls \\n", " ls", "make a backup copy", "ls -l ", "ls  -l"):
        assert not fits(bad), bad
        assert not fits(bad, bare), bad
    for ok in ("ls a-b", "ls x-", "ls -", "python3 count.py"):  # a `-` inside a word is no option
        assert fits(ok, bare) is (ok != "ls -"), ok
    assert commands.gives_options("run ls -la here") and commands.gives_options("use --fast")
    assert not commands.gives_options("copy a-b.txt - now") and not commands.gives_options("ls the folder")
    assert commands.command_shape(SHELL.parameters, []) is None
    assert commands.command_shape({"type": "object", "properties": {"cmd": {"type": "string"}}}, ["ls"]) is None
    assert commands.command_shape(SHELL.parameters, ["a b", "/bin/ls"]) is None  # no name a pattern may hold


def test_the_held_command_is_a_grammar_llama_cpp_takes_its_failed_commands_ruled_out():
    failed = ["ls -l", "g++ -o a a.c", "mv a.txt [b]^$.txt", "ls", "python3 é.py"]
    shape = commands.command_shape(SHELL.parameters, ["ls", "g++", "clang-format", "mv", "python3"], failed,
                                   options=True)
    spec = ToolSpec(SHELL.name, SHELL.description, SHELL.parameters)
    schema = generic_schema((spec,), required=True, strict=True, shapes=((SHELL.name, shape),),
                            avoid=tuple((SHELL.name, {"command": c}) for c in failed))
    text = strict_strings(schema_to_gbnf(schema))
    assert "\\-" not in text and "\\." not in text  # no escape llama.cpp would refuse
    LlamaGrammar.from_string(text, verbose=False)
    pattern = re.compile(shape["properties"]["command"]["pattern"])
    for ruled in failed:
        assert not pattern.fullmatch(ruled), ruled
    for ok in ("ls -la", "ls -l x", "ls -", "g++ -o b a.c", "mv a.txt [b]^$.tx", "python3 e.py", "clang-format x"):
        assert pattern.fullmatch(ok), ok
    for bad in ("ls -l ", "ls  -l", "ls ", "python3 é.py ", "mv a.txt  [b]^$.txt"):  # the same call, blanks apart
        assert not pattern.fullmatch(bad), bad
    # A pattern is read before a length, so generic_grammar's exclusion says it cannot
    # rule out a string held to one: the shape does.
    assert excluding(shape["properties"]["command"], "ls -la") is None


WORDS = st.text(alphabet="ab.-]^[$é' x\"\\", max_size=10)


def words_fit(tail: str, options: bool, alone: bool = True) -> bool:
    """What may follow a program, written out: words each after one blank, of no blank,
    double quote, backslash or control character, none starting with `-` unless
    `options`; none at all only where the program may run `alone`."""
    if tail == "":
        return alone
    if not tail.startswith(" "):
        return False
    words = tail[1:].split(" ")
    return all(w and not any(c in w for c in '"\\\n\t\r') and (options or not w.startswith("-")) for w in words)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ls", "cp", "g++", "python", "python3"]), WORDS), max_size=4),
       st.tuples(st.sampled_from(["ls", "cp", "g++", "python", "python3", "pythn", "sudo"]), WORDS), st.booleans())
def test_a_command_fits_when_it_starts_with_a_program_its_words_are_one_blank_apart_and_it_did_not_fail(
        failed, candidate, options):
    programs = ["ls", "cp", "g++", "python", "python3"]
    ruled = [f"{p} {w}".rstrip() for p, w in failed]
    command = f"{candidate[0]} {candidate[1]}".rstrip() if candidate[1].strip() else candidate[0]
    shape = commands.command_shape(SHELL.parameters, programs, ruled, options=options)
    program, blank, rest = command.partition(" ")
    fits = program in programs and words_fit(blank + rest, options, program == "ls") and command not in ruled
    assert commands.fits_words(blank + rest, options=options) is words_fit(blank + rest, options)
    assert (re.fullmatch(shape["properties"]["command"]["pattern"], command) is not None) == fits
    for near in (command + " ", command + "a", command[:-1], command + " -a"):  # and its neighbours
        program, blank, rest = near.partition(" ")
        fits = program in programs and words_fit(blank + rest, options, program == "ls") and near not in ruled
        assert (re.fullmatch(shape["properties"]["command"]["pattern"], near) is not None) == fits, near


async def test_a_small_models_commands_are_held_and_removing_is_not_offered_unasked(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"draft.txt": "Dear team,\n"})
    d.backend.push(call("exec_shell_command", command="mv draft.txt final.txt"),
                   {"text": "Moved draft.txt to final.txt."})
    await conv.send_message("rename draft.txt to final.txt")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "mv draft.txt final.txt") and not re.fullmatch(pattern, "ls")
    assert not re.fullmatch(pattern, "python3 x.py")  # a rename is mv's, and this one is known whole
    assert not re.fullmatch(pattern, "rm -r final.txt") and not re.fullmatch(pattern, "rename draft.txt final.txt")
    assert (folder / "final.txt").read_text() == "Dear team,\n" and not (folder / "draft.txt").exists()
    # The answer names the file the run's own command moved away: not sent back as made up.
    assert [i.text for i in conv.items if i.kind == "assistant" and i.text] == \
        ["Moved draft.txt to final.txt."]
    assert not [i for i in conv.items if i.kind == "notice"]
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]


async def test_an_answer_naming_a_file_a_failed_command_named_is_still_sent_back(real_tools, tmp_path):
    """Only a call that ran well vouches for a file gone: a failed `mv` of a file that
    never was leaves the answer naming it made up."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"draft.txt": "Dear team,\n"})
    d.backend.push(call("exec_shell_command", command="mv notes.txt final.txt"),
                   {"text": "Moved notes.txt to final.txt."}, {"text": "I could not: notes.txt is not there."})
    await conv.send_message("rename draft.txt to final.txt")
    await wait_state(conv, "idle", "error")
    sent_back = [i for i in conv.items if i.kind == "notice"]
    assert sent_back and "notes.txt" in sent_back[0].text


async def test_after_a_failed_command_the_next_rounds_cannot_write_it_again(real_tools, tmp_path):
    """A failed call is ruled out of the next rounds; a command held to a pattern is
    ruled out by the pattern itself (generic_grammar cannot say it there)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"base.cfg": "[main]\n"})
    d.backend.push(call("exec_shell_command", command="cp -b base.cfg"),
                   call("exec_shell_command", command="cp -q base.cfg"),
                   call("exec_shell_command", command="cp base.cfg base.cfg.bak"),
                   {"text": "Copied base.cfg to base.cfg.bak."})
    await conv.send_message("make a copy of base.cfg named base.cfg.bak")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    pattern = dict(third.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert not re.fullmatch(pattern, "cp -b base.cfg") and not re.fullmatch(pattern, "cp -q base.cfg")
    assert re.fullmatch(pattern, "cp base.cfg base.cfg.bak") and not re.fullmatch(pattern, "ls base.cfg")
    # The request names the file and its copy: cp is that command (commands.named_commands), alone.
    assert not re.fullmatch(pattern, "cp base.cfg") and not re.fullmatch(pattern, "cp base.cfg base.cfg")
    assert not re.fullmatch(pattern, "ls -p base")  # the request writes no option
    assert not re.fullmatch(pattern, "mkdir base")  # a copy is cp's, and no folder is asked for
    assert (folder / "base.cfg.bak").read_text() == "[main]\n"


async def test_a_script_the_request_names_may_run_when_its_mode_lets_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"build.sh": "#!/bin/sh\necho built\n", "notes.sh": "echo\n"})
    (folder / "build.sh").chmod(0o755)
    d.backend.push(call("exec_shell_command", command="./build.sh"), {"text": "It printed built."})
    await conv.send_message("run build.sh, then notes.sh")
    await wait_state(conv, "idle", "error")
    pattern = dict(d.backend.turns[0].shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "./build.sh") and re.fullmatch(pattern, "sh notes.sh")
    assert not re.fullmatch(pattern, "./notes.sh")  # not a program: its mode does not let it run
    assert cards(conv)[0].state == "done" and "built" in cards(conv)[0].result


async def test_a_files_job_whose_change_was_only_claimed_changes_them_with_a_held_command(real_tools, tmp_path):
    """Asked to delete files, the model's rm failed and its answer claimed them removed:
    sent back, its next round must change something, and for a job of files that is a
    command, held as before (not edit_file, with no file to edit, nor every tool unheld)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"ab.tmp": "x\n", "cd.tmp": "y\n", "keep.txt": "z\n"})
    d.backend.push(call("exec_shell_command", command="rm .tmp"), {"text": "Removed: rm .tmp"},
                   call("exec_shell_command", command="rm ab.tmp cd.tmp"), {"text": "Deleted both .tmp files."})
    await conv.send_message("delete all the .tmp files, both of them")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    assert third.tool_choice == "required"
    offered = {t.name for t in third.tools} - {name for name, args in third.avoid if args is None}
    assert "exec_shell_command" in offered and "grep_search" not in offered
    pattern = dict(third.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "rm ab.tmp cd.tmp") and not re.fullmatch(pattern, "echo hi")
    assert not (folder / "ab.tmp").exists() and (folder / "keep.txt").exists()


async def test_a_rename_of_files_by_their_kind_runs_as_one_held_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"aa.text": "a\n", "bb.text": "b\n", "cc.md": "c\n"})
    whole = "mv aa.text aa.md && mv bb.text bb.md"
    d.backend.push(call("exec_shell_command", command=whole), {"text": "Renamed aa.text and bb.text to .md."})
    await conv.send_message("the .text files should end in .md, rename them")
    await wait_state(conv, "idle", "error")
    pattern = dict(d.backend.turns[0].shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, whole) and not re.fullmatch(pattern, "mv aa.text aa.md")
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == ["aa.md", "bb.md", "cc.md"]
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
    assert conv.info.end_reason == "answered"


async def test_a_job_whose_whole_command_is_known_runs_it_first(real_tools, tmp_path):
    """Asked to run a script and keep what it prints in a file, or to copy a folder, the
    first round is the command, held to the whole one (SmolLM2 ran `mkdir out.txt`, or
    copied the new name onto itself); then the answer. The grammar llama.cpp is given
    takes the shape (its characters: `>`, `&&`, `-r`)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"tally.py": "print(6 * 7)\n", "kit/aa.txt": "a\n"})
    d.backend.push(call("exec_shell_command", command="python3 tally.py > out.txt"), {"text": "Saved it."},
                   call("exec_shell_command", command="cp -r kit kit_old"), {"text": "Copied."})
    await conv.send_message("run tally.py and save what it prints to out.txt")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert first.tool_choice == "required"
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "python3 tally.py > out.txt") and not re.fullmatch(pattern, "mkdir out.txt")
    assert (folder / "out.txt").read_text() == "42\n" and conv.info.end_reason == "answered"
    shape = dict(first.shapes)["exec_shell_command"]
    spec = next(t for t in first.tools if t.name == "exec_shell_command")
    schema = generic_schema((spec,), required=True, strict=True, shapes=(("exec_shell_command", shape),))
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)
    await conv.send_message("make a copy of the kit folder called kit_old")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    assert re.fullmatch(dict(third.shapes)["exec_shell_command"]["properties"]["command"]["pattern"],
                        "cp -r kit kit_old")
    assert (folder / "kit_old/aa.txt").read_text() == "a\n" and (folder / "kit/aa.txt").exists()


async def test_an_answer_sent_back_after_the_jobs_whole_command_ran_is_answered_again(real_tools, tmp_path):
    """The whole command did the job; the answer named a file that is not there and was
    sent back: the next round is the answer again, not a call (SmolLM2 ran another
    command, which wrote a file nobody asked for)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"tally.py": "print(6 * 7)\n"})
    d.backend.push(call("exec_shell_command", command="python3 tally.py > out.txt"), {"text": "Output: sum.txt"},
                   {"text": "Saved what tally.py prints in out.txt."})
    await conv.send_message("run tally.py and save what it prints to out.txt")
    await wait_state(conv, "idle", "error")
    assert [t.tool_choice for t in d.backend.turns] == ["required", "none", "none"]
    # Each answer begins with a file the request names (SmolLM2 misspelt it: "Sorted: rote.txt").
    assert [t.reply_starts for t in d.backend.turns[1:]] == [("tally.py", "out.txt")] * 2
    assert sorted(p.name for p in folder.iterdir()) == ["out.txt", "tally.py"]
    assert conv.info.end_reason == "answered"
