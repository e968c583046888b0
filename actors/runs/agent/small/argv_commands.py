"""The whole command of a request to make a script take the file it reads from its
command line: the one file name it has written in (what it opens, or a name it gives a
path) read from `sys.argv[1]` instead, the old name kept for a run given none; and,
where the request also asks to run it on another file, that run after.

Asked to make a script take its file from the command line and run it on another,
SmolLM2-135M changed `total = 0` to `total = 0.0` and answered with the file's name.
Which file name the script has written in is its parser's to say, so the one command is
known:

    sed -i -e '1i\\import sys' \\
        -e "2s/'a.txt'/(sys.argv[1] if len(sys.argv) > 1 else 'a.txt')/" tally.py && python3 tally.py b.txt

None where the request names no script of the workspace, or the script names no file of
the workspace, or more than one.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE, path_literals
from actors.runs.agent.small.name_slips import import_line
from actors.runs.agent.small.slip_base import one_line

# The file given on the command line.
_ARGV = re.compile(
    r"\b(?:from|on|via|through|as\s+an?\s+arg\w*\s+on)\s+(?:the\s+)?command[\s-]*line\b|\bsys\.argv\b|\bargv\b|"
    r"\b(?:take|accept|read|get)s?\s+(?:the\s+|a\s+|its\s+)?(?:input\s+)?(?:file(?:name)?|path)\s+(?:as\s+|from\s+)"
    r"(?:an?\s+|the\s+)?(?:arg(?:ument)?|param(?:eter)?|cli)\b|"
    r"\bpass\s+(?:it\s+)?(?:the\s+|a\s+|any\s+)?(?:file(?:name)?|path)\b",
    re.IGNORECASE)
_RUN = re.compile(r"\b(?:run|try|test)\s+it\s+(?:on|with|against|for)\s+(?:the\s+)?`?(?P<file>[\w./-]+)`?",
                  re.IGNORECASE)


def argv_commands(asked: str, read: Callable[[str], str | None],
                  is_file: Callable[[str], bool]) -> dict[str, list[str]]:
    """The whole command that makes the one script the request names read its file from
    the command line (and runs it on the file it names to run it on); none otherwise."""
    if not _ARGV.search(asked):
        return {}
    scripts = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(scripts) != 1:
        return {}
    script = scripts[0]
    text = read(script) or ""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    if "argv" in text:
        return {}  # (it reads its command line already)
    folder = posixpath.dirname(script)
    literals = [(c, v) for c, v in path_literals(tree) if is_file(v) or is_file(posixpath.join(folder, v))]
    if len(literals) != 1:
        return {}
    arg, value = literals[0]
    lines = text.splitlines()
    if arg.lineno != arg.end_lineno or arg.end_col_offset is None:
        return {}
    said = lines[arg.lineno - 1][arg.col_offset:arg.end_col_offset]
    slip = one_line(script, arg.lineno, said, f"(sys.argv[1] if len(sys.argv) > 1 else {said})", "", frozenset(),
                    nth=lines[arg.lineno - 1][:arg.col_offset].count(said) + 1)
    if slip is None:
        return {}
    imported = any(isinstance(n, ast.Import) and any(a.name == "sys" and not a.asname for a in n.names)
                   for n in tree.body)
    at = import_line(tree)
    first = [] if imported else [f"-e '{at}a\\import sys'" if at else "-e '1i\\import sys'"]
    command = f"sed -i {' '.join([*first, *slip.edits])} {script}"
    run = _RUN.search(asked)
    if run is not None:
        other = _data_file(run.group("file"), value, folder, is_file)
        if other is not None:
            command += f" && python3 {script} {shlex.quote(other)}"
    return {"sed": [command]}


def _data_file(said: str, old: str, folder: str, is_file: Callable[[str], bool]) -> str | None:
    """The file the request says to run the script on: as written, or with the old
    file's extension ("march" for march.csv), from the top or the script's
    folder; None where there is none."""
    ext = posixpath.splitext(old)[1]
    for name in (said, said + ext):
        for where in (name, posixpath.join(folder, name)):
            if is_file(where):
                return where
    return None
