"""The whole commands computed from what the workspace's files hold: each module below
reads the request and the files it needs and gives the one command that does the job
(or none), shown and run as any command. `commands.for_request` offers them; this
gathers them, the workspace's text files read once for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from actors.runs.agent.small import steps
from actors.runs.agent.small.argv_commands import argv_commands
from actors.runs.agent.small.class_edits import class_commands
from actors.runs.agent.small.cli_flags import flag_commands
from actors.runs.agent.small.code_commands import code_commands
from actors.runs.agent.small.code_fixes import fix_commands
from actors.runs.agent.small.column_rename import column_commands
from actors.runs.agent.small.config_lookup import config_commands
from actors.runs.agent.small.cwd_commands import cwd_commands
from actors.runs.agent.small.data_slips import data_commands
from actors.runs.agent.small.dataclass_edits import dataclass_commands
from actors.runs.agent.small.dead_code import dead_commands
from actors.runs.agent.small.decimals_fix import decimals_commands
from actors.runs.agent.small.ending_commands import ending_commands
from actors.runs.agent.small.files_of import children_in, exists_in, is_dir_in, is_file_in, read_in, runs_in
from actors.runs.agent.small.folder_commands import folder_commands
from actors.runs.agent.small.fstrings import fstring_commands
from actors.runs.agent.small.gitignore_commands import gitignore_commands
from actors.runs.agent.small.housekeeping import Found, housekeeping_commands
from actors.runs.agent.small.import_cycles import cycle_commands
from actors.runs.agent.small.install_commands import install_commands
from actors.runs.agent.small.logging_edits import logging_commands
from actors.runs.agent.small.lookup import KIND, named_folders, text_files
from actors.runs.agent.small.markdown_commands import contents_commands
from actors.runs.agent.small.module_rename import rename_module_commands
from actors.runs.agent.small.move_code import move_commands
from actors.runs.agent.small.release_commands import release_commands
from actors.runs.agent.small.replace_commands import replace_commands
from actors.runs.agent.small.script_edits import script_commands
from actors.runs.agent.small.secret_env import secret_commands
from actors.runs.agent.small.slips import slip_commands
from actors.runs.agent.small.table_commands import table_commands
from actors.runs.agent.small.text_commands import occurrence_commands, text_commands
from actors.runs.agent.small.type_hints import hint_commands
from actors.runs.agent.small.workspace_commands import workspace_commands
from actors.tools.globs import walk


def computed_commands(asked: str, ws: Path) -> dict[str, list[str]]:
    """The whole commands of `asked` in `ws` computed from its files (programs to their
    commands): to count, append to, sort or tidy a text file (text_commands); to rename
    a folder's files to another case, put all it holds into another, pack it
    (folder_commands); to rename a name of code, make a number a constant, add a
    function, mend a missing colon (code_commands); to remove the empty or duplicate
    files or the spaces in names, or make scripts runnable (housekeeping); to bump the
    version (release_commands); to give a CSV file a column worked out from two
    (table_commands), or rename one and its name in the code that reads it
    (column_rename); to print a value of a JSON or TOML file (config_lookup); to take
    out or comment out a script's prints or give it a main guard (script_edits), or
    make them a logger's calls (logging_edits); to add
    type hints (type_hints); to give a class a `__repr__` (class_edits); to make
    formatted strings f-strings (fstrings); to replace text over files, give names a
    prefix or suffix, back a file up (replace_commands); to unpack an archive or answer
    how many files, the biggest, what a file imports (workspace_commands); to take out a
    function nothing calls or unused imports (dead_code); to sort the other way or show
    times on the other clock (code_fixes); to move a function into a new file
    (move_code); to list a script's command-line options (cli_flags); to give a Markdown
    file a table of contents (markdown_commands); to say what to pip install, or write a
    requirements file (install_commands); to change files' line endings
    (ending_commands); to have git ignore files (gitignore_commands); to make a script
    that runs only from its own folder open its files from there (cwd_commands); to
    rename a module or package and its imports (module_rename); to make a script read
    its file from its command line (argv_commands); to make a class a dataclass
    (dataclass_edits); to print amounts of money with two decimals (decimals_fix); to
    mend a classic slip of code reported as a bug (slips: the others, which say how, win
    over it), or a JSON file that does not parse (data_slips); to show which modules
    import each other (import_cycles); to read a secret written in the code from an
    environment variable (secret_env). Blocking: call it in a thread."""
    texts = _once(lambda: _texts(ws))
    named = [n for n in steps.file_names(asked) if is_file_in(ws, n)]
    folders = named_folders(asked)

    def read(rel: str) -> str | None:
        return read_in(ws, rel)

    def is_file(rel: str) -> bool:
        return is_file_in(ws, rel)

    def is_dir(rel: str) -> bool:
        return is_dir_in(ws, rel)

    def children(rel: str) -> list[str] | None:
        return children_in(ws, rel)

    return (slip_commands(asked, texts, named)  # first: any other that says how wins over it
            | data_commands(asked, texts)  # a JSON file said broken: over a slip of code
            | install_commands(asked, texts, is_file)
            | text_commands(asked, read)
            | occurrence_commands(asked, is_file, is_dir, list(dict.fromkeys(KIND.findall(asked))), folders,
                                  steps.file_names(asked))
            | folder_commands(asked, children)
            | code_commands(asked, named, texts, lambda n: exists_in(ws, n))
            | housekeeping_commands(asked, lambda: _found(ws), lambda n: _data(ws, n), folders,
                                    lambda n: runs_in(ws, n), named)
            | release_commands(asked, texts)
            | table_commands(asked, read)
            | column_commands(asked, read, texts)
            | config_commands(asked, read)
            | script_commands(asked, read)
            | logging_commands(asked, named, texts)  # prints made a logger's calls: over taking them out
            | hint_commands(asked, read, texts)
            | class_commands(asked, texts)
            | fstring_commands(asked, read)
            | replace_commands(asked, texts, children, is_file, folders)
            | workspace_commands(asked, is_file, is_dir, folders)
            | cycle_commands(asked, texts, named)  # of a circular import: over what a file imports
            | dead_commands(asked, texts, named)
            | fix_commands(asked, texts, named)
            | move_commands(asked, read, lambda n: exists_in(ws, n))
            | flag_commands(asked, read, texts)
            | contents_commands(asked, read)
            | cwd_commands(asked, texts, lambda n: exists_in(ws, n))
            | rename_module_commands(asked, texts, is_file, is_dir)
            | argv_commands(asked, read, is_file)
            | dataclass_commands(asked, texts)
            | decimals_commands(asked, texts)
            | ending_commands(asked, texts, named, [f for f in folders if is_dir(f)])
            | gitignore_commands(asked, read, folders, named)
            | secret_commands(asked, named, texts, read))


def _once(read: Callable[[], list[tuple[str, str]]]) -> Callable[[], list[tuple[str, str]]]:
    """`read`, called the first time only: the workspace's text files walked once."""
    kept: list[list[tuple[str, str]]] = []

    def texts() -> list[tuple[str, str]]:
        if not kept:
            kept.append(read())
        return kept[0]
    return texts


def _found(ws: Path) -> list[Found]:
    """The workspace's files and folders, none hidden nor in a hidden folder, no link
    (housekeeping.Found); none where it cannot be walked. Blocking."""
    try:
        return [Found(e.path, e.is_dir, e.size) for e in walk(ws, prune=_hidden)
                if not e.is_link and (e.is_dir or e.is_file) and not _hidden(e.path)]
    except OSError:
        return []


def _hidden(rel: str) -> bool:
    """Whether the entry `rel` is hidden (its name begins with a dot)."""
    return rel.rsplit("/", 1)[-1].startswith(".")


def _data(ws: Path, rel: str) -> bytes | None:
    """The bytes of the workspace's file `rel` (none where it cannot be read). Blocking."""
    try:
        return (ws / rel).read_bytes()
    except OSError:
        return None


def _texts(ws: Path) -> list[tuple[str, str]]:
    """The workspace's text files (lookup.text_files), none where it cannot be walked."""
    try:
        return list(text_files(ws))
    except OSError:
        return []
