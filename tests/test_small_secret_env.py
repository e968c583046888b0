"""A secret written in the code read from an environment variable instead, the variable
listed without its value in the example file the request names
(actors/runs/agent/small/secret_env.py): the request in several wordings, the command
run by the real shell (the secret never on its command line) and the code run after it
with the variable set; what it leaves alone; and at run level, on the scripted backend
made to say it is small, the first round held to it."""

from __future__ import annotations

import os
import subprocess
import sys

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.secret_env import secret_commands
from tests.test_small_steps import runs_first, small_project
from tests.trees import one_command, write_tree

SECRET = "sk_live_4f9a0c2b7e"
FILES = {"mailer/__init__.py": "",
         "mailer/send.py": "\"\"\"Sends the newsletter.\"\"\"\n\nfrom __future__ import annotations\n\nimport json\n\n"
                           f"SMTP_PASSWORD = '{SECRET}'\nHOST = 'mail.example.test'\n\n\ndef login():\n"
                           "    return json.dumps({'host': HOST, 'password': SMTP_PASSWORD})\n",
         "show.py": "from mailer.send import login\n\nprint(login())\n"}
ASKED = ("the smtp password is hardcoded in mailer/send.py, read it from a MAILER_PASS env variable instead and "
         "add it to .env.example", "move the password out of mailer/send.py into an environment variable MAILER_PASS, "
         "with an .env.example listing it (no real value)")


def test_the_secret_is_read_from_the_environment_and_listed_without_its_value(tmp_path):
    write_tree(tmp_path, FILES)
    command = one_command(tmp_path, ASKED, "sed")
    assert SECRET not in command
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout == ("mailer/send.py reads SMTP_PASSWORD from the environment variable MAILER_PASS now. "
                           ".env.example lists it, without its value.\n")
    code = (tmp_path / "mailer/send.py").read_text()
    assert SECRET not in code and code.index("from __future__") < code.index("import os")
    assert (tmp_path / ".env.example").read_text() == "MAILER_PASS=\n"
    env = {**os.environ, "MAILER_PASS": "from-env"}
    ran = subprocess.run([sys.executable, "show.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert ran.stdout == '{"host": "mail.example.test", "password": "from-env"}\n'
    assert "sed" not in for_request(ASKED[0], tmp_path).whole  # nothing left to move


def test_what_it_leaves_alone():
    texts = lambda: list(FILES.items())  # noqa: E731
    assert secret_commands("the smtp password is hardcoded in mailer/send.py", ["mailer/send.py"], texts,
                           lambda _: None) == {}  # no environment said
    two = {**FILES, "mailer/keys.py": "API_KEY = 'k_1'\n"}
    assert secret_commands("read the secrets from env vars", [], lambda: list(two.items()), lambda _: None) == {}
    listed = {".env.example": "MAILER_PASS=\n"}
    assert secret_commands(ASKED[0], ["mailer/send.py"], texts, listed.get) == {}  # listed already
    late = {"b.py": "TOKEN = 't_9'\nimport json\n\nprint(json.dumps(TOKEN))\n"}  # the secret before the imports
    command = secret_commands("read the token in b.py from an env var", ["b.py"], lambda: list(late.items()),
                              lambda _: None)["sed"][0]
    assert command.startswith("sed -i -e '1i\\import os' -e '1c\\TOKEN = os.environ.get(\"TOKEN\", \"\")' b.py")
    plain = {"a.py": "NAME = 'kiosk'\nKEY_COUNT = 3\n"}
    assert secret_commands("use an env var for the api key in a.py", ["a.py"], lambda: list(plain.items()),
                           lambda _: None) == {}  # no secret written there


async def test_secret_the_first_round_runs_the_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, FILES)
    command = one_command(folder, ASKED[:1], "sed")
    told = "mailer/send.py reads SMTP_PASSWORD from the environment variable MAILER_PASS now."
    await runs_first(d, conv, ASKED[0], command, told)
    assert SECRET not in (folder / "mailer/send.py").read_text()
    assert conv.info.end_reason == "answered"
