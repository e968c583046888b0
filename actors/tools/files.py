"""The file tools: read_file, write_file, edit_file and get_info.

Names, parameters and result shapes follow llama.cpp's server tools, with every path
confined to the workspace (actors/fs/paths.py), and only regular files read: a FIFO,
a device or a socket is refused, never waited on (`open_regular`). A change is computed by a pure
function of the file as it is (`plan_write`, `plan_edit`), so the approval card can
show its diff before anything is written, and the run computes it again from the
file as it is then: a file changed meanwhile is never overwritten blind.
"""

from __future__ import annotations

import json
import os
import platform
import stat
from pathlib import Path
from typing import Any, ClassVar

import attrs
import trio

from actors.errors import ToolError
from actors.fs.atomic import write_atomic
from actors.fs.paths import NotRegularFile, file_kind, open_regular, read_fd, relative, resolve
from actors.tools import args as args_
from actors.tools.diffs import bounded_unified_diff
from actors.tools.registry import RESULT_CAP_BYTES, ToolContext, ToolOutcome

MAX_READ_BYTES = 8 * 1024 * 1024  # read_file refuses larger files
MAX_WRITE_BYTES = 8 * 1024 * 1024  # write_file and edit_file refuse larger results
BINARY_SNIFF_BYTES = 8 * 1024
TITLE_CHARS = 60

_limiter = trio.CapacityLimiter(4)


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _short(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def unified_diff(old: str, new: str, rel: str) -> str:
    """The change as a unified diff, its cost bounded (actors/tools/diffs.py); a change
    too large to compare line by line is said in one line instead."""
    diff = bounded_unified_diff(old, new, rel)
    if diff is not None:
        return diff
    return (f"--- a/{rel}\n+++ b/{rel}\n[The change is too large to show as a diff: {old.count(chr(10))} lines "
            f"before, {new.count(chr(10))} after.]\n")


def write_whole(path: Path, data: bytes) -> None:
    """Write a workspace file whole, keeping the mode of the file it replaces."""
    write_atomic(path, data, keep_mode=True, suffix=".bmoe-tmp")


def _open(path: Path, rel: str, what: str, folder: str = "") -> int:
    """`open_regular`, its refusals as ToolErrors the model reads (`what` after a special
    file's, `folder` after a folder's); FileNotFoundError passes."""
    try:
        return open_regular(path)
    except FileNotFoundError:
        raise
    except NotRegularFile as exc:
        if exc.is_folder:
            raise ToolError(f"{rel} is a folder{folder or ', not a file.'}") from None
        raise ToolError(f"{rel} is {exc.kind}, not a regular file; {what}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {rel}: {exc.strerror}.") from None


def _read_text(path: Path, rel: str) -> str | None:
    """A text file's content, None when it does not exist; ToolError otherwise."""
    try:
        fd = _open(path, rel, "only a regular file can be edited.")
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > MAX_WRITE_BYTES:
            raise ToolError(f"{rel} is too large to change with this tool ({size} bytes).")
        raw = read_fd(fd, MAX_WRITE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_WRITE_BYTES:
        raise ToolError(f"{rel} is too large to change with this tool (it grew while it was read).")
    if _is_binary(raw):
        raise ToolError(f"{rel} is a binary file; it can only be replaced whole with write_file.")
    return raw.decode("utf-8", errors="surrogateescape")


# ---- read_file ----


def read_lines(path: Path, rel: str, start: int, end: int | None, append_loc: bool, cap: int) -> str:
    """Lines start..end (1-based, inclusive) of a text file, numbered with append_loc,
    at most `cap` bytes; past the cap it says which line to read on from."""
    try:
        fd = _open(path, rel, "read_file reads regular files only.", ". Use file_glob_search to list what it holds.")
    except FileNotFoundError:
        raise ToolError(f"There is no file {rel}. Use file_glob_search to find the right path.") from None
    out: list[str] = []
    size = 0
    with os.fdopen(fd, "rb") as fh:
        st_size = os.fstat(fd).st_size
        if st_size > MAX_READ_BYTES:
            raise ToolError(
                f"{rel} is too large to read ({st_size} bytes; the limit is {MAX_READ_BYTES // (1024 * 1024)} MiB). "
                "Use grep_search to find what you need in it."
            )
        if _is_binary(fh.read(BINARY_SNIFF_BYTES)):
            raise ToolError(f"{rel} is a binary file; read_file reads text only.")
        fh.seek(0)
        consumed = 0
        lines = 0
        for lineno, raw in enumerate(fh, start=1):
            lines = lineno
            consumed += len(raw)
            if consumed > MAX_READ_BYTES:  # it grew past the limit while it was read
                out.append(f"[output truncated: {rel} is larger than it was when read_file began]")
                break
            if lineno < start:
                continue
            if end is not None and lineno > end:
                break
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            line = (f"{lineno}\u2192{text}\n") if append_loc else text + "\n"
            encoded = len(line.encode("utf-8"))
            if size + encoded > cap:
                out.append(f"[output truncated: read on from line {lineno} with start_line={lineno}]")
                break
            out.append(line)
            size += encoded
    if start > 1 and lines < start:
        # An empty answer would read as an empty file (a small model asked for line
        # 1234567890 and read nothing, round after round).
        raise ToolError(f"{rel} has {lines} line{'' if lines == 1 else 's'}: start_line {start} is past its end.")
    return "".join(out)


@attrs.frozen
class ReadFile:
    # Arguments that name an existing file: a local model's grammar offers the real names
    # (actors/runs/agent/real_names.py).
    existing_file_args: ClassVar[tuple[str, ...]] = ("path",)
    name: str = "read_file"
    description: str = (
        "Read a text file of the workspace, whole or lines start_line to end_line. "
        'Example: {"path": "README.md"}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: _schema(
            {
                "path": {"type": "string", "description": "Path of the file, relative to the workspace"},
                "start_line": {"type": "integer", "description": "First line to read, 1-based (default 1)"},
                "end_line": {"type": "integer", "description": "Last line to read, inclusive (default: the end)"},
                "append_loc": {"type": "boolean", "description": "Prefix each line with its line number"},
            },
            ["path"],
        )
    )
    needs_workspace: bool = True
    offered_read_only: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        path = args.get("path")
        return f"Read {_short(path)}" if isinstance(path, str) and path else "Read a file"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        assert ctx.workspace is not None
        raw = args_.string(args, "path")
        start = max(1, args_.whole(args, "start_line", 1))
        end = args_.optional_whole(args, "end_line")
        if end is not None and end < start:
            raise ToolError(f"end_line ({end}) is before start_line ({start}).")
        append_loc = args_.boolean(args, "append_loc", False)
        path = resolve(ctx.workspace, raw)
        rel = relative(ctx.workspace, path)
        text = await trio.to_thread.run_sync(
            read_lines, path, rel, start, end, append_loc, RESULT_CAP_BYTES, limiter=_limiter
        )
        return ToolOutcome(text, file=rel)


# ---- write_file ----


@attrs.frozen
class WritePlan:
    rel: str
    created: bool
    data: bytes
    diff: str
    summary: str


def _changed_span(old: list[str], new: list[str]) -> tuple[int, int]:
    """How many lines the changed span had and has (common head and tail left out)."""
    head = 0
    while head < len(old) and head < len(new) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < len(old) - head and tail < len(new) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return len(old) - head - tail, len(new) - head - tail


def plan_write(path: Path, rel: str, content: str) -> WritePlan:
    data = content.encode("utf-8", errors="surrogateescape")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"The content is too large ({len(data)} bytes; the limit is {MAX_WRITE_BYTES} bytes).")
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        summary = f"Created {rel}: {lines} lines, {len(data)} bytes."
        return WritePlan(rel, True, data, unified_diff("", content, rel), summary)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{rel} is a folder; give a file path.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{rel} is {file_kind(st.st_mode)}, not a regular file; it was not replaced.")
    raw = None
    if st.st_size <= MAX_READ_BYTES:
        fd = _open(path, rel, "it was not replaced.")
        try:
            raw = read_fd(fd, MAX_READ_BYTES + 1)
        finally:
            os.close(fd)
        raw = raw if len(raw) <= MAX_READ_BYTES else None
    if raw is None or _is_binary(raw):
        what = "a binary file" if raw is not None else "a large file"
        return WritePlan(rel, False, data, "", f"Replaced {rel} ({what}): {lines} lines, {len(data)} bytes.")
    old = raw.decode("utf-8", errors="surrogateescape")
    if old == content:
        summary = f"Replaced {rel} with the same content: {lines} lines, {len(data)} bytes; nothing changed."
    else:
        had, has = _changed_span(old.splitlines(), content.splitlines())
        summary = f"Replaced {rel}: {lines} lines, {len(data)} bytes; the changed span had {had} lines and has {has}."
    return WritePlan(rel, False, data, unified_diff(old, content, rel), summary)


@attrs.frozen
class WriteFile:
    name: str = "write_file"
    description: str = (
        "Create or replace a whole file with the given content. To change part of a file, use edit_file. "
        'Example: {"path": "notes/todo.md", "content": "- tidy the docs\\n"}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: _schema(
            {
                "path": {"type": "string", "description": "Path of the file to write, relative to the workspace"},
                "content": {"type": "string", "description": "The whole new content"},
            },
            ["path", "content"],
        )
    )
    needs_workspace: bool = True
    offered_read_only: bool = False
    # The content replaces the file whole: when the file changed after the card was
    # drawn, the card is drawn again (the person approves what will be lost).
    redraw_if_changed: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        path = args.get("path")
        return f"Write {_short(path)}" if isinstance(path, str) and path else "Write a file"

    async def _plan(self, args: dict[str, Any], ctx: ToolContext) -> tuple[Path, WritePlan]:
        assert ctx.workspace is not None
        raw = args_.string(args, "path")
        content = args_.string(args, "content")
        assert raw is not None and content is not None
        path = resolve(ctx.workspace, raw)
        rel = relative(ctx.workspace, path)
        if rel == ".":
            raise ToolError("path names the workspace itself; give a file path.")
        plan = await trio.to_thread.run_sync(plan_write, path, rel, content, limiter=_limiter)
        return path, plan

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        _, plan = await self._plan(args, ctx)
        return ToolOutcome(plan.summary, diff=plan.diff, file=plan.rel)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path, plan = await self._plan(args, ctx)
        try:
            await trio.to_thread.run_sync(write_whole, path, plan.data, limiter=_limiter)
        except OSError as exc:
            raise ToolError(f"Could not write {plan.rel}: {exc.strerror}.") from None
        return ToolOutcome(plan.summary, diff=plan.diff, file=plan.rel)


# ---- edit_file ----


@attrs.frozen
class EditPlan:
    rel: str
    new: str
    diff: str


def plan_edit(old: str, rel: str, edits: list[tuple[str, str]]) -> EditPlan:
    """Apply exact replacements to `old` at once: each old_text found exactly once in
    the original, none overlapping."""
    spans: list[tuple[int, int, int, str]] = []
    for i, (old_text, new_text) in enumerate(edits):
        at = old.find(old_text)
        if at < 0:
            raise ToolError(
                f"edits[{i}].old_text was not found in {rel}; it must match the file's current content exactly, "
                "whitespace included. Read the file again and copy the text."
            )
        if old.find(old_text, at + 1) >= 0:
            count = old.count(old_text)
            raise ToolError(
                f"edits[{i}].old_text occurs {count} times in {rel}; it must be unique. "
                "Include more of the surrounding lines."
            )
        spans.append((at, at + len(old_text), i, new_text))
    spans.sort()
    for a, b in zip(spans, spans[1:], strict=False):
        if a[1] > b[0]:
            raise ToolError(f"edits[{a[2]}] and edits[{b[2]}] overlap in {rel}; merge them into one edit.")
    parts: list[str] = []
    pos = 0
    for start, stop, _, new_text in spans:
        parts.append(old[pos:start])
        parts.append(new_text)
        pos = stop
    parts.append(old[pos:])
    new = "".join(parts)
    if new == old:
        raise ToolError("No change: the replacements give the same content.")
    return EditPlan(rel, new, unified_diff(old, new, rel))


def edits_arg(args: dict[str, Any]) -> list[tuple[str, str]]:
    """edit_file's `edits` as (old_text, new_text) pairs; ToolError says what is wrong."""
    edits = args.get("edits")
    if not isinstance(edits, list) or not edits:
        raise ToolError('"edits" must be a non-empty array of {"old_text", "new_text"} objects.')
    out = []
    for i, edit in enumerate(edits):
        if not isinstance(edit, dict):
            raise ToolError(f"edits[{i}] must be an object with old_text and new_text.")
        old_text, new_text = edit.get("old_text"), edit.get("new_text")
        if not isinstance(old_text, str) or not isinstance(new_text, str):
            raise ToolError(f"edits[{i}] needs old_text and new_text, both strings.")
        if old_text == "":
            raise ToolError(f"edits[{i}].old_text must not be empty.")
        out.append((old_text, new_text))
    return out


@attrs.frozen
class EditFile:
    existing_file_args: ClassVar[tuple[str, ...]] = ("path",)
    name: str = "edit_file"
    description: str = (
        "Change a file by replacing exact text; each old_text must occur once in the file. Answers with the diff. "
        'Example: {"path": "notes/todo.md", "edits": [{"old_text": "tidy", "new_text": "rewrite"}]}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: _schema(
            {
                "path": {"type": "string", "description": "Path of the file to edit, relative to the workspace"},
                "edits": {
                    "type": "array",
                    "description": "One or more exact replacements",
                    "items": {
                        "type": "object",
                        "properties": {
                            "old_text": {"type": "string", "description": "Exact text to find; unique in the file"},
                            "new_text": {"type": "string", "description": "Text to put in its place"},
                        },
                        "required": ["old_text", "new_text"],
                    },
                },
            },
            ["path", "edits"],
        )
    )
    needs_workspace: bool = True
    offered_read_only: bool = False
    # After a yes, the approved replacements are applied to the file as it is then
    # (each must still be found once), so a file changed meanwhile keeps its changes.
    redraw_if_changed: bool = False

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        path = args.get("path")
        return f"Edit {_short(path)}" if isinstance(path, str) and path else "Edit a file"

    async def _plan(self, args: dict[str, Any], ctx: ToolContext) -> tuple[Path, EditPlan]:
        assert ctx.workspace is not None
        raw = args_.string(args, "path")
        edits = edits_arg(args)
        path = resolve(ctx.workspace, raw)
        rel = relative(ctx.workspace, path)

        def compute() -> EditPlan:
            old = _read_text(path, rel)
            if old is None:
                raise ToolError(f"There is no file {rel}. Use write_file to create it.")
            return plan_edit(old, rel, edits)

        return path, await trio.to_thread.run_sync(compute, limiter=_limiter)

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        _, plan = await self._plan(args, ctx)
        return ToolOutcome(plan.diff, diff=plan.diff, file=plan.rel)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        path, plan = await self._plan(args, ctx)
        data = plan.new.encode("utf-8", errors="surrogateescape")
        try:
            await trio.to_thread.run_sync(write_whole, path, data, limiter=_limiter)
        except OSError as exc:
            raise ToolError(f"Could not write {plan.rel}: {exc.strerror}.") from None
        return ToolOutcome(plan.diff, diff=plan.diff, file=plan.rel)


# ---- get_info ----


@attrs.frozen
class GetInfo:
    name: str = "get_info"
    description: str = "The platform and the working directory (the workspace), as JSON {os, cwd}."
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})
    needs_workspace: bool = True
    offered_read_only: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return "Look up the platform and folder"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        osname = f"{platform.system()} {platform.release()} ({platform.machine()})"
        return ToolOutcome(json.dumps({"os": osname, "cwd": str(ctx.workspace)}))
