"""A module or package renamed with its imports by one command (mv, then sed over the
files that import it; actors/runs/agent/small/module_rename.py): run by the real shell,
then the code run, printing what it printed before, with no file of the old name left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import clauses, for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

LOFT = {
    "pigeons/__init__.py": "from pigeons.rings import ring_of\n",
    "pigeons/rings.py": "def ring_of(bird):\n    return f'GB-{bird}'\n",
    "pigeons/lofts.py": "import pigeons.rings\n\n\ndef label(b):\n    return pigeons.rings.ring_of(b).lower()\n",
    "race.py": ("import json\n\nimport pigeons.lofts as lofts\nfrom pigeons import ring_of\nimport pigeons.rings\n\n"
                "print(ring_of('blue'), lofts.label('RED'), pigeons.rings.ring_of('x'), json.dumps(1))\n"),
    "notes.md": "pigeons are fast\n",
}
OUT = "GB-blue gb-red GB-x 1\n"


def _tree(root: Path) -> None:
    write_tree(root, LOFT)


def _race(root: Path) -> str:
    done = subprocess.run([sys.executable, "race.py"], cwd=root, capture_output=True, text=True)
    return done.stdout or done.stderr


@pytest.mark.parametrize("ask", [
    "rename package pigeons to doves, imports too",
    "rename pigeons to doves and fix the imports",
    "rename the module pigeons to doves everywhere",
    "rename pigeons to doves and sort out the imports in race.py",  # ("sort out": to mend, not to sort lines)
])
def test_a_package_and_its_imports_take_the_new_name_and_the_code_runs(tmp_path, ask):
    _tree(tmp_path)
    assert _race(tmp_path) == OUT
    (command,) = for_request(ask, tmp_path).whole["mv"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert not (tmp_path / "pigeons").exists() and (tmp_path / "doves/rings.py").is_file()
    assert _race(tmp_path) == OUT
    assert "pigeons" not in "".join(p.read_text() for p in tmp_path.rglob("*.py"))
    assert (tmp_path / "notes.md").read_text() == LOFT["notes.md"]  # prose is not code


def test_sort_out_is_no_second_job_of_sorting_lines():
    assert clauses("rename pigeons to doves and sort out the imports in race.py") == [
        "rename pigeons to doves and sort out the imports in race.py"]
    assert len(clauses("rename pigeons to doves and sort race.txt")) == 2


def test_a_module_file_too_and_what_is_left_alone(tmp_path):
    _tree(tmp_path)
    (tmp_path / "util.py").write_text("def two():\n    return 2\n")
    (tmp_path / "use.py").write_text("import util\nfrom util import two\n\nprint(util.two() + two())\n")
    (command,) = for_request("rename the util module to helpers and fix the imports", tmp_path).whole["mv"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert subprocess.run([sys.executable, "use.py"], cwd=tmp_path, capture_output=True, text=True).stdout == "4\n"
    # Taken already, not a module, a string with the name and a dot, a form it cannot write again.
    for ask in ("rename pigeons to race and fix the imports", "rename notes to memo and fix the imports"):
        assert "mv" not in for_request(ask, tmp_path).whole or "sed" not in for_request(ask, tmp_path).whole["mv"][0]
    (tmp_path / "log.py").write_text("import pigeons\n\nprint('pigeons.log')\n")
    assert "mv" not in for_request("rename pigeons to doves and fix imports", tmp_path).whole
    (tmp_path / "log.py").write_text("import json, pigeons\n")
    assert "mv" not in for_request("rename pigeons to doves and fix imports", tmp_path).whole


async def test_asked_to_rename_a_package_the_run_does_it_in_its_first_round(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, LOFT)
    ask = "rename pigeons to doves and fix the imports"
    (command,) = for_request(ask, folder).whole["mv"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Renamed pigeons to doves."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert _race(folder) == OUT and conv.info.end_reason == "answered"
