"""The tool registry: which tools a round is offered, and how a call is looked up.

A tool is a plain object with a name, a description, a JSON schema for its
parameters, whether a call changes something (and so needs the mode's consent), a
title in plain words for the person, and `run`. Its failure is a `ToolError` whose
text the model reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import attrs

from actors.engine import ToolSpec

RESULT_CAP_BYTES = 12 * 1024  # what the model reads of one result
STORED_RESULT_CAP_BYTES = 1024 * 1024  # what the person's copy keeps


class ToolError(Exception):
    """A call that could not be carried out; the text says why and what to do next."""


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


class Tool(Protocol):
    name: str
    description: str
    parameters: dict[str, Any]
    needs_workspace: bool

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


class Registry:
    """The tools this daemon has, in the order they are offered."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or ():
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def offered(self, *, workspace: Path | None, mode: str, local: bool) -> list[Tool]:
        """The tools a round may use: none from the network or without a workspace
        for the tools that need one; a change is not offered in `read_only`."""
        out: list[Tool] = []
        for tool in self._tools.values():
            if tool.needs_workspace and (workspace is None or not local):
                continue
            if mode == "read_only" and not offered_read_only(tool):
                continue
            out.append(tool)
        return out

    def specs(self, tools: list[Tool]) -> tuple[ToolSpec, ...]:
        return tuple(ToolSpec(t.name, t.description, t.parameters) for t in tools)
