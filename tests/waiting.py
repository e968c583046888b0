"""Waiting in tests: for a condition, for a conversation's state in-process, or for
one over HTTP. Each is bounded; running out of time fails the test there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import trio

from actors.record import journal

POLL_S = 0.005


async def wait_for(pred: Callable[[], Any], timeout: float = 10, poll: float = POLL_S) -> None:
    """`pred()` holds, looked at every `poll` s (on trio's clock: under autojump_clock, a
    long wait takes a coarser `poll`, or it spins through timeout/poll looks)."""
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(poll)


async def wait_state(conv: Any, *states: str, timeout: float = 10, poll: float = POLL_S) -> None:
    """An in-process Conversation actor reaches one of `states`."""
    await wait_for(lambda: conv.info.state in states, timeout, poll)


async def wait_http_state(client: httpx.AsyncClient, cid: str, *states: str, timeout: float = 20) -> dict:
    """GET the conversation until its state is one of `states`; the body then."""
    with trio.fail_after(timeout):
        while True:
            body = (await client.get(f"/api/conversations/{cid}")).json()
            if body["state"] in states:
                return body
            await trio.sleep(0.02)


def read_saved(path: Path) -> dict:
    """A conversation's file as the record's JSON (its head with `items`), whichever
    form it is in (a journal, or one document from before it): what the daemon reads."""
    return journal.read(path.read_bytes()).document


async def saved_record(path: Path, pred: Callable[[dict], Any], timeout: float = 10) -> dict:
    """The conversation's file on disk once `pred` holds for it. The daemon saves a
    moment after a change (a state in memory is not yet a state on disk), so a test
    that reads the file while the daemon runs waits for the save it expects."""
    record: dict = {}
    with trio.fail_after(timeout):
        while True:
            try:
                record = read_saved(path)
            except (FileNotFoundError, ValueError):
                record = {}
            if record and pred(record):
                return record
            await trio.sleep(0.02)


def drained(sub: Any) -> list[Any]:
    """Every event a bus subscription holds now, without waiting for more."""
    out = []
    while True:
        try:
            out.append(sub.receive_nowait())
        except trio.WouldBlock:
            return out
