"""A question about a value in a settings file the request names (actors/runs/agent/
small/config_lookup.py): the key path read off the request's words, the value printed by
the real interpreter, and at run level, on the scripted backend made to say it is small,
held in the first round and the answer begun with what it printed."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.config_lookup import config_commands, key_path
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

CONF = json.dumps({"db": {"host": "minnow", "port": 5433}, "verbose": False, "maxRetries": 4,
                   "hosts": [{"name": "a"}]}, indent=2) + "\n"
TOML = '[tool.app]\nmax_retries = 6\nname = "heron"\n\n[owner]\nname = "ida"\n'


def _print(root: Path, command: str) -> str:
    return subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_the_value_a_question_says_is_printed_from_the_file(tmp_path):
    (tmp_path / "conf.json").write_text(CONF)
    (tmp_path / "app.toml").write_text(TOML)
    read = lambda n: (tmp_path / n).read_text() if (tmp_path / n).is_file() else None  # noqa: E731
    for ask, value in (("What is the db's host in conf.json?", "minnow"),
                       ("which port does the db use in conf.json", "5433"),
                       ("is verbose on in conf.json", "False"), ("what's max retries set to in conf.json", "4"),
                       ("what's the app's max retries in app.toml", "6"),
                       ("who is the owner's name in app.toml", "ida")):
        (command,) = config_commands(ask, read)["python3"]
        assert _print(tmp_path, command) == value, ask
    for no in ("set verbose to true in conf.json", "what's the name in app.toml",  # two names said as much
               "what's the colour in conf.json", "what is in conf.json", "what's the host in other.json"):
        assert config_commands(no, read) == {}, no
    assert key_path("the name", json.loads(CONF)) is None  # only in a list: not a plain path


async def test_asked_a_settings_value_the_first_round_prints_it_and_the_answer_begins_with_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"conf.json": CONF})
    ask = "What is the db's host in conf.json?"
    (command,) = for_request(ask, folder).whole["python3"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "minnow is the host."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, command.replace('"', '\\"')) and not re.fullmatch(pattern, "cat conf.json")
    assert second.reply_starts == ("minnow",)
    assert conv.info.end_reason == "answered"
