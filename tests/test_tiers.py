"""tests/tiers.py: a test is slow by what it uses, however far down its helpers use it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from tests.daemon_proc import REPO, run_daemon
from tests.tiers import Tiers, peer_programs

PEER = Path(__file__).with_name("mcp_server.py")


def _helper_that_runs_a_program() -> str:
    return subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True, text=True).stdout


def _helper_of_a_helper() -> str:
    return _helper_that_runs_a_program()


class _Starter:
    async def start(self, data: Path) -> None:
        async with run_daemon(data):
            pass


async def _uses_the_daemon(tmp: Path) -> None:
    async with run_daemon(tmp):
        pass


async def _imports_it_inside(tmp: Path) -> None:
    from tests.daemon_proc import run_daemon as start

    async with start(tmp):
        pass


async def _pure(tmp: Path, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Names subprocess.run in its docstring and Popen in an annotation: neither runs one."""
    await trio.lowlevel.checkpoint()
    assert REPO.is_dir()


def _names_a_peer_program() -> list[str]:
    return [sys.executable, str(PEER)]


async def _on_trio() -> None:
    await trio.run_process(["true"])


class _Backend:
    """Stands for actors' LocalBackend (named as tiers.py knows it: wherever it moves
    in actors/, it loads a model)."""

    @classmethod
    async def load(cls, path: Path) -> None:
        pass

    load.__func__.__module__ = "actors.backends.local"  # type: ignore[attr-defined]
    load.__func__.__qualname__ = "LocalBackend.load"  # type: ignore[attr-defined]


async def _loads_a_model(path: Path) -> None:
    await _Backend.load(path)


# What each example is slow for, if anything. Held in a table, not named in the tests
# below: a test naming them would be slow itself, as tiers.py reads it.
EXAMPLES = {
    _pure: None,
    _uses_the_daemon: "daemon as a process",
    _imports_it_inside: "daemon as a process",
    _Starter: "daemon as a process",
    _helper_of_a_helper: "subprocess.run",
    _on_trio: "run_process",
    _names_a_peer_program: "mcp_server.py",
    _loads_a_model: "loads a model",
}


def test_what_a_test_uses_decides_its_tier() -> None:
    tiers = Tiers()
    for example, why in EXAMPLES.items():
        found = tiers.reason(example)
        assert (found is None) if why is None else (why in str(found)), (example, found)


def test_the_peer_programs_are_the_files_of_tests_that_run_as_programs() -> None:
    stems = {name.removesuffix(".py") for name in peer_programs()}
    assert {"mcp_server", "acp_agent"} <= stems
    assert "daemon_proc" not in stems and "conftest" not in stems
