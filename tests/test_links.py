"""Reads through links (issue 13, section 1): a command that skips the approval card stays
inside the workspace, even through links met while a program walks a folder.

Each case is run for real through the daemon's run (the scripted backend and the real
tools), in `read_only` and in `ask`: in `read_only` it is refused, in `ask` its card
waits and is denied, so nothing runs. The markers of what lies outside (in a file's
content and in names) never show in a result, an event, the record or a request to
the model. Each case that prints a marker when run with /bin/sh directly shows that
the command is a real leak, not a strawman. The opposite: ordinary read-only commands,
and link-following ones whose walk stays inside, still run without a card.

Sandbox (`root`): `root/away` is a folder outside the workspace, `root/hop.txt` a link
outside to `root/<NAME>-file.txt`; the workspace `root/ws` has `nest/deeplink` (a link
to `away`) and `nest/flink` (a link to `hop.txt`) beside `twin/`, a real folder with
the same names. No link's own text holds a marker: a marker can only show through a
program that followed a link.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors import notices
from actors.tools.classify import PROGRAMS
from actors.tools.shell import ExecShellCommand, arguments_stay_inside
from tests.test_conversation import tool_items
from tests.waiting import drained, wait_state

CONTENT = "content-marker-5b1e"
NAME = "name-marker-9c3d"
MARKERS = (CONTENT, NAME)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_sandbox(root: Path, *, links_out: bool = True) -> Path:
    """The workspace, with the outside world beside it; see the module docstring."""
    away, ws = root / "away", root / "ws"
    _write(away / "data.txt", f"{CONTENT}\n")
    _write(away / f"{NAME}.txt", f"{CONTENT}\n")
    _write(away / "sub" / f"{NAME}-dir" / "deep.txt", f"{CONTENT}\n")
    _write(away / "info.txt", f"data*\n\t{CONTENT}\n")  # a tree .info file
    _write(away / "ignore.txt", f"{CONTENT}{{a\n")  # an ignore file rg reports line by line
    _write(root / f"{NAME}-file.txt", f"{CONTENT}\n")
    (root / "hop.txt").symlink_to(f"{NAME}-file.txt")
    files = {
        "a.txt": "alpha\nbeta\n",
        "b.txt": "alpha\ngamma\n",
        "README.md": "# Demo\nline two\n",
        "names.txt": "bob\nalice\nbob\n",
        "src/main.py": "# TODO fix\nprint('hi')\n",
        "src2/main.py": "# TODO fix it\nprint('hi')\n",
        "twin/flink": "plain\n",
        "twin/deeplink/data.txt": "plain\n",
        "twin/deeplink/sub/keep.txt": "plain\n",
        "info/data.txt": "data\n",
        "ig/a.txt": "alpha\n",
        "inner/real.txt": "TODO inner\n",
    }
    for name, text in files.items():
        _write(ws / name, text)
    (ws / "nest").mkdir()
    (ws / "src" / "inlink").symlink_to("../inner")  # a link that stays inside
    (ws / "src2" / "inlink").symlink_to("../inner")
    if links_out:
        (ws / "nest" / "deeplink").symlink_to("../../away")
        (ws / "nest" / "flink").symlink_to("../../hop.txt")
        (ws / "lnk").symlink_to("../hop.txt")  # a name an option may take glued (`-mlnk`)
    return ws


def add_traps(ws: Path) -> None:
    """Files some programs read wherever they walk (tree's .info, rg's ignore files),
    each a link out."""
    (ws / "info" / ".info").symlink_to("../../away/info.txt")
    (ws / "ig" / ".ignore").symlink_to("../../away/ignore.txt")
    (ws / "info" / ".gitignore").symlink_to("../../away/ignore.txt")


@attrs.frozen
class Leak:
    command: str
    shows: bool = True  # run directly, the command prints a marker (else it only reads metadata out)
    traps: bool = False  # needs add_traps()


# For every program on the list: each option that makes it follow links met inside a
# folder, its default where it follows them (diff), and a link or glob named on the line.
LEAKS: dict[str, list[Leak]] = {
    "ls": [
        Leak("ls -RL"), Leak("ls -R -L ."), Leak("ls -lLR ."), Leak("ls -LR nest"), Leak("ls --dereference -R"),
        Leak("ls --deref -R nest", shows=False), Leak("ls -L nest", shows=False), Leak("ls -lL nest", shows=False),
        Leak("ls nest/deeplink"), Leak("ls -R nest/deeplink"), Leak("ls nest/*"), Leak("ls -d nest/deeplink/*"),
    ],
    "cat": [Leak("cat nest/flink"), Leak("cat nest/deeplink/data.txt"), Leak("cat nest/*"),
            Leak("cat nest/f[[:alpha:]]ink")],
    "head": [Leak("head nest/flink"), Leak("head -n 1 nest/*")],
    "tail": [Leak("tail nest/flink"), Leak("tail -n 1 nest/deeplink/*")],
    "wc": [Leak("wc nest/flink", shows=False), Leak("wc -l nest/deeplink/*")],
    "grep": [
        Leak("grep -R marker ."), Leak("grep -R marker nest"), Leak("grep -rR marker"),
        Leak("grep --dereference-recursive -l marker ."), Leak("grep --dereference-r marker ."),
        Leak("grep -r marker nest/deeplink"), Leak("grep marker nest/flink"), Leak("grep -h marker nest/*"),
        Leak("grep -o -flnk a.txt", shows=False),
    ],
    "rg": [
        Leak("rg -L marker"), Leak("rg --follow -l marker"), Leak("rg -L marker nest"),
        Leak("rg --fol marker", shows=False),
        Leak("rg marker nest/deeplink"), Leak("rg marker nest/flink"), Leak("rg alpha ig", traps=True),
        Leak("rg -l alpha", traps=True),
    ],
    "find": [
        Leak("find -L ."), Leak("find -L"), Leak("find . -follow"), Leak("find -L nest -name '*'"),
        Leak("find -HL nest", shows=False), Leak("find nest/deeplink", shows=False), Leak("find -H nest/deeplink"),
        Leak("find . -xtype d", shows=False), Leak("find nest -readable", shows=False),
        Leak("find nest -printf '%p %Y\\n'", shows=False),
    ],
    "sort": [Leak("sort nest/flink"), Leak("sort nest/f*")],
    "uniq": [Leak("uniq nest/flink")],
    "cut": [Leak("cut -c1- nest/flink")],
    "tr": [Leak("tr -d x nest/deeplink/n*")],  # tr opens nothing; the shell's glob reads the folder
    "file": [
        Leak("file -L nest/flink", shows=False), Leak("file -mnest/flink a.txt"), Leak("file -mlnk a.txt"),
        Leak("file nest/deeplink/*"),
    ],
    "stat": [Leak("stat -L nest/flink", shows=False), Leak("stat nest/deeplink/*")],
    "du": [
        Leak("du -aL"), Leak("du -L -a nest"), Leak("du --dereference -a ."), Leak("du --deref -a", shows=False),
        Leak("du -a nest/deeplink", shows=False),
    ],
    "tree": [
        Leak("tree -l"), Leak("tree -l nest"), Leak("tree -al ."), Leak("tree nest/deeplink"),
        Leak("tree --info info", traps=True), Leak("tree --gitignore info", shows=False, traps=True),
    ],
    "pwd": [],  # it opens nothing and walks nothing
    "echo": [Leak("echo nest/deeplink/*")],
    "printf": [Leak("printf '%s\\n' nest/deeplink/*")],
    "basename": [Leak("basename nest/deeplink/n*")],
    "dirname": [Leak("dirname nest/deeplink/*/*/deep.txt")],
    "realpath": [Leak("realpath nest/flink"), Leak("realpath nest/deeplink/*")],
    "diff": [
        Leak("diff twin nest"), Leak("diff -r twin nest"), Leak("diff -rq twin nest"),
        Leak("diff --recursive twin nest"), Leak("diff --from-file=twin nest"),
        Leak("diff -r twin/deeplink nest/deeplink"),
        Leak("diff twin/flink nest/flink"), Leak("diff -u twin nest | head"),
    ],
    "cmp": [Leak("cmp -b twin/flink nest/flink", shows=False)],
    "md5sum": [Leak("md5sum nest/flink", shows=False), Leak("md5sum nest/deeplink/*")],
    "sha256sum": [Leak("sha256sum nest/flink", shows=False), Leak("sha256sum nest/deeplink/*")],
    "nl": [Leak("nl nest/flink")],
}
CASES = [leak for program in sorted(LEAKS) for leak in LEAKS[program]]

# The ordinary read-only commands the classifier's tests prove run without a card: with
# links out in the workspace they still do, and show nothing from outside.
STILL_RUN = [
    ("ls", "nest"),
    ("ls -la", "README.md"),
    ("ls -R", "twin:"),
    ("cat a.txt", "alpha"),
    ("head -n 1 README.md", "# Demo"),
    ("wc -l a.txt b.txt", "total"),
    ("grep -rn TODO src", "TODO fix"),
    ("rg -n TODO src", "TODO fix"),
    ("find . -name '*.py'", "src/main.py"),
    ("du -sh .", "."),
    ("tree -L 2", "nest"),
    ("diff a.txt b.txt", "gamma"),
]
# Link-following commands whose walk stays inside: with no link out, or only beside it.
FOLLOWS_INSIDE = [
    ("grep -R TODO .", "TODO inner", False),
    ("ls -LR", "real.txt", False),
    ("find -L . -name real.txt", "src/inlink/real.txt", False),
    ("du -L -a src", "inlink/real.txt", False),
    ("rg -L TODO", "inlink/real.txt", False),
    ("tree -l src", "real.txt", False),
    ("diff -r src src2", "TODO fix it", True),
    ("diff src src2", "TODO fix it", True),
    ("rg -n TODO src2", "TODO fix it", True),
]


def _id(leak: Leak) -> str:
    return leak.command


def test_every_listed_program_has_its_cases() -> None:
    assert set(LEAKS) == set(PROGRAMS)


def run_sh(ws: Path, command: str) -> str:
    proc = subprocess.run(
        ["/bin/sh", "-c", command], cwd=ws, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(ws.parent / "home")},
    )
    return (proc.stdout + proc.stderr).decode(errors="replace")


def _drain(sub) -> list[str]:
    return [e.data_json() for e in drained(sub)]


def _assert_no_marker(*texts: str) -> None:
    for text in texts:
        for marker in MARKERS:
            assert marker not in text


async def _run_once(real_tools, ws_id: str, mode: str, command: str, *, card: bool):
    """One conversation whose model runs `command`: the card (in `ask` with `card`, it
    must wait and is denied; without, none may wait), the events, the record and the
    requests the model got."""
    turns_before = len(real_tools.backend.turns)
    call = {"name": "exec_shell_command", "arguments": {"command": command}}
    real_tools.backend.push({"tool_calls": [call]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws_id, mode=mode)
    with real_tools.bus.subscribe() as sub:
        await conv.send_message("look around")
        if card and mode == "ask":
            await wait_state(conv, "waiting", "idle")
            waiting = tool_items(conv)[0]
            assert waiting.state == "waiting", (command, waiting.state, waiting.result)
            assert not waiting.result  # nothing ran: no output before the person answers
            await trio.sleep(0.05)
            assert tool_items(conv)[0].state == "waiting"
            await conv.approve(waiting.id, False)
        await wait_state(conv, "idle")
        events = _drain(sub)
    await conv.flush()
    record = (real_tools.data / "agent" / "conversations" / f"{conv.id}.json").read_text()
    if not card:
        assert all('"waiting"' not in e for e in events)
    turns = [str(t.messages) for t in real_tools.backend.turns[turns_before:]]
    assert len(turns) == 2  # the call's round, and the one that read its result
    return tool_items(conv)[0], [*events, record, *turns]


@pytest.mark.parametrize("leak", CASES, ids=_id)
async def test_a_read_through_a_link_out_never_runs_unasked(real_tools, tmp_path: Path, leak: Leak) -> None:
    ws = make_sandbox(tmp_path)
    if leak.traps:
        add_traps(ws)
    for marker in MARKERS:
        assert marker not in leak.command
    if leak.shows:
        shown = run_sh(ws, leak.command)
        assert any(m in shown for m in MARKERS), shown  # run unasked, it would leak
    assert ExecShellCommand().is_change({"command": leak.command}, ws) is True
    workspace = await real_tools.hub.add_workspace(str(ws))
    for mode in ("read_only", "ask"):
        card, seen = await _run_once(real_tools, workspace.id, mode, leak.command, card=True)
        assert card.state == "denied", (mode, card.state, card.result)
        _assert_no_marker(card.result or "", *seen)


@pytest.mark.parametrize(("command", "link"), [
    ("grep -R TODO nest", "is a link that leads out of the workspace; `grep -R` follows every link"),
    ("diff -r twin nest", "leads out of the workspace"),
    ("ls -RL nest", "is a link that leads out of the workspace; `ls -L` reads what the links"),
    ("cat nest/flink", "`nest/flink` is a link that leads out of the workspace"),
])
async def test_a_read_refused_for_leading_out_says_so_and_which_link(real_tools, tmp_path: Path, command: str,
                                                                      link: str) -> None:
    """In `read_only` (and planning, and unattended) such a read is refused; the model is
    told it reads out of the workspace through a link, and which, never that reads are changes."""
    ws = make_sandbox(tmp_path)
    workspace = await real_tools.hub.add_workspace(str(ws))
    card, seen = await _run_once(real_tools, workspace.id, "read_only", command, card=False)
    assert card.state == "denied"
    result = card.result or ""
    assert result.startswith("Not done: this command only reads, but it would read outside the workspace: `nest/")
    assert link in result and "changes are refused" not in result and result != notices.DENIED_READ_ONLY
    assert result in seen[-1]  # the model read it in its next turn
    _assert_no_marker(result, *seen)


async def test_a_change_in_read_only_is_still_refused_as_a_change(real_tools, tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path)
    workspace = await real_tools.hub.add_workspace(str(ws))
    card, _ = await _run_once(real_tools, workspace.id, "read_only", "touch made.txt", card=False)
    assert (card.state, card.result) == ("denied", notices.DENIED_READ_ONLY)
    assert not (ws / "made.txt").exists()


@pytest.mark.parametrize(("command", "expect"), STILL_RUN)
async def test_ordinary_reads_still_run_without_a_card(real_tools, tmp_path: Path, command: str, expect: str) -> None:
    ws = make_sandbox(tmp_path)
    workspace = await real_tools.hub.add_workspace(str(ws))
    for mode in ("ask", "read_only"):
        card, seen = await _run_once(real_tools, workspace.id, mode, command, card=False)
        assert card.state == "done", (mode, card.state, card.result)
        assert expect in card.result
        _assert_no_marker(card.result, *seen)


@pytest.mark.parametrize(("command", "expect", "links_out"), FOLLOWS_INSIDE)
async def test_a_walk_that_stays_inside_runs_without_a_card(
    real_tools, tmp_path: Path, command: str, expect: str, links_out: bool
) -> None:
    ws = make_sandbox(tmp_path, links_out=links_out)
    workspace = await real_tools.hub.add_workspace(str(ws))
    card, seen = await _run_once(real_tools, workspace.id, "ask", command, card=False)
    assert card.state == "done", (card.state, card.result)
    assert expect in card.result
    _assert_no_marker(card.result, *seen)


def test_a_link_out_anywhere_in_the_walk_is_found(tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path, links_out=False)
    deep = ws / "src" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert arguments_stay_inside("grep -R TODO src", ws)
    (deep / "up").symlink_to(tmp_path / "away")
    assert not arguments_stay_inside("grep -R TODO src", ws)
    assert not arguments_stay_inside("diff -r src src2", ws)
    assert arguments_stay_inside("diff src src2", ws)  # without -r diff reads only their own entries
    (deep / "up").unlink()
    (deep / "dangling").symlink_to(tmp_path / "away" / "not-yet")  # may exist by the time it runs
    assert not arguments_stay_inside("grep -R TODO src", ws)


def test_a_link_to_an_inside_folder_is_walked_too(tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path, links_out=False)
    (ws / "inner" / "out").symlink_to(tmp_path / "away")  # reached from src only through src/inlink
    assert not arguments_stay_inside("grep -R TODO src", ws)
    assert not arguments_stay_inside("diff -r src src2", ws)
    assert arguments_stay_inside("grep -r TODO src", ws)  # -r does not follow what it meets


def test_a_walk_over_its_budget_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.tools import links

    ws = make_sandbox(tmp_path, links_out=False)
    assert arguments_stay_inside("grep -R TODO .", ws)
    monkeypatch.setattr(links, "MAX_WALK_ENTRIES", 5)
    assert not arguments_stay_inside("grep -R TODO .", ws)
    assert arguments_stay_inside("grep -r TODO .", ws)  # no walk is needed
    monkeypatch.setattr(links, "MAX_WALK_ENTRIES", 10_000)
    monkeypatch.setattr(links, "MAX_WALK_S", 0.0)
    assert arguments_stay_inside("grep -R TODO .", ws)  # a small walk is finished whatever the clock says
    monkeypatch.setattr(links, "MIN_WALK_ENTRIES", 5)
    assert not arguments_stay_inside("grep -R TODO .", ws)


def test_a_cycle_of_links_inside_ends(tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path, links_out=False)
    (ws / "src" / "loop").symlink_to("..")
    assert arguments_stay_inside("find -L src", ws)
    assert arguments_stay_inside("ls -LR src", ws)


def test_rg_reads_ignore_files_but_not_what_it_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RIPGREP_CONFIG_PATH", raising=False)
    ws = make_sandbox(tmp_path, links_out=False)
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "bin" / "python").symlink_to(tmp_path / "away" / "data.txt")  # as a virtualenv has
    (ws / ".git" / "objects").mkdir(parents=True)
    (ws / ".git" / "objects" / "x").symlink_to(tmp_path / "away")
    assert arguments_stay_inside("rg -n TODO", ws)  # rg enters neither, nor follows a link without -L
    assert arguments_stay_inside("rg -L TODO", ws)  # nor a hidden folder with -L
    assert not arguments_stay_inside("rg --hidden -L TODO", ws)
    assert not arguments_stay_inside("grep -R TODO .", ws)
    (ws / ".git" / "info").mkdir()
    (ws / ".git" / "info" / "exclude").symlink_to(tmp_path / "away" / "ignore.txt")
    assert not arguments_stay_inside("rg -n TODO", ws)  # rg reads .git/info/exclude
    (ws / ".git" / "info" / "exclude").unlink()
    (ws / "src" / ".rgignore").symlink_to(tmp_path / "away" / "ignore.txt")
    assert not arguments_stay_inside("rg -n TODO", ws)
    (ws / "src" / ".rgignore").unlink()
    assert arguments_stay_inside("rg -n TODO", ws)
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(tmp_path / "rgrc"))  # it may say --follow --hidden
    assert not arguments_stay_inside("rg -n TODO", ws)


def test_rg_reads_a_linked_git_folders_exclude_file(tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path, links_out=False)
    (tmp_path / "away" / "repo" / "info").mkdir(parents=True)
    (tmp_path / "away" / "repo" / "info" / "exclude").write_text(f"{CONTENT}{{a\n")
    (ws / "src" / ".git").symlink_to(tmp_path / "away" / "repo")
    assert CONTENT in run_sh(ws, "rg TODO src")
    assert not arguments_stay_inside("rg TODO src", ws)


def test_paths_after_options_and_text_only_programs(tmp_path: Path) -> None:
    ws = make_sandbox(tmp_path)
    assert not arguments_stay_inside("grep -rn --exclude-from=lnk TODO src", ws)
    assert not arguments_stay_inside("grep -f lnk a.txt", ws)
    assert not arguments_stay_inside("du -Xlnk src", ws)  # glued to the option
    assert arguments_stay_inside("echo nest/flink", ws)  # echo prints the words; it opens nothing
    assert not arguments_stay_inside("echo nest/f*", ws)  # but the shell expands the glob


# ---- the glob expansion against the shell's ----

GLOB_NAMES = ["a.txt", "ab", "b.md", ".hid", "[x]", "c?", "d*e", "nest"]
GLOB_PIECES = st.lists(
    st.sampled_from(["*", "?", "a", "b", ".", "t", "x", "[ab]", "[!a]", "[^a]", "[[:alpha:]]", "[a-c]", "[", "]",
                     "/", "'*'", "'['", "nest/", "n*/"]),
    min_size=1, max_size=5,
).map("".join)


@pytest.fixture(scope="module")
def glob_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("globs")
    for name in GLOB_NAMES:
        (folder / name).write_text("")
    (folder / "nest").unlink()
    (folder / "nest").mkdir()
    for name in GLOB_NAMES[:4]:
        (folder / "nest" / name).write_text("")
    return folder


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(GLOB_PIECES)
def test_glob_expansion_covers_every_name_the_shell_gives(glob_dir: Path, pattern: str) -> None:
    from actors.tools.links import MAX_WALK_ENTRIES, MAX_WALK_S, _Budget, _candidates
    from actors.tools.shell_words import NotPlain, split_pipeline

    try:
        [[_, word]] = split_pipeline("ls " + pattern)
    except (NotPlain, ValueError):
        return
    if not word.globbed:
        return
    shell = subprocess.run(
        ["/bin/sh", "-c", "printf '%s\\n' " + pattern], cwd=glob_dir, capture_output=True, timeout=10,
    ).stdout.decode().splitlines()
    existing = {name for name in shell if os.path.lexists(glob_dir / name)}
    if word.text.startswith("/"):  # absolute: whatever it expands to is refused
        assert not (existing and arguments_stay_inside("ls " + pattern, glob_dir))
        return
    budget = _Budget(MAX_WALK_ENTRIES, time.monotonic() + MAX_WALK_S * 20)
    ours = set(_candidates(str(glob_dir), word, False, budget))
    assert existing <= {c.rstrip("/") for c in ours} | ours, (pattern, existing, ours)


def test_glob_matching_is_linear_in_the_name(tmp_path: Path) -> None:
    from actors.tools.links import _matches, _pattern

    name = "a" * 250
    pattern = _pattern("*a" * 40 + "c", frozenset(range(0, 81, 2)))
    started = time.monotonic()
    assert _matches(pattern, name) is False
    assert time.monotonic() - started < 1.0
