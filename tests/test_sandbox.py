"""The sandbox (actors/sandbox/): the bwrap argv (pure, property-tested), the probe, and
exec_shell_command confined for real: what it may write, see and reach, the note a
confined failure gets, and a stop that still kills everything the command started."""

from __future__ import annotations

import shutil
import tempfile
from functools import partial
from pathlib import Path, PurePosixPath

import psutil
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import ToolError
from actors.policy.modes import decide
from actors.runs.agent.ledger import SHELL_TOOL, ended_as
from actors.sandbox.bwrap import Confinement, bwrap_argv, is_within, seen_as
from actors.sandbox.policy import SANDBOX_NOTE, Sandbox, explain, probe
from actors.sandbox.seatbelt import seatbelt_profile
from actors.tools.registry import ToolContext
from actors.tools.shell import ExecShellCommand, asks_outside, run_command
from tests.peers import need_peer

# ---- the argv, pure ----

_names = st.sampled_from(["a", "b", "home", "tmp", "ws", "data", ".ssh", "x y", "k.key"])
_paths = st.lists(_names, min_size=1, max_size=4).map(lambda parts: PurePosixPath("/", *parts))


@given(ws=_paths, writable=st.booleans(), network=st.booleans(),
       private=st.lists(_paths, max_size=3), hidden_dirs=st.lists(_paths, max_size=4),
       hidden_files=st.lists(_paths, max_size=3), probe_path=_paths)
def test_the_argv_hides_what_is_hidden_and_binds_the_workspace(ws, writable, network, private, hidden_dirs,
                                                                hidden_files, probe_path):
    c = Confinement(ws, writable, network, tuple(private), tuple(hidden_dirs), tuple(hidden_files))
    argv = bwrap_argv("bwrap", c, ["/bin/sh", "-c", "true"])
    assert argv[0] == "bwrap" and argv[-3:] == ["/bin/sh", "-c", "true"]
    assert ("--unshare-net" in argv) is (not network)
    assert "--new-session" not in argv  # the command stays in the group the daemon kills
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    # Every hidden path but the workspace itself is hidden, inside the workspace too, and
    # the workspace is the real folder (a hidden or private folder around it included).
    for h in hidden_dirs + hidden_files:
        if h != ws:
            assert seen_as(argv, h) in ("tmpfs", "hidden"), (h, argv)
    assert seen_as(argv, ws) == ("rw" if writable else "ro")
    # Anything not under the workspace, a private or hidden path is read-only.
    special = [ws, *private, *hidden_dirs, *hidden_files]
    if not any(is_within(probe_path, s) or is_within(s, probe_path) for s in special):
        assert seen_as(argv, probe_path) == "ro"


def test_the_seatbelt_profile_names_the_same_policy():
    c = Confinement(PurePosixPath("/w s"), True, False, (), (PurePosixPath("/h/.ssh"),), (PurePosixPath("/k"),))
    profile = seatbelt_profile(c, PurePosixPath("/scratch"))
    assert '(subpath "/w s")' in profile and '(subpath "/scratch")' in profile
    assert "network-outbound" not in profile
    assert profile.rstrip().endswith('(deny file-read* file-write* (subpath "/h/.ssh") (literal "/k"))')
    read_only = seatbelt_profile(Confinement(PurePosixPath("/w"), False, True), PurePosixPath("/s"))
    assert '(subpath "/w")' not in read_only and "network-outbound" in read_only


def test_outside_requests_always_ask_and_read_only_refuses():
    for mode in ("ask", "full"):
        assert decide(mode=mode, change=True, unattended=False, rule="ls", outside=True).action == "ask"
    assert decide(mode="read_only", change=True, unattended=False, outside=True).action == "refuse"
    assert decide(mode="full", change=True, unattended=True, outside=True).action == "refuse"
    assert asks_outside("exec_shell_command", {"command": "x", "outside_sandbox": True})
    assert not asks_outside("exec_shell_command", {"command": "x", "outside_sandbox": "yes"})


def test_explain_reads_what_the_sandbox_caused():
    assert explain("touch: cannot touch '/x': Read-only file system", "full").startswith(SANDBOX_NOTE)
    assert explain("curl: (6) Could not resolve host: example.com", "ask") is not None
    assert "outside_sandbox" not in (explain("sh: cannot create f: Read-only file system", "read_only") or "x")
    assert explain("all fine", "full") is None


def test_probe_without_bwrap_says_how_to_fix_it(tmp_path):
    status = probe("auto", str(tmp_path / "no-bwrap"), platform="linux")
    assert not status.available and "install bubblewrap" in (status.why or "")
    assert status.to_json()["confined"] is False
    assert probe("auto", None, platform="sunos5").kind == "none"


# ---- for real: bubblewrap ----


@pytest.fixture
def beside():
    """A folder outside /tmp (the sandbox's /tmp is private, so a write there cannot show
    anything): the home, data folder and key file of these tests."""
    path = Path(tempfile.mkdtemp(prefix="bmoe-sandbox-test-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sandbox(beside: Path) -> Sandbox:
    if shutil.which("bwrap") is None:
        need_peer("bwrap is missing: install Debian's bubblewrap")
    tmp_path = beside
    data = tmp_path / "data"
    data.mkdir()
    (data / "providers.json").write_text('{"key": "sk-DATA-SECRET"}')
    key = tmp_path / "key.txt"
    key.write_text("KEY-FILE-SECRET\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("SSH-SECRET")
    (home / ".netrc").write_text("machine x password NETRC-SECRET")
    (home / ".cache").mkdir()
    sb = Sandbox.start("auto", bwrap=None, hidden=[data, key])
    if not sb.status.available:
        need_peer(f"bwrap cannot make a sandbox here: {sb.status.why}")
    sb.home = home
    return sb


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root.resolve()


async def _run(sb: Sandbox, ws: Path, command: str, mode: str = "full", **extra: object) -> str:
    return (await ExecShellCommand(sandbox=sb).run({"command": command, **extra}, ToolContext("c", ws, mode))).result


async def test_the_workspace_is_writable_and_nothing_else(sandbox, ws, beside):
    tmp_path = beside
    home = sandbox.home
    assert home is not None
    out = await _run(sandbox, ws, f"echo made > made.txt && cat made.txt; echo x > {home}/new; "
                                  f"echo x > {tmp_path}/beside; "
                                  "echo t > /tmp/bmoe-sandbox-probe && cat /tmp/bmoe-sandbox-probe;"
                                  f"echo c > {home}/.cache/c && cat {home}/.cache/c")
    assert (ws / "made.txt").read_text() == "made\n"
    assert not (home / "new").exists() and not (tmp_path / "beside").exists()
    assert not Path("/tmp/bmoe-sandbox-probe").exists() and not (home / ".cache" / "c").exists()
    assert out.startswith("made\n") and "\nt\nc\n" in out and out.count("Read-only file system") == 2
    assert SANDBOX_NOTE in out
    # The note comes before the status, which stays the last line: a failure the
    # sandbox caused is a failed call for the run's rules (ledger.ended_as).
    failed = await _run(sandbox, ws, f"echo x > {home}/new")
    assert SANDBOX_NOTE in failed and failed.endswith("\n[exit code: 2]")
    assert ended_as(SHELL_TOOL, "done", failed) == "error"


async def test_secrets_are_not_visible(sandbox, ws, beside):
    tmp_path = beside
    home = sandbox.home
    out = await _run(sandbox, ws, f"cat {tmp_path}/data/providers.json {tmp_path}/key.txt "
                                  f"{home}/.ssh/id_ed25519 "
                                  f"{home}/.netrc; cat /proc/*/environ; "
                                  f"echo LISTING; ls -A {tmp_path}/data {home}/.ssh")
    for secret in ("sk-DATA-SECRET", "KEY-FILE-SECRET", "SSH-SECRET", "NETRC-SECRET"):
        assert secret not in out
    listing = out.split("LISTING\n", 1)[1]
    assert "providers.json" not in listing and "id_ed25519" not in listing


async def test_read_only_cannot_write_even_a_command_the_classifier_let_by(sandbox, ws):
    # Run straight at the tool: what a misjudged command would reach after the classifier.
    out = await _run(sandbox, ws, "echo x > f.txt; touch g", mode="read_only")
    assert not (ws / "f.txt").exists() and not (ws / "g").exists()
    assert "Read-only file system" in out and "read-only conversation" in out


async def test_the_network_is_off_unless_the_workspace_allows_it(sandbox, ws):
    async def serve(stream: trio.SocketStream) -> None:
        await stream.send_all(b"HELLO-FROM-LOOPBACK\n")
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        command = f"python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {port})).recv(99))\""
        out = await _run(sandbox, ws, command)
        assert "HELLO-FROM-LOOPBACK" not in out and "Connection refused" in out and SANDBOX_NOTE in out
        sandbox.network_of = lambda w: w == ws
        out = await _run(sandbox, ws, command)
        assert "HELLO-FROM-LOOPBACK" in out and SANDBOX_NOTE not in out
        nursery.cancel_scope.cancel()


async def test_outside_needs_a_reason_and_runs_unconfined(sandbox, ws, beside):
    tmp_path = beside
    with pytest.raises(ToolError, match="reason"):
        await _run(sandbox, ws, "true", outside_sandbox=True)
    with pytest.raises(ToolError, match="read-only"):
        await _run(sandbox, ws, "true", mode="read_only", outside_sandbox=True, reason="r")
    await _run(sandbox, ws, f"echo out > {tmp_path}/outside.txt", outside_sandbox=True, reason="write beside")
    assert (tmp_path / "outside.txt").read_text() == "out\n"


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_stop_kills_a_sandboxed_commands_children(sandbox, ws):
    # Children, grandchildren, and one that left the group (setsid): the pid namespace ends with bwrap.
    argv = sandbox.wrap(["/bin/sh", "-c", "sh -c 'sleep 61 & sleep 61; wait' & setsid sleep 61 & wait"],
                        ws, "full")
    found: list[psutil.Process] = []
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: run_command("unused", str(ws), 100, 1024, wrap=lambda _: argv))
            with trio.fail_after(10):
                while len(found) < 3:
                    found = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "61"]]
                    await trio.sleep(0.05)
            before = trio.current_time()
            scope.cancel()
    with trio.fail_after(2):
        while any(_alive(p) for p in found):
            await trio.sleep(0.02)
    assert trio.current_time() - before < 2


def test_doctor_says_when_commands_are_not_sandboxed(tmp_path):
    from bmoe_daemon.doctor import check_sandbox

    check = check_sandbox("auto", tmp_path / "no-bwrap")
    assert not check.ok and "not sandboxed" in check.detail and "install bubblewrap" in "\n".join(check.lines())
    assert check_sandbox("off", tmp_path / "no-bwrap").ok
    if shutil.which("bwrap") is None:
        need_peer("bwrap is missing: install Debian's bubblewrap")
    assert check_sandbox("auto").ok
