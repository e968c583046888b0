"""actors/peers/program.py: a program the daemon started ends with everything it started."""

from __future__ import annotations

import logging

import psutil
import trio

from actors.process import command_environment, exit_status, reap, start_program

MARK = "271.828"


def sleepers() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline", "status"])
            if MARK in " ".join(p.info["cmdline"] or ()) and p.info["status"] != psutil.STATUS_ZOMBIE]


async def test_a_program_that_exited_first_still_has_its_children_ended(tmp_path):
    proc = await start_program(["/bin/sh", "-c", f"sleep {MARK} & echo started"], env=command_environment(),
                               cwd=str(tmp_path))
    assert proc.stdout is not None
    assert b"started" in await proc.stdout.receive_some(100)
    with trio.fail_after(5):
        while exit_status(proc.pid) is None:
            await trio.sleep(0.01)  # the program itself has ended; its child lives on
    _ = proc.returncode  # something read its status, as a read loop may: it is reaped now
    assert sleepers()
    await reap(proc, 1.0, logging.getLogger("test"), "test program")
    with trio.fail_after(5):
        while sleepers():
            await trio.sleep(0.02)
