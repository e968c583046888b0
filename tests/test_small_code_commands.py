"""Whole commands for a rename of a name of code and a number made a constant
(actors/runs/agent/small/code_commands.py): read from the request and the files, run by
the real shell (GNU sed) in a test, and held in a run's first round. The run-level test
uses the scripted backend made to say it is small."""

from __future__ import annotations

import re
import subprocess
import sys

from actors.runs.agent.small.code_commands import code_commands, constant_command, rename_command
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

SHOP = {
    "shop/cart.py": "def add_up(items):\n    return sum(items)\n",
    "app.py": "from shop.cart import add_up\nimport shop.cart as c\n\nprint(add_up([1, 2]), c.add_up([3]))\n",
    "notes.md": "call add_up() for the sum; add_ups is another word\n",
    "other.py": "def add_upper(x):\n    return x\n",
}
RATES = ('"""Fees."""\nimport math\n\n\n@staticmethod\ndef fee(x):\n    return round(x * 0.25, 2)\n\n\n'
         'def note():\n    return f"{0.25 * 100:.0f}% fee"\n\n\nprint(fee(10), note(), math.pi > 3)\n')


def run_in(folder, command):
    return subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, text=True, check=True)


def test_a_rename_is_sed_over_every_file_that_writes_the_name(tmp_path):
    for rel, text in SHOP.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    texts = lambda: list(SHOP.items())  # noqa: E731
    (command,) = code_commands("rename the function add_up to total_of everywhere", [], texts)["sed"]
    assert command == "sed -i 's/\\badd_up\\b/total_of/g' shop/cart.py app.py notes.md"
    run_in(tmp_path, command)
    assert (tmp_path / "notes.md").read_text() == "call total_of() for the sum; add_ups is another word\n"
    assert (tmp_path / "other.py").read_text() == SHOP["other.py"]  # add_upper is another name
    out = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout == "3 3\n"
    # Only in a file the request names, where it names one
    assert code_commands("rename add_up to total_of in app.py", ["app.py"], texts) == \
        {"sed": ["sed -i 's/\\badd_up\\b/total_of/g' app.py"]}
    assert rename_command("add_up", "add_upper", SHOP.items()) is None  # ("other.py" has it: not in a file
    assert rename_command("add_up", "c", SHOP.items()) is None  # with add_up; app.py writes `c`)
    assert rename_command("add_up", "class", SHOP.items()) is None
    assert rename_command("missing", "x", SHOP.items()) is None
    for no in ("rename notes.md to notes.txt", "rename it", "what does add_up do"):
        assert code_commands(no, [], texts) == {}, no
    # A name that is a file or folder there is renamed by `mv`, not in the text
    assert code_commands("rename shop to store", [], texts, lambda rel: rel == "shop") == {}


def test_a_number_made_a_constant_is_named_before_the_code_and_written_by_its_name(tmp_path):
    (tmp_path / "fees.py").write_text(RATES)
    texts = lambda: [("fees.py", RATES), ("README.md", "fee is 0.25\n")]  # noqa: E731
    for asked in ("pull the 0.25 in fees.py out into a constant called FEE_RATE",
                  "make 0.25 a constant named FEE_RATE", "use a constant FEE_RATE for 0.25 in fees.py"):
        named = ["fees.py"] if "fees.py" in asked else []
        (command,) = code_commands(asked, named, texts)["sed"]
        assert command == "sed -i -e 's/\\b0\\.25\\b/FEE_RATE/g' -e '5i FEE_RATE = 0.25\\n' fees.py", asked
    run_in(tmp_path, command)
    text = (tmp_path / "fees.py").read_text()
    assert text.startswith('"""Fees."""\nimport math\n\n\nFEE_RATE = 0.25\n\n@staticmethod\ndef fee(x):\n')
    assert text.count("0.25") == 1 and text.count("FEE_RATE") == 3
    out = subprocess.run([sys.executable, "fees.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout == "2.5 25% fee True\n"
    assert constant_command("RATE", "0.25", "a.py", "x = '0.25'\ny = 0.25\n") is None  # in a string too
    assert constant_command("y", "0.25", "a.py", "x = 1\ny = 0.25\n") is None  # the name is taken
    assert constant_command("RATE", "0.25", "a.py", "import os\n") is None  # no code after the imports
    assert constant_command("RATE", "0.25", "a.py", "def (:\n") is None
    assert code_commands("pull 0.5 out into a constant called HALF", [], texts) == {}  # no file writes it


async def test_asked_to_rename_a_function_the_first_round_runs_the_whole_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, SHOP)
    command = "sed -i 's/\\badd_up\\b/total_of/g' app.py notes.md shop/cart.py"  # (in the walk's order)
    d.backend.push(call("exec_shell_command", command=command), {"text": "Renamed add_up to total_of."})
    await conv.send_message("Rename the function add_up to total_of everywhere.")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    # The pattern reads the JSON string's text (a backslash written twice), as llama.cpp's grammar does.
    assert re.fullmatch(pattern, command.replace("\\", "\\\\")) and not re.fullmatch(pattern, "sed -i s/a/b/ app.py")
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
    assert "add_up" not in (folder / "app.py").read_text() and "total_of" in (folder / "shop/cart.py").read_text()
    assert conv.info.end_reason == "answered"


def test_a_function_the_request_writes_whole_is_added_at_the_files_end(tmp_path):
    text = "def cube(x):\n    return x ** 3"  # (no line break at its end)
    (tmp_path / "m.py").write_text(text)
    texts = lambda: [("m.py", (tmp_path / "m.py").read_text())]  # noqa: E731
    for asked in ("Add a function mod(a, b) to m.py that returns a % b.",
                  "add a mod(a, b) function that returns a % b in m.py"):
        (command,) = code_commands(asked, ["m.py"], texts)["printf"]
        assert command == "printf '\\n\\n\\ndef mod(a, b):\\n    return a %% b\\n' >> m.py", asked
    run_in(tmp_path, command)
    assert (tmp_path / "m.py").read_text() == text + "\n\n\ndef mod(a, b):\n    return a % b\n"
    out = subprocess.run([sys.executable, "-c", "from m import mod, cube; print(mod(7, 3), cube(2))"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert out.stdout == "1 8\n"
    for no in ("add a function cube(x) to m.py that returns x",  # defined there already
               "add a function sq(x) to m.py that returns x *",  # no expression
               "add a function sq(x) to m.py that returns 'x'",  # a quote printf's would end at
               "add a function sq(x) that returns x * x",  # no file named
               "add a function sq(x) to m.py and n.py that returns x * x"):
        assert code_commands(no, [n for n in ("m.py", "n.py") if n in no], texts) == {}, no


def test_the_colon_python_says_is_missing_is_put_at_the_lines_end(tmp_path):
    from actors.runs.agent.small.code_commands import colon_command

    broken = "import sys\n\nfor n in range(3)   \n    print(n * 2)\n"
    (tmp_path / "loop.py").write_text(broken)
    texts = lambda: [("loop.py", (tmp_path / "loop.py").read_text()), ("fine.py", "x = 1\n")]  # noqa: E731
    for asked in ("loop.py fails with a syntax error, fix it", "fix the syntax error", "my script won't run"):
        assert code_commands(asked, ["loop.py"] if "loop.py" in asked else [], texts) == \
            {"sed": ["sed -i '3s/[[:space:]]*$/:/' loop.py"]}, asked
    run_in(tmp_path, "sed -i '3s/[[:space:]]*$/:/' loop.py")
    out = subprocess.run([sys.executable, "loop.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout == "0\n2\n4\n"
    assert colon_command("a.py", "x = 1\n") is None  # it parses
    assert colon_command("a.py", "x = (1,\n") is None  # another error
    assert colon_command("a.py", "if x  # note\n    pass\n") is None  # a comment on the line
    assert code_commands("what does loop.py print", [], texts) == {}
