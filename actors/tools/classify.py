"""Which command lines may run in `ask` mode without asking: the read-only classifier.

A line counts as read-only only when the daemon can tell, from its text alone, that it
reads inside the workspace and nothing else (agent contract, "Mode"):

- it is a plain pipeline (`a | b | c`) of simple commands, as `/bin/sh` reads it: no
  redirection, substitution, separator, background job, subshell, group, variable,
  comment, `~`, escape or control character anywhere outside single quotes;
- each stage is a program on `PROGRAMS`, named plainly (no path, no assignment prefix);
- no option that writes, runs a program or reads a list of paths from a file (each
  program's own rule below); long options are refused by any prefix too, since GNU
  `getopt_long` takes `--out` for `--output`;
- no argument that may lead out of the workspace: absolute, `~`, a drive, `..` as a
  component (also inside `--opt=value` and glued short-option values);
- an unquoted glob stays inside the workspace (`.*` matches `..`) and cannot turn into
  an option: a workspace may hold a file named `-delete` or `--output=x`, so for the
  programs that have a dangerous option, a glob must start with a plain character.

Anything else, and anything not understood, asks. There is no I/O here: the verdict is
a function of the text. What the text cannot show is left to the file system check in
actors/tools/shell.py (`arguments_stay_inside`), which this module tells what to look
at: every word that names a path (a glob's matches included) must resolve inside, and
`link_walk` says, per stage, which folders the program walks and which links it follows
or which files it reads on the way (`ls -L`, `diff` by default, `grep -R`, `find -L`,
`du -L`, `rg --follow` and rg's ignore files, `tree -l`, `tree --info`): those walks
must meet no link that leads out. Which file `PATH` finds for a name stays unseen (a
`PATH` holding `.` would run the workspace's own `ls`). It models POSIX `sh`: under
Windows `cmd` (`%VAR%`, `^`, `&`) its verdict means nothing, and every command there
should ask.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import attrs

from actors.tools.shell_words import NotPlain as NotPlain
from actors.tools.shell_words import Word as Word
from actors.tools.shell_words import split_pipeline as split_pipeline

_GIT_REASON = (
    "git always asks: a repository's own configuration can make any git command run a program "
    "(core.fsmonitor, a filter, diff.external)"
)
_DRIVE = re.compile(r"[A-Za-z]:")
_GLUED_UP = re.compile(r"\.\.(?:[/\\]|$)")
_PATH_SEPARATORS = re.compile(r"[/\\]")

_RUNS = "runs a program"
_WRITES = "writes a file"
_LIST = "reads the paths to open from a file, which may name any file"
_UNZIPS = "runs decompression programs"


Depth = Literal["entries", "tree"]
GIT_READS = frozenset({".gitignore", ".git"})  # and, under a `.git` folder, info/exclude
RG_READS = frozenset({".gitignore", ".ignore", ".rgignore", ".git"})


@attrs.frozen(hash=False)
class Links:
    """What a program does with the symbolic links it meets inside a folder it walks (a
    link named on the line is an argument, checked as one). Read from each program's
    manual: most never follow such a link unless an option says so.

    `default`: how far it follows them with no option (diff: the entries of the folders
    it compares). `follow_short`, `follow_long` (any prefix, as getopt_long takes them),
    `follow_words` (whole words, any number of leading dashes: find's primaries) and
    `follow_text` (a fragment of any word: find's `%Y` format) make it follow them
    `follow_depth` deep; `deep_short`/`deep_long` make a follow go down the whole tree
    (`ls -L` stats the entries, `ls -LR` walks into them); `off` (exact words) stops it
    following. `reads` are names of files it opens wherever its walk goes, through a
    link too (rg's ignore files); `reads_long` are options that add such names (tree's
    `--info`). `dot`: with no folder argument it walks the working folder; since an
    option's value cannot always be told from an operand, the walk then always covers
    the workspace, which asks more, never less. `skips_hidden`: it neither enters nor
    follows an entry whose name starts with `.` (its ignore files apart) unless one of
    `shown_short`/`shown_long` is given (rg without `--hidden`).
    """

    why: str
    default: Depth | None = None
    follow_short: str = ""
    follow_long: tuple[str, ...] = ()
    follow_words: tuple[str, ...] = ()
    follow_text: tuple[str, ...] = ()
    follow_depth: Depth = "tree"
    deep_short: str = ""
    deep_long: tuple[str, ...] = ()
    off: tuple[str, ...] = ()
    reads: frozenset[str] = frozenset()
    reads_long: dict[str, frozenset[str]] = attrs.field(factory=dict)
    dot: bool = False
    skips_hidden: bool = False
    shown_short: str = ""
    shown_long: tuple[str, ...] = ()


@attrs.frozen
class LinkWalk:
    """What the file system check must walk for one stage: under each existing folder
    the stage's words name (and the working folder with `dot`), `depth` "entries" checks the
    links directly inside, "tree" every link down the tree, entering links to folders
    inside; None walks real folders only. Every link met that leads out asks, and so
    does, at any depth, a link named in `reads` (or one under a `.git` folder when
    `.git` is in `reads`). With `skip_hidden` an entry whose name starts with `.` is
    neither entered nor followed."""

    program: str
    why: str
    depth: Depth | None
    reads: frozenset[str]
    dot: bool
    skip_hidden: bool = False


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
    `dashdash` says `--` ends the options. `links` says what it does with the links
    it meets inside a folder it was given (None: it follows none and reads nothing there).
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
    links: Links | None = None


def _programs(*programs: Program) -> dict[str, Program]:
    return {p.name: p for p in programs}


PROGRAMS: dict[str, Program] = _programs(
    Program(
        "ls",
        "lists folders; no option writes, runs or reads a list of paths",
        links=Links(
            "`ls -L` reads what the links in a folder point to, and with -R lists the folders they lead to",
            follow_short="L", follow_long=("dereference",), follow_depth="entries",
            deep_short="R", deep_long=("recursive",), dot=True,
        ),
    ),
    Program("cat", "prints files; it has no option that takes a value"),
    Program("head", "prints the start of files; its options are counts"),
    Program("tail", "prints the end of files; `-f` only waits, and the command's timeout ends it"),
    Program("wc", "counts lines, words and bytes", long={"files0-from": _LIST}, glob_safe=False),
    Program(
        "grep",
        "searches; -f and --exclude-from read files, whose paths are checked like any argument",
        glued_paths=True,
        links=Links(
            "`grep -R` follows every link it meets while searching a folder (-r only those on the line)",
            follow_short="R", follow_long=("dereference-recursive",), dot=True,
        ),
    ),
    Program(
        "rg",
        "searches (its own parser takes no abbreviations, but refusing prefixes costs nothing)",
        short={"z": _UNZIPS},
        long={
            "pre": "runs a program on every file it searches",
            "pre-glob": "picks the files --pre runs a program on",
            "search-zip": _UNZIPS,
            "hostname-bin": _RUNS,
        },
        glued_paths=True,
        glob_safe=False,
        links=Links(
            "`rg -L` follows the links it meets; and wherever it walks, rg reads the ignore files it finds "
            "(.gitignore, .ignore, .rgignore, .git/info/exclude), through a link too, and prints their bad lines",
            follow_short="L", follow_long=("follow",), reads=RG_READS, dot=True,
            skips_hidden=True, shown_short=".u", shown_long=("hidden", "unrestricted"),
        ),
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
        },
        glued_paths=True,
        glob_safe=False,
        dashdash=False,
        links=Links(
            "`find -L` and `-follow` walk through links; `-xtype`, `-readable`, `-writable`, `-executable` "
            "and the `%Y` format look at what each link points to",
            follow_short="L", follow_words=("follow", "xtype", "readable", "writable", "executable"),
            follow_text=("%Y",), dot=True,
        ),
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
        long={"files0-from": _LIST},
        glued_paths=True,
        glob_safe=False,
        links=Links(
            "`du -L` walks through every link it meets (-H and -D only those on the line)",
            follow_short="L", follow_long=("dereference",), dot=True,
        ),
    ),
    Program(
        "tree",
        "draws a tree (its own option parser, so every letter of a cluster is checked)",
        short={"o": "writes the listing to a file", "R": "writes a listing file in every folder"},
        long={"output": "writes the listing to a file"},
        glued_paths=True,
        glob_safe=False,
        dashdash=False,
        links=Links(
            "`tree -l` walks through links to folders; `--info` prints the .info files and `--gitignore` reads "
            "the .gitignore files it meets, through a link too",
            follow_short="l", reads_long={"info": frozenset({".info"}), "gitignore": GIT_READS}, dot=True,
        ),
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
        links=Links(
            "diff follows links by default: given folders it compares the files they hold, and with -r "
            "everything under them, wherever a link leads (unless --no-dereference)",
            default="entries", deep_short="r", deep_long=("recursive",), off=("--no-dereference",),
        ),
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
    """True only when `command` is a pipeline that can only read inside the workspace, as
    far as its text tells; `arguments_stay_inside` (actors/tools/shell.py) must agree."""
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
        problem = _glued_leaves(text[2:])
        if problem:
            raise NotPlain(f"`{text}` {problem}")


def _glued_leaves(tail: str) -> str | None:
    """`_leaves_workspace` of every suffix of `tail` (a value glued to a short option
    may start anywhere in it), in one pass: a suffix starts with a separator or `~`
    wherever one is, and starts with `..` wherever one is followed by a separator or
    the end."""
    for char in tail:
        if char in "/\\":
            return "is an absolute path, outside the workspace"
        if char == "~":
            return "names a home folder, outside the workspace"
    if _GLUED_UP.search(tail):
        return "goes up with `..`, which may leave the workspace"
    return None


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
    at = sorted(globs)
    i = 0  # the first glob position not yet before this component (one pass over both)
    start = 0
    for component in text.split("/"):
        end = start + len(component)
        while i < len(at) and at[i] < start:
            i += 1
        if i < len(at) and at[i] < end:
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


def link_walk(stage: Sequence[Word]) -> LinkWalk | None:
    """What the file system check must walk for this stage (a program on the list),
    or None when the program follows no link it meets and reads nothing on its way.

    Every option-looking word counts, even one that may be another option's value
    (`grep -e -R`): a walk too many asks more, never less.
    """
    program = PROGRAMS.get(stage[0].text) if stage else None
    rule = program.links if program is not None else None
    if program is None or rule is None:
        return None
    args = stage[1:]
    follow = deep = off = shown = ended = False
    reads = set(rule.reads)
    for word in args:
        text = word.text
        follow = follow or _has_option(text, rule.follow_short, rule.follow_long)
        follow = follow or (text.startswith("-") and text.lstrip("-") in rule.follow_words)
        follow = follow or any(fragment in text for fragment in rule.follow_text)
        deep = deep or _has_option(text, rule.deep_short, rule.deep_long)
        off = off or (text in rule.off and not ended)  # after `--` it names a file
        ended = ended or (text == "--" and program.dashdash)
        shown = shown or _has_option(text, rule.shown_short, rule.shown_long)
        for option, names in rule.reads_long.items():
            if _has_option(text, "", (option,)):
                reads |= names
    depth = None if off else (rule.follow_depth if follow else rule.default)
    if depth is not None and deep:
        depth = "tree"
    if depth is None and not reads:
        return None
    skip_hidden = rule.skips_hidden and not shown
    return LinkWalk(program.name, rule.why, depth, frozenset(reads), rule.dot, skip_hidden)


def _has_option(text: str, letters: str, longs: Sequence[str]) -> bool:
    """Whether the word is one of the long options (by any prefix) or a cluster of short
    ones holding one of the letters."""
    if not text.startswith("-") or text in ("-", "--"):
        return False
    if text.startswith("--"):
        given = text[2:].split("=", 1)[0]
        return bool(given) and any(option.startswith(given) for option in longs)
    return any(letter in text[1:] for letter in letters)


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
