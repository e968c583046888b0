"""/v1's request limits (bmoe_daemon/routes/openai.py): what a request's tools may cost.

A request's tools become a llama.cpp grammar and part of every prompt, on the turn line
every conversation shares; a client on the network may send them. Without a model: the
checks run before any generation."""

from __future__ import annotations

import pytest

from bmoe_daemon.errors import BadRequest
from bmoe_daemon.routes.openai import MAX_TOOLS, MAX_TOOLS_BYTES, _tools


def tool(i: int, description: str = "") -> dict:
    return {"type": "function", "function": {"name": f"t{i}", "description": description,
                                             "parameters": {"type": "object", "properties": {}}}}


def test_a_request_may_bring_up_to_the_limits() -> None:
    assert len(_tools([tool(i) for i in range(MAX_TOOLS)])) == MAX_TOOLS


def test_more_tools_or_larger_ones_are_refused() -> None:
    with pytest.raises(BadRequest, match=f"At most {MAX_TOOLS} tools"):
        _tools([tool(i) for i in range(MAX_TOOLS + 1)])
    with pytest.raises(BadRequest, match="larger than 1 MiB"):
        _tools([tool(0, "x" * MAX_TOOLS_BYTES)])
