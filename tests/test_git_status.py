"""The workspace's git state in the prompt (actors/runs/agent/git_status.py): the block,
git run so that nothing a repository's configuration names runs, the 30 s cache, and
the prompt the same for every round of a message."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import trio

from actors.runs.agent import git_status
from tests.waiting import wait_state


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True, env=git_status.environment())


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "-m", "first")
    return path


def test_the_block_names_the_branch_and_bounds_the_lines():
    status = "## main...origin/main [ahead 1]\n" + "".join(f"?? f{n}.py\n" for n in range(30))
    block = git_status.block(status)
    assert block.startswith("Git: the workspace is a git work tree; current branch: main.")
    assert "?? f19.py" in block and "?? f20.py" not in block and "... and 10 more" in block
    assert "current branch: dev." in git_status.block("## No commits yet on dev\n")
    assert "nothing changed" in git_status.block("## main\n")
    assert git_status.block("fatal: not a git repository\n") is None
    assert len(max(git_status.block("## main\n?? " + "x" * 5000).splitlines(), key=len)) == git_status.LINE_CHARS


def test_every_filter_driver_named_is_emptied():
    listing = b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.evil.process\nrun-me\0filter.a.b.c.smudge\nx\0"
    opts = git_status.filters_off(listing)
    assert "filter.evil.process=" in opts and "filter.lfs.clean=" in opts and "filter.a.b.c.smudge=" in opts
    assert "filter.evil.required=false" in opts
    assert git_status.filters_off(b"") == []


async def test_a_repositorys_configuration_runs_nothing(tmp_path):
    """A model's command may write `.git/config`: a filter, an fsmonitor, a hook. The
    daemon's status read runs none of them; plain git does (the control at the end)."""
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    git(repo, "config", "filter.evil.clean", str(script))
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "core.fsmonitor", str(script))
    st = (repo / "a.txt").stat()
    os.utime(repo / "a.txt", (st.st_atime + 10, st.st_mtime + 10))  # same size, new time: content compared
    index_before = (repo / ".git" / "index").read_bytes()
    block = await git_status.read_block(repo)
    assert block is not None and "current branch: main." in block and "?? .gitattributes" in block
    assert not marker.exists()
    assert (repo / ".git" / "index").read_bytes() == index_before  # no lock taken, nothing written
    assert not (repo / ".git" / "index.lock").exists()
    # The control: git as a person runs it does run them, so the test above can fail.
    await trio.run_process(["git", "status", "-sb"], cwd=repo, capture_stdout=True, capture_stderr=True, check=False)
    assert marker.exists()


async def test_a_folder_in_no_repository_has_no_block(tmp_path):
    assert await git_status.read_block(tmp_path) is None


async def test_the_cache_reads_again_only_after_refresh_s(tmp_path):
    now = [100.0]
    reads: list[Path] = []

    async def read(ws: Path) -> str | None:
        reads.append(ws)
        return f"read {len(reads)}"

    cache = git_status.StatusCache(read, clock=lambda: now[0])
    assert await cache.get(tmp_path) == "read 1"
    now[0] += git_status.REFRESH_S - 1
    assert await cache.get(tmp_path) == "read 1"
    now[0] += 1
    assert await cache.get(tmp_path) == "read 2"
    assert len(reads) == 2


async def test_the_prompt_is_the_same_for_every_round_of_a_message(real_tools, tmp_path, monkeypatch):
    """Even with no cache at all (REFRESH_S 0: every ask reads git again), the rounds of
    one message send one prompt; the next message sees what changed."""
    monkeypatch.setattr(git_status, "REFRESH_S", 0.0)
    d = real_tools
    repo = make_repo(tmp_path / "repo")
    ws = await d.hub.add_workspace(str(repo))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    write = {"name": "write_file", "arguments": {"path": "new.py", "content": "x = 1\n"}}
    d.backend.push({"tool_calls": [write]}, {"text": "written"})
    await conv.send_message("write it")
    await wait_state(conv, "idle")
    first, second = (turn.messages[0]["content"] for turn in d.backend.turns[:2])
    assert "current branch: main." in first and "(nothing changed since the last commit)" in first
    assert second == first
    d.backend.push({"text": "ok"})
    await conv.send_message("and now?")
    await wait_state(conv, "idle")
    assert "?? new.py" in d.backend.turns[-1].messages[0]["content"]


@pytest.mark.parametrize("head", ["HEAD (no branch)", "HEAD (no branch)...x"])
def test_a_detached_head_says_so(head):
    assert "current branch: none (a detached HEAD)." in git_status.block(f"## {head}\n")
