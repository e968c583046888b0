"""Tools for exercising the run loop end to end with the scripted backend.

Offered only when the daemon runs a script (`serve --scripted FILE`), never with a
model: `echo` reads nothing and answers its text, `pause` waits (a long call to stop),
`note` is a change that writes a file inside the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.errors import ToolError
from actors.tools.files import write_whole
from actors.tools.registry import Tool, ToolContext, ToolOutcome

MAX_PAUSE_S = 120.0


@attrs.frozen
class Echo:
    name: str = "echo"
    description: str = "Answers with the text it is given."
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    )
    needs_workspace: bool = False

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return f"Echo {args.get('text', '')}".strip()

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if "fail" in args:
            raise ToolError(str(args["fail"]))
        return ToolOutcome(str(args.get("text", "")))


@attrs.frozen
class Pause:
    name: str = "pause"
    description: str = "Waits the given number of seconds."
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {"seconds": {"type": "number"}}}
    )
    needs_workspace: bool = False

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return f"Wait {args.get('seconds', '')} s".replace("  ", " ")

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        seconds = args.get("seconds", 1)
        if not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_PAUSE_S:
            raise ToolError(f"seconds must be a number from 0 to {MAX_PAUSE_S:g}.")
        await trio.sleep(seconds)
        return ToolOutcome(f"waited {seconds} s")


@attrs.frozen
class Note:
    name: str = "note"
    description: str = "Writes text to a file directly inside the workspace."
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
            "required": ["path", "text"],
        }
    )
    needs_workspace: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        return f"Write {args['path']}" if args.get("path") else "Write a note"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        name = str(args.get("path", ""))
        if ctx.workspace is None:
            raise ToolError("This conversation has no workspace.")
        # Only a plain file name directly in the workspace: no folders, no links out.
        if not name or name in (".", "..") or os.sep in name or "/" in name:
            raise ToolError("path must be a plain file name inside the workspace.")
        target = Path(ctx.workspace) / name
        if target.is_symlink():
            raise ToolError("path is a symbolic link; it was not written.")
        # Whole, as the file tools write (actors/tools/files.py): never seen half written.
        await trio.to_thread.run_sync(write_whole, target, str(args.get("text", "")).encode("utf-8"))
        return ToolOutcome(f"wrote {name}", file=name)


def test_tools() -> list[Tool]:
    return [Echo(), Pause(), Note()]
