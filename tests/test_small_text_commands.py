"""Whole commands for requests about one named text file (actors/runs/agent/small/
text_commands.py): its lines counted, a quoted line appended, its lines sorted; each
run through the real shell in a led run on the scripted backend."""

from __future__ import annotations

import re
import subprocess

from actors.runs.agent.small.text_commands import text_commands
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

FILES = {"notes.md": "a\nb\nc\n", "todo.txt": "x\n", "names.txt": "kim\nal\n", "open.txt": "no end",
         "seen.csv": "day,bird,where\n1,owl,wood\n2,wren,yard\n3,owl,yard\n",
         "shapes.py": "def area(r):\n    return r\n\n\nclass Sq:\n    async def side(self):\n        pass\n"}


def test_the_commands_are_built_from_the_one_file_named_and_the_words_given():
    def whole(asked: str) -> dict[str, list[str]]:
        return text_commands(asked, FILES.get)

    assert whole("How many lines does notes.md have?") == {"wc": ["wc -l notes.md"]}
    assert whole("count the lines in notes.md") == {"wc": ["wc -l notes.md"]}
    assert whole("how many words are in notes.md") == {"wc": ["wc -w notes.md"]}
    assert whole("how many functions does shapes.py define") == {"grep": ["grep -HcE '^ *(async )?def ' shapes.py"]}
    assert whole("count the classes in shapes.py") == {"grep": ["grep -Hc '^ *class ' shapes.py"]}
    assert whole("how many different birds are in seen.csv") == \
        {"tail": ["tail -n +2 seen.csv | cut -d, -f2 | sort -u | wc -l"]}
    assert whole("how many unique trees are in seen.csv") == {}  # no such column
    assert whole("what's the last line of notes.md") == {"tail": ["tail -n 1 notes.md"]}
    assert whole("show me the first 2 lines of notes.md") == {"head": ["head -n 2 notes.md"]}
    assert whole("remove the last line of notes.md") == {}  # a change of the file, not a question
    assert whole("Append the line 'fix the gate' to todo.txt") == {"echo": ["echo 'fix the gate' >> todo.txt"]}
    assert whole('add "call Bo" at the end of todo.txt') == {"echo": ["echo 'call Bo' >> todo.txt"]}
    assert whole("sort names.txt alphabetically") == {"sort": ["sort -o names.txt names.txt"]}
    for free in ("how many lines do notes.md and todo.txt have",  # two files: which is not known
                 "how many lines does gone.txt have",  # not there
                 "how many functions does notes.md have",  # not Python
                 "append fix the gate to todo.txt",  # no line quoted
                 "append 'it''s' to todo.txt", "append 'a \"b\"' to todo.txt",  # quotes inside
                 "append 'more' to open.txt",  # no line break at its end: the line would join its last
                 "sort names.txt in reverse", "sort names.txt by length",  # not what sort alone does
                 "sort out names.txt", "sort shapes.py",  # to mend it; a file of code sorted is broken
                 "what does notes.md say", "remove the second line of notes.md"):
        assert whole(free) == {}, free


def test_the_counts_commands_count_what_they_are_asked_for(tmp_path):
    (tmp_path / "shapes.py").write_text(FILES["shapes.py"])
    (tmp_path / "seen.csv").write_text(FILES["seen.csv"])
    for asked, said in (("how many functions does shapes.py define", "shapes.py:2"),
                        ("count the classes in shapes.py", "shapes.py:1"),
                        ("how many different birds are in seen.csv", "2"),
                        ("how many distinct where in seen.csv", "2")):
        (command,), = text_commands(asked, FILES.get).values()
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
        assert done.stdout.strip() == said, command


async def test_a_line_is_appended_by_its_whole_command_in_the_first_round(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"todo.txt": "x\n"})
    d.backend.push(call("exec_shell_command", command="echo 'fix the gate' >> todo.txt"), {"text": "Added it."})
    await conv.send_message("Append the line 'fix the gate' to the end of todo.txt.")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, "echo 'fix the gate' >> todo.txt") and not re.fullmatch(pattern, "echo hi")
    assert (folder / "todo.txt").read_text() == "x\nfix the gate\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
    assert d.backend.turns[1].tool_choice == "none" and conv.info.end_reason == "answered"


async def test_a_question_a_command_answers_is_answered_the_round_after_it(real_tools, tmp_path):
    """A count only reads: the round after it is still the answer, and it begins with what
    the count printed (SmolLM2 answered "Sights.csv has 5", a file that is not there)."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"notes.md": "a\nb\nc\n"})
    d.backend.push(call("exec_shell_command", command="wc -l notes.md"), {"text": "notes.md has 3 lines."})
    await conv.send_message("how many lines does notes.md have")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert first.tool_choice == "required" and "3 notes.md" in cards(conv)[0].result
    assert second.tool_choice == "none" and second.reply_starts == ("3 notes.md",)
    assert conv.info.end_reason == "answered"


def test_how_many_times_a_word_is_written_is_counted_by_grep_as_a_word(tmp_path):
    """In the one file named, else under the folder named or everywhere, of the kind named;
    hidden folders not entered; run by bash on a real tree."""
    from actors.runs.agent.small.lookup import KIND, named_folders
    from actors.runs.agent.small.steps import file_names
    from actors.runs.agent.small.text_commands import occurrence_commands

    tree = {"a.py": "# FIXME: one\nx = 1  # FIXME\n", "src/b.py": "# FIXME\nFIXMEs = 0\n", "n.md": "FIXME\n",
            ".git/c.py": "FIXME\n", "net.py": "retry()\nretry_all()\n"}
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)

    def count(asked: str) -> str | None:
        found = occurrence_commands(asked, lambda n: (tmp_path / n).is_file(), lambda n: (tmp_path / n).is_dir(),
                                    list(dict.fromkeys(KIND.findall(asked))), named_folders(asked), file_names(asked))
        if not found:
            return None
        (command,) = found["grep"]
        return subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True).stdout.strip()

    assert count("How many FIXME comments are there in the .py files?") == "3"
    assert count("how many FIXMEs are there") == "4"
    assert count("how many times does 'FIXME' appear in src/") == "1"
    assert count("how many times does 'retry' appear in net.py") == "1"  # a word: not retry_all
    for no in ("how many tests are there", "how many lines does a.py have", "how many functions are in a.py",
               "how many FIXME comments are in notes.md and net.py", "how many 'a$b' are there"):
        assert count(no) is None, no


def test_a_files_dates_are_rewritten_in_the_layout_asked_for_by_sed(tmp_path):
    """Year first, or last with the day or month first as the numbers over 12 tell; run by bash."""
    from actors.runs.agent.small.text_commands import date_command

    gigs = "when,hall\n17/05/2024,Corn Hall\n02/06/2024,Drill Shed\n"
    usa = "when\n05/17/2024\n06/02/2024\n"
    files = {"gigs.csv": gigs, "usa.csv": usa, "iso.csv": "2024-05-17 opens\n", "both.csv": "01/02/2024\n",
             "mixed.csv": "17/05/2024\n2024-06-02\n"}

    def rewritten(asked: str) -> str | None:
        found = text_commands(asked, files.get)
        if not found:
            return None
        (command,) = found["sed"]
        (tmp_path / "f").mkdir(exist_ok=True)
        for name, text in files.items():
            (tmp_path / "f" / name).write_text(text)
        subprocess.run(["bash", "-c", command], cwd=tmp_path / "f", check=True)
        name = next(n for n in files if n in asked)
        return (tmp_path / "f" / name).read_text()

    assert rewritten("switch the dates in gigs.csv over to YYYY-MM-DD") == \
        "when,hall\n2024-05-17,Corn Hall\n2024-06-02,Drill Shed\n"
    assert rewritten("make the dates in usa.csv ISO 8601") == "when\n2024-05-17\n2024-06-02\n"
    assert rewritten("dates in iso.csv as dd/mm/yyyy please") == "17/05/2024 opens\n"
    assert rewritten("change the dates in gigs.csv to mm/dd/yyyy") == \
        "when,hall\n05/17/2024,Corn Hall\n06/02/2024,Drill Shed\n"
    for no in ("dates in both.csv to YYYY-MM-DD",  # which is the day is not told
               "dates in mixed.csv to YYYY-MM-DD",  # two layouts
               "dates in iso.csv to YYYY-MM-DD",  # already so
               "dates in gigs.csv to YYYY-DD-DD"):
        assert rewritten(no) is None, no
    assert date_command("x.csv", "no dates\n", (("y", "m", "d"), "-")) is None


def test_lines_taken_out_or_tidied_all_alike_are_one_command_run_by_bash(tmp_path):
    text = "alpha  \n\nbeta DEBUG x\nalpha  \n   \nDEBUGGER y\ngamma\n"

    def tidied(asked: str) -> str | None:
        found = text_commands(asked, {"notes.txt": text}.get)
        if not found:
            return None
        ((_, (command,)),) = found.items()
        (tmp_path / "notes.txt").write_text(text)
        subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"], command  # no file left beside it
        return (tmp_path / "notes.txt").read_text()

    assert tidied("remove the blank lines from notes.txt") == "alpha  \nbeta DEBUG x\nalpha  \nDEBUGGER y\ngamma\n"
    assert tidied("strip the trailing whitespace in notes.txt") == \
        "alpha\n\nbeta DEBUG x\nalpha\n\nDEBUGGER y\ngamma\n"
    assert tidied("dedupe notes.txt") == "alpha  \n\nbeta DEBUG x\n   \nDEBUGGER y\ngamma\n"  # blank lines stay
    assert tidied("delete every line that contains DEBUG in notes.txt") == \
        "alpha  \n\nalpha  \n   \nDEBUGGER y\ngamma\n"
    assert tidied("get rid of lines with 'DEBUG' in notes.txt") == "alpha  \n\nalpha  \n   \nDEBUGGER y\ngamma\n"
    for no in ("remove the DEBUG line from notes.txt", "what are the blank lines in notes.txt for?",
               "delete lines with a$b from notes.txt"):
        assert tidied(no) is None, no


def test_a_files_lines_are_numbered_with_the_mark_the_request_writes(tmp_path):
    (tmp_path / "peaks.txt").write_text("Etna\nFuji\n")
    read = lambda n: (tmp_path / n).read_text() if (tmp_path / n).is_file() else None  # noqa: E731
    dot = "perl -i -pe 's/^/$.. /' peaks.txt"
    for ask in ("number the lines in peaks.txt like 1. 2. 3. and so on", "add line numbers to peaks.txt"):
        assert text_commands(ask, read) == {"perl": [dot]}, ask
    assert text_commands("number each line of peaks.txt as 1) 2) 3)", read) == \
        {"perl": ["perl -i -pe 's/^/$.) /' peaks.txt"]}
    assert text_commands("how many lines are in peaks.txt", read) == {"wc": ["wc -l peaks.txt"]}
    subprocess.run(["bash", "-c", dot], cwd=tmp_path, check=True)
    assert (tmp_path / "peaks.txt").read_text() == "1. Etna\n2. Fuji\n"
