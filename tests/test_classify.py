"""The read-only command classifier.

Two corpora are run for real with `/bin/sh -c` in a sandbox under `tmp_path`: every
adversarial line must ask (by its text, or by what the file system check of
actors/tools/links.py finds: `links/out` leads out of the workspace), and for most of
them the run shows the harm (a file written or deleted, a secret from outside the
workspace printed), so none is a strawman; every
safe line must not ask, and its run must leave the sandbox exactly as it was. Property
tests insert dangerous fragments into safe lines, feed arbitrary text, and check the
tokenizer against the shell itself.

Sandbox: `root/ws` is the workspace (the working folder), `root/outside` and `root/home`
(HOME) are what must stay out of reach; commands only name relative paths (`..` reaches
`root`), or `{root}`, the sandbox's own absolute path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.tools.classify import PROGRAMS, NotPlain, is_read_only, link_walk, split_pipeline, why_not
from actors.tools.links import why_leaves
from actors.tools.shell import ExecShellCommand, arguments_stay_inside

RUN_TIMEOUT_S = 5
OUTSIDE_SECRET = "outside-secret-4711"
HOME_SECRET = "home-secret-0815"
LISTING_CANARY = "listing-canary-7q"  # a file name in root/outside: seen only by a listing
HOME_CANARY = "home-canary-3k"  # a file name in HOME


# ---- the sandbox ----


@attrs.frozen
class Sandbox:
    root: Path
    ws: Path
    env: dict[str, str]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if path.suffix == ".sh":
        path.chmod(0o755)


def make_sandbox(root: Path, extra: dict[str, str] | None = None) -> Sandbox:
    outside, home, ws = root / "outside", root / "home", root / "ws"
    marker = f"{OUTSIDE_SECRET}\n"
    _write(outside / "marker", marker)
    _write(outside / LISTING_CANARY, "")
    _write(home / "secret.txt", f"{HOME_SECRET}\n")
    _write(home / HOME_CANARY, "")
    (root / "tmp").mkdir()
    files = {
        "a.txt": "b\na\nc\na\n",
        "b.txt": "a\nb\nd\n",
        "names.txt": "alice\nbob\nalice\n",
        "README.md": "# Demo\nline two\nline three\n",
        "data.csv": "x,1\ny,2\n",
        "src/main.py": "# TODO fix foo\nprint('hi')\n",
        "src/util.py": "def foo():\n    return 1\n",
        "victim.txt": "precious\n",
        ".hidden": "dot\n",
        "script.sh": "#!/bin/sh\ntouch ran\n",
        "list0": "../outside/marker\0",
        "list.txt": "../outside/marker\n",
        "sums.md5": f"{hashlib.md5(marker.encode()).hexdigest()}  ../outside/marker\n",
        "sums.sha256": f"{hashlib.sha256(marker.encode()).hexdigest()}  ../outside/marker\n",
        "magic": "0 string HELLO hello\n",
    }
    for name, text in {**files, **(extra or {})}.items():
        _write(ws / name, text)
    (ws / "links").mkdir()
    (ws / "links" / "out").symlink_to("../../outside")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(root / "tmp"),
        "LC_ALL": "C",
        "GIT_CEILING_DIRECTORIES": str(root),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return Sandbox(root, ws, env)


def run_sh(sandbox: Sandbox, command: str) -> subprocess.CompletedProcess[str]:
    """Run `command` with /bin/sh in the workspace; its whole process group dies after the timeout."""
    assert sandbox.ws.is_dir() and sandbox.ws.parent == sandbox.root
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=sandbox.ws,
        env=sandbox.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
    )


def snapshot(root: Path) -> dict[str, tuple[str, int, int, int]]:
    """Every entry under `root` (links not followed): kind, size, mtime, mode."""
    seen: dict[str, tuple[str, int, int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st_ = os.lstat(path)
            kind = "link" if os.path.islink(path) else "dir" if os.path.isdir(path) else "file"
            seen[os.path.relpath(path, root)] = (kind, st_.st_size, st_.st_mtime_ns, st_.st_mode)
    return seen


def _content(path: Path) -> bytes | None:
    if path.is_dir() or path.is_symlink():
        return b"<entry>"
    return path.read_bytes() if path.exists() else None


# ---- the adversarial corpus ----


@attrs.frozen
class Effect:
    """What the line really does, checked after running it.

    `writes`: the path (from the sandbox root) is created or changed; `deletes`: it is gone;
    `reads`: the text shows on stdout (it never appears in the command itself).
    """

    kind: str
    target: str
    needs: str | None = None  # a program that must be installed for the effect to show


def writes(path: str, needs: str | None = None) -> Effect:
    return Effect("writes", path, needs)


def deletes(path: str) -> Effect:
    return Effect("deletes", path)


def reads(text: str, needs: str | None = None) -> Effect:
    return Effect("reads", text, needs)


OUT = writes("ws/out.txt")
RAN = writes("ws/ran")
LEAK = reads(OUTSIDE_SECRET)
LIST_OUT = reads(LISTING_CANARY)
LEAK_HOME = reads(HOME_SECRET)
BIG = {"big.txt": "".join(f"{i}\n" for i in range(500)), "zipper.sh": "#!/bin/sh\ntouch ran\nexec cat\n"}


@attrs.frozen
class Bad:
    command: str
    effect: Effect | None = None  # None: refused, but what it does is not observed here
    files: dict[str, str] = attrs.field(factory=dict)  # extra workspace files the attack relies on


ADVERSARIAL: list[Bad] = [
    # redirections
    Bad("ls > out.txt", OUT),
    Bad("ls>out.txt", OUT),
    Bad("ls 1>out.txt", OUT),
    Bad("ls 3>out.txt", OUT),
    Bad("ls >> a.txt", writes("ws/a.txt")),
    Bad("echo pwned >| out.txt", OUT),
    Bad("cat a.txt 2> out.txt", OUT),
    Bad("ls -la >out.txt 2>&1", OUT),
    Bad("ls &> out.txt", OUT),
    Bad("cat <> out.txt", OUT),
    Bad("echo x>'out.txt'", OUT),
    Bad('grep a a.txt >"out.txt"', OUT),
    Bad("cat a.txt | sort > out.txt", OUT),
    Bad("echo pwned > ../outside/marker", writes("outside/marker")),
    Bad("cat < ../outside/marker", LEAK),
    Bad("cat <<EOF\nhi\nEOF"),
    # substitutions and variables
    Bad("echo $(touch ran)", RAN),
    Bad("echo `touch ran`", RAN),
    Bad('echo "$(touch ran)"', RAN),
    Bad('ls "`touch ran`"', RAN),
    Bad("cat $(printf '%s' ../outside/marker)", LEAK),
    Bad('echo "$(cat ../outside/marker)"', LEAK),
    Bad("cat $HOME/secret.txt", LEAK_HOME),
    Bad("cat ${HOME}/secret.txt", LEAK_HOME),
    Bad('cat "$HOME/secret.txt"', LEAK_HOME),
    Bad('cat "${HOME}"/secret.txt', LEAK_HOME),
    Bad("cat ${X:-../outside/marker}", LEAK),
    Bad("ls $PWD/../outside", LIST_OUT),
    Bad("ls $(echo ../outside)", LIST_OUT),
    Bad("echo $((1+1))"),
    Bad("cat <(touch ran)"),  # bash runs it; dash refuses the syntax
    Bad("diff a.txt >(touch ran)"),
    # separators, background jobs, grouping
    Bad("ls; touch ran", RAN),
    Bad("ls ;touch ran", RAN),
    Bad("ls && touch ran", RAN),
    Bad("cat nothing-here || touch ran", RAN),
    Bad("ls & touch ran", RAN),
    Bad("ls\ntouch ran", RAN),
    Bad("ls\r\ntouch ran", RAN),
    Bad("ls -la &"),
    Bad("(touch ran)", RAN),
    Bad("{ touch ran; }", RAN),
    Bad("ls |& cat"),
    Bad("ls # and a comment"),
    Bad("ls | touch ran", RAN),
    Bad("echo touch ran | sh", RAN),
    Bad("cat script.sh | sh", RAN),
    Bad("cat names.txt | xargs touch", writes("ws/alice")),
    Bad("echo a | tee out.txt", OUT),
    # assignment prefixes, wrappers, programs that are not on the list
    Bad("LC_ALL=C ls"),
    Bad("PAGER=touch ls"),
    Bad("env touch ran", RAN),
    Bad("command touch ran", RAN),
    Bad("exec touch ran", RAN),
    Bad("nice touch ran", RAN),
    Bad("timeout 2 touch ran", RAN),
    Bad("touch ran", RAN),
    Bad("rm victim.txt", deletes("ws/victim.txt")),
    Bad("mv victim.txt moved.txt", deletes("ws/victim.txt")),
    Bad("cp a.txt out.txt", OUT),
    Bad("tee out.txt", OUT),
    Bad("dd if=a.txt of=out.txt", OUT),
    Bad("truncate -s 0 a.txt", writes("ws/a.txt")),
    Bad("mkdir out.txt", OUT),
    Bad("ln -s ../outside out.txt", OUT),
    Bad("sed -i s/a/z/ a.txt", writes("ws/a.txt")),
    Bad("sed -n 'w out.txt' a.txt", OUT),
    Bad("awk 'BEGIN{system(\"touch ran\")}'", RAN),
    Bad("awk '{print > \"out.txt\"}' a.txt", OUT),
    Bad("sh -c 'touch ran'", RAN),
    Bad("bash -c 'touch ran'", writes("ws/ran", needs="bash")),
    Bad("./script.sh", RAN),
    Bad(". ./script.sh", RAN),
    Bad("less a.txt"),
    Bad("l\\s"),
    Bad("/bin/ls ../outside", LIST_OUT),
    Bad("git init -q", writes("ws/.git", needs="git")),
    Bad("git status"),
    Bad("git --no-pager log -1"),
    Bad("git diff"),
    # find
    Bad("find . -name victim.txt -delete", deletes("ws/victim.txt")),
    Bad("find . -name victim.txt '-delete'", deletes("ws/victim.txt")),
    Bad('find . -name victim.txt -de""lete', deletes("ws/victim.txt")),
    Bad("find -- -name victim.txt -delete", deletes("ws/victim.txt")),
    Bad("find . -name a.txt -exec touch ran '{}' +", RAN),
    Bad("find . -name a.txt -execdir touch ran ';'", RAN),
    Bad("find . -name a.txt -ok touch ran ';'"),  # asks on stdin, which is empty here
    Bad("find . -name a.txt -okdir touch ran ';'"),
    Bad("find . -maxdepth 1 -fprint out.txt", OUT),
    Bad("find . -maxdepth 1 -fprint0 out.txt", OUT),
    Bad("find . -maxdepth 1 -fprintf out.txt '%p\\n'", OUT),
    Bad("find . -maxdepth 1 -fls out.txt", OUT),
    Bad("find -L links", LIST_OUT),
    Bad("find links -follow", LIST_OUT),
    Bad("find -files0-from list0", reads("../outside/marker")),
    Bad("find ..", LIST_OUT),
    Bad("find ~", reads(HOME_CANARY)),
    Bad("find . -name victim.txt -*", deletes("ws/victim.txt"), {"-delete": ""}),
    Bad("find . -name victim.txt [-]*", deletes("ws/victim.txt"), {"-delete": ""}),
    # sort
    Bad("sort -o out.txt a.txt", OUT),
    Bad("sort -uo out.txt a.txt", OUT),
    Bad("sort -oout.txt a.txt", OUT),
    Bad("sort a.txt -o out.txt", OUT),
    Bad("sort '-o' out.txt a.txt", OUT),
    Bad("sort --output=out.txt a.txt", OUT),
    Bad("sort --output out.txt a.txt", OUT),
    Bad("sort --out=out.txt a.txt", OUT),
    Bad("sort --outp out.txt a.txt", OUT),
    Bad("sort --o=out.txt a.txt", OUT),
    Bad("cat a.txt | sort -o out.txt", OUT),
    Bad("sort -S 1K --compress-program=./zipper.sh big.txt", RAN, BIG),
    Bad("sort -S 1K --comp=./zipper.sh big.txt", RAN, BIG),
    Bad("sort -T ../outside a.txt"),
    Bad("sort --files0-from=list0", LEAK),
    Bad("sort *.txt", writes("ws/injected.txt"), {"--output=injected.txt": ""}),
    # uniq writes its second operand
    Bad("uniq a.txt out.txt", OUT),
    Bad("uniq -c a.txt out.txt", OUT),
    Bad("cat a.txt | uniq - out.txt", OUT),
    Bad("uniq a.txt -- out.txt", OUT),
    Bad("uniq a*", writes("ws/a.txt"), {"a.out": "zzz\n"}),
    # options that read a list of paths from a file, or follow links out
    Bad("wc --files0-from=list0", reads("../outside/marker")),
    Bad("wc [-]*", reads("../outside/marker"), {"--files0-from=list0": ""}),
    Bad("du --files0-from=list0", reads("../outside/marker")),
    Bad("du -aL links", reads(LISTING_CANARY)),
    Bad("md5sum -c sums.md5", reads("marker: OK")),
    Bad("md5sum --check sums.md5", reads("marker: OK")),
    Bad("sha256sum -c sums.sha256", reads("marker: OK")),
    Bad("file -f list.txt", reads("outside/marker:")),
    Bad("file --files-from list.txt", reads("outside/marker:")),
    Bad("file -C -m magic", writes("ws/magic.mgc")),
    Bad("file -z a.txt"),
    Bad("file -p a.txt"),
    Bad("grep -R 4711 .", LEAK),
    Bad("grep --dereference-recursive 4711 .", LEAK),
    Bad("grep --dereference-r 4711 .", LEAK),
    # rg and tree (effects shown only where they are installed)
    Bad("rg --pre ./script.sh a a.txt", writes("ws/ran", needs="rg")),
    Bad("rg --pre=./script.sh a a.txt", writes("ws/ran", needs="rg")),
    Bad("rg --pre-glob '*' --pre ./script.sh a", writes("ws/ran", needs="rg")),
    Bad("rg -z a a.txt"),
    Bad("rg --search-zip a"),
    Bad("rg -L 4711 links", reads(OUTSIDE_SECRET, needs="rg")),
    Bad("rg --follow 4711", reads(OUTSIDE_SECRET, needs="rg")),
    Bad("rg --hostname-bin=./script.sh --hyperlink-format=default a a.txt"),
    Bad("rg a *", writes("ws/ran", needs="rg"), {"--pre=sh": ""}),  # rg runs `sh FILE` on every file
    Bad("tree -o out.txt", writes("ws/out.txt", needs="tree")),
    Bad("tree -ao out.txt", writes("ws/out.txt", needs="tree")),
    Bad("tree -R -L 1 -H .", writes("ws/src/00Tree.html", needs="tree")),
    Bad("tree -l links", reads(LISTING_CANARY, needs="tree")),
    # arguments that lead out of the workspace
    Bad("cat ../outside/marker", LEAK),
    Bad("cat ./../outside/marker", LEAK),
    Bad("cat src/../../outside/marker", LEAK),
    Bad('cat "../outside/marker"', LEAK),
    Bad("cat '..'/outside/marker", LEAK),
    Bad('cat .""./outside/marker', LEAK),
    Bad("cat -- ../outside/marker", LEAK),
    Bad("cat {root}/outside/marker", LEAK),
    Bad("cat ~/secret.txt", LEAK_HOME),
    Bad("cat ~/'secret.txt'", LEAK_HOME),
    Bad("cat ~'/secret.txt'"),  # dash leaves a `~` before a quote alone
    Bad("grep 0815 ~/secret.txt", LEAK_HOME),
    Bad("ls ~", reads(HOME_CANARY)),
    Bad("head -n 1 ../outside/marker", LEAK),
    Bad("tail ../outside/marker", LEAK),
    Bad("nl ../outside/marker", LEAK),
    Bad("cut -c1- ../outside/marker", LEAK),
    Bad("grep . ../outside/marker", LEAK),
    Bad("grep -r 4711 ..", LEAK),
    Bad("diff a.txt ../outside/marker", LEAK),
    Bad("diff --to-file=../outside/marker a.txt", LEAK),
    Bad("diff a.txt --from-file ../outside/marker", LEAK),
    Bad("grep -f../outside/marker ../outside/marker", LEAK),
    Bad("grep --file=../outside/marker a.txt"),
    Bad("cmp a.txt ../outside/marker"),
    Bad("md5sum ../outside/marker"),
    Bad("stat ../outside/marker"),
    Bad("wc -c {root}/outside/marker"),
    Bad("realpath .."),
    Bad("ls ..", reads("outside")),
    Bad("ls ../outside", LIST_OUT),
    Bad("ls -R ..", LIST_OUT),
    Bad("du -a ..", LIST_OUT),
    Bad("ls -- ../outside", LIST_OUT),
    Bad("ls {root}/outside", LIST_OUT),
    Bad("cat .*/outside/marker", LEAK),
    Bad("ls .?/outside", LIST_OUT),
    Bad("cat .[.]/outside/marker", LEAK),
    Bad("ls */../../outside", LIST_OUT),
    Bad("echo ../*", reads("outside")),
    Bad("echo {root}/outside/*", LIST_OUT),
    Bad("cat C:/windows/win.ini"),
    Bad("cat 'c:\\windows\\win.ini'"),
    Bad("type C:\\x"),
    Bad("cat '\\\\server\\share\\x'"),
]


def _bad_id(bad: Bad) -> str:
    return bad.command.replace("\n", "\\n").replace("\r", "\\r")


def _installed(program: str | None) -> bool:
    return program is None or shutil.which(program) is not None


def test_adversarial_corpus_is_large_and_distinct() -> None:
    commands = [bad.command for bad in ADVERSARIAL]
    assert len(commands) >= 100
    assert len(set(commands)) == len(commands)
    shown = [bad for bad in ADVERSARIAL if bad.effect is not None and _installed(bad.effect.needs)]
    assert len(shown) >= 0.7 * len(ADVERSARIAL)  # most entries prove their harm here


@pytest.mark.parametrize("bad", ADVERSARIAL, ids=_bad_id)
def test_adversarial_command_asks_and_really_does_harm(bad: Bad, tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path, bad.files)
    command = bad.command.replace("{root}", str(tmp_path))
    reason = why_not(command) or why_leaves(command, sandbox.ws)
    assert reason is not None and reason.strip()
    assert ExecShellCommand().is_change({"command": command}, sandbox.ws) is True

    effect = bad.effect
    target = tmp_path / effect.target if effect is not None and effect.kind != "reads" else None
    before = _content(target) if target is not None else None
    proc = run_sh(sandbox, command)
    if effect is None or not _installed(effect.needs):
        return
    if effect.kind == "reads":
        assert effect.target not in command
        assert effect.target in proc.stdout, (proc.stdout, proc.stderr)
    elif effect.kind == "writes":
        assert target is not None
        assert _content(target) is not None and _content(target) != before, (proc.stdout, proc.stderr)
    else:
        assert target is not None
        assert before is not None and _content(target) is None, (proc.stdout, proc.stderr)


# ---- the safe corpus ----

SAFE: list[str] = [
    "ls",
    "ls -la",
    "ls -la src",
    "ls -R",
    "ls *.txt",
    "ls src/*.py",
    "ls -d */",
    "ls links",
    "cat a.txt",
    'cat "a.txt" \'b.txt\'',
    "cat a.txt | wc -l",
    "cat a.txt b.txt | sort | uniq -c | sort -rn",
    "head -n 5 README.md",
    "head -5 a.txt",
    "tail -n 2 a.txt",
    "tail -n +2 data.csv",
    "wc -l a.txt b.txt",
    "wc -c ./*.txt",
    "grep -rn TODO src",
    "grep -rn foo src",
    "grep -c a a.txt",
    "grep -E '^(a|b)$' a.txt",
    "grep -i todo -r .",
    "grep -v a a.txt | head -n 1",
    "grep 'a\\|b' a.txt",
    'grep "print(" src/main.py',
    "grep -e '$HOME' a.txt",
    "grep -rn --include='*.py' TODO .",
    "grep -o foo src/main.py",
    "grep -n a a.txt | cut -d: -f1",
    "grep -n a *.txt",
    "grep foo src/*.py",
    "rg -n TODO",
    "rg -i foo src --type py",
    "find . -name '*.py'",
    'find . -maxdepth 1 -type f -name "*.txt"',
    "find src -newer a.txt",
    "find . -path ./links -prune -o -name '*.md' -print",
    "find . -name '*.py' | sort | head -n 3",
    "find src*",
    "sort -u names.txt",
    "sort -t, -k2 data.csv",
    "sort -rn a.txt",
    "sort -- *.txt",
    "uniq -c names.txt",
    "uniq -f 1 names.txt",
    "cut -d, -f1 data.csv",
    "cut -d/ -f1 list.txt",
    "tr a-z A-Z",
    "cat a.txt | tr -d a",
    "file README.md",
    "stat a.txt",
    "stat -c '%n %s' a.txt",
    "du -sh .",
    "du -a src",
    "du -sh -- *",
    "pwd",
    "echo hello world",
    "echo ../outside",
    "printf '%s\\n' a b",
    "basename src/main.py .py",
    "dirname src/main.py",
    "realpath src/main.py",
    "diff a.txt b.txt",
    "diff -u a.txt b.txt | head",
    "cmp a.txt b.txt",
    "md5sum a.txt b.txt",
    "sha256sum README.md",
    "nl a.txt",
    "tree -L 2",
    "ls -la | grep txt | wc -l",
    "ls\t-la",
]


def test_safe_corpus_is_large_and_distinct() -> None:
    assert len(SAFE) >= 40
    assert len(set(SAFE)) == len(SAFE)


@pytest.mark.parametrize("command", SAFE)
def test_safe_command_runs_without_asking_and_stays_inside(command: str, tmp_path: Path) -> None:
    assert why_not(command) is None
    assert is_read_only(command) is True
    sandbox = make_sandbox(tmp_path)
    assert arguments_stay_inside(command, sandbox.ws)  # beside `links/out`, which leads out
    before = snapshot(tmp_path)
    proc = run_sh(sandbox, command)
    assert snapshot(tmp_path) == before
    for secret in (OUTSIDE_SECRET, HOME_SECRET, LISTING_CANARY, HOME_CANARY):
        assert secret not in proc.stdout
    programs = [stage[0].text for stage in split_pipeline(command)]
    if all(_installed(p) or p in ("echo", "printf", "pwd") for p in programs):
        # A real command, not a typo: 1 is grep's "no match" and diff's "differ".
        assert proc.returncode in (0, 1), (proc.stdout, proc.stderr)


# ---- a few rules by name ----


def test_git_always_asks_and_says_why() -> None:
    for command in ("git status", "git log", "git diff --stat", "ls | git hash-object --stdin"):
        reason = why_not(command)
        assert reason is not None and "git" in reason and "configuration" in reason


@pytest.mark.parametrize(
    "program", ["awk", "sed", "xargs", "env", "less", "more", "sh", "bash", "tee", "git", "python3", "df", "od"]
)
def test_programs_that_can_write_run_or_wander_are_not_listed(program: str) -> None:
    assert program not in PROGRAMS
    assert not is_read_only(f"{program} a.txt")


def test_every_listed_program_says_why_it_is_there() -> None:
    for name, program in PROGRAMS.items():
        assert program.name == name and program.why


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("ls  -la\tsrc", [["ls", "-la", "src"]]),
        ("cat 'a b'\"c d\"e", [["cat", "a bc de"]]),
        ("grep 'x|y' a|wc -l", [["grep", "x|y", "a"], ["wc", "-l"]]),
        ('echo "a\\"b" "\\$" "\\q"', [["echo", 'a"b', "$", "\\q"]]),
        ("echo '' \"\"", [["echo", "", ""]]),
    ],
)
def test_split_pipeline_reads_words_as_the_shell_does(command: str, words: list[list[str]]) -> None:
    assert [[w.text for w in stage] for stage in split_pipeline(command)] == words


def test_unquoted_glob_characters_are_marked() -> None:
    [[_, plain, quoted, mixed]] = split_pipeline("ls *.py '*.py' a'*'?")
    assert plain.glob_at == {0} and quoted.glob_at == frozenset() and mixed.glob_at == {2}


@pytest.mark.parametrize(
    "command",
    [
        *["", "   ", "|", "ls |", "| ls", "ls || wc", "ls | | wc"],
        *["ls 'open", 'ls "open', 'ls "a\\"', "ls \x00", "ls \x1b[1m"],
    ],
)
def test_lines_that_do_not_parse_ask(command: str) -> None:
    with pytest.raises(NotPlain):
        split_pipeline(command)
    assert not is_read_only(command)


# ---- properties ----

SAFE_BASES: list[list[str]] = [
    ["ls", "-la", "src"],
    ["cat", "a.txt"],
    ["grep", "-rn", "foo", "src"],
    ["find", ".", "-name", "'*.py'"],
    ["sort", "-u", "names.txt"],
    ["head", "-n", "5", "README.md"],
    ["wc", "-l", "a.txt"],
    ["rg", "-n", "TODO"],
    ["du", "-sh", "src"],
    ["file", "README.md"],
    ["md5sum", "a.txt"],
    ["tree", "-L", "2"],
    ["diff", "a.txt", "b.txt"],
    ["uniq", "-c"],
    ["stat", "a.txt"],
    ["cut", "-d,", "-f1", "data.csv"],
    ["nl", "a.txt"],
    ["tail", "-n", "2", "a.txt"],
    ["realpath", "src"],
]

# Shell syntax the shell honours bare, glued before or after a word; the ones marked
# "dquote" still expand inside double quotes.
SHELL_FRAGMENTS: list[tuple[str, frozenset[str]]] = [
    *[
        (f, frozenset({"word", "prefix", "suffix"}))
        for f in [
            ">out", "> out", ">>out", "<in", "<<EOF", "2>err", "2>&1", "&>out", ">|out", "<>f", "1>out",
            ";", ";touch x", "&&", "&& touch x", "||", "&", "& touch x", "\n", "\ntouch x", "\r\ntouch x",
            "|&", ";;", "<(ls)", ">(ls)", "{a,..}", "{..,b}",
        ]
    ],
    *[
        (f, frozenset({"word", "prefix", "suffix", "dquote"}))
        for f in ["$(touch x)", "$(", "`touch x`", "`", "$VAR", "${VAR}", "$HOME", "$((1))", "$1", "$@", "$*", "$$"]
    ],
    *[(f, frozenset({"word", "prefix"})) for f in ["(ls)", "(", "{ ls; }", "~", "~/x", "~root", "#x", "# x"]],
    (")", frozenset({"word", "suffix"})),
]

# Paths that lead out, whatever the quoting (the program sees the same text).
OUT_PATHS = [
    "/etc/passwd", "/", "../x", "..", "a/../../b", "src/..", "./../x", "../../..", "C:/x", "c:/Windows",
    "C:\\x", "\\\\server\\share", "--file=../x", "--file=/etc/passwd", "--exclude-from=~/x", "--x=C:/y", "~/x", "~",
]

# Options that write, run a program or read a list of paths, per program (written out
# here by hand, independently of the classifier's own tables).
DANGEROUS_OPTIONS: dict[str, list[str]] = {
    "find": [
        "-exec touch x +", "-execdir touch x ';'", "-ok touch x ';'", "-okdir touch x ';'", "-delete",
        "-fprint out", "-fprint0 out", "-fprintf out %p", "-fls out", "-files0-from list0",
    ],
    "sort": ["-o out", "-oout", "-uo out", "-ro out", "-muo out", "-T tmp", "-Ttmp", "--files0-from=list0"],
    "rg": ["--pre=cat", "--pre cat", "--pre-glob '*'", "-z", "-nz", "-zn", "--search-zip", "--hostname-bin=x"],
    "file": ["-C", "-z", "-Z", "-p", "-f list.txt", "-bf list.txt", "--compile", "--uncompress", "--preserve-date",
             "--files-from=list.txt"],
    "du": ["--files0-from=list0"],
    "wc": ["--files0-from=list0"],
    "md5sum": ["-c", "-bc", "--check"],
    "uniq": ["a.txt out.txt", "- out.txt"],
    "tree": ["-o out", "-ao out", "-R"],
}
DANGEROUS_LONG: dict[str, list[str]] = {
    "sort": ["output", "compress-program", "temporary-directory", "files0-from"],
    "rg": ["pre", "search-zip", "hostname-bin"],
    "file": ["compile", "uncompress", "preserve-date", "files-from"],
    "du": ["files0-from"],
    "wc": ["files0-from"],
    "md5sum": ["check"],
}
GLOB_UNSAFE = ["sort", "rg", "find", "file", "du", "wc", "md5sum", "uniq", "tree"]


def _single(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _double(word: str) -> str:
    return '"' + "".join("\\" + c if c in '$`"\\' else c for c in word) + '"'


def _split(word: str) -> str:
    return word[:1] + _single(word[1:]) if len(word) > 1 else _single(word)


QUOTINGS = [lambda w: w, _single, _double, _split]


@st.composite
def pipeline_of_bases(draw: st.DrawFn, bases: list[list[str]] = SAFE_BASES) -> list[list[str]]:
    return [list(b) for b in draw(st.lists(st.sampled_from(bases), min_size=1, max_size=3))]


def _render(stages: list[list[str]], pad: str = " ") -> str:
    return " | ".join(pad.join(stage) for stage in stages)


def test_property_bases_are_read_only() -> None:
    for base in SAFE_BASES:
        assert is_read_only(" ".join(base)), base


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_shell_syntax_anywhere_it_is_honoured_asks(data: st.DataObject) -> None:
    stages = data.draw(pipeline_of_bases())
    fragment, contexts = data.draw(st.sampled_from(SHELL_FRAGMENTS))
    context = data.draw(st.sampled_from(sorted(contexts)))
    stage = data.draw(st.sampled_from(stages))
    at = data.draw(st.integers(0, len(stage) - 1 if context != "word" else len(stage)))
    if context == "word":
        stage.insert(at, fragment)
    elif context == "prefix":
        stage[at] = fragment + stage[at]
    elif context == "suffix":
        stage[at] = stage[at] + fragment
    else:
        stage.insert(max(at, 1), '"a' + fragment + 'b"')
    command = _render(stages)
    assert not is_read_only(command), command


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_paths_out_of_the_workspace_ask_however_quoted(data: st.DataObject) -> None:
    stages = data.draw(pipeline_of_bases())
    path = data.draw(st.sampled_from(OUT_PATHS))
    quote = data.draw(st.sampled_from(QUOTINGS))
    if "\\" in path and quote is QUOTINGS[0]:
        quote = _single  # a bare backslash is an escape, not the path
    if path.startswith("~") and quote is not QUOTINGS[0]:
        quote = QUOTINGS[0]  # a quoted `~` is a plain name; the property is about the shell's `~`
    stage = data.draw(st.sampled_from(stages))
    stage.insert(data.draw(st.integers(1, len(stage))), quote(path))
    command = _render(stages)
    assert not is_read_only(command), command


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_glued_paths_in_short_options_ask(data: st.DataObject) -> None:
    glued = [("grep", "f"), ("rg", "f"), ("du", "X"), ("diff", "X"), ("file", "m")]
    program, letter = data.draw(st.sampled_from(glued))
    path = data.draw(st.sampled_from(["../x", "/etc/passwd", "a/../../b", ".."]))
    quote = data.draw(st.sampled_from(QUOTINGS))
    command = f"{program} {quote('-' + letter + path)} a.txt"
    assert not is_read_only(command), command


@st.composite
def dangerous_option(draw: st.DrawFn) -> tuple[str, list[str]]:
    program = draw(st.sampled_from(sorted(DANGEROUS_OPTIONS)))
    choices = list(DANGEROUS_OPTIONS[program])
    for name in DANGEROUS_LONG.get(program, []):
        for size in range(1, len(name) + 1):
            choices += [f"--{name[:size]}", f"--{name[:size]}=x"]
    option = draw(st.sampled_from(choices))
    quote = draw(st.sampled_from(QUOTINGS))
    return program, [quote(w) for w in option.split(" ")]


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_options_that_write_or_run_ask_in_any_spelling(data: st.DataObject) -> None:
    program, words = data.draw(dangerous_option())
    bases = [b for b in SAFE_BASES if b[0] == program] or [[program]]
    stages = data.draw(pipeline_of_bases())
    stage = list(data.draw(st.sampled_from(bases)))
    at = data.draw(st.integers(1, len(stage)))
    stage[at:at] = words
    stages.insert(data.draw(st.integers(0, len(stages))), stage)
    command = _render(stages)
    assert not is_read_only(command), command


# Options that make a program follow the links it meets inside a folder, per program
# (from each manual, written out here independently of the classifier's tables), and
# the long ones by every prefix; diff follows them with no option at all.
FOLLOW_OPTIONS: dict[str, list[str]] = {
    "ls": ["-L", "-lL", "-LR", "-R -L", "--dereference"],
    "grep": ["-R", "-Rn", "-nR", "--dereference-recursive"],
    "rg": ["-L", "-nL", "--follow"],
    "find": ["-L", "-HL", "-follow", "-xtype f", "-readable", "-writable", "-executable", "-printf %Y"],
    "du": ["-L", "-aL", "--dereference"],
    "tree": ["-l", "-al"],
    "diff": ["", "-r", "-ru", "--recursive"],
}
FOLLOW_LONG: dict[str, list[str]] = {
    "ls": ["dereference"], "grep": ["dereference-recursive"], "rg": ["follow"], "du": ["dereference"],
    "diff": ["recursive"],
}


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_options_that_follow_links_need_the_walk_in_any_spelling(data: st.DataObject) -> None:
    program = data.draw(st.sampled_from(sorted(FOLLOW_OPTIONS)))
    choices = list(FOLLOW_OPTIONS[program])
    for name in FOLLOW_LONG.get(program, []):
        choices += [f"--{name[:size]}" for size in range(1, len(name) + 1)]
    option = data.draw(st.sampled_from(choices))
    quote = data.draw(st.sampled_from(QUOTINGS))
    words = [quote(w) for w in option.split(" ") if w]
    bases = [b for b in SAFE_BASES if b[0] == program] or [[program]]
    stage = list(data.draw(st.sampled_from(bases)))
    at = data.draw(st.integers(1, len(stage)))
    stage[at:at] = words
    command = _render([stage])
    walk = link_walk(split_pipeline(command)[0])
    assert walk is not None and walk.depth is not None, command


@pytest.mark.parametrize(
    "command",
    ["cat a.txt", "ls -laR src", "grep -rn foo src", "find . -name x", "du -a", "tree -a", "head -n 3 a.txt",
     "diff --no-dereference -r a b", "stat -L a.txt", "file -L a.txt", "du -H links"],
)
def test_programs_that_follow_no_link_they_meet_need_no_walk(command: str) -> None:
    assert link_walk(split_pipeline(command)[0]) is None


def test_a_word_that_stops_following_counts_only_as_an_option() -> None:
    assert link_walk(split_pipeline("diff --no-dereference -r a b")[0]) is None
    walk = link_walk(split_pipeline("diff -r -- --no-dereference b")[0])  # a folder named so
    assert walk is not None and walk.depth == "tree"


def test_rg_reads_its_ignore_files_wherever_it_walks() -> None:
    walk = link_walk(split_pipeline("rg -n TODO src")[0])
    assert walk is not None and walk.depth is None and ".gitignore" in walk.reads and walk.skip_hidden
    shown = link_walk(split_pipeline("rg -uu TODO")[0])
    assert shown is not None and not shown.skip_hidden
    info = link_walk(split_pipeline("tree --info src")[0])
    assert info is not None and ".info" in info.reads


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_globs_that_may_expand_to_options_ask(data: st.DataObject) -> None:
    program = data.draw(st.sampled_from(GLOB_UNSAFE))
    glob = data.draw(st.sampled_from(["*", "*.txt", "?", "[-]*", "-*", "[a-]*", "*o*"]))
    args = data.draw(st.lists(st.sampled_from(["a.txt", "-n", "src"]), max_size=3))
    args.insert(data.draw(st.integers(0, len(args))), glob)
    command = " ".join([program, *args])
    assert not is_read_only(command), command


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_git_asks_whatever_it_is_asked(data: st.DataObject) -> None:
    stages = data.draw(pipeline_of_bases())
    stage = data.draw(st.sampled_from(stages))
    if data.draw(st.booleans()):
        stage[0] = "git"
    else:
        stage.insert(0, "git")
    command = _render(stages)
    assert not is_read_only(command), command


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text: str) -> None:
    reason = why_not(text)
    assert reason is None or (isinstance(reason, str) and reason)
    assert is_read_only(text) is (reason is None)


SHELLISH = st.text(alphabet=" \t\n|&;<>()$`'\"\\*?[]{}#~=-./:aAz0", max_size=40)


@settings(max_examples=300, deadline=None)
@given(SHELLISH)
def test_never_raises_on_shell_like_text(text: str) -> None:
    assert is_read_only("ls " + text) in (True, False)


# ---- the tokenizer against the shell ----

BARE = st.text(alphabet="abz09-_.,:=%+@^!/", min_size=1, max_size=6)
SINGLE = st.text(alphabet="ab $`\"\\*?[]|;&<>(){}#~\t", max_size=6).map(_single)
DOUBLE = st.lists(
    st.one_of(
        st.text(alphabet="ab '*?[]|;&<>(){}#~\t", min_size=1, max_size=4),
        st.sampled_from(["\\$", "\\`", '\\"', "\\\\", "\\a", "\\n", "\\*"]),
    ),
    max_size=4,
).map(lambda parts: '"' + "".join(parts) + '"')
WORD = st.lists(st.one_of(BARE, SINGLE, DOUBLE), min_size=1, max_size=3).map("".join)


@pytest.fixture(scope="module")
def shell_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("shell")
    (folder / "ab").write_text("")
    yield folder


def _shell_words(folder: Path, args: str) -> list[str]:
    out = subprocess.run(
        ["/bin/sh", "-c", "printf '%s\\n' " + args],
        cwd=folder,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder), "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        check=True,
    ).stdout.decode()
    return out.split("\n")[:-1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(WORD, min_size=1, max_size=5), st.sampled_from([" ", "\t", "  "]))
def test_tokenizer_agrees_with_sh_on_quoting(shell_dir: Path, words: list[str], blank: str) -> None:
    args = blank.join(words)
    [[_, *parsed]] = split_pipeline("printf " + args)
    if any(w.globbed for w in parsed):
        return  # the shell expands these; compared on their own below
    assert _shell_words(shell_dir, args) == [w.text for w in parsed]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(SHELLISH)
def test_whatever_the_tokenizer_accepts_sh_reads_the_same_way(shell_dir: Path, text: str) -> None:
    try:
        stages = split_pipeline("printf '%s\\n' " + text)
    except NotPlain:
        return
    if len(stages) != 1 or len(stages[0]) == 2 or any(w.globbed for w in stages[0]):
        return
    assert _shell_words(shell_dir, text) == [w.text for w in stages[0][2:]]


@pytest.mark.parametrize("line", [
    "ls " + "a*/" * 2700,          # many globbed components in one word
    "grep -e" + "a" * 8000 + " x",  # a long value glued to a short option
])
def test_a_long_command_costs_its_length_not_its_square(line):
    """Both took 0.7-1.7 s of CPU at the 8,192-character cap (a loop per glob and per
    start of a glued value); one pass each now."""
    import time

    start = time.process_time()
    is_read_only(line[:8192])
    assert time.process_time() - start < 0.05  # one pass: about 0.004 s here; the old loops 0.12-0.19 s
