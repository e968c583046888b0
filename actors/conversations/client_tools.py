"""The tools a client brings to a conversation (actors/record/client_tools.py), as the
conversation and the hub handle them: a new set checked and kept, a call's result from
the client handed to the run that waits for it, and which event streams answer a
conversation's calls (`ToolClients`: a card waiting for an app that is gone says so).

Each change is one synchronous step on the transcript, as a run's are (trio runs one
task at a time): nothing here needs the actor's mailbox.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from actors.bus import EventBus
from actors.errors import Invalid, NotFound, NotWaiting
from actors.record.client_tools import ClientTool
from actors.record.items import ConversationInfo
from actors.record.transcript import Transcript
from actors.runs.env import Env


def check_new(env: Env, *, agent: str, tools: tuple[ClientTool, ...], workspace_tools: bool,
              mcp_tools: bool) -> None:
    """Invalid when a new conversation cannot have these tools: another agent's, a
    daemon that runs as plain chat, or a name the daemon's tools have (check_names)."""
    if agent != "builtin" and (tools or not workspace_tools):
        raise Invalid("Another agent brings its own tools: `tools` and `workspace_tools` go with the built-in "
                      "agent only.")
    if tools and env.chat_only:
        raise Invalid("This daemon runs as plain chat (--chat-only): conversations are offered no tools.")
    from actors.runs.agent.client_calls import check_names  # the run's, loaded with it

    check_names(tools, env.registry, workspace_tools=workspace_tools, mcp_tools=mcp_tools)


class ClientTools:
    """One conversation's client tools; see the module docstring."""

    def __init__(self, transcript: Transcript, env: Env) -> None:
        self._t = transcript
        self._env = env

    def replace(self, tools: tuple[ClientTool, ...]) -> tuple[ClientTool, ...]:
        """The client's tools from the next message on (a call waiting now is still
        answered). Invalid naming a tool whose name the daemon's tools have while they
        are on."""
        info = self._t.info
        check_new(self._env, agent=info.agent, tools=tools, workspace_tools=info.workspace_tools,
                  mcp_tools=info.mcp_tools)
        self._t.set_info(client_tools=tools)
        return tools

    def result(self, item_id: str, *, result: str | None = None, error: str | None = None) -> None:
        """The client's answer to a call of its tool that waits (`waiting_client`): its
        result, or why it could not carry it out. NotFound when the item is no call of
        a client's tool here; NotWaiting when that call waits no more (answered, timed
        out, stopped)."""
        card = self._t.find(item_id)
        if card is not None and card.state == "waiting_client" and self._t.waiting_for(item_id) == "client":
            from actors.runs.agent.client_calls import ClientAnswer

            self._t.answer(item_id, ClientAnswer(result, error), "client")
            return
        if card is None or card.kind != "tool" or card.tool not in {t.name for t in self._t.info.client_tools}:
            raise NotFound("That item is not a call of this conversation's client tools.")
        raise NotWaiting(f"That call is not waiting for a result (it is {card.state}); nothing was changed.")


class ToolClients:
    """How many event streams answer each conversation's tool calls, for as long as
    they are open; a `tool_clients` event says each new count."""

    def __init__(self, bus: EventBus, peek: Callable[[str], ConversationInfo]) -> None:
        self._bus = bus
        self._peek = peek  # a conversation's info (NotFound once it is deleted)
        self._counts: dict[str, int] = {}

    def count(self, conversation_id: str) -> int:
        return self._counts.get(conversation_id, 0)

    @contextlib.contextmanager
    def serving(self, conversation_ids: Sequence[str]) -> Iterator[None]:
        """A stream that answers these conversations' calls, while the block lasts."""
        for cid in conversation_ids:
            self._change(cid, 1)
        try:
            yield
        finally:
            for cid in conversation_ids:
                self._change(cid, -1)

    def _change(self, conversation_id: str, by: int) -> None:
        count = self._counts.get(conversation_id, 0) + by
        if count > 0:
            self._counts[conversation_id] = count
        else:
            self._counts.pop(conversation_id, None)
        try:
            local_only = self._peek(conversation_id).local_only
        except NotFound:  # deleted while the stream was open
            return
        self._bus.publish("tool_clients", {"conversation": conversation_id, "clients": max(count, 0)},
                          local_only=local_only)
