"""A full disk under the data folder (a small tmpfs): the conversation stays alive with
everything in memory, says so once, and writes it all once space is back."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from actors import notices
from actors.bus import EventBus
from actors.conversations import saver as saver_module
from actors.conversations.hub import Hub
from actors.errors import DiskFull
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.runs.env import Env
from actors.tools.registry import Registry
from bmoe_daemon.store import Store
from tests.peers import need_peer
from tests.waiting import read_saved, wait_for, wait_state

DISK_BYTES = 512 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of DISK_BYTES mounted for this test (needs root, or CAP_SYS_ADMIN)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        need_peer(f"cannot mount a small tmpfs to fill ({done.stderr.strip() or 'mount refused'}): "
                  "run as root, or with CAP_SYS_ADMIN, to test a full disk")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Fill the disk to the last byte; the file that holds it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (65536, 4096, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


@pytest.fixture
async def on_small_disk(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Hub, ScriptedBackend, Path]]:
    monkeypatch.setattr(saver_module, "SAVE_RETRY_MAX_S", 0.2)
    backend = ScriptedBackend(default={"text": "An answer. " * 20})
    engine = Engine(backend)
    bus = EventBus()
    store = Store(small_disk / "data")
    env = Env(engine=engine, bus=bus, store=store, registry=Registry(), resolve_workspace=lambda _: None)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        yield hub, backend, small_disk
        hub.close()
        engine.close()


def on_disk(disk: Path, cid: str) -> dict:
    return read_saved(disk / "data" / "agent" / "conversations" / f"{cid}.json")


# Longer than a page: a save appends to the conversation's file, and what fits in the
# room its last page still has would be saved even on a full disk.
FIRST = "first, on a full disk: " + "a message longer than the room left in a page of the file. " * 80


async def test_a_full_disk_loses_nothing_and_the_conversation_goes_on(on_small_disk):
    hub, _, disk = on_small_disk
    conv = await hub.create()
    filler = fill(disk)
    await conv.send_message(FIRST)
    await wait_state(conv, "idle")
    await wait_for(lambda: conv.save_error is not None)
    assert conv.save_error == "the disk is full"
    assert [i.kind for i in conv.items] == ["user", "assistant", "notice"]
    assert conv.items[-1].text == notices.SAVE_FAILED.format(why="the disk is full")
    assert on_disk(disk, conv.id)["items"] == []  # the old version, whole (the append was cut back)
    # Another message while nothing can be saved is taken, and answered.
    await conv.send_message("second, still full")
    await wait_state(conv, "idle")
    assert [i.text for i in conv.items if i.kind == "notice"].count(conv.items[2].text) == 1
    assert not [p for p in (disk / "data" / "agent" / "conversations").iterdir() if p.name.startswith(".")]
    os.unlink(filler)
    await wait_for(lambda: conv.save_error is None, timeout=10)
    await conv.send_message("third, with space again")
    await wait_state(conv, "idle")
    await conv.flush()
    saved = on_disk(disk, conv.id)
    assert [i["text"] for i in saved["items"] if i["kind"] == "user"] == [
        FIRST, "second, still full", "third, with space again"]
    assert len([i for i in saved["items"] if i["kind"] == "assistant"]) == 3
    assert notices.SAVED_AGAIN in [i.get("text") for i in saved["items"]]
    assert saved["state"] == "idle"


async def test_a_new_conversation_on_a_full_disk_is_refused_and_leaves_nothing(on_small_disk):
    hub, _, disk = on_small_disk
    before = len(hub.conversations())
    filler = fill(disk)
    with pytest.raises(DiskFull, match="disk is full"):
        await hub.create()
    assert len(hub.conversations()) == before
    assert not list((disk / "data" / "agent" / "conversations").iterdir())
    os.unlink(filler)
    conv = await hub.create()
    assert on_disk(disk, conv.id)["id"] == conv.id
