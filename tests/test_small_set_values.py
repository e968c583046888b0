"""A small model's edit held to write a value the request asks to be set
(actors/runs/agent/small/set_values.py, applied to steps.edit_shape by the leader)."""

from __future__ import annotations

import jsonschema
from llama_cpp.llama_grammar import LlamaGrammar

from actors.model.backends.generic_grammar import generic_schema, schema_to_gbnf, strict_strings
from actors.model.turns import ToolSpec
from actors.runs.agent.small import lookup, set_values, steps
from actors.tools.files import EditFile, WriteFile

SETTINGS = "MODE = 'light'\nLEVEL = 3\nOWNER = 'sam'\n"
ASKED = "in settings.py set MODE to 'dark' and LEVEL to 12"


def held(text: str = SETTINGS, asked: str = ASKED, *, removing: bool = False) -> dict:
    files = [("settings.py", text)]
    values = steps.target_values(asked)
    shape = set_values.hold_values(steps.edit_shape(files, removing=removing), dict(files), values,
                                   set_values.request_words(asked, values))
    assert shape is not None
    return shape


def fits(shape: dict, old: str, new: str, path: str = "settings.py") -> bool:
    """Whether an edit of `path`, `old` to `new`, is one `shape` (edit_file's) takes."""
    try:
        jsonschema.validate({"path": path, "edits": [{"old_text": old, "new_text": new}]}, shape)
    except jsonschema.ValidationError:
        return False
    return True


def test_a_line_that_names_what_is_set_with_a_value_still_missing_written_in():
    shape = held()
    assert fits(shape, "MODE = 'light'", "MODE = 'dark'") and fits(shape, "LEVEL = 3", "LEVEL = 12")
    # Which value on which line stays the model's choice; nothing else is offered.
    assert fits(shape, "MODE = 'light'", "MODE = '12'") and fits(shape, "LEVEL = 3", "LEVEL = dark")
    for old, new in (("MODE = 'light'", "MODE = MODE"), ("MODE = 'light'", "MODE = 'light'"),
                     ("MODE = 'light'", "settings.py"), ("MODE = 'light'", "LEVEL = 12"),
                     ("OWNER = 'sam'", "OWNER = 'dark'"), ("MODE = 'light'", "MODE = 'dark' and more")):
        assert not fits(shape, old, new), (old, new)
    # One value set, the next change writes the other, and not over the one set.
    after = held(SETTINGS.replace("'light'", "'dark'"))
    assert fits(after, "LEVEL = 3", "LEVEL = 12") and not fits(after, "LEVEL = 3", "LEVEL = dark")
    assert not fits(after, "MODE = 'dark'", "MODE = '12'")


def test_the_lines_that_set_a_value_in_their_forms():
    assert set_values.set_lines("  port: 80", ["90"]) == ["  port: 90"]
    assert set_values.set_lines('  "quiet": false,', ["true"]) == ['  "quiet": true,']  # a JSON key, quoted
    assert set_values.set_lines('NAME = "a b",  # who', ["c"]) == ['NAME = "c",  # who']
    assert set_values.set_lines("x.y=1;", ["2", "1"]) == ["x.y=2;"]  # not the line itself
    assert set_values.set_lines("const A = 1 // one", ["2"]) == []  # `const A` is no one name
    for no_value in ("def f(x):", "print(x)", "# MODE = 1", "a = b + c"):
        assert set_values.set_lines(no_value, ["2"]) == [], no_value


def test_left_as_it_was_where_nothing_is_to_set_or_no_line_sets_it():
    plain = steps.edit_shape([("settings.py", SETTINGS)])
    assert held(asked="in settings.py fix the typo") == plain  # no value to set
    done = SETTINGS.replace("'light'", "'dark'").replace("3", "12")
    assert held(done) == steps.edit_shape([("settings.py", done)])  # both there already
    calls = "start(MODE)\nstop(LEVEL)\n"
    assert held(calls) == steps.edit_shape([("settings.py", calls)])  # no line sets a value
    assert held(removing=True) == steps.edit_shape([("settings.py", SETTINGS)], removing=True)
    # Several files: each branch held to its own file's missing values.
    files = [("settings.py", SETTINGS), ("other.py", "MODE = 'dark'\nLEVEL = 12\n")]
    both = set_values.hold_values(steps.edit_shape(files), dict(files), ["dark", "12"], {"mode", "level"})
    # A file that can take no value asked for (other.py holds them) is not offered beside
    # one that can.
    assert both is not None and both["properties"]["path"] == {"const": "settings.py"}
    assert "oneOf" in str(both["properties"]["edits"])


def test_the_held_edit_is_a_grammar_llama_cpp_takes():
    tool = EditFile()
    spec = ToolSpec(tool.name, tool.description, tool.parameters)
    schema = generic_schema((spec,), required=True, strict=True, shapes=((tool.name, held()),))
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)


def test_a_word_asked_for_in_place_of_another_is_put_on_the_lines_that_hold_the_other():
    assert set_values.swaps("the title says Wellcome instead of Welcome, fix it") == [("Wellcome", "Welcome")]
    assert set_values.swaps("please use Welcome instead of Wellcome") == [("Wellcome", "Welcome")]
    assert set_values.swaps("replace 'start' with 'begin' in run.py") == [("start", "begin")]  # quoted: any words
    assert set_values.swaps("replace every 'start' with 'begin'") == [("start", "begin")]
    assert set_values.swaps("Recieve should be Receive.") == [("Recieve", "Receive")]
    for none in ("change PORT to 9090", "change the title to Welcome", "replace start with begin",
                 "set MODE to 'dark'", "use it instead of that"):
        assert set_values.swaps(none, steps.target_values(none)) == [], none
    # Two numbers, the one there and the one wanted, after any of the ways people ask it
    assert set_values.swaps("the banner still says 2019, needs to be 2025") == [("2019", "2025")]
    assert set_values.swaps("change 2019 to 2025 in banner.html", ["2025"]) == [("2019", "2025")]
    assert set_values.swaps("bump the version from 1.2.0 to 1.3.0") == [("1.2.0", "1.3.0")]
    assert set_values.swaps("the timeout has to be 45s, not 30s") == []  # (`not`: which is there is not said)
    for none in ("copy from a.txt to b.txt", "move it from notes.md to notes.txt"):  # names alike after from: files
        assert set_values.swaps(none) == [], none
    numbers = set_values.hold_values(steps.edit_shape([("f.html", "<p>(c) 2019 Ada</p>\n<p>since 2019x</p>\n")]),
                                     {"f.html": "<p>(c) 2019 Ada</p>\n<p>since 2019x</p>\n"}, ["2025"],
                                     set_values.request_words("change 2019 to 2025", ["2025"]),
                                     set_values.swaps("change 2019 to 2025", ["2025"]))
    assert numbers is not None
    item = numbers["properties"]["edits"]["items"]
    assert item["properties"]["old_text"] == {"const": "<p>(c) 2019 Ada</p>"}  # a whole word: not `2019x`
    assert item["properties"]["new_text"] == {"enum": ["<p>(c) 2025 Ada</p>"]}
    text = "def title():\n    return 'Wellcome, ' + NAME\n\nWELLCOME = 1\n"
    files = [("page.py", text)]
    asked = "the title says Wellcome instead of Welcome, fix it"
    shape = set_values.hold_values(steps.edit_shape(files), dict(files), [], set_values.request_words(asked, []),
                                   set_values.swaps(asked))
    assert shape is not None

    def fits_here(old: str, new: str) -> bool:
        try:
            jsonschema.validate({"path": "page.py", "edits": [{"old_text": old, "new_text": new}]}, shape)
        except jsonschema.ValidationError:
            return False
        return True

    assert fits_here("    return 'Wellcome, ' + NAME", "    return 'Welcome, ' + NAME")
    for old, new in (("    return 'Wellcome, ' + NAME", "    return 'Wellcome, ' + NAME"),
                     ("    return 'Wellcome, ' + NAME", "    return 'Hi, ' + NAME"),
                     ("WELLCOME = 1", "WELCOME = 1"), ("def title():", "def title(): Welcome")):
        assert not fits_here(old, new), (old, new)
    # Once the word is put right, no line holds it: the edit is as steps.edit_shape gives it.
    fixed = [("page.py", text.replace("'Wellcome", "'Welcome"))]
    assert set_values.hold_values(steps.edit_shape(fixed), dict(fixed), [], set(), [("Wellcome", "Welcome")]) == \
        steps.edit_shape(fixed)


def test_the_line_that_writes_most_of_the_requests_words_in_its_names():
    """Asked in plain words, the names' parts count: "the upload size limit" is
    UPLOAD_SIZE_LIMIT (three words) before DISK_SIZE_LIMIT (two); a line that names none
    (`TIMEOUT`) is not offered, nor a file with no line to set beside one that has."""
    text = "DISK_SIZE_LIMIT = 9\nUPLOAD_SIZE_LIMIT = 9\nTIMEOUT = 9\nuploadRetries = 2\n"
    asked = "raise the upload size limit to 40"
    values = steps.target_values(asked)
    words = set_values.request_words(asked, values)
    assert {"upload", "size", "limit"} <= words and not words & {"the", "to", "40"}
    assert set_values.named("UPLOAD_SIZE_LIMIT = 9", words) == 3 and set_values.named("uploadRetries = 2", words) == 1
    files = [("conf.py", text), ("use.py", "from conf import UPLOAD_SIZE_LIMIT\n")]
    shape = set_values.hold_values(steps.edit_shape(files), dict(files), values, words)
    assert shape is not None and shape["properties"]["path"] == {"const": "conf.py"}
    item = shape["properties"]["edits"]["items"]["properties"]
    assert item == {"old_text": {"const": "UPLOAD_SIZE_LIMIT = 9"}, "new_text": {"enum": ["UPLOAD_SIZE_LIMIT = 40"]}}


def test_a_new_files_text_where_the_request_gives_it():
    given = set_values.given_content
    assert given("create docs/guide.md with a heading Welcome", "docs/guide.md") == "# Welcome\n"
    assert given("create guide.txt with a title Welcome", "guide.txt") == "Welcome\n"  # a heading only in Markdown
    assert given("Create a file hi.txt containing hello there", "hi.txt") == "hello there\n"
    assert given("make list.txt with the text 'eggs, milk'", "list.txt") == "eggs, milk\n"  # quoted: as it is
    assert given("write todo.txt that says call the bank.", "todo.txt") == "call the bank\n"
    for none in ("create a.md with a title Plan and a list of steps", "create xy.py with a function square",
                 "create notes.txt", "make log.txt containing " + "word " * 9):
        assert given(none, "a.md") is None, none
    shape = steps.write_shape({"type": "object", "properties": {"path": {"type": "string"},
                                                                 "content": {"type": "string"}}}, ["hi.txt"])
    held = set_values.hold_content(shape, "create hi.txt containing hello")
    assert held is not None and held["properties"]["content"] == {"enum": ["hello\n"]}
    assert set_values.hold_content(shape, "create hi.txt") == shape
    two = steps.write_shape(shape, ["hi.txt", "ho.txt"])  # two new files: which text is whose is not said
    assert set_values.hold_content(two, "create hi.txt and ho.txt containing hello") == two


FOUND = ("b.py:3:    # TODO: cache it\nsub/c.py:12: x = 1  # TODO: name\n\n---\nTotal matches: 2\n")


def test_a_new_file_asked_to_hold_every_one_of_something_holds_what_the_search_found():
    listing = lookup.found_listing
    assert listing("put every TODO into a new todos.md with file and line", FOUND) == \
        "b.py:3: # TODO: cache it\nsub/c.py:12: x = 1  # TODO: name\n"
    assert listing("list all the TODOs in todos.md", FOUND) is not None
    assert listing("write the first TODO into todos.md", FOUND) is None  # not every one: the model's own
    assert listing("put every TODO in todos.md", "\n---\nTotal matches: 0\n") is None  # none found
    cut = FOUND.replace("Total matches: 2", "Total matches: 300")  # some not shown: no list of them all
    assert listing("put every TODO in todos.md", cut) is None
    many = "".join(f"b.py:{n}: # TODO\n" for n in range(1, 42)) + "\n---\nTotal matches: 41\n"
    assert listing("put every TODO in todos.md", many) is None  # more than a round writes
    shape = steps.write_shape({"type": "object", "properties": {"path": {"type": "string"},
                                                                 "content": {"type": "string"}}}, ["todos.md"])
    held = set_values.hold_content(shape, "put every TODO into a new todos.md", listing("every", FOUND))
    assert held is not None and held["properties"]["content"] == {"enum": [listing("every", FOUND)]}
    given = set_values.hold_content(shape, "for every TODO, create todos.md containing none yet", listing("all", FOUND))
    assert given is not None and given["properties"]["content"] == {"enum": ["none yet\n"]}  # its own text first
    assert set_values.hold_content(shape, "put every TODO into a new todos.md") == shape  # no search yet
    assert listing("put every TODO in todos.md", "") is None


def test_the_held_write_is_a_grammar_llama_cpp_takes():
    tool = WriteFile()
    spec = steps.small_parameters(ToolSpec(tool.name, tool.description, tool.parameters))
    shape = set_values.hold_content(steps.write_shape(spec.parameters, ["docs/a.md"]),
                                    'create docs/a.md with a heading "Hi \\ there"')
    assert shape is not None and shape["properties"]["content"] == {"enum": ["# Hi \\ there\n"]}
    schema = generic_schema((spec,), required=True, strict=True, shapes=((tool.name, shape),))
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)


def test_lines_asked_to_be_commented_out_or_in_are_held_to_that():
    assert set_values.comment_asked("comment out the log calls in a.py") == "out"
    assert set_values.comment_asked("comment the debug line out") == "out"
    assert set_values.comment_asked("please uncomment the retry line") == "in"
    assert set_values.comment_asked("add a comment about the outage") is None
    assert set_values.comment_mark("src/app.ts") == "//" and set_values.comment_mark("Makefile") == "#"
    assert set_values.comment_mark("q.sql") == "--" and set_values.comment_mark("notes.txt") is None
    text = "def run(x):\n    log('start', x)\n    y = x * 2\n    log('done')\n    # log('old')\n    return y\n"
    asked = "comment out the log calls in job.py"
    files = [("job.py", text)]
    shape = set_values.hold_values(steps.edit_shape(files), dict(files), [], set_values.request_words(asked, []),
                                   [], set_values.comment_asked(asked))
    assert shape is not None
    # The lines that name the request's words, made comments at their indent; no other edit.
    assert fits(shape, "    log('start', x)", "    # log('start', x)", "job.py")
    assert fits(shape, "    log('done')", "    # log('done')", "job.py")
    for old, new in (("    y = x * 2", "    # y = x * 2"), ("    log('done')", "    log('done')}"),
                     ("    # log('old')", "    # # log('old')")):
        assert not fits(shape, old, new, "job.py"), (old, new)
    back = set_values.comment_lines(text.splitlines(), "job.py", frozenset({"log", "old"}), "in")
    assert back == {"    # log('old')": "    log('old')"}
    # The job stays open while a line to comment is not: one line a change.
    assert steps.still_open(asked, [], {"job.py"}.__contains__, {"job.py": text}.get)
    done = text.replace("    log(", "    # log(")
    assert not steps.still_open(asked, [], {"job.py"}.__contains__, {"job.py": done}.get)
