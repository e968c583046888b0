"""The MCP stdio wire without I/O: JSON-RPC 2.0, one JSON message per line.

`LineBuffer` cuts a byte stream into lines; `parse` turns a line into what it is (a
response to one of ours, a request or a notification from the server, or something
to ignore); `encode_*` write ours; `call_result` and `tool_list` read the two answers
the daemon acts on. Nothing here raises on what a server sends except `WireError`,
which says in plain words what was wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

PROTOCOL_VERSION = "2024-11-05"
CLIENT_INFO = {"name": "bmoe-daemon", "version": "0.1.0"}
MAX_LINE_BYTES = 16 * 1024 * 1024
MAX_TOOLS = 256  # read of one tools/list page; more are left out (and said once)
MAX_DESCRIPTION_CHARS = 4096
MAX_TITLE_CHARS = 200
MAX_NAME_CHARS = 128  # longer cannot be called (actors/peers/mcp/servers.py's TOOL_NAME)
# A tool's input schema goes to the model with every round: one larger than this (as
# JSON) would fill the context on its own, so the tool is left out.
MAX_SCHEMA_BYTES = 64 * 1024
# JSON-RPC's code for a method this side does not have.
METHOD_NOT_FOUND = -32601


class WireError(Exception):
    """What the server sent breaks the protocol; the text says how."""


class LineBuffer:
    """Bytes in, complete lines out (without their `\\n`, a `\\r` before it dropped).

    A line longer than `limit` raises WireError: a server that never ends its line
    would otherwise grow the buffer without bound. Each byte is looked at once, however
    the line arrives (a line fed a byte at a time costs no more than one fed whole).
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._limit = limit
        self._scanned = 0  # the buffer holds no newline before this offset

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        self._buf += data
        lines: list[bytes] = []
        start = 0
        end = self._buf.find(b"\n", self._scanned)
        while end >= 0:
            line = bytes(self._buf[start:end])
            lines.append(line[:-1] if line.endswith(b"\r") else line)
            start = end + 1
            end = self._buf.find(b"\n", start)
        del self._buf[:start]
        self._scanned = len(self._buf)
        if len(self._buf) > self._limit:
            raise WireError(f"the server wrote a line longer than {self._limit} bytes")
        return lines

    @property
    def pending(self) -> int:
        return len(self._buf)


# `result`, `params` and a request's `id` are JSON values as the server sent them;
# whoever reads one narrows it (isinstance) first.


@attrs.frozen
class Response:
    id: int
    result: object = None
    error: dict[str, object] | None = None


@attrs.frozen
class Request:
    id: object  # echoed back as it came
    method: str
    params: object = None


@attrs.frozen
class Notification:
    method: str
    params: object = None


@attrs.frozen
class Ignored:
    why: str


Incoming = Response | Request | Notification | Ignored


def parse(line: bytes) -> Incoming:
    """What one line from the server is. Never raises: a line that is not a message
    (a server that prints its banner to stdout) is `Ignored` with why."""
    if not line.strip():
        return Ignored("an empty line")
    try:
        msg = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return Ignored("a line that is not JSON")
    if not isinstance(msg, dict):
        return Ignored("a JSON value that is not an object")
    method = msg.get("method")
    if isinstance(method, str):
        if "id" in msg and msg["id"] is not None:
            return Request(msg["id"], method, msg.get("params"))
        return Notification(method, msg.get("params"))
    rid = msg.get("id")
    if isinstance(rid, int) and not isinstance(rid, bool) and ("result" in msg or "error" in msg):
        err = msg.get("error")
        if err is not None:
            if not isinstance(err, dict):
                err = {"code": 0, "message": str(err)}
            return Response(rid, None, err)
        return Response(rid, msg.get("result"))
    return Ignored("an object that is neither a request, a notification nor an answer to ours")


def _line(msg: dict[str, object]) -> bytes:
    # json.dumps escapes every newline inside strings, so the message is one line.
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def encode_request(rid: int, method: str, params: object = None) -> bytes:
    msg: dict[str, object] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return _line(msg)


def encode_notification(method: str, params: object = None) -> bytes:
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return _line(msg)


def encode_result(rid: object, result: object) -> bytes:
    return _line({"jsonrpc": "2.0", "id": rid, "result": result})


def encode_error(rid: object, code: int, message: str) -> bytes:
    return _line({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def initialize_params(version: str = PROTOCOL_VERSION) -> dict[str, object]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": dict(CLIENT_INFO)}


def error_text(error: Mapping[str, object]) -> str:
    message = error.get("message")
    text = message if isinstance(message, str) and message.strip() else "no reason given"
    code = error.get("code")
    return f"{text} (code {code})" if isinstance(code, int) and not isinstance(code, bool) else text


def check_initialize(result: object) -> str:
    """The protocol version the server answered with; WireError when the answer is not
    an initialize result."""
    if not isinstance(result, dict):
        raise WireError("its answer to initialize is not an object")
    version = result.get("protocolVersion")
    if not isinstance(version, str) or not version:
        raise WireError("its answer to initialize names no protocolVersion")
    caps = result.get("capabilities", {})
    if not isinstance(caps, dict):
        raise WireError("its answer to initialize has capabilities that are not an object")
    return version


@attrs.frozen
class ToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]
    title: str | None = None


def tool_list(result: object) -> tuple[list[ToolInfo], str | None, list[str]]:
    """The tools of one `tools/list` page, the next page's cursor, and what was left
    out (and why) of what the server listed."""
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise WireError("its answer to tools/list has no list of tools")
    tools: list[ToolInfo] = []
    left_out: list[str] = []
    listed = result["tools"]
    if len(listed) > MAX_TOOLS:
        left_out.append(f"{len(listed) - MAX_TOOLS} tools past the first {MAX_TOOLS} of one page")
    for raw in listed[:MAX_TOOLS]:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            left_out.append("a tool without a name")
            continue
        if len(raw["name"]) > MAX_NAME_CHARS:
            left_out.append(f"a tool whose name is longer than {MAX_NAME_CHARS} characters")
            continue
        schema = raw.get("inputSchema")
        if schema is None:
            schema = {"type": "object", "properties": {}}
        if not isinstance(schema, dict):
            left_out.append(f"{raw['name']}: its inputSchema is not an object")
            continue
        if _json_size(schema) > MAX_SCHEMA_BYTES:
            left_out.append(f"{raw['name']}: its inputSchema is larger than {MAX_SCHEMA_BYTES} bytes")
            continue
        desc = raw.get("description")
        title = raw.get("title")
        if not isinstance(title, str) or not title.strip():
            annotations = raw.get("annotations")
            title = annotations.get("title") if isinstance(annotations, dict) else None
        tools.append(
            ToolInfo(
                name=raw["name"],
                description=(desc if isinstance(desc, str) else "")[:MAX_DESCRIPTION_CHARS],
                input_schema=schema,
                title=title[:MAX_TITLE_CHARS] if isinstance(title, str) and title.strip() else None,
            )
        )
    cursor = result.get("nextCursor")
    return tools, cursor if isinstance(cursor, str) and cursor else None, left_out


def _json_size(value: object) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False))
    except (ValueError, RecursionError):
        return MAX_SCHEMA_BYTES + 1


def call_result(result: object) -> tuple[str, bool]:
    """The text a `tools/call` answer gives the model, and whether it is an error.

    The text parts of `content` are the result; a part of another kind is named in a
    short line (the model cannot see it); `structuredContent` stands in when there is
    no content at all.
    """
    if not isinstance(result, dict):
        raise WireError("its answer to tools/call is not an object")
    is_error = result.get("isError") is True
    parts: list[str] = []
    content = result.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif kind == "resource" and isinstance(part.get("resource"), dict) and isinstance(
                part["resource"].get("text"), str
            ):
                parts.append(part["resource"]["text"])
            else:
                resource = part.get("resource")
                mime = part.get("mimeType") or (resource.get("mimeType") if isinstance(resource, dict) else None)
                label = kind if isinstance(kind, str) and kind else "content"
                shown = f" ({mime})" if isinstance(mime, str) and mime else ""
                parts.append(f"[a {label} part{shown} is not shown here]")
    if not parts and "structuredContent" in result:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    text = "\n".join(parts)
    if not text.strip():
        text = "The tool reported an error without saying why." if is_error else "The tool answered with no text."
    return text, is_error
