"""Amounts printed with a fixed number of decimals by one command (the f-string fields
after a currency sign given `:.2f`; actors/runs/agent/small/decimals_fix.py): run by the
real shell, then the code run, each amount printed with its places."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

CAFE = {
    "till.py": "from cafe.bill import print_bill\n\nprint_bill([('latte', 3), ('scone', 1)])\n",
    "cafe/__init__.py": "",
    "cafe/bill.py": ("PRICES = {'latte': 1.1, 'scone': 2.2}\n\n\ndef print_bill(order):\n    total = 0\n"
                     "    for item, n in order:\n        cost = PRICES[item] * n\n        total += cost\n"
                     "        print(f'{n} x {item}: $ {cost}')\n    print(f'TOTAL ${total} ({len(order)} items)')\n"),
    "cafe/stock.py": "def low(n):\n    print(f'only {n} left')\n",
}


def _tree(root: Path) -> None:
    write_tree(root, CAFE)


def _till(root: Path) -> str:
    return subprocess.run([sys.executable, "till.py"], cwd=root, capture_output=True, text=True).stdout


@pytest.mark.parametrize("ask, places", [
    ("the till shows $3.3000000000000003, I want money with 2 decimal places", 2),
    ("show the bill's amounts with two decimals", 2),
    ("make the totals print with 3 decimal places", 3),
])
def test_the_amounts_after_a_currency_sign_get_their_places(tmp_path, ask, places):
    _tree(tmp_path)
    assert _till(tmp_path) == "3 x latte: $ 3.3000000000000003\n1 x scone: $ 2.2\nTOTAL $5.5 (2 items)\n"
    (command,) = for_request(ask, tmp_path).whole["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    if places == 2:
        assert _till(tmp_path) == "3 x latte: $ 3.30\n1 x scone: $ 2.20\nTOTAL $5.50 (2 items)\n"
    else:
        assert _till(tmp_path) == "3 x latte: $ 3.300\n1 x scone: $ 2.200\nTOTAL $5.500 (2 items)\n"
    assert (tmp_path / "cafe/stock.py").read_text() == CAFE["cafe/stock.py"]


def test_other_requests_and_formatted_amounts_are_left_alone(tmp_path):
    _tree(tmp_path)
    for other in ("what does till.py print?", "add a muffin to the prices", "round the latte price up"):
        assert "sed" not in for_request(other, tmp_path).whole, other
    (tmp_path / "cafe/bill.py").write_text(CAFE["cafe/bill.py"].replace("{cost}", "{cost:.2f}")
                                           .replace("{total}", "{total:.2f}"))
    assert "sed" not in for_request("show the amounts with two decimals", tmp_path).whole


async def test_asked_for_two_decimals_the_first_round_does_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, CAFE)
    ask = "the bill should show money with 2 decimal places"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Amounts have two decimals now."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert _till(folder) == "3 x latte: $ 3.30\n1 x scone: $ 2.20\nTOTAL $5.50 (2 items)\n"
