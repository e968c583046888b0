"""A call of a client's tool (actors/record/client_tools.py): the card waits in state
`waiting_client`, a `tool_request` event tells the client, and the client's result
(POST .../tool_result) or error is what the model reads. No answer within the tool's
timeout ends the card `error` saying so; a stop ends the wait at once (the run's
`finish` ends the card). Also which names a client's tools may not take.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
import trio

from actors import notices
from actors.errors import Invalid
from actors.record.client_tools import ClientTool, arguments_problem
from actors.record.transcript import Transcript
from actors.runs.agent.run_tools import goals, plans
from actors.runs.agent.run_tools import helpers as subagents
from actors.runs.agent.run_tools import todos_and_questions as run_tools
from actors.runs.agent.run_tools.carrier import Done
from actors.tools.registry import Registry

# The tools the built-in run carries out itself, whatever the phase.
OWN_NAMES = frozenset(s.name for s in (
    *run_tools.SPECS, *subagents.SPECS, goals.UPDATE_SPEC, plans.ENTER_SPEC, plans.EXIT_SPEC))


@attrs.frozen
class ClientAnswer:
    """What the client sent back for a call: its result, or why it could not run it."""

    result: str | None = None
    error: str | None = None


def taken_names(registry: Registry, *, workspace_tools: bool, mcp_tools: bool) -> set[str]:
    """The names a client's tool may not take: while the daemon's own tools are on,
    theirs (built-in, the run's own, the MCP tools known now); without them, the MCP
    tools' when those are asked for."""
    if workspace_tools:
        return set(registry.names()) | OWN_NAMES
    return set(registry.source_names()) if mcp_tools else set()


def check_names(tools: Iterable[ClientTool], registry: Registry, *, workspace_tools: bool, mcp_tools: bool) -> None:
    """Invalid naming the first tool whose name the daemon's tools have (taken_names)."""
    taken = taken_names(registry, workspace_tools=workspace_tools, mcp_tools=mcp_tools)
    for tool in tools:
        if tool.name in taken:
            why = ("the daemon has a tool of that name" if workspace_tools
                   else "an MCP tool of this conversation has that name")
            raise Invalid(f"The tool name {tool.name!r} is taken: {why}. Give the tool another name"
                          + (", or start the conversation with workspace_tools: false." if workspace_tools else "."))


def result_text(value: object) -> str:
    """A client's result as the model reads it: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


async def ask_client(t: Transcript, card_id: str, tool: ClientTool, args: dict[str, Any]) -> Done:
    """Hand the call to the client and wait for its answer, at most the tool's timeout.
    Arguments that do not fit the tool's schema are not sent (a provider's model is
    not held to it). Cancelled (a stop): the wait ends; the run's `finish` ends the card."""
    problem = arguments_problem(tool, args)
    if problem is not None:
        return Done("error", notices.CLIENT_BAD_ARGUMENTS.format(name=tool.name, why=problem))
    card = t.update(card_id, state="waiting_client")
    if card is None:
        return Done("error", notices.ERROR_ROUND_FAILED)
    with trio.move_on_after(tool.timeout_s):
        t.request_client(card, tool.timeout_s)
        answered, answer = await t.wait_answer(card_id, "client")
        if not answered or not isinstance(answer, ClientAnswer):
            return Done("error", notices.CLIENT_STOPPED)
        if answer.error is not None:
            return Done("error", notices.CLIENT_FAILED.format(name=tool.name, why=answer.error))
        return Done("done", answer.result or "")
    return Done("error", notices.CLIENT_TIMED_OUT.format(name=tool.name, seconds=tool.timeout_s))
