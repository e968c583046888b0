"""Which command lines may run in `ask` mode without asking: the read-only classifier.

A line counts as read-only only when the daemon can tell, from its text alone, that it
reads inside the workspace and nothing else (agent contract, "Mode"):

- it is a plain pipeline (`a | b | c`) of simple commands, as `/bin/sh` reads it: no
  redirection, substitution, separator, background job, subshell, group, variable,
  comment, `~`, escape or control character anywhere outside single quotes;
- each stage is a program on `PROGRAMS`, named plainly (no path, no assignment prefix);
- no option that writes, runs a program, reads a list of paths from a file, or follows
  links while walking a tree (each program's own rule below); long options are refused
  by any prefix too, since GNU `getopt_long` takes `--out` for `--output`;
- no argument that may lead out of the workspace: absolute, `~`, a drive, `..` as a
  component (also inside `--opt=value` and glued short-option values);
- an unquoted glob stays inside the workspace (`.*` matches `..`) and cannot turn into
  an option: a workspace may hold a file named `-delete` or `--output=x`, so for the
  programs that have a dangerous option, a glob must start with a plain character.

Anything else, and anything not understood, asks. There is no I/O here: the verdict is
a function of the text. What it cannot see: symbolic links inside the workspace that
point out of it (`cat link/x`), and which file `PATH` finds for a name (a `PATH` holding
`.` would run the workspace's own `ls`). It models POSIX `sh`: under Windows `cmd`
(`%VAR%`, `^`, `&`) its verdict means nothing, and every command there should ask.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

MAX_COMMAND_CHARS = 8192  # longer lines ask; nobody types a read this long

_GLOB_CHARS = "*?["
_BLANKS = " \t"
# Outside single quotes, each of these starts something other than a plain word.
_SPECIAL = {
    ";": "`;` starts another command",
    "&": "`&` runs a job in the background or chains commands",
    "<": "`<` redirects input (or is a here-document or process substitution)",
    ">": "`>` redirects output to a file",
    "(": "`(` starts a subshell or process substitution",
    ")": "`)` closes a subshell",
    "{": "braces group commands or expand to several words",
    "}": "braces group commands or expand to several words",
    "$": "`$` expands a variable or runs a command",
    "`": "a backquote runs a command",
    "\\": "a backslash escape hides what the word is",
    "#": "`#` starts a comment",
    "~": "`~` names a home folder",
}
_GIT_REASON = (
    "git always asks: a repository's own configuration can make any git command run a program "
    "(core.fsmonitor, a filter, diff.external)"
)
_DRIVE = re.compile(r"[A-Za-z]:")
_PATH_SEPARATORS = re.compile(r"[/\\]")


class NotPlain(ValueError):
    """The line is not a plain pipeline of simple commands; the text says what was found."""


@attrs.frozen
class Word:
    """One word as the program receives it, quotes removed.

    `glob_at` holds the positions of unquoted `*`, `?` and `[`, which the shell expands
    against the folder before the program runs.
    """

    text: str
    glob_at: frozenset[int] = frozenset()

    @property
    def globbed(self) -> bool:
        return bool(self.glob_at)


_RUNS = "runs a program"
_WRITES = "writes a file"
_LIST = "reads the paths to open from a file, which may name any file"
_FOLLOWS = "follows symbolic links while walking, which may lead out of the workspace"
_UNZIPS = "runs decompression programs"


@attrs.frozen(hash=False)
class Program:
    """What makes one program safe to run without asking.

    `short` are single-letter options refused wherever they sit in a cluster (`-uo`);
    `long` are long options refused under any prefix (`--out`, `--comp`); `primaries`
    are whole words refused (find's `-exec`); each maps to what the option does.
    `paths` is false for programs that never open their arguments. `glued_paths` says a
    short option may take a path glued to it (`grep -f../x`), so every tail of a cluster
    is checked as a path. `glob_safe` says no option a glob could produce writes, runs
    or reads a list of paths; otherwise a glob must start with a plain character.
    `dashdash` says `--` ends the options.
    """

    name: str
    why: str  # why it is on the list, for the reader of this file
    short: dict[str, str] = attrs.field(factory=dict)
    long: dict[str, str] = attrs.field(factory=dict)
    primaries: dict[str, str] = attrs.field(factory=dict)
    paths: bool = True
    glued_paths: bool = False
    glob_safe: bool = True
    dashdash: bool = True


def _programs(*programs: Program) -> dict[str, Program]:
    return {p.name: p for p in programs}


PROGRAMS: dict[str, Program] = _programs(
    Program("ls", "lists folders; no option writes, runs or reads a list of paths"),
    Program("cat", "prints files; it has no option that takes a value"),
    Program("head", "prints the start of files; its options are counts"),
    Program("tail", "prints the end of files; `-f` only waits, and the command's timeout ends it"),
    Program("wc", "counts lines, words and bytes", long={"files0-from": _LIST}, glob_safe=False),
    Program(
        "grep",
        "searches; -f and --exclude-from read files, whose paths are checked like any argument",
        short={"R": _FOLLOWS},
        long={"dereference-recursive": _FOLLOWS},
        glued_paths=True,
    ),
    Program(
        "rg",
        "searches (its own parser takes no abbreviations, but refusing prefixes costs nothing)",
        short={"z": _UNZIPS, "L": _FOLLOWS},
        long={
            "pre": "runs a program on every file it searches",
            "pre-glob": "picks the files --pre runs a program on",
            "search-zip": _UNZIPS,
            "hostname-bin": _RUNS,
            "follow": _FOLLOWS,
        },
        glued_paths=True,
        glob_safe=False,
    ),
    Program(
        "find",
        "walks a tree; its primaries are whole words matched exactly, and `--` does not end its expression",
        primaries={
            "exec": _RUNS,
            "execdir": _RUNS,
            "ok": _RUNS,
            "okdir": _RUNS,
            "delete": "deletes files",
            "fprint": _WRITES,
            "fprint0": _WRITES,
            "fprintf": _WRITES,
            "fls": _WRITES,
            "files0-from": _LIST,
            "follow": _FOLLOWS,
            "L": _FOLLOWS,
        },
        glued_paths=True,
        glob_safe=False,
        dashdash=False,
    ),
    Program(
        "sort",
        "sorts lines; --random-source reads a file, whose path is checked",
        short={"o": "writes its output to a file", "T": "writes temporary files in a folder"},
        long={
            "output": "writes its output to a file",
            "compress-program": "runs a program to compress temporary files",
            "temporary-directory": "writes temporary files in a folder",
            "files0-from": _LIST,
        },
        glob_safe=False,
    ),
    Program("uniq", "folds repeated lines; its second operand is a file it writes, so it gets at most one"),
    Program("cut", "cuts columns; its options are lists and a delimiter"),
    Program("tr", "translates its input; it opens no file", paths=False),
    Program(
        "file",
        "guesses file types; -m reads a magic file, whose path is checked",
        short={
            "C": "writes a compiled magic file",
            "z": _UNZIPS,
            "Z": _UNZIPS,
            "p": "writes the files' access times back",
            "f": _LIST,
        },
        long={
            "compile": "writes a compiled magic file",
            "uncompress": _UNZIPS,
            "uncompress-noreport": _UNZIPS,
            "preserve-date": "writes the files' access times back",
            "files-from": _LIST,
        },
        glued_paths=True,
        glob_safe=False,
    ),
    Program("stat", "prints file metadata; its options are formats"),
    Program(
        "du",
        "sums sizes; -X reads a pattern file, whose path is checked",
        short={"L": _FOLLOWS},
        long={"dereference": _FOLLOWS, "files0-from": _LIST},
        glued_paths=True,
        glob_safe=False,
    ),
    Program(
        "tree",
        "draws a tree (its own option parser, so every letter of a cluster is checked)",
        short={"o": "writes the listing to a file", "R": "writes a listing file in every folder", "l": _FOLLOWS},
        long={"output": "writes the listing to a file"},
        glued_paths=True,
        glob_safe=False,
        dashdash=False,
    ),
    Program("pwd", "prints the working folder"),
    Program("echo", "prints its words (a shell builtin); it opens nothing", paths=False),
    Program("printf", "prints a format (a shell builtin); it opens nothing", paths=False),
    Program("basename", "edits a name as text; it opens nothing", paths=False),
    Program("dirname", "edits a name as text; it opens nothing", paths=False),
    Program("realpath", "resolves paths and prints them"),
    Program(
        "diff",
        "compares files; -X reads a pattern file, whose path is checked; GNU diff runs nothing",
        glued_paths=True,
    ),
    Program("cmp", "compares two files byte by byte"),
    Program("md5sum", "hashes files", short={"c": _LIST}, long={"check": _LIST}, glob_safe=False),
    Program("sha256sum", "hashes files", short={"c": _LIST}, long={"check": _LIST}, glob_safe=False),
    Program("nl", "numbers lines; its options are styles and counts"),
)

# uniq's value-taking options, to count its operands exactly (`uniq -f 1 a` has one).
_UNIQ_LONG = {
    "all-repeated": False,  # its value only ever follows `=`
    "check-chars": True,
    "count": False,
    "group": False,
    "help": False,
    "ignore-case": False,
    "repeated": False,
    "skip-chars": True,
    "skip-fields": True,
    "unique": False,
    "version": False,
    "zero-terminated": False,
}
_UNIQ_SHORT_WITH_VALUE = "fsw"


def is_read_only(command: str) -> bool:
    """True only when `command` is a pipeline that can only read inside the workspace."""
    return why_not(command) is None


def why_not(command: str) -> str | None:
    """Why `command` needs asking, in plain words; None when it may run without asking.

    Never raises: anything it cannot read is a reason to ask.
    """
    try:
        stages = split_pipeline(command)
        for stage in stages:
            _check_stage(stage)
    except NotPlain as exc:
        return str(exc)
    return None


def split_pipeline(command: str) -> list[list[Word]]:
    """The words of each stage of a plain pipeline, as `/bin/sh` would pass them.

    Raises NotPlain for anything else: an operator other than a single `|`, an
    expansion, an escape, an unclosed quote, a control character, an empty stage.
    Inside double quotes `\\` keeps POSIX meaning (it escapes `$`, backquote, `"`
    and `\\`); `$` and backquotes there still expand, so they are refused.
    """
    if not isinstance(command, str):
        raise NotPlain("the command is not text")
    if len(command) > MAX_COMMAND_CHARS:
        raise NotPlain(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    _refuse_control_characters(command)

    stages: list[list[Word]] = [[]]
    chars: list[str] = []
    globs: set[int] = set()
    in_word = False

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            stages[-1].append(Word("".join(chars), frozenset(globs)))
        chars.clear()
        globs.clear()
        in_word = False

    i, n = 0, len(command)
    while i < n:
        c = command[i]
        if c in _BLANKS:
            end_word()
            i += 1
        elif c == "|":
            if command.startswith("||", i):
                raise NotPlain("`||` runs a second command when the first fails")
            end_word()
            if not stages[-1]:
                raise NotPlain("a `|` with no command before it")
            stages.append([])
            i += 1
        elif c == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise NotPlain("a single quote is not closed")
            chars.extend(command[i + 1 : close])
            in_word = True
            i = close + 1
        elif c == '"':
            i = _read_double_quoted(command, i + 1, chars)
            in_word = True
        elif c in _SPECIAL:
            raise NotPlain(_SPECIAL[c])
        else:
            if c in _GLOB_CHARS:
                globs.add(len(chars))
            chars.append(c)
            in_word = True
            i += 1
    end_word()
    if not stages[-1]:
        raise NotPlain("a `|` with no command after it" if len(stages) > 1 else "the command is empty")
    return stages


def _refuse_control_characters(command: str) -> None:
    for c in command:
        if c in "\n\r":
            raise NotPlain("a line break separates commands")
        if (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F:
            raise NotPlain("the command holds a control character")
        if 0xD800 <= ord(c) <= 0xDFFF:
            raise NotPlain("the command is not valid Unicode text")


def _read_double_quoted(command: str, i: int, chars: list[str]) -> int:
    """Append the text of a double-quoted part starting at `i`; the index after its close."""
    n = len(command)
    while i < n:
        c = command[i]
        if c == '"':
            return i + 1
        if c == "$":
            raise NotPlain("`$` inside double quotes still expands a variable or runs a command")
        if c == "`":
            raise NotPlain("a backquote inside double quotes still runs a command")
        if c == "\\" and i + 1 < n and command[i + 1] in '$`"\\':
            chars.append(command[i + 1])
            i += 2
            continue
        chars.append(c)
        i += 1
    raise NotPlain("a double quote is not closed")


def _check_stage(stage: Sequence[Word]) -> None:
    head, args = stage[0], stage[1:]
    if head.globbed:
        raise NotPlain(f"the program name `{head.text}` is a pattern the shell expands")
    if head.text == "git":
        raise NotPlain(_GIT_REASON)
    program = PROGRAMS.get(head.text)
    if program is None:
        raise NotPlain(f"`{head.text}` is not on the list of programs known to only read")
    options_ended = False
    for word in args:
        _check_options(program, word)
        _check_paths(program, word)
        if word.globbed:
            _check_glob(program, word, options_ended=options_ended)
        if word.text == "--" and program.dashdash:
            options_ended = True
    if program.name == "uniq" and _uniq_operands(args) > 1:
        raise NotPlain("`uniq` writes its second operand: give it at most one file")


def _check_options(program: Program, word: Word) -> None:
    # Every option-looking word is checked, even after `--` or where it may be the value
    # of another option: refusing `sort -t -o` is cheaper than parsing every program.
    text = word.text
    if not text.startswith("-") or text in ("-", "--"):
        return
    name = program.name
    if program.primaries:
        bare = text.lstrip("-").split("=", 1)[0]
        if bare in program.primaries:
            raise NotPlain(f"`{name} {text}` {program.primaries[bare]}")
        if re.fullmatch(r"-+[A-Z]+", text) and "L" in text:
            raise NotPlain(f"`{name} {text}` {program.primaries['L']}")
        return
    if text.startswith("--"):
        given = text[2:].split("=", 1)[0]
        for option, effect in program.long.items():
            if option.startswith(given):
                shown = f"`{name} --{given}`" + ("" if given == option else f" (short for `--{option}`)")
                raise NotPlain(f"{shown} {effect}")
        return
    for letter in text[1:]:
        if letter in program.short:
            raise NotPlain(f"`{name} -{letter}` {program.short[letter]}")


def _check_paths(program: Program, word: Word) -> None:
    text = word.text
    # A glob is expanded by the shell against the file system, whatever the program.
    if not (program.paths or word.globbed):
        return
    candidates = [text]
    if text.startswith("-") and "=" in text:
        candidates.append(text.split("=", 1)[1])
    for candidate in candidates:
        problem = _leaves_workspace(candidate, drives=True)
        if problem:
            raise NotPlain(f"`{text}` {problem}")
    if program.glued_paths and text.startswith("-") and not text.startswith("--"):
        for start in range(2, len(text)):
            problem = _leaves_workspace(text[start:], drives=False)
            if problem:
                raise NotPlain(f"`{text}` {problem}")


def _leaves_workspace(path: str, *, drives: bool) -> str | None:
    if path.startswith(("/", "\\")):
        return "is an absolute path, outside the workspace"
    if path.startswith("~"):
        return "names a home folder, outside the workspace"
    if drives and _DRIVE.match(path):
        return "names a drive, outside the workspace"
    if ".." in _PATH_SEPARATORS.split(path):
        return "goes up with `..`, which may leave the workspace"
    return None


def _check_glob(program: Program, word: Word, *, options_ended: bool) -> None:
    text, globs = word.text, word.glob_at
    start = 0
    for component in text.split("/"):
        end = start + len(component)
        if any(start <= g < end for g in globs):
            if component.startswith("."):
                raise NotPlain(f"the pattern `{text}` can match `..`, the folder above")
            if start in globs and component.startswith("["):
                raise NotPlain(f"the pattern `{text}` starts a name with a class, which can match `..`")
        start = end + 1
    if program.name == "uniq":
        raise NotPlain("a pattern given to `uniq` may expand to two files, and it writes the second")
    if program.glob_safe or (options_ended and program.dashdash):
        return
    if 0 in globs or text.startswith("-"):
        raise NotPlain(
            f"the pattern `{text}` may expand to a file name that `{program.name}` reads as an option "
            f"(a file named `-o` or `--pre=x`); start it with a plain name like `./` or put `--` before it"
        )


def _uniq_operands(args: Sequence[Word]) -> int:
    """How many operands uniq sees, counted high when unsure (POSIXLY_CORRECT included)."""
    count = 0
    skip_next = options_ended = False
    for word in args:
        text = word.text
        if skip_next:
            skip_next = False
        elif options_ended or count or text == "-" or not text.startswith("-"):
            # Once an operand is seen, POSIXLY_CORRECT would read every later word as one.
            count += 1
        elif text == "--":
            options_ended = True
        elif text.startswith("--"):
            given, has_value = text[2:].split("=", 1)[0], "=" in text
            matches = [name for name in _UNIQ_LONG if name.startswith(given)]
            exact = given in _UNIQ_LONG
            chosen = given if exact else (matches[0] if len(matches) == 1 else None)
            skip_next = chosen is not None and _UNIQ_LONG[chosen] and not has_value
        else:
            for index, letter in enumerate(text[1:], start=1):
                if letter in _UNIQ_SHORT_WITH_VALUE:
                    skip_next = index == len(text) - 1
                    break
    return count
