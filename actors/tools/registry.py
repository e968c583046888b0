"""The tool registry: which tools a round is offered, and how a call is looked up.

A tool is a plain object with a name, a description, a JSON schema for its
parameters, whether a call changes something (and so needs the mode's consent), a
title in plain words for the person, and `run`. Its failure is a `ToolError` whose
text the model reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import attrs

from actors.model.turns import ToolSpec

RESULT_CAP_BYTES = 12 * 1024  # what the model reads of one result
STORED_RESULT_CAP_BYTES = 1024 * 1024  # what the person's copy keeps


@attrs.frozen
class ToolContext:
    conversation: str
    workspace: Path | None
    mode: str


@attrs.frozen
class ToolOutcome:
    result: str
    diff: str | None = None
    file: str | None = None
    # The tools the rest of the run may use (a skill's allowed-tools), when the call narrows them.
    narrow: tuple[str, ...] | None = None


class Tool(Protocol):
    # Read-only members: a tool may hold them as plain or frozen attributes.
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> dict[str, Any]: ...

    @property
    def needs_workspace(self) -> bool: ...

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        """Whether this call changes something (and so needs the mode's consent).

        `workspace` lets a tool look at the folder (a command's arguments), when known.
        """
        ...

    def title(self, args: dict[str, Any]) -> str: ...

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        """What an approval card shows before a change runs (an edit's diff), or None.

        Raises ToolError when the change cannot be made as asked (then no card appears).
        `run` computes the change again from the files as they are then.
        """
        ...

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome: ...


class ToolSource(Protocol):
    """Tools known only at run time (an MCP server's, once it started). Every tool of a
    source shares `needs_workspace` and `offered_read_only`, so the registry can tell
    whether a round may offer them before asking the source to get ready."""

    needs_workspace: bool
    offered_read_only: bool

    async def prepare(self) -> None:
        """Get the tools ready to be listed (start what is not started); bounded."""
        ...

    def tools(self) -> list[Tool]:
        """The tools known now."""
        ...


def cap_text(text: str, cap: int) -> str:
    """Cut `text` to at most `cap` bytes of UTF-8, saying how much was left out."""
    raw = text.encode("utf-8")
    if len(raw) <= cap:
        return text
    kept = raw[:cap].decode("utf-8", errors="ignore")
    return kept + f"\n[... {len(raw) - len(kept.encode('utf-8'))} more bytes not shown]"


def offered_read_only(tool: Tool) -> bool:
    """Whether a read-only conversation is offered the tool: not when every call of it
    would be refused (a tool may say so with `offered_read_only`)."""
    flag = getattr(tool, "offered_read_only", None)
    return bool(flag) if flag is not None else not tool.is_change({})


def _may_offer(what: Tool | ToolSource, workspace: Path | None, mode: str, local: bool) -> bool:
    if what.needs_workspace and (workspace is None or not local):
        return False
    # A source always says `offered_read_only`, so is_change is asked of tools only.
    return mode != "read_only" or offered_read_only(what)  # type: ignore[arg-type]


class Registry:
    """The tools this daemon has, in the order they are offered: the built-in ones,
    then each source's (a name already taken is left out)."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._made: dict[str, Tool] = {}
        self._later: list[Callable[[], Iterable[Tool]]] = []
        self._sources: list[ToolSource] = []
        for tool in tools or ():
            self.add(tool)

    def add(self, tool: Tool) -> None:
        self._add(self._tools, tool)

    def add_later(self, make: Callable[[], Iterable[Tool]]) -> None:
        """Built-in tools made when the registry is first read (in order with those added
        before and after): their modules load then, not when the daemon starts."""
        self._later.append(make)

    @staticmethod
    def _add(tools: dict[str, Tool], tool: Tool) -> None:
        if tool.name in tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        tools[tool.name] = tool

    @property
    def _tools(self) -> dict[str, Tool]:
        while self._later:
            make = self._later.pop(0)
            for tool in make():
                self._add(self._made, tool)
        return self._made

    def add_source(self, source: ToolSource) -> None:
        self._sources.append(source)

    def _dynamic(self) -> list[Tool]:
        out: list[Tool] = []
        seen = set(self._tools)
        for source in self._sources:
            for tool in source.tools():
                if tool.name not in seen:
                    seen.add(tool.name)
                    out.append(tool)
        return out

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is None and self._sources:
            tool = next((t for t in self._dynamic() if t.name == name), None)
        return tool

    def names(self) -> list[str]:
        return list(self._tools) + [t.name for t in self._dynamic()]

    def source_names(self) -> list[str]:
        """The names of the sources' tools known now (an MCP server's, once started)."""
        return [t.name for t in self._dynamic()]

    async def prepare(self, *, workspace: Path | None, mode: str, local: bool) -> None:
        """Get ready the sources whose tools this round may offer (an MCP server is
        started the first time its tools are wanted). Cancelled: only the wait ends."""
        for source in self._sources:
            if _may_offer(source, workspace, mode, local):
                await source.prepare()

    def offered(self, *, workspace: Path | None, mode: str, local: bool, skills: bool = False) -> list[Tool]:
        """The tools a round may use: none from the network or without a workspace
        for the tools that need one; a change is not offered in `read_only`; a tool
        that reads skills (`needs_skill`) only when a skill is switched on."""
        out: list[Tool] = []
        for tool in [*self._tools.values(), *self._dynamic()]:
            if not _may_offer(tool, workspace, mode, local):
                continue
            if getattr(tool, "needs_skill", False) and not skills:
                continue
            out.append(tool)
        return out

    def specs(self, tools: list[Tool]) -> tuple[ToolSpec, ...]:
        return tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
