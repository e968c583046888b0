"""A CSV file given a column worked out from two of its own (actors/runs/agent/small/
table_commands.py): the command read off the file's header and the request's words,
run by the real shell, and at run level, on the scripted backend made to say it is
small, held in the first round (its quotes and escapes through the grammar's JSON)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.table_commands import table_commands
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

BULBS = "kind,bags,cost\nTulip,3,2.25\nCrocus,2,1.80\nAllium,1,2.10\n"


def _run(root: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)


def test_a_column_made_of_two_is_added_to_each_row_to_the_columns_decimals(tmp_path):
    (tmp_path / "bulbs.csv").write_text(BULBS)
    read = lambda n: (tmp_path / n).read_text() if (tmp_path / n).is_file() else None  # noqa: E731
    times = ("awk -F, -v OFS=, 'NR==1{print $0,\"total\";next}{printf \"%s,%.2f\\n\",$0,$2*$3}' bulbs.csv"
             " > bulbs.csv.tmp && cat bulbs.csv.tmp > bulbs.csv && rm bulbs.csv.tmp")
    for ask in ("give bulbs.csv a total column (bags x cost)", "add a total column to bulbs.csv: bags times cost",
                "put a new total column in bulbs.csv with the product of bags and cost"):
        assert table_commands(ask, read) == {"awk": [times]}, ask
    assert "$3/$2" in table_commands("add a column called unit to bulbs.csv, cost divided by bags", read)["awk"][0]
    assert "$2+$3" in table_commands("add a 'both' column to bulbs.csv: bags plus cost", read)["awk"][0]
    for no in ("give bulbs.csv a cost column (bags x cost)",  # there already
               "give bulbs.csv a total column (bags x weight)",  # no such column
               "give bulbs.csv a total column (kind x cost)",  # not numbers
               "what's the total of bags in bulbs.csv?", "give plants.csv a total column (bags x cost)"):
        assert table_commands(no, read) == {}, no
    assert table_commands("give q.csv a total column (bags x cost)", lambda _: 'kind,bags,cost\n"A, B",1,2\n') == {}
    _run(tmp_path, times)
    assert (tmp_path / "bulbs.csv").read_text() == \
        "kind,bags,cost,total\nTulip,3,2.25,6.75\nCrocus,2,1.80,3.60\nAllium,1,2.10,2.10\n"
    assert not (tmp_path / "bulbs.csv.tmp").exists()


async def test_asked_for_a_worked_out_column_the_first_round_runs_the_awk(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"bulbs.csv": BULBS, "shed.txt": "by the gate\n"})
    ask = "give bulbs.csv a total column (bags x cost)"
    (command,) = for_request(ask, folder).whole["awk"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Added the total column."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    said = command.replace("\\", "\\\\").replace('"', '\\"')  # as the call's JSON writes it
    assert re.fullmatch(pattern, said) and not re.fullmatch(pattern, "touch by the gate")
    assert (folder / "bulbs.csv").read_text().splitlines()[1] == "Tulip,3,2.25,6.75"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
