"""The checkpoint store on its own (actors/checkpoints/), in a temporary folder: what a
run changed, a rewind to any message, the person's later edits, the size bound."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.checkpoints import git as cpgit
from actors.checkpoints import restore
from actors.checkpoints.store import Checkpoints, read_limits
from actors.errors import ChangedSince

CONV = "c1"


def state_of(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under root but the unentered folders: (content, executable)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", "node_modules")]
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (p.read_bytes(), bool(p.stat().st_mode & stat.S_IXUSR))
    return out


def put(root: Path, rel: str, data: bytes, exe: bool = False) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    p.chmod(0o755 if exe else 0o644)


async def run(cp: Checkpoints, ws: Path, item: str, change) -> None:  # type: ignore[no-untyped-def]
    await cp.before_run("w1", ws, CONV, item)
    change()
    await cp.after_run("w1", ws, CONV, item)


async def test_changes_rewind_and_undo(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    put(ws, "a.txt", b"one\n")
    put(ws, "b.sh", b"#!/bin/sh\n", exe=True)
    put(ws, "node_modules/x.js", b"ignored")
    put(ws, ".gitignore", b"*.log\n")
    put(ws, "debug.log", b"ignored too")
    cp = Checkpoints(tmp_path / "cp")
    start = state_of(ws)
    await run(cp, ws, "m1", lambda: (put(ws, "a.txt", b"one\ntwo\n"), put(ws, "new/c.txt", b"c\n")))
    after1 = state_of(ws)
    await run(cp, ws, "m2", lambda: ((ws / "b.sh").unlink(), put(ws, "a.txt", b"three\n")))
    listed = await cp.changes("w1", ws, CONV, ["m1", "m2"])
    assert [e["item"] for e in listed] == ["m1", "m2"]
    files1 = {f["path"]: f for f in listed[0]["files"]}  # type: ignore[union-attr]
    assert files1["a.txt"]["status"] == "modified" and files1["a.txt"]["added"] == 1
    assert files1["new/c.txt"]["status"] == "added"
    assert {f["path"]: f["status"] for f in listed[1]["files"]} == {"a.txt": "modified", "b.sh": "deleted"}  # type: ignore[union-attr]
    text, cut = await cp.diff("w1", ws, CONV, "m1", "a.txt")
    assert "+two" in text and not cut
    # The person edits a file the run changed: the rewind refuses, naming it.
    put(ws, "a.txt", b"mine\n")
    listed = await cp.changes("w1", ws, CONV, ["m1", "m2"])
    assert [f["changed_since"] for f in listed[1]["files"] if f["path"] == "a.txt"] == [True]  # type: ignore[union-attr]
    with pytest.raises(ChangedSince) as refused:
        await cp.rewind("w1", ws, CONV, "m2", ["m1", "m2"])
    assert refused.value.paths == ("a.txt",)
    assert (ws / "a.txt").read_bytes() == b"mine\n"
    done = await cp.rewind("w1", ws, CONV, "m2", ["m1", "m2"], force=True)
    assert state_of(ws) == after1
    # The rewind is undone by rewinding to it.
    await cp.rewind("w1", ws, CONV, done.rewind or "", ["m1", "m2"])
    assert (ws / "a.txt").read_bytes() == b"mine\n" and not (ws / "b.sh").exists()
    await cp.rewind("w1", ws, CONV, "m1", ["m1", "m2"], force=True)
    assert state_of(ws) == start
    assert not (ws / "new").exists()


async def test_big_files_are_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpgit, "MAX_FILE_BYTES", 100)
    ws = tmp_path / "ws"
    put(ws, "small.txt", b"s")
    cp = Checkpoints(tmp_path / "cp")
    await run(cp, ws, "m1", lambda: put(ws, "big.bin", b"x" * 500))
    listed = await cp.changes("w1", ws, CONV, ["m1"])
    assert listed[0]["not_restorable"] == ["big.bin"]
    result = await cp.rewind("w1", ws, CONV, "m1", ["m1"])
    assert (ws / "big.bin").exists() and result.restored == () and result.removed == ()


async def test_a_run_without_its_after_is_settled(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    put(ws, "a.txt", b"1")
    cp = Checkpoints(tmp_path / "cp")
    await cp.before_run("w1", ws, CONV, "m1")
    put(ws, "a.txt", b"2")  # the daemon dies here
    cp = Checkpoints(tmp_path / "cp")
    await cp.settle("w1", ws, CONV)
    listed = await cp.changes("w1", ws, CONV, ["m1"])
    assert listed[0]["files"][0]["changed_since"] is False  # type: ignore[index]
    await cp.rewind("w1", ws, CONV, "m1", ["m1"])
    assert (ws / "a.txt").read_bytes() == b"1"


async def test_tidy_keeps_each_conversations_last(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cp = Checkpoints(tmp_path / "cp")
    for n in range(4):
        await run(cp, ws, f"m{n}", lambda n=n: put(ws, "f.txt", b"%d" % n))  # type: ignore[misc]
    (tmp_path / "cp" / "limits.json").write_text('{"max_age_days": 0.000001}')
    assert read_limits(tmp_path / "cp" / "limits.json")[1] == 0.000001
    # A second on: every entry is past the age (86 ms), however fast the runs went.
    dropped = await cp.tidy("w1", ws, now_ns=time.time_ns() + 10**9)
    assert dropped == 3
    listed = await cp.changes("w1", ws, CONV, [f"m{n}" for n in range(4)])
    assert [e["item"] for e in listed] == ["m3"]


def test_a_batch_that_cannot_be_written_changes_nothing(tmp_path: Path) -> None:
    """The files of a batch are all written and synced before any is renamed: one that
    cannot be written (a folder stands in its place) leaves the others as they were,
    and no temporary file behind."""
    ws = tmp_path / "ws"
    put(ws, "a.txt", b"old a\n")
    put(ws, "z.txt", b"old z\n")
    put(ws, "m/inside.txt", b"a folder stands at m\n")
    start = state_of(ws)
    writes = {"a.txt": ("100644", b"new a\n"), "m": ("100644", b"m\n"), "z.txt": ("100755", b"new z\n")}
    with pytest.raises(restore.RestoreFailed, match="a folder stands"):
        restore.apply(ws, writes, [])
    assert state_of(ws) == start
    assert not [p for p in ws.rglob("*") if p.name.endswith(".bmoe-restore")]
    del writes["m"]
    restore.apply(ws, writes, ["m/inside.txt"])
    assert state_of(ws) == {"a.txt": (b"new a\n", False), "z.txt": (b"new z\n", True)}
    assert not (ws / "m").exists()


FILES = st.sampled_from(["a.txt", "b.txt", "d/c.txt", "d/e/f.sh"])
CHANGE = st.tuples(FILES, st.one_of(st.none(), st.binary(max_size=20)), st.booleans())
RUNS = st.lists(st.lists(CHANGE, max_size=4), min_size=1, max_size=4)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=RUNS, target=st.integers(min_value=0, max_value=3))
def test_rewinding_to_any_message_restores_the_state_before_it(
    tmp_path_factory: pytest.TempPathFactory, runs: list[list[tuple[str, bytes | None, bool]]], target: int,
) -> None:
    root = tmp_path_factory.mktemp("prop")
    ws = root / "ws"
    ws.mkdir()
    put(ws, "a.txt", b"base")
    items = [f"m{n}" for n in range(len(runs))]
    target %= len(runs)

    def apply(changes: list[tuple[str, bytes | None, bool]]) -> None:
        for rel, data, exe in changes:
            if data is None:
                if (ws / rel).exists():
                    (ws / rel).unlink()
            else:
                put(ws, rel, data, exe)

    async def main() -> None:
        cp = Checkpoints(root / "cp")
        states = []
        for item, changes in zip(items, runs, strict=True):
            states.append(state_of(ws))
            await run(cp, ws, item, lambda c=changes: apply(c))  # type: ignore[misc]
        end = state_of(ws)
        result = await cp.rewind("w1", ws, CONV, items[target], items)
        assert state_of(ws) == states[target]
        if result.rewind is not None:  # and the rewind undone puts back the end
            await cp.rewind("w1", ws, CONV, result.rewind, items)
            assert state_of(ws) == end

    trio.run(main)
