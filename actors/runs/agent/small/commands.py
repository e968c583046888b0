"""The programs a small model's command may start with.

SmolLM2-135M's commands mostly failed before they ran: its first word was no program
(`rename`, `sudo` where there is none, a script's own name as if it were one, a
phrase of the file it had read), the shell answered "not found", and the run went on
from that. A command whose program is not there can only fail, whatever the job; so a
small model's command is held, by the grammar, to start with a program this machine
has: the usual ones of a workspace (files, text, the common interpreters and build
tools) that are on PATH, and any word of the person's request that names one; not
one that removes files unless the request asks for something to go, nor one that moves
them unless it asks to move or rename (guards.unasked_programs), nor a build tool where
the workspace has nothing for it to build. What follows the program is at least one
word (unless the program does something alone: `runs_alone`), words one blank apart
(one line, without a double quote or a backslash, so the grammar's JSON string needs
no escapes; single quotes do), none an option (a word that starts with `-`) unless
the request writes one, and a command that failed in the run is ruled out by the same
pattern (`command_shape`). Only the first program of a command is
held; the mode and the sandbox decide what runs, as for any model.

Options: of SmolLM2's commands kept from development runs, 78 of the 82 with an option
failed, mostly for an option the program has not (`mv -R`, `mkdir -b`, `cp -q`); of the
four that ran, one was useful (`ls -l`, which `ls` does as well) and one `rm -rf`.
"""

from __future__ import annotations

import posixpath
import re
import shutil
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import attrs

from actors.model.backends.generic_grammar import json_text_literal
from actors.model.backends.worked_examples import file_verbs
from actors.runs.agent.ledger import SHELL_TOOL
from actors.runs.agent.small import guards, steps
from actors.runs.agent.small.calling import call_commands
from actors.runs.agent.small.computed import computed_commands
from actors.runs.agent.small.files_of import is_dir_in, is_file_in, runs_in
from actors.runs.agent.small.lookup import KIND, named_folders
from actors.runs.agent.small.workspace_commands import with_kinds
from actors.tools.globs import walk

# The programs a workspace's commands usually start with: those on PATH are offered.
USUAL_PROGRAMS = (
    "ls", "cat", "head", "tail", "wc", "grep", "find", "sort", "uniq", "cut", "tr", "sed", "awk", "diff",
    "cp", "mv", "rm", "mkdir", "rmdir", "touch", "ln", "chmod", "echo", "printf", "pwd", "date", "du",
    "basename", "dirname", "realpath", "stat", "file", "tee", "xargs", "tar", "gzip", "gunzip", "zip", "unzip",
    "python3", "python", "pip", "pytest", "node", "npm", "npx", "deno", "bun", "ruby", "perl", "php", "lua",
    "java", "javac", "go", "cargo", "rustc", "gcc", "g++", "cc", "make", "cmake", "bash", "sh", "git",
)
# Shell words that are no file on PATH but always there.
BUILTINS = ("cd", "test")
# The usual programs that do something written alone (list, say where, build, test); the
# others, written alone, wait for input that never comes, print their usage or fail
# (SmolLM2 wrote `mkdir`, `bash`, `file` so, and answered from nothing). A program the
# request names and a script of the workspace may run alone: the person named them.
RUN_ALONE = frozenset({"ls", "pwd", "date", "du", "make", "pytest"})
# A build tool with nothing to build fails, whatever the job: each is offered only where
# the workspace has one of its files (asked to "make" something, SmolLM2 ran `make` with
# the request's words after it, where no Makefile is, five times in a run).
BUILD_FILES = {"make": ("Makefile", "makefile", "GNUmakefile"), "cmake": ("CMakeLists.txt",),
               "cargo": ("Cargo.toml",), "npm": ("package.json",)}
# The programs that do what a verb of files asks (worked_examples.file_verbs): asked to
# copy a file, SmolLM2 ran `mkdir` with the copy's name; to delete files, it searched.
VERB_PROGRAMS = {"copy": ("cp",), "duplicate": ("cp",), "backup": ("cp",), "cp": ("cp",),
                 "move": ("mv",), "rename": ("mv",), "mv": ("mv",),
                 "delete": ("rm", "rmdir"), "remove": ("rm", "rmdir"), "rm": ("rm",)}
# Beside them: what shows where the files are, and, where the request speaks of a folder,
# what makes it.
LOOKING = ("ls", "find")
_FOLDER = re.compile(r"\b(?:folders?|director(?:y|ies)|dirs?)\b|\w/(?=\s|$)", re.IGNORECASE)
# A word of the request that may name a program (`ruff`, `uv`, `clang-format`).
_PROGRAM_WORD = re.compile(r"(?<![\w./-])[a-z][a-z0-9+_-]{1,30}(?![\w./-])")
# A program's name as a pattern may hold it (a script of the workspace's: `./build.sh`).
_NAME = re.compile(r"(?:\./)?[A-Za-z0-9_+-][A-Za-z0-9_+.-]*(?:/[A-Za-z0-9_+-][A-Za-z0-9_+.-]*)*")
# The characters of a word after the program: no blank, double quote, backslash or
# control character. Words are one blank apart, none at the end: a command written
# again with one more blank is the same call (the ledger reads it so), and cannot be
# told apart from the one ruled out.
_WORD_CHARS = '^ "\\\\\\x00-\\x1f'
_WORD_CHAR = f"[{_WORD_CHARS}]"
# A word's first character, when no option may be written: not `-` either.
_FIRST_CHARS = _WORD_CHARS + "\\x2d"
# A command longer than this that failed is not ruled out by the pattern (its rules
# grow with its length); the run's own refusal of a call made again stays.
RULED_OUT_CHARS = 160


def programs(asked: str, found: Callable[[str], str | None] = shutil.which,
             unasked: Collection[str] = (), scripts: Collection[str] = (),
             has_file: Callable[[str], bool] = lambda _: True) -> list[str]:
    """The programs a small model's command may start with: the usual ones `found` on
    PATH, then the words of `asked` that name one, then `scripts` (the workspace's files
    the request names that may run, as `./NAME`); each once, none of `unasked`, and a
    build tool only where the workspace `has_file` one of its BUILD_FILES. A request to
    copy, move, rename or delete files (worked_examples.file_verbs) is held to the
    programs that do it (VERB_PROGRAMS), those that show where files are, and `mkdir`
    where it speaks of a folder."""
    out = [p for p in USUAL_PROGRAMS if found(p)]
    out += [w for w in dict.fromkeys(_PROGRAM_WORD.findall(asked)) if w not in out and found(w)]
    out += [b for b in BUILTINS if b not in out]
    out += [f"./{s.removeprefix('./')}" for s in scripts if not s.startswith(("/", "..", "-"))]
    doing = verb_programs(asked)
    wanted = doing | set(LOOKING) | ({"mkdir"} if _FOLDER.search(asked) else set())
    return [p for p in dict.fromkeys(out) if p not in unasked and (not doing or p in wanted)
            and (p not in BUILD_FILES or any(map(has_file, BUILD_FILES[p])))]


def verb_programs(asked: str) -> set[str]:
    """The programs that do what the request's verbs of files ask (VERB_PROGRAMS)."""
    return {p for v in file_verbs(asked) for p in VERB_PROGRAMS.get(v, ())}


@attrs.frozen
class Offered:
    """What a run's commands may be: the `programs` they may start with, and for some of
    them (`whole`) the whole commands they may be (`named_commands`)."""

    programs: list[str]
    whole: dict[str, list[str]] = attrs.field(factory=dict)

    @property
    def job_commands(self) -> frozenset[str]:
        """The whole commands that do the request's job (not a `mkdir` alone)."""
        return frozenset(c for p, cs in self.whole.items() if p != "mkdir" for c in cs)

    @property
    def does_job(self) -> bool:
        """Whether a whole command that does the request's job is known."""
        return bool(self.job_commands)


def for_request(asked: str, ws: Path | None, *, compose: bool = True) -> Offered:
    """`programs` for the request `asked` in the workspace `ws`: none that removes or
    moves files unasked (guards.unasked_programs), its scripts the request names, its
    build tools where their files are; and the whole commands of a request to copy, move
    or delete the files it names (`named_commands`), to keep what a script prints in a
    file (`output_commands`), asking what a function returns (calling.call_commands), or
    those computed from what its files hold (computed.computed_commands: these win over
    moving or removing a file whole); where it asks for two things or more (`clauses`)
    and each has one whole command, those one after another (`&&`, `compose`), in place
    of any that does one part only. Blocking: call it in a thread."""
    asked = with_kinds(asked)  # ("the log files": the .log files)
    starts = programs(asked, unasked=guards.unasked_programs(asked),
                      scripts=[n for n in steps.file_names(asked) if ws is not None and runs_in(ws, n)],
                      has_file=lambda n: ws is not None and is_file_in(ws, n))
    whole = {} if ws is None else named_commands(asked, lambda n: is_file_in(ws, n), lambda n: is_dir_in(ws, n),
                                                 lambda kind, under: files_of_kind(ws, kind, under))
    kept = {} if ws is None else (output_commands(asked, lambda n: is_file_in(ws, n)) | call_commands(asked, ws)
                                  | computed_commands(asked, ws))
    if ws is not None and not compose:  # a part of a request for two things: "…, then run it"
        kept |= run_commands(asked, lambda n: is_file_in(ws, n))
    if any(cs for p, cs in kept.items() if p != "mkdir"):  # what a file holds is changed, not the file moved
        whole = {}  # or removed (SmolLM2 moved a file asked to move a function out of it: `mv a.py b.py`)
    offered = Offered(starts, {p: cs for p, cs in whole.items() if p in starts or p == "mkdir"} | kept)
    parts = clauses(asked) if compose and ws is not None else []
    if len(parts) > 1:  # (where the whole request's commands each do one part only: one of them)
        each = [sorted(for_request(part, ws, compose=False).job_commands) for part in parts]
        named = {c for p, cs in whole.items() if p != "mkdir" for c in cs}  # (its names crossed: a part each)
        if all(len(cs) == 1 for cs in each) and len({cs[0] for cs in each}) == len(each) \
                and offered.job_commands <= {cs[0] for cs in each} | named and _apart([cs[0] for cs in each]):
            command = " && ".join(cs[0] for cs in each)
            offered = Offered(starts, {command.split(" ", 1)[0]: [command]})
    return offered


# Where a request asks for two things or more: "…, then …", "…; …", "… and then …", and
# "… and <a verb of a job> …" (an "and" between two nouns joins no jobs).
_JOB_VERB = (r"(?:put|add|append|write|delete|remove|rename|move|copy|count|sort(?!\s+(?:\w+\s+)?out\b)|make|create|"
             r"set|bump|change|update|"
             r"zip|tar|compress|archive|run|replace|get\s+rid|clear|tidy|clean|lower|upper|tell|show|list|print|"
             r"find|save|insert|drop|turn|convert|give|strip)\b")
_CLAUSE = re.compile(rf"\s*(?:[,;]?\s+and\s+then\s+|[,;]\s*then\s+|\s+then\s+(?={_JOB_VERB})|;\s*|"
                     rf"\.\s+(?:then\s+|also\s+|and\s+)?(?={_JOB_VERB})|,?\s+and\s+(?:also\s+)?(?={_JOB_VERB}))",
                     re.IGNORECASE)


def clauses(asked: str) -> list[str]:
    """The parts of a request that each ask for one thing, in order (`_CLAUSE`): one
    where it asks for one. A part that names one file at most and says "it" (or "that",
    "them") has it in place of the file the part before names ("sort a.txt, then count
    its lines": "count a.txt's lines"; after a move or copy, the name it is given)."""
    parts = [p.strip() for p in _CLAUSE.split(asked.strip()) if p and p.strip()]
    for i in range(1, len(parts)):
        before = steps.file_names(parts[i - 1])
        if before and len(steps.file_names(parts[i])) <= 1:  # ("rename it to b.txt": it is a.txt)
            it = _IT.search(parts[i])
            if it is not None:  # (after a move, copy or rename, "it" is the new name)
                name = before[-1] if verb_programs(parts[i - 1]) & {"mv", "cp"} else before[0]
                said = name + ("'s" if it.group(0).lower() == "its" else "")
                parts[i] = parts[i][:it.start()] + said + parts[i][it.end():]
    return parts


_IT = re.compile(r"\b(?:it|its|that|them|this)\b(?!\s*(?:is|was|'s)\b)", re.IGNORECASE)


def _apart(commands: list[str]) -> bool:
    """Whether each command may run after those before it as it was computed: none names
    a path an earlier one moves or removes (each was computed on the files as they are)."""
    gone: set[str] = set()
    for command in commands:
        words = set(re.findall(r"[\w./-]+", command))
        if words & gone:
            return False
        for part in command.split("&&"):
            program, *args = part.split()
            if program in ("mv", "rm", "rmdir"):
                gone |= {a for a in (args[:-1] if program == "mv" else args) if not a.startswith("-")}
    return True


# A request to run a script and keep what it prints in a file ("run x.py and save what it
# prints to out.txt"): asked so, SmolLM2 ran `mkdir out.txt`, or wrote the file from
# nothing. The interpreter a script of each kind runs with.
_RUNS = re.compile(r"\b(?:run|runs|running|execute|executing)\b", re.IGNORECASE)
_KEEPS = re.compile(r"\b(?:save|saves|saving|put|write|writes|store|keep|dump|send|copy|redirect)\b", re.IGNORECASE)
_PRINTS = re.compile(r"\b(?:prints?|printed|outputs?|says|shows|gives|results?)\b", re.IGNORECASE)
INTERPRETERS = {".py": "python3", ".sh": "bash", ".js": "node", ".rb": "ruby", ".pl": "perl", ".php": "php",
                ".lua": "lua"}


def output_commands(asked: str, is_file: Callable[[str], bool],
                    found: Callable[[str], str | None] = shutil.which) -> dict[str, list[str]]:
    """The whole command a request to run a script and keep what it prints in a file may
    be: the script (a file that is there, of a kind INTERPRETERS runs, the one the
    request names first) run by its interpreter (one `found` on PATH), what it prints put
    in the one file named after it (`python3 x.py > out.txt`); asked what it prints
    (`_ASKS_OUTPUT`, no file named after it), the script run (`python3 x.py`); none
    otherwise."""
    keeps = _RUNS.search(asked) and _KEEPS.search(asked) and _PRINTS.search(asked)
    if not keeps and not _ASKS_OUTPUT.search(asked):
        return {}
    names = [n for n in steps.file_names(asked) if fits_words(" " + n, options=False)]
    script = next((n for n in names if posixpath.splitext(n)[1] in INTERPRETERS and is_file(n)), None)
    if script is None:
        return {}
    into = [n for n in names[names.index(script) + 1:] if n != script]
    program = INTERPRETERS[posixpath.splitext(script)[1]]
    if not found(program) or (len(into) != 1 if keeps else into):
        return {}
    return {program: [f"{program} {script} > {into[0]}" if keeps else f"{program} {script}"]}


def run_commands(part: str, is_file: Callable[[str], bool], found: Callable[[str], str | None] = shutil.which
                 ) -> dict[str, list[str]]:
    """The script a part of a request asks to run and no more ("run x.py", "then run it
    to check", "test x.py again"), run by its interpreter (`_RUN_PART`); none otherwise.
    Only for a part: a request that is that alone is the model's (it may mean more)."""
    run = _RUN_PART.fullmatch(part.strip())
    if run is None or not is_file(run.group("script")):
        return {}
    program = INTERPRETERS.get(posixpath.splitext(run.group("script"))[1])
    return {program: [f"{program} {run.group('script')}"]} if program and found(program) else {}


_RUN_PART = re.compile(r"(?:and\s+|then\s+|also\s+)*(?:run|execute|try|test)\s+(?:the\s+script\s+)?"
                       r"`?(?P<script>[\w./-]+\.\w+)`?(?:\s+(?:again|afterwards|after(?:\s+that)?|"
                       r"to\s+(?:check|test|see|make\s+sure|confirm|verify)\b.*))?\s*[.!]?", re.IGNORECASE)


# Asked what a script prints ("what does x.py print", "what's the output of x.py", "what
# happens when I run x.py"): it is run, and the answer begins with what it printed.
_ASKS_OUTPUT = re.compile(r"\bwhat\s+(?:does|do|will|would)\s+\S+\s+(?:print|output|show|display|say|spit\s+out)"
                          r"|\bwhat(?:'s|\s+is)\s+(?:the\s+)?output\s+of\b|\bwhat\s+happens\s+when\s+(?:i|you|we)\s+run\b",
                          re.IGNORECASE)


# Files of a kind a command may name at most: more, and the command is left to the model.
KIND_FILES = 12


def files_of_kind(ws: Path, kind: str, under: str | None) -> list[str]:
    """The workspace's files whose names end in `kind`, under the folder `under` (or
    anywhere), sorted, not in a hidden folder; KIND_FILES + 1 at most (one more says
    too many). Blocking: call it in a thread."""
    root = ws / under if under else ws
    out: list[str] = []
    try:
        for entry in walk(root, sizes=False, prune=lambda rel: rel.rsplit("/", 1)[-1].startswith(".")):
            if entry.is_file and not entry.is_link and entry.path.endswith(kind) and entry.path != kind:
                out.append(posixpath.join(under, entry.path) if under else entry.path)
                if len(out) > KIND_FILES:
                    break
    except OSError:
        return []
    return sorted(out)


def kind_commands(asked: str, doing: set[str], folders: list[str],
                  of_kind: Callable[[str, str | None], list[str]],
                  is_dir: Callable[[str], bool] = lambda _: True) -> dict[str, list[str]]:
    """The one whole command a request to delete, move, copy or rename files of a kind
    (`.bak files`) may be, with the files of that kind that are there (`of_kind`, under
    the folder it names, if one): `rm` of them all; `mv` or `cp` of them all into the
    folder it names, when it names one to put them in (made first where it is not there:
    `is_dir`); to rename them to another kind it
    names (`.text files … should end in .md`), each `mv` to its new name, one after
    another (`&&`). None where no file is of that kind, or more than KIND_FILES are."""
    kinds = list(dict.fromkeys(KIND.findall(asked)))
    folders = [f for f in folders if is_dir(f)] if len(folders) > 1 else folders  # (one named: maybe new)
    program = "rm" if "rm" in doing else "mv" if "mv" in doing else "cp" if "cp" in doing else None
    # Deleted or renamed, the files are those under the folder named (if one); moved or
    # copied, those anywhere but in the folder named, which is where they go.
    putting = program in ("mv", "cp") and len(kinds) == 1
    if program is None or len(folders) > 1 or putting and len(folders) != 1:
        return {}
    under = None if putting or not folders else folders[0]
    found = {k: [f for f in of_kind(k, under) if not (putting and f.startswith(folders[0] + "/"))] for k in kinds}
    have = [k for k in kinds if found[k]][:1 if program == "mv" and not putting else None]  # renamed: the first
    if len(have) != 1 or len(found[have[0]]) > KIND_FILES:
        return {}
    kind, files = have[0], found[have[0]]
    if program == "rm":
        return {"rm": [f"rm {' '.join(files)}"]}
    if putting:  # into the folder named, made first where it is not there (`is_dir`)
        make = "" if is_dir(folders[0]) else f"mkdir {folders[0]} && "
        return {program: [f"{make}{program} {' '.join(files)} {folders[0]}"]}
    if program != "mv":
        return {}
    to = next(k for k in kinds if k != kind)  # renamed to the other kind it names, over no file
    pairs = [(f, f[:-len(kind)] + to) for f in files]
    if {new for _, new in pairs} & set(found[to]):  # (found[to] is of_kind(to, under): not putting)
        return {}
    return {"mv": [" && ".join(f"mv {old} {new}" for old, new in pairs)]}


def held_command(parameters: dict[str, object], offered: Offered, avoid: Collection[tuple[str, Any]],
                 asked: str) -> dict[str, object] | None:
    """`command_shape` for a round: the commands of its `avoid` (the run's failed ones)
    ruled out, options only where the request `asked` writes one."""
    failed = [args["command"] for name, args in avoid
              if name == SHELL_TOOL and isinstance(args, dict) and isinstance(args.get("command"), str)]
    return command_shape(parameters, offered.programs, failed, options=gives_options(asked), whole=offered.whole)


def named_commands(asked: str, is_file: Callable[[str], bool], is_dir: Callable[[str], bool],
                   of_kind: Callable[[str, str | None], list[str]] = lambda kind, under: []) -> dict[str, list[str]]:
    """The whole commands a request to copy, move, rename or delete files may be, where it
    names them (the files of `steps.file_names`, the folders of `lookup.named_folders`):
    `cp` and `mv` from a file or folder that is there to another name or a folder (asked
    to copy a file, SmolLM2 wrote `cp` with the file's name twice), a folder copied with
    all it holds (`cp -r`: asked to copy a folder, it copied the new name onto itself), a
    file put in a folder named that is not there yet made first (`mkdir x && mv a x`), `rm`
    of a file that is there, `rmdir` of an empty folder and `rm -r` of one that is not,
    `mkdir` of a folder named that is not there yet and nothing is put in; none for a
    program the request's verbs do not ask for, nor where it names nothing there, nor
    for a name no command word may be (`fits_words`). Where it names files by their kind
    instead (`kind_commands`), the one command that does it to all of them."""
    doing = verb_programs(asked)
    folders = [f for f in named_folders(asked) if fits_words(" " + f, options=False)]
    names = [n for n in dict.fromkeys(steps.file_names(asked) + folders) if fits_words(" " + n, options=False)]
    there = [n for n in names if is_file(n) or is_dir(n)]
    if doing and not [n for n in there if is_file(n)]:
        by_kind = kind_commands(asked, doing, folders, of_kind, is_dir)
        if by_kind:
            return by_kind
    if not doing or not there:
        return {}
    out: dict[str, list[str]] = {}
    targets = [n for n in names if n not in there or is_dir(n)]
    for program in ("cp", "mv"):
        if program in doing:
            out[program] = [_put(program, a, b, is_dir(a), b in folders and not is_dir(b)) for a in there
                            for b in targets if a != b and not b.startswith(a + "/")
                            and not (is_dir(a) and is_dir(b) and names.index(b) < names.index(a))]
    if "rm" in doing:
        out["rm"] = [f"rm {n}" for n in there if is_file(n)]
        out["rm"] += [f"rm -r {n}" for n in there if is_dir(n) and not _empty(n, of_kind)]
        out["rmdir"] = [f"rmdir {n}" for n in there if is_dir(n) and _empty(n, of_kind)]
    put = {c.rsplit(" ", 1)[-1] for p in ("cp", "mv") for c in out.get(p, ())}
    out["mkdir"] = [f"mkdir {n}" for n in folders if n not in there and n not in put]
    return {p: cs for p, cs in out.items() if cs or p == "mkdir"}  # (mkdir with none: not offered)


def _put(program: str, source: str, to: str, folder: bool, new_folder: bool) -> str:
    """The command that copies or moves `source` (a `folder`: all it holds) to `to`, a
    `new_folder` made first where a file goes into it."""
    if folder:
        return f"cp -r {source} {to}" if program == "cp" else f"mv {source} {to}"
    return f"mkdir {to} && {program} {source} {to}" if new_folder else f"{program} {source} {to}"


def _empty(folder: str, of_kind: Callable[[str, str | None], list[str]]) -> bool:
    """Whether `folder` holds no file (of_kind with the empty kind lists them all)."""
    return not of_kind("", folder)


def change_tools(asked: str) -> tuple[str, ...]:
    """The tools a round that must change something may call: those that change files,
    and the command where the request asks to copy, move or delete them (asked to delete
    files, a change claimed was to be made with an edit, and no file was there to edit)."""
    return steps.CHANGE_TOOLS + ((SHELL_TOOL,) if file_verbs(asked) else ())


def runs_alone(program: str) -> bool:
    """Whether `program` may be a command by itself, with no word after it (RUN_ALONE, a
    program the request names, a script)."""
    return program in RUN_ALONE or (program not in USUAL_PROGRAMS and program not in BUILTINS)


def command_shape(parameters: dict[str, object], starts: list[str], ruled_out: Collection[str] = (), *,
                  options: bool = False, whole: dict[str, list[str]] | None = None) -> dict[str, object] | None:
    """exec_shell_command's parameters with its command held to start with one of
    `starts`, its words after it one blank apart, none an option unless `options` (the
    request writes one: `gives_options`), and to be none of `ruled_out` (the run's
    failed commands: a pattern is read before a length, so generic_grammar's exclusion
    cannot say it); a program of `whole` only as one of its commands there (and not
    at all when each of them is ruled out); None when there is nothing to hold it to or
    no command argument."""
    props = parameters.get("properties")
    if not isinstance(props, dict) or not isinstance(props.get("command"), dict):
        return None
    fixed = {p: [c for c in cs if c not in ruled_out] for p, cs in (whole or {}).items() if _NAME.fullmatch(p)}
    commands = [c for cs in fixed.values() for c in cs]
    # While a whole command that does the job is left, only those (given `ls` beside them,
    # SmolLM2 listed made-up paths in a loop); once each failed, the others again.
    names = [] if any(cs for p, cs in fixed.items() if p != "mkdir") else \
        [p for p in dict.fromkeys(starts) if _NAME.fullmatch(p) and p not in fixed]
    if not names and not commands:
        return None
    words = _Words(options)
    tails: dict[str, set[str]] = {}
    for command in ruled_out:
        program, blank, rest = command.partition(" ")
        if program in names and len(command) <= RULED_OUT_CHARS and fits_words(blank + rest, options=options):
            tails.setdefault(program, set()).add(blank + rest)
    free = [p for p in names if p not in tails]
    alone, not_alone = [p for p in free if runs_alone(p)], [p for p in free if not runs_alone(p)]
    alternatives = [f"({'|'.join(map(_literal, alone))})( {words.word})*"] if alone else []
    alternatives += [f"({'|'.join(map(_literal, not_alone))})( {words.word})+"] if not_alone else []
    alternatives += [_literal(p) + words.without(tail, alone=runs_alone(p)) for p, tail in tails.items()]
    alternatives += [f"({'|'.join(map(_literal, commands))})"] if commands else []
    pattern = f"^({'|'.join(alternatives)})$"
    return {**parameters, "properties": {**props, "command": {"type": "string", "pattern": pattern}}}


def gives_options(asked: str) -> bool:
    """Whether the request writes an option of a command (a word that starts with `-`)."""
    return any(w.startswith("-") and len(w) > 1 for w in asked.split())


def fits_words(tail: str, *, options: bool) -> bool:
    """Whether `tail` is what may follow a program: words, each after one blank (none
    starting with `-` unless `options`)."""
    return re.fullmatch(f"( {_Words(options).word})*", tail) is not None


@attrs.frozen
class _Words:
    """The patterns of the words after a program, options allowed or not."""

    options: bool

    @property
    def first(self) -> str:
        """The characters a word may start with, as a negated class's content."""
        return _WORD_CHARS if self.options else _FIRST_CHARS

    @property
    def word(self) -> str:
        return f"[{self.first}]{_WORD_CHAR}*"

    def without(self, tails: set[str], *, alone: bool) -> str:
        """A pattern of what may follow a program (`fits_words`) other than `tails`: the
        trie of `tails` walked, each node offering its children (and below them, the
        same), every other character that may come next (and any rest after it), and
        the end where the words may end there and no tail does (and, right after the
        program, only where it may run `alone`)."""
        after_blank = f"{self.word}( {self.word})*"  # the rest after a blank
        after_char = f"{_WORD_CHAR}*( {self.word})*"  # the rest after a word's character

        def node(prefix: str) -> str:
            kids = sorted({t[len(prefix)] for t in tails if t.startswith(prefix) and len(t) > len(prefix)})
            parts = [_literal(c) + node(prefix + c) for c in kids]
            if prefix and prefix[-1] != " ":  # inside a word: another of its characters, or a blank
                parts.append(f"[{_WORD_CHARS}{''.join(map(_in_class, kids))}]{after_char}")
                if " " not in kids:
                    parts.append(f" {after_blank}")
            elif prefix:  # after a blank: a word's first character
                parts.append(f"[{self.first}{''.join(map(_in_class, kids))}]{after_char}")
            elif " " not in kids:  # after the program: a blank, then words
                parts.append(f" {after_blank}")
            ends = prefix[-1:] != " " and prefix not in tails and (alone or prefix != "")
            return f"({'|'.join(parts)})" + ("?" if ends else "") if parts else ""

        return node("")


def _literal(c: str) -> str:
    """`c` (a character, or a program's name, or a whole command) as a pattern matches it
    (generic_grammar.json_text_literal: a command with a double quote, `python3 -c "…"`,
    is matched as its JSON text writes it)."""
    return json_text_literal(c)


def _in_class(c: str) -> str:
    """`c` inside a negated class, written by its code where it could be read as more."""
    return c if (c.isascii() and c.isalnum()) or ord(c) > 0xFF else f"\\x{ord(c):02x}"
