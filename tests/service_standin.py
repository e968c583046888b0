"""A stand-in for a service manager's program (systemctl, launchctl), for the service
tests: CI has no user session, so only the manager is stood in; the files are real.

Run as `python service_standin.py NAME ARGS...` by a script named NAME on PATH. It
appends [NAME, *ARGS] as a JSON line to $STANDIN_RECORD and answers from the JSON file
$STANDIN_ANSWERS: {"ARGS joined by spaces": [exit status, stdout, stderr]}, where "*"
answers every command not listed; without an entry it prints nothing and exits 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main() -> int:
    name, args = sys.argv[1], sys.argv[2:]
    with open(os.environ["STANDIN_RECORD"], "a", encoding="utf-8") as record:
        record.write(json.dumps([name, *args]) + "\n")
    answers_file = os.environ.get("STANDIN_ANSWERS", "")
    answers = json.loads(Path(answers_file).read_text()) if answers_file else {}
    code, out, err = answers.get(" ".join(args), answers.get("*", [0, "", ""]))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
