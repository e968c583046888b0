"""A scripted OpenAI-compatible chat server for tests, on 127.0.0.1 port 0.

It speaks just enough HTTP/1.1 (one request per connection) to answer
`POST .../chat/completions` with a Server-Sent Events stream of chat chunks, and to
misbehave on purpose: an error status with a JSON body, a line that is not JSON, a
stream cut before its end, headers that never come, a 400 for a request field it does
not know (as OpenAI's own API answers one). Every request it receives is recorded
(path, headers, JSON body), so a test can check what left the daemon.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import trio

MAX_REQUEST_BYTES = 4 * 1024 * 1024


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion.chunk",
        "model": "stub-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def text_chunks(text: str, size: int = 3, key: str = "content") -> list[dict[str, Any]]:
    return [chunk({key: text[i : i + size]}) for i in range(0, len(text), size)]


def call_chunks(index: int, call_id: str, name: str, arguments: str, size: int = 5) -> list[dict[str, Any]]:
    """A tool call as OpenAI streams it: id and name first, then argument fragments."""
    head = chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                  "function": {"name": name, "arguments": ""}}]})
    rest = [chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + size]}}]})
            for i in range(0, len(arguments), size)]
    return [head, *rest]


def answer(
    text: str = "", *, reasoning: str = "", finish: str = "stop", usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A reply: reasoning, then text, then the finish chunk (then `usage`, as OpenAI
    sends it: a chunk of no choices) and [DONE]."""
    chunks = [chunk({"role": "assistant"})]
    chunks += text_chunks(reasoning, key="reasoning_content") + text_chunks(text)
    chunks.append(chunk({}, finish))
    if usage is not None:
        chunks.append({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": "stub-model",
                       "choices": [], "usage": usage})
    return {"chunks": chunks}


def unrecognized(field: str) -> dict[str, Any]:
    """The refusal OpenAI's API answers a request field it does not know with."""
    return {"status": 400, "json": {"error": {
        "message": f"Unrecognized request argument supplied: {field}",
        "type": "invalid_request_error", "param": None, "code": None,
    }}}


@attrs.define
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class OpenAIStub:
    """See the module docstring. `replies` are taken in order, then `default`.

    A reply is a dict: `{"chunks": [...], "done": True, "cut": False, "delay": 0}`
    streams the chunks (a string is sent as a raw `data:` value) then `[DONE]`
    (unless `done` is false) and ends the body cleanly (unless `cut`: then the
    connection just closes mid-body); `{"status": 401, "json": {...}}` answers an
    error; `{"stall": seconds}` sends nothing for that long. A request that carries a
    top-level field named in `unknown_fields` is refused as OpenAI refuses one
    (`unrecognized`), before any reply is taken.
    """

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.default: dict[str, Any] = answer("Default answer.")
        self.received: list[Received] = []
        self.unknown_fields: set[str] = set()
        self.port = 0
        self.client_left = trio.Event()  # a client closed its end while a stream was going
        self.sent_chunks = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
            self.port = listeners[0].socket.getsockname()[1]
            task_status.started(self.port)

    def reply_for(self, request: Any) -> dict[str, Any]:
        """The next scripted reply (a subclass may choose by the request instead)."""
        return self.replies.pop(0) if self.replies else self.default

    async def _handle(self, stream: trio.SocketStream) -> None:
        async with stream:
            try:
                request = await self._read_request(stream)
            except (trio.BrokenResourceError, ValueError):
                return
            if request is None:
                return
            self.received.append(request)
            body = request.body if isinstance(request.body, dict) else {}
            unknown = sorted(self.unknown_fields & body.keys())
            try:
                await self._answer(stream, unrecognized(unknown[0]) if unknown else self.reply_for(request))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.client_left.set()

    async def _read_request(self, stream: trio.SocketStream) -> Received | None:
        buf = b""
        while b"\r\n\r\n" not in buf:
            data = await stream.receive_some(65536)
            if not data:
                return None
            buf += data
            if len(buf) > MAX_REQUEST_BYTES:
                raise ValueError("request too large")
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            data = await stream.receive_some(65536)
            if not data:
                return None
            body += data
        return Received(method, path, headers, json.loads(body) if body else None)

    async def _answer(self, stream: trio.SocketStream, reply: dict[str, Any]) -> None:
        if "stall" in reply:
            await trio.sleep(float(reply["stall"]))
            return
        if "status" in reply:
            payload = json.dumps(reply["json"]).encode() if "json" in reply else str(reply.get("text", "")).encode()
            ctype = "application/json" if "json" in reply else "text/plain"
            await stream.send_all(
                f"HTTP/1.1 {reply['status']} Stub\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload
            )
            return
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        delay = float(reply.get("delay", 0))

        async def send_event(data: str) -> None:
            event = f"data: {data}\n\n".encode()
            await stream.send_all(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.sent_chunks += 1

        for item in reply.get("chunks", ()):
            if delay:
                await trio.sleep(delay)
            await send_event(item if isinstance(item, str) else json.dumps(item))
        if reply.get("cut"):
            return  # closes the connection without the body's last chunk
        if reply.get("done", True):
            await send_event("[DONE]")
        await stream.send_all(b"0\r\n\r\n")


@asynccontextmanager
async def serving() -> AsyncIterator[OpenAIStub]:
    """An OpenAIStub serving on 127.0.0.1 while the block runs."""
    server = OpenAIStub()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.run)
        yield server
        nursery.cancel_scope.cancel()
