"""A question about a script's command-line options answered by one grep of the
add_argument calls that build its parser, in the script and in the modules it hands the
parser to (actors/runs/agent/small/cli_flags.py): the command run by the real shell, and
at run level, on the scripted backend made to say it is small, the answer beginning with
what it printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

TOOL = {
    "resize.py": ("import argparse\n\nfrom opts.extra import add_quality\n\n"
                  "parser = argparse.ArgumentParser()\nparser.add_argument('image')\n"
                  "parser.add_argument('--width', type=int, default=640)\n"
                  "parser.add_argument(\"-k\", \"--keep-ratio\", action='store_true')\nadd_quality(parser)\n"
                  "args = parser.parse_args()\nprint(args)\n"),
    "opts/__init__.py": "",
    "opts/extra.py": "def add_quality(p):\n    p.add_argument('--quality', type=int, default=80)\n",
    "opts/other.py": "import argparse\n\nargparse.ArgumentParser().add_argument('--never')\n",
}


def _tree(root: Path) -> None:
    write_tree(root, TOOL)


def test_the_options_a_script_takes_are_listed_from_its_parser_and_the_modules_it_hands_it_to(tmp_path):
    _tree(tmp_path)
    asks = ("what flags does resize.py take?", "which options can I pass to resize.py",
            "list the command line arguments of resize.py", "what args does resize.py accept")
    (command,) = for_request(asks[0], tmp_path).whole["grep"]
    assert all(for_request(a, tmp_path).whole.get("grep") == [command] for a in asks)
    assert "opts/extra.py" in command and "opts/other.py" not in command
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == "image --width -k --quality\n"
    for no in ("add a --height flag to resize.py", "what does resize.py print?", "which flags does nothing.py take?"):
        assert "grep" not in for_request(no, tmp_path).whole, no


async def test_asked_for_a_scripts_flags_the_answer_begins_with_them(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, TOOL)
    ask = "what flags does resize.py take?"
    (command,) = for_request(ask, folder).whole["grep"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "image --width -k --quality"})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert d.backend.turns[1].reply_starts == ("image --width -k --quality",)
