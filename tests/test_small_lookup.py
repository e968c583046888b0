"""A small model's first search (actors/runs/agent/small/lookup.py): a change that
names no file, or a question about the code, begins with a search held to the
request's own words that the workspace has; then edit_file may name a file the search
found. The run-level tests use the scripted backend made to say it is small."""

from __future__ import annotations

import re

from llama_cpp.llama_grammar import LlamaGrammar

from actors.model.backends.generic_grammar import (
    REPLY_SCHEMA,
    generic_schema,
    reply_schema,
    schema_to_gbnf,
    strict_strings,
)
from actors.model.turns import ToolSpec
from actors.runs.agent.small import lookup, read_answers, request_forms
from actors.runs.agent.small.steps import small_parameters
from actors.tools.grep_search import GrepSearch
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state


def test_the_words_a_search_may_look_for_are_the_requests_own():
    words = lookup.request_words
    assert words("the dog's name is spelled dgo, please fix it") == [("dog", False), ("name", False),
                                                                       ("spelled", False), ("dgo", False)]
    # Written like a name in code: a capital after the first word, an underscore, a digit, a quoted word.
    assert words("Where is the Parser class defined?") == [("Parser", True)]
    assert words("what does `to_snake` return for 'AbcDef'?") == [("to_snake", True), ("AbcDef", True),
                                                                  ("return", False)]
    assert words("rename main.py's run_all to go") == [("rename", False), ("run_all", True)]  # not the file
    assert words("fix the typo in the code") == []  # only verbs of asking
    # Not what the request wants written: a word to put in place of another, a value to set.
    assert words("the title says Wellcome instead of Welcome, fix it") == [("title", False), ("says", False),
                                                                          ("Wellcome", True)]
    assert words("set MODE to 'dark' in the config") == [("MODE", True), ("config", False)]


def test_the_words_offered_are_those_the_workspace_has_names_first_then_the_rarest():
    pick = lookup.search_words
    words = [("dog", False), ("Parser", True), ("name", False), ("parse_it", True)]
    assert pick(words, {"dog": 1, "Parser": 3, "name": 9, "parse_it": 1}) == ["parse_it", "Parser"]
    assert pick(words, {"dog": 0, "Parser": 0, "name": 9, "parse_it": 0}) == ["name"]
    plain = [("alpha", False), ("beta", False), ("gamma", False), ("delta", False)]
    assert pick(plain, {"alpha": 8, "beta": 2, "gamma": 4, "delta": 5}) == ["beta", "gamma"]  # twice the rarest
    assert pick(plain, {}) == []


def test_the_files_a_word_is_in_are_counted_as_whole_words_or_parts_of_names_in_text_files(tmp_path):
    (tmp_path / "a.py").write_text("class Parser:\n    pass\n")
    (tmp_path / "b.py").write_text("from a import Parser  # parser\nparse_it = 1\n")
    (tmp_path / "c.bin").write_bytes(b"\0Parser")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "d.py").write_text("Parser\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "e.js").write_text("Parser\n")
    (tmp_path / "big.txt").write_text("Parser " * (lookup.LOOKUP_FILE_BYTES // 4))
    (tmp_path / "c.py").write_text("MAX_ROWS = 5\nrows-left = 1\nborrowsome = 2\n")
    counts = lookup.file_counts(tmp_path, ["Parser", "parse", "parse_it", "rows", "max", "nothing"])
    # A word is a whole word or a part of a name between underscores ("parse" in parse_it,
    # "rows" in MAX_ROWS), not inside another word or a dashed one.
    assert counts == {"Parser": 2, "parse": 1, "parse_it": 1, "rows": 1, "max": 1, "nothing": 0}
    assert lookup.file_counts(tmp_path / "missing", ["Parser"]) == {"Parser": 0}


def test_the_files_read_for_a_word_stop_at_a_budget_of_bytes(tmp_path, monkeypatch):
    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text("Parser\n" + "x" * 1000)
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 6}
    monkeypatch.setattr(lookup, "LOOKUP_BYTES", 2500)  # the third file passes it: none after is read
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 3}
    monkeypatch.setattr(lookup, "LOOKUP_FILES", 2)
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 2}


async def test_a_change_that_names_no_file_searches_first_then_edits_what_it_found(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"pets.py": "def pet():\n    return 'Rex the dgo'\n",
                                                     "other.py": "x = 1\n"})
    d.backend.push(call("grep_search", pattern="dgo"),
                   call("edit_file", path="pets.py", edits=[{"old_text": "    return 'Rex the dgo'",
                                                             "new_text": "    return 'Rex the dog'"}]),
                   {"text": "Fixed pets.py."})
    await conv.send_message("the dog's name is spelled dgo, please fix it")
    await wait_state(conv, "idle", "error")
    first, second, third = d.backend.turns
    assert first.tool_choice == "required"
    assert left_open(first) == {"grep_search"}
    (tool, shape), = first.shapes
    assert tool == "grep_search"
    assert shape["properties"] == {"pattern": {"enum": ["dgo"]}, "ignore_case": {"const": True}}
    # The search found pets.py: the next round is an edit there, unread, of the line found.
    assert second.tool_choice == "required"
    assert {t.name for t in second.tools} - {name for name, args in second.avoid if args is None} == {"edit_file"}
    edit = dict(second.shapes)["edit_file"]
    assert edit["properties"]["path"] == {"const": "pets.py"}
    assert edit["properties"]["edits"]["items"]["properties"]["old_text"]["enum"] == ["    return 'Rex the dgo'"]
    assert (folder / "pets.py").read_text() == "def pet():\n    return 'Rex the dog'\n"
    assert third.tool_choice == "none" and conv.info.end_reason == "answered"


async def test_a_value_asked_for_in_plain_words_is_set_on_the_name_they_write(real_tools, tmp_path):
    """"the row limit" is ROW_LIMIT: the search may look for its words, and the change
    round writes the value asked for on the line that names the most of them, in the file
    that has such a line (not the one that imports it)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {
        "limits.py": "ROW_LIMIT = 5\nPAGE_LIMIT = 5\nMAX_COLS = 5\n",
        "use.py": "from limits import ROW_LIMIT\n\nprint(ROW_LIMIT)\n"})
    d.backend.push(call("grep_search", pattern="limit", ignore_case=True),  # as its shape holds it
                   call("edit_file", path="limits.py", edits=[{"old_text": "ROW_LIMIT = 5",
                                                               "new_text": "ROW_LIMIT = 50"}]),
                   {"text": "Done."})
    await conv.send_message("raise the row limit from 5 to 50")
    await wait_state(conv, "idle", "error")
    first, second, _ = d.backend.turns
    (tool, shape), = first.shapes
    assert tool == "grep_search" and set(shape["properties"]["pattern"]["enum"]) == {"row", "limit"}
    assert shape["properties"]["ignore_case"] == {"const": True}
    edit = dict(second.shapes)["edit_file"]
    assert edit["properties"]["path"] == {"const": "limits.py"}
    item = edit["properties"]["edits"]["items"]["properties"]
    assert item == {"old_text": {"const": "ROW_LIMIT = 5"}, "new_text": {"enum": ["ROW_LIMIT = 50"]}}
    assert (folder / "limits.py").read_text() == "ROW_LIMIT = 50\nPAGE_LIMIT = 5\nMAX_COLS = 5\n"


async def test_a_search_that_finds_nothing_leaves_the_next_round_free(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"pets.py": "def pet():\n    return 'Rex the dgo'\n"})
    d.backend.push(call("grep_search", pattern="dgo", include="*.md"), {"text": "Not found."})
    await conv.send_message("the dog's name is spelled dgo, please fix it")
    await wait_state(conv, "idle", "error")
    # (its answer changed nothing a change was asked for: sent back once, a third round)
    assert [t.tool_choice for t in d.backend.turns][:2] == ["required", None]


async def test_a_question_about_the_code_searches_for_the_name_it_asks_about(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"read.py": "class Parser:\n    pass\n",
                                                "use.py": "from read import Parser\n"})
    d.backend.push(call("grep_search", pattern="Parser"), {"text": "read.py defines it."})
    await conv.send_message("where is the Parser class defined?")
    await wait_state(conv, "idle", "error")
    (tool, shape), = d.backend.turns[0].shapes
    assert tool == "grep_search" and shape["properties"] == {"pattern": {"enum": ["Parser"]}}
    # Where it is defined, found: the next round is the answer (SmolLM2 searched on, one
    # more word each time, or began an answer that looped).
    # …and it begins with the file that defines it (SmolLM2 copied the line of one that imports it).
    assert d.backend.turns[1].tool_choice == "none" and d.backend.turns[1].reply_starts == ("read.py",)
    assert conv.info.end_reason == "answered"
    schema = reply_schema(d.backend.turns[1].reply_starts)
    pattern = schema["properties"]["response"]["pattern"]
    assert re.fullmatch(pattern, "read.py:1:class Parser:") and not re.fullmatch(pattern, "use.py has it")
    assert not re.fullmatch(pattern, 'read.py says "x"')  # no quote: it would end the JSON string
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)
    assert reply_schema(()) == REPLY_SCHEMA
    assert lookup.answers_where("where's pick defined", _PICKED, "pick")
    assert lookup.answers_where("which file uses first_word", "use.py:4:def first_word(s):\n", "first_word")
    many = _PICKED + "c.py:1:x = pick\nd.py:2:y = pick\n"
    assert lookup.answers_where("where is pick defined?", many, "pick")  # defined in one file, used in many
    assert not lookup.answers_where("where is it used?", many, "it")  # no line defines it: four files
    assert not lookup.answers_where("what does pick return", _PICKED, "pick")  # not a where-question
    assert not lookup.answers_where("where is pick defined?", "", "pick")  # found nothing


async def test_a_where_question_is_a_question_whatever_example_is_nearest(real_tools, tmp_path):
    """"where's X defined" read as nearest the edit example: its search found the place
    and the next round edited there. A request that begins as a where-question searches,
    then answers."""
    for where in ("where's couple defined", "Where is Parser", "which files use it", "where does it say so",
                  "In which file is LIMIT set?", "can you tell me where the parser lives", "find where x is defined",
                  "what file has main"):
        assert request_forms.where_question(where), where
    for no in ("whereas it says so, fix it", "wherever it is, delete it", "fix it where it says Helo"):
        assert not request_forms.where_question(no), no
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"joint.py": "def couple_parts(a, b):\n    return a + b\n",
                                                "yard.py": "from joint import couple_parts\n"})
    d.backend.push(call("grep_search", pattern="couple_parts"), {"text": "In joint.py."})
    await conv.send_message("where's couple_parts defined")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert left_open(first) == {"grep_search"}
    assert second.tool_choice == "none" and second.reply_starts == ("joint.py",)
    assert conv.info.end_reason == "answered"


async def test_a_question_whose_search_found_its_place_reads_the_file_before_it_answers(real_tools, tmp_path):
    """Asked what code does, the search shows one line of it: the next round reads the
    file the search found (where the name is defined first, or, asked what calls it,
    where it is used first), and the round after is the answer. Asked where, the search's files
    are the answer: no read is led."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {
        "pick.py": "def pick(items):\n    if not items:\n        return None\n    return items[0]\n",
        "use.py": "from pick import pick\n\n\ndef first_word(s):\n    return pick(s.split())\n"})
    d.backend.push(call("grep_search", pattern="pick"), call("read_file", path="pick.py"),
                   {"text": "It returns None."})
    await conv.send_message("what does pick return when the list is empty?")
    await wait_state(conv, "idle", "error")
    first, second, third = d.backend.turns
    assert second.tool_choice == "required"
    assert {t.name for t in second.tools} - {name for name, args in second.avoid if args is None} == {"read_file"}
    assert dict(second.shapes)["read_file"]["properties"] == {"path": {"enum": ["pick.py", "use.py"]}}
    assert third.tool_choice == "none" and conv.info.end_reason == "answered"  # read, it answers
    assert lookup.to_read("which function calls pick", _PICKED, "pick") == \
        ["use.py", "pick.py"]
    for no_read in ("where is pick defined?", "which file has pick"):
        assert lookup.to_read(no_read, _PICKED, "pick") == [], no_read
    many = _PICKED + "c.py:1:pick\nd.py:2:pick\n"
    assert lookup.to_read("what does pick return", many, "pick") == []  # found in too many files to read


_PICKED = "pick.py:1:def pick(items):\nuse.py:1:from pick import pick\nuse.py:5:    return pick(s.split())\n"


async def test_no_word_the_workspace_has_leaves_the_search_free(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"pets.py": "x = 1\n"})
    d.backend.push(call("grep_search", pattern="zebra"), {"text": "Nothing has zebra."})
    await conv.send_message("where is the zebra?")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert first.tool_choice == "required" and list(dict(first.shapes)) == ["grep_search"]
    held = dict(first.shapes)["grep_search"]["properties"]  # the pattern free, only its include held
    assert "enum" not in held["pattern"] and held["include"] == {"enum": ["*.py"]}


def test_the_held_search_is_a_grammar_llama_cpp_takes():
    tool = GrepSearch()
    spec = small_parameters(ToolSpec(tool.name, tool.description, tool.parameters))
    for words in (["limit", "row"], ["Parser"]):
        shape = lookup.search_shape(spec.parameters, words)
        assert shape is not None and ("ignore_case" in shape["properties"]) == (words[0] == "limit")
        schema = generic_schema((spec,), required=True, strict=True, shapes=((tool.name, shape),))
        LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)


async def test_files_named_by_their_kind_with_no_word_to_search_for_are_listed_first(real_tools, tmp_path):
    """"the .py files" where no word of the request is in a file: the first round lists
    the files of that kind (a search would have had nothing to look for; SmolLM2 looked
    for the worked example's values), under the folder named, if one."""
    assert lookup.kind_patterns("put the names of the .py files in parts/ into names.txt") == ["parts/**/*.py"]
    assert lookup.kind_patterns("how many .md files are there") == ["*.md"]
    assert lookup.kind_patterns("fix the bug") == []
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"aa.py": "x = 1\n", "bb.py": "y = 2\n", "cc.csv": "a,b\n"})
    d.backend.push(call("file_glob_search", include="*.py"), {"text": "aa.py and bb.py."})
    await conv.send_message("which .py files are there")  # (how many: counted, test_small_workspace_commands)
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"file_glob_search"}
    assert dict(first.shapes)["file_glob_search"]["properties"] == {"include": {"enum": ["*.py"]}}
    (card,) = cards(conv)
    assert "aa.py" in card.result and "bb.py" in card.result and "cc.csv" not in card.result


async def test_a_question_answered_by_a_name_in_the_file_read_begins_with_it(real_tools, tmp_path):
    """Asked which function calls a name, the file that calls it is read, and the answer
    begins with a function whose body calls it (SmolLM2 answered about something else in
    the file); asked what exception a function raises, with one it raises, the one the
    request's words name most (read_answers.answer_starts)."""
    def facts(asked: str, text: str, name: str) -> tuple[str, ...]:
        return read_answers.answer_facts(asked, text, name)[1]

    src = ("class GateShut(Exception):\n    pass\n\n\ndef lift(x):\n    return x\n\n\n"
           "def cross(pier, load):\n    if pier == 'east':\n        raise KeyError(pier)\n"
           "    if load > 9:\n        raise GateShut(load)\n    return lift(load)\n\n\ndef idle():\n    return 0\n")
    assert facts("which function calls lift", src, "lift") == ("cross",)
    assert facts("what exception does cross raise when the load is too big?", src,
                                      "cross") == ("GateShut",)
    assert facts("what errors can cross raise", src, "cross") == ("KeyError", "GateShut")
    assert facts("what does cross return", src, "cross") == ()
    assert facts("which function calls lift", "def (:", "lift") == ()
    # What a class is made from, what a function takes, what methods a class has
    kinds = ("from mod import Base\n\n\nclass Plain:\n    pass\n\n\nclass Boat(Base, mod.Mixin):\n"
             "    def __init__(self, keel, mast=2):\n        pass\n\n    def sail(self):\n        pass\n\n\n"
             "def moor(boat, *, rope):\n    return rope\n")
    assert facts("what's Boat a subclass of?", kinds, "Boat") == ("Base", "mod.Mixin")
    assert facts("what does Boat inherit from", kinds, "Boat") == ("Base", "mod.Mixin")
    assert facts("what is the parent class of Plain", kinds, "Plain") == ("object",)
    assert facts("what's Hull a subclass of?", kinds, "Hull") == ()  # not defined here
    assert facts("what arguments does moor take", kinds, "moor") == ("boat, rope",)
    assert facts("which parameters does Boat take?", kinds, "Boat") == ("keel, mast",)
    assert facts("how many arguments does moor take", kinds, "moor") == ("2",)
    assert facts("what methods does Boat have", kinds, "Boat") == ("__init__, sail",)
    assert facts("what does Boat do", kinds, "Boat") == ()
    values = ("LIMIT = 40\nNAME: str = 'dock'\n\n\nclass Pier:\n    def __init__(self, depth=3.5, *, tide='low'):\n"
              "        self.berths = [1, 2]\n")
    assert facts("what's LIMIT set to?", values, "LIMIT") == ("40",)
    assert facts("what is the value of NAME", values, "NAME") == ("'dock'",)
    assert facts("what are berths initialised to", values, "berths") == ("[1, 2]",)
    assert facts("what's the default for depth?", values, "depth") == ("3.5",)
    assert facts("what's tide's default value", values, "tide") == ("'low'",)
    assert facts("what's WIDTH set to?", values, "WIDTH") == ()
    # A name said another way: in another case, or as a part of the one written
    alike = 'PORT = 8080\n__version__ = "1.2"\nDEFAULT_TIMEOUT = 30\nself.max_port = 9\n'
    assert facts("what's the port set to", alike, "port") == ("8080",)  # PORT, not max_port
    assert facts("what's the version set to", alike, "version") == ('"1.2"',)
    assert facts("what is the default value of timeout", alike, "timeout") == ("30",)
    assert facts("what is the value of max", alike, "max") == ("9",)
    assert facts("what's the colour set to", alike, "colour") == ()
    # Each said in a sentence of its own (held to a bare name, SmolLM2 ran on into it)
    assert read_answers.answer_starts("what's Boat a subclass of?", kinds, "Boat") == \
        ("Boat is a subclass of Base. ", "Boat is a subclass of mod.Mixin. ")
    assert read_answers.answer_starts("how many arguments does moor take", kinds, "moor") == \
        ("moor takes 2 arguments. ",)
    assert read_answers.answer_starts("what's LIMIT set to?", values, "LIMIT") == ("LIMIT is set to 40. ",)
    assert read_answers.answer_starts("what does Boat do", kinds, "Boat") == ()
    doing = ('def total(xs):\n    """Add up the prices in xs\n\n    More."""\n    return sum(xs)\n\n\n'
             "def half(n):\n    return n / 2\n")
    assert read_answers.answer_starts("what does total do?", doing, "total") == ("total: Add up the prices in xs. ",)
    assert read_answers.answer_starts("what does half return", doing, "half") == ("half: returns n / 2. ",)
    assert read_answers.answer_starts("what is half for", doing, "half") == ("half: returns n / 2. ",)
    assert read_answers.answer_starts("what does half return for 4", doing, "half") == ()  # (called: calling.py)
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"locks.py": "def lift(x):\n    return x\n",
                                                "canal.py": "from locks import lift\n\n\ndef idle():\n"
                                                            "    return 0\n\n\ndef cross(n):\n    return lift(n)\n"})
    d.backend.push(call("grep_search", pattern="lift"), call("read_file", path="canal.py"),
                   {"text": "cross calls it."})
    await conv.send_message("which function calls lift")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    assert third.tool_choice == "none" and third.reply_starts == ("cross calls lift. ",)
    assert conv.info.end_reason == "answered"


def test_asked_what_a_class_overrides_or_which_environment_variables_the_code_reads_ast_finds_it():
    """Asked what methods a class overrides, SmolLM2 listed all its methods; asked which
    environment variable to set, it read the file that matched and made up a bug. The
    methods a class it is made from defines too (that class in the file read or another),
    and the names read from `os.environ`, are found by the parser."""
    rides = "class Ride:\n    def start(self):\n        pass\n\n    def speed(self):\n        pass\n"
    wheel = ("from rides import Ride\n\n\nclass Wheel(Ride):\n    def spin(self):\n        pass\n\n"
             "    def speed(self):\n        pass\n\n\nclass Big(Wheel):\n    def start(self):\n        pass\n\n"
             "    def spin(self):\n        pass\n\n    def lights(self):\n        pass\n")
    starts = read_answers.answer_starts
    for ask in ("What methods does Wheel override", "which methods are overridden in Wheel?",
                "what does Wheel redefine from its parent"):
        assert starts(ask, wheel, "Wheel", lambda: [rides]) == ("Wheel overrides speed. ",), ask
    assert starts("what does Big override", wheel, "Big", lambda: [rides]) == ("Big overrides start, spin. ",)
    assert starts("what does Wheel override", wheel, "Wheel") == ()  # its parent's file not there
    assert starts("what does Ride override", rides, "Ride") == ()
    env = ("import os\nfrom os import getenv, environ\n\nHOOK = os.environ.get('HOOK_URL')\n"
           "TOKEN = os.environ['API_TOKEN']\nLEVEL = getenv('LOG_LEVEL', 'info')\nenviron.setdefault('TZ', 'UTC')\n")
    for ask in ("which env variable do i need to set so the alerts get posted?",
                "what environment variables does this read", "what env vars are needed to run it"):
        assert starts(ask, env, "alerts") == \
            ("The code reads the environment variables HOOK_URL, API_TOKEN, LOG_LEVEL, TZ. ",), ask
    one = "import os\nURL = os.getenv('ONLY_URL')\n"
    assert starts("which environment variable does it need", "X = 1\n", "it", lambda: [one]) == \
        ("The code reads the environment variable ONLY_URL. ",)  # the file read reads none: the others
    assert starts("which environment variable does it need", "X = 1\n", "it") == ()
    assert starts("what does setup_env do", 'def setup_env():\n    """Load the settings."""\n', "setup_env") == \
        ("setup_env: Load the settings. ",)


async def test_asked_what_a_class_overrides_the_answer_begins_with_what_its_parent_in_another_file_has(
        real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {
        "fair/rides.py": "class Ride:\n    def speed(self):\n        return 3\n\n    def stop(self):\n        pass\n",
        "fair/wheel.py": "from fair.rides import Ride\n\n\nclass Wheel(Ride):\n    def speed(self):\n"
                         "        return 1\n\n    def lights(self):\n        pass\n"})
    d.backend.push(call("grep_search", pattern="Wheel"), call("read_file", path="fair/wheel.py"),
                   {"text": "Wheel overrides speed. It is faster."})
    await conv.send_message("What methods does Wheel override")
    await wait_state(conv, "idle", "error")
    third = d.backend.turns[2]
    assert third.tool_choice == "none" and third.reply_starts == ("Wheel overrides speed. ",)
    assert conv.info.end_reason == "answered"


def test_a_searchs_include_is_held_to_a_kind_of_file_the_workspace_has(tmp_path):
    """Left free, SmolLM2 filled grep_search's include with words of its own ("bold", then
    "bold_bold"), each search finding nothing: it is held to the kinds of file there."""
    for rel in ("a.py", "docs/b.md", "docs/c.md", ".hidden/d.rs", "Makefile"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    assert lookup.kinds_in(tmp_path) == ["*.md", "*.py"]
    tool = GrepSearch()
    spec = small_parameters(ToolSpec(tool.name, tool.description, tool.parameters))
    shape = lookup.include_shape(spec.parameters, lookup.kinds_in(tmp_path))
    assert shape is not None and shape["properties"]["include"] == {"enum": ["*.md", "*.py"]}
    assert shape["properties"]["pattern"] == spec.parameters["properties"]["pattern"]  # the pattern free
    schema = generic_schema((spec,), required=True, strict=True, shapes=((tool.name, shape),))
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)
    bare = lookup.include_shape(spec.parameters, [])  # no kind there: no include at all
    assert bare is not None and "include" not in bare["properties"]
    assert lookup.include_shape({"type": "object", "properties": {"pattern": {"type": "string"}}}, ["*.py"]) is None
