"""What an MCP server offers besides tools: its prompts and its resources, listed once
it has shaken hands (when its capabilities name them) for the person to see.

`read_prompts` and `read_resources` turn one page of `prompts/list` and
`resources/list` into plain rows (strings bounded, what is malformed left out);
`list_extras` asks for the pages, bounded, and never fails the server: a listing that
goes wrong is a log line and an empty list. `prompt_text` reads what `prompts/get`
answers as the text a person may start a message with.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import attrs
import trio

from actors.peers.jsonrpc import WireError
from actors.peers.program import RpcError

log = logging.getLogger("bmoe.mcp")

MAX_PAGES = 8
MAX_ITEMS = 200
MAX_TEXT_CHARS = 500
MAX_ARGUMENTS = 32
LIST_TIMEOUT_S = 5.0


class Asker(Protocol):
    async def request(self, method: str, params: object = None) -> object: ...


Row = dict[str, object]
Reader = Callable[[object], tuple[list[Row], str | None]]


@attrs.frozen
class Extras:
    prompts: tuple[Row, ...] = ()
    resources: tuple[Row, ...] = ()


def _text(value: object) -> str | None:
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) and value.strip() else None


def _page(result: object, key: str) -> tuple[list[dict[str, object]], str | None]:
    if not isinstance(result, dict) or not isinstance(result.get(key), list):
        raise WireError(f"its answer to {key}/list has no list of {key}")
    cursor = result.get("nextCursor")
    return [r for r in result[key] if isinstance(r, dict)], cursor if isinstance(cursor, str) and cursor else None


def read_prompts(result: object) -> tuple[list[Row], str | None]:
    """One page of `prompts/list`: `{name, title?, description?, arguments: [{name, required}]}`."""
    raw, cursor = _page(result, "prompts")
    out: list[Row] = []
    for p in raw:
        name = _text(p.get("name"))
        if name is None:
            continue
        args = p.get("arguments")
        row: Row = {"name": name, "arguments": [
            {"name": a["name"][:MAX_TEXT_CHARS], "required": a.get("required") is True}
            for a in (args if isinstance(args, list) else [])[:MAX_ARGUMENTS]
            if isinstance(a, dict) and _text(a.get("name"))
        ]}
        for key in ("title", "description"):
            if (text := _text(p.get(key))) is not None:
                row[key] = text
        out.append(row)
    return out, cursor


def read_resources(result: object) -> tuple[list[Row], str | None]:
    """One page of `resources/list`: `{uri, name, description?, mime_type?}`."""
    raw, cursor = _page(result, "resources")
    out: list[Row] = []
    for r in raw:
        uri, name = _text(r.get("uri")), _text(r.get("name"))
        if uri is None:
            continue
        row: Row = {"uri": uri, "name": name or uri}
        if (text := _text(r.get("description"))) is not None:
            row["description"] = text
        if (mime := _text(r.get("mimeType"))) is not None:
            row["mime_type"] = mime
        out.append(row)
    return out, cursor


MAX_PROMPT_CHARS = 256 * 1024


def prompt_text(result: object) -> str:
    """The text of a `prompts/get` answer: each message's text (a resource's text too;
    another kind of part named in a short line), messages apart by a blank line.
    WireError when it is not such an answer or holds no text."""
    if not isinstance(result, dict) or not isinstance(result.get("messages"), list):
        raise WireError("its answer to prompts/get has no list of messages")
    parts: list[str] = []
    for msg in result["messages"]:
        content = msg.get("content") if isinstance(msg, dict) else None
        for part in content if isinstance(content, list) else [content]:
            if not isinstance(part, dict):
                continue
            resource = part.get("resource")
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(resource, dict) and isinstance(resource.get("text"), str):
                parts.append(resource["text"])
            else:
                parts.append(f"[a {part.get('type') or 'content'} part is not shown here]")
    text = "\n\n".join(parts)
    if not text.strip():
        raise WireError("its prompt holds no text")
    return text[:MAX_PROMPT_CHARS]


async def _pages(asker: Asker, method: str, read: Reader, label: str) -> tuple[Row, ...]:
    rows: list[Row] = []
    cursor: str | None = None
    try:
        with trio.move_on_after(LIST_TIMEOUT_S):
            for _ in range(MAX_PAGES):
                page, cursor = read(await asker.request(method, {"cursor": cursor} if cursor else None))
                rows.extend(page)
                if cursor is None or len(rows) >= MAX_ITEMS:
                    break
    except (WireError, RpcError) as exc:
        log.info("MCP server %s: its %s could not be listed: %s", label, method.split("/")[0], exc)
    return tuple(rows[:MAX_ITEMS])


async def list_extras(asker: Asker, capabilities: object, label: str) -> Extras:
    """The prompts and resources of a server whose `capabilities` name them. Raises only
    ProgramEnded (the server went away meanwhile)."""
    caps = capabilities if isinstance(capabilities, dict) else {}
    prompts = await _pages(asker, "prompts/list", read_prompts, label) if "prompts" in caps else ()
    resources = await _pages(asker, "resources/list", read_resources, label) if "resources" in caps else ()
    return Extras(prompts, resources)
