"""Waiting in tests: for a condition, for a conversation's state in-process, or for
one over HTTP. Each is bounded; running out of time fails the test there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import trio

POLL_S = 0.005


async def wait_for(pred: Callable[[], Any], timeout: float = 10) -> None:
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(POLL_S)


async def wait_state(conv: Any, *states: str, timeout: float = 10) -> None:
    """An in-process Conversation actor reaches one of `states`."""
    await wait_for(lambda: conv.info.state in states, timeout)


async def wait_http_state(client: httpx.AsyncClient, cid: str, *states: str, timeout: float = 20) -> dict:
    """GET the conversation until its state is one of `states`; the body then."""
    with trio.fail_after(timeout):
        while True:
            body = (await client.get(f"/api/conversations/{cid}")).json()
            if body["state"] in states:
                return body
            await trio.sleep(0.02)
