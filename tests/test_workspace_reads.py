"""Reads the daemon does from a workspace on its own account (issue 13): AGENTS.md, and
another agent's fs/read_text_file and fs/write_text_file over ACP. Each goes through the
file tools' confinement (actors/fs/paths.py `read_workspace_text`, `open_regular`):
a link out of the workspace is not read, a FIFO is never waited on, /dev/zero behind a
link and a 10 GB sparse file are not read whole. The file tools, the preview route,
the skills and Connect's settings files have theirs beside their own tests.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from actors.fs.paths import read_workspace_bytes, read_workspace_text
from actors.peers.acp.agents import RequestRefused
from actors.runs.acp import AcpRun
from actors.runs.agent.prompt import AGENTS_MD_BYTES, read_agents_md
from tests.special_files import BOUND_S, bounded, fifo, link_out, releasing, sparse, watchdog, zero_link
from tests.test_conversation import workspace
from tests.waiting import wait_state

SECRET = "Host secret-host-7d2e\n  IdentityFile ~/.ssh/id_secret\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "notes.md").write_text("inside\n")
    (tmp_path / "ssh_config").write_text(SECRET)
    return folder.resolve()


# ---- the helper every reader uses ----


async def test_read_workspace_text_reads_a_file_inside_and_through_a_link_inside(ws: Path) -> None:
    assert read_workspace_text(ws, "docs/notes.md", 100) == "inside\n"
    link_out(ws / "alias.md", Path("docs/notes.md"))
    assert read_workspace_text(ws, "alias.md", 100) == "inside\n"
    assert read_workspace_text(ws, "missing.md", 100) is None
    assert read_workspace_text(ws, "docs", 100) is None  # a folder


async def test_read_workspace_text_refuses_a_link_out_at_any_depth(ws: Path, tmp_path: Path) -> None:
    link_out(ws / "config", tmp_path / "ssh_config")
    link_out(ws / "up", tmp_path)
    for rel in ("config", "up/ssh_config", "../ssh_config", str(tmp_path / "ssh_config")):
        assert read_workspace_bytes(ws, rel, 1000) is None


async def test_read_workspace_text_never_waits_on_a_fifo_nor_reads_a_device(ws: Path) -> None:
    pipe = fifo(ws / "pipe")
    zero_link(ws / "zero")
    with releasing(pipe):
        assert await bounded(read_workspace_text, ws, "pipe", 100) is None
    assert await bounded(read_workspace_text, ws, "zero", 100) is None


async def test_read_workspace_text_reads_no_more_than_its_limit(ws: Path) -> None:
    sparse(ws / "huge.bin")
    started = time.monotonic()
    assert read_workspace_bytes(ws, "huge.bin", 4096) == b"\0" * 4096
    assert time.monotonic() - started < 1
    (ws / "cut.txt").write_bytes("ab\u00e9".encode())  # the é is two bytes, cut by the limit
    assert read_workspace_text(ws, "cut.txt", 3) == "ab"


# ---- AGENTS.md ----


async def test_agents_md_that_links_out_is_not_read(ws: Path, tmp_path: Path) -> None:
    link_out(ws / "AGENTS.md", tmp_path / "ssh_config")
    assert read_agents_md(ws) is None
    (ws / "AGENTS.md").unlink()
    link_out(ws / "AGENTS.md", Path("docs/notes.md"))  # a link inside is read
    assert read_agents_md(ws) == "inside"


async def test_agents_md_that_is_a_fifo_or_a_device_is_not_read(ws: Path) -> None:
    pipe = fifo(ws / "AGENTS.md")
    with releasing(pipe):
        assert await bounded(read_agents_md, ws) is None
    pipe.unlink()
    zero_link(ws / "AGENTS.md")
    assert await bounded(read_agents_md, ws) is None
    (ws / "AGENTS.md").unlink()
    sparse(ws / "AGENTS.md")
    text = await bounded(read_agents_md, ws)
    assert text is None or len(text) <= AGENTS_MD_BYTES


async def test_an_agents_md_link_out_never_reaches_the_model(daemon, tmp_path: Path) -> None:
    ws = await workspace(daemon, tmp_path)
    (tmp_path / "ssh_config").write_text(SECRET)
    link_out(Path(ws.path) / "AGENTS.md", tmp_path / "ssh_config")
    daemon.backend.push({"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    assert "secret-host" not in str(daemon.backend.turns[0].messages)


async def test_a_fifo_agents_md_does_not_hold_the_run(daemon, tmp_path: Path) -> None:
    ws = await workspace(daemon, tmp_path)
    pipe = fifo(Path(ws.path) / "AGENTS.md")
    daemon.backend.push({"text": "ok"})
    conv = await daemon.hub.create(workspace=ws.id, mode="full")
    started = time.monotonic()
    with watchdog(pipe):  # a reader that waits on the FIFO holds the whole event loop
        await conv.send_message("hi")
        await wait_state(conv, "idle")
    assert time.monotonic() - started < BOUND_S
    assert conv.items[-1].text == "ok"


# ---- ACP: fs/read_text_file and fs/write_text_file ----


def acp_sink(ws: Path, mode: str = "full") -> AcpRun:
    """An AcpRun as far as its file methods need one: the conversation's workspace and mode."""
    run = object.__new__(AcpRun)
    run.t = SimpleNamespace(info=SimpleNamespace(workspace="w", mode=mode))  # type: ignore[assignment]
    run.env = SimpleNamespace(resolve_workspace=lambda _: ws)  # type: ignore[assignment]
    return run


async def test_acp_reads_inside_only(ws: Path, tmp_path: Path) -> None:
    sink = acp_sink(ws)
    assert (await sink.read_text_file({"path": "docs/notes.md"}))["content"] == "inside\n"
    link_out(ws / "config", tmp_path / "ssh_config")
    zero_link(ws / "zero")
    for path in ("config", "zero", "../ssh_config"):
        with pytest.raises(RequestRefused) as info:
            await sink.read_text_file({"path": path})
        assert "secret-host" not in str(info.value)


async def test_acp_read_of_a_fifo_is_refused_at_once(ws: Path) -> None:
    pipe = fifo(ws / "pipe")
    sink = acp_sink(ws)
    started = time.monotonic()
    with watchdog(pipe), pytest.raises(RequestRefused) as info:
        await sink.read_text_file({"path": "pipe"})
    assert time.monotonic() - started < BOUND_S
    assert "FIFO" in str(info.value)


async def test_acp_read_of_a_huge_sparse_file_is_refused(ws: Path) -> None:
    sparse(ws / "huge.log")
    with pytest.raises(RequestRefused) as info:
        await acp_sink(ws).read_text_file({"path": "huge.log"})
    assert "too large" in str(info.value)


async def test_acp_write_goes_inside_only_and_never_over_a_fifo(ws: Path, tmp_path: Path) -> None:
    sink = acp_sink(ws)
    await sink.write_text_file({"path": "docs/new.md", "content": "hello"})
    assert (ws / "docs" / "new.md").read_text() == "hello"
    link_out(ws / "config", tmp_path / "ssh_config")
    pipe = fifo(ws / "pipe")
    for path in ("config", "../ssh_config", "pipe", "docs"):
        with pytest.raises(RequestRefused):
            await sink.write_text_file({"path": path, "content": "x"})
    assert (tmp_path / "ssh_config").read_text() == SECRET
    assert pipe.is_fifo()
