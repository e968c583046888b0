"""A remote MCP server's session over HTTP (httpx on trio): `RemoteLink`.

Streamable HTTP first: each message of ours is a POST of one JSON-RPC message to the
server's address; a request's answer comes back as JSON or as an event stream that
also carries what the server sends meanwhile (its notifications, its requests), and
a notification of ours is answered 202. The `Mcp-Session-Id` the server gives with
its answer to `initialize` goes with every later request, with the protocol version
agreed (`MCP-Protocol-Version`); a GET opens the stream the server may speak on
unasked (a server that has none answers 405), and a DELETE ends the session when the
link closes. A server that answers the first POST with a 4xx other than 401/403
speaks the older HTTP+SSE transport: a GET opens its event stream, whose first
`endpoint` event names where to POST messages (on the same origin only: the headers
never go to another server), and every answer comes over that stream.

A link duck-types actors/peers/program.py's `Program` for the server's actor (`request`,
`send`, `end`, `ended`, `why`, `scope`). It is one session: a connection that cannot
be made, a stream cut short, a session the server forgot end it (`end`, with why),
every request still waiting failed with ProgramEnded, and the actor reconnects with a
new link. The secrets put in its headers never reach a text it makes: each error and
each `why` goes through `redact` first, and the headers are in no repr.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import TYPE_CHECKING as _TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

import trio

from actors.actor import Reply
from actors.model.chatstream import StreamError
from actors.model.http_read import body_lines, read_body, read_head
from actors.peers.jsonrpc import Response, WireError, encode_notification, encode_request, parse
from actors.peers.mcp.sse import SseEvents
from actors.peers.program import Handler, ProgramEnded, answer

if _TYPE_CHECKING:
    import httpx


def _httpx() -> ModuleType:
    """httpx, imported with its first use: the daemon's start does not pay for it."""
    import httpx

    return httpx


log = logging.getLogger("bmoe.mcp")

CONNECT_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 2.0  # the DELETE that ends a session, on the way out
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_ERROR_BYTES = 2048
MAX_SESSION_ID_CHARS = 256
# Offered over HTTP: the version whose transport this is (stdio offers its own).
HTTP_PROTOCOL_VERSION = "2025-06-18"
AUTH_STATUSES = frozenset({401, 403})
JSON = "application/json"
EVENT_STREAM = "text/event-stream"
STREAMABLE = "streamable-http"
SSE = "sse"


class HttpRefused(WireError):
    """The server answered a message with an HTTP error status; the text says which."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def _reason(exc: Exception) -> str:
    if isinstance(exc, _httpx().TimeoutException):
        return "it did not answer in time"
    text = str(exc).strip()
    return text[:200] if text else type(exc).__name__


def _media(resp: httpx.Response) -> str:
    media: str = resp.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return media


class RemoteLink:
    """One session with a remote server; see the module docstring. Open it with
    `open(handle)` (what the server sends besides answers goes to `handle`), then
    `request` and `send`; `end` ends it from anywhere."""

    def __init__(self, url: str, headers: dict[str, str], secrets: tuple[str, ...], *, transport: str = "auto") -> None:
        self.scope = trio.CancelScope()
        self.pending: dict[int, Reply[object]] = {}
        self.ended = trio.Event()
        self.why = ""
        self.transport: str | None = SSE if transport == SSE else None  # known after the first request
        self.protocol: str | None = None  # agreed in initialize; sent with each later request
        self._url = url
        self._headers = headers
        self._secrets = tuple(s for s in secrets if s)
        self._client: httpx.AsyncClient | None = None
        self._nursery: trio.Nursery | None = None
        self._handle: Handler | None = None
        self._session: str | None = None
        self._endpoint: str | None = None
        self._ids = itertools.count(1)

    def __repr__(self) -> str:  # no header in a traceback's locals or a log line
        return f"RemoteLink(transport={self.transport!r}, ended={self.ended.is_set()})"

    def redact(self, text: str) -> str:
        """`text` with every secret of the headers replaced."""
        for secret in self._secrets:
            text = text.replace(secret, "[secret]")
        return text

    def end(self, why: str) -> None:
        """End the session (the actor's task closes it) and fail every request still
        waiting. Synchronous, so a cancelled caller can call it on its way out."""
        if not self.ended.is_set():
            self.why = self.redact(why)
            self.ended.set()
        self.scope.cancel()
        for slot in self.pending.values():
            slot.fail(ProgramEnded(self.why))

    @asynccontextmanager
    async def open(self, handle: Handler) -> AsyncIterator[None]:
        """The HTTP client and the nursery the streams are read in, for the body's
        time. On the way out (return, error or cancellation) the readers end, the
        session is ended with a DELETE (shielded, at most CLOSE_TIMEOUT_S) and every
        waiting request is failed."""
        timeout = _httpx().Timeout(None, connect=CONNECT_TIMEOUT_S, write=WRITE_TIMEOUT_S, pool=CONNECT_TIMEOUT_S)
        self._handle = handle
        try:
            async with _httpx().AsyncClient(timeout=timeout, follow_redirects=False) as client:
                self._client = client
                try:
                    async with trio.open_nursery() as nursery:
                        self._nursery = nursery
                        try:
                            yield
                        finally:
                            nursery.cancel_scope.cancel()
                finally:
                    with trio.move_on_after(CLOSE_TIMEOUT_S) as cs:
                        cs.shield = True
                        await self._delete_session(client)
        finally:
            self._client = None
            self._nursery = None
            self.end(self.why or "the session was closed")

    # ---- what the actor calls ----

    async def request(self, method: str, params: object = None) -> object:
        """Send a request and wait for its answer (a JSON value as the server sent it).
        RpcError for a JSON-RPC error, HttpRefused for an HTTP error status, WireError
        for an answer that breaks the protocol, ProgramEnded when the session ended.
        The first request of a link decides the transport. Cancelled (a stop, a time
        limit): the server is told with `notifications/cancelled`, the session goes on."""
        rid = next(self._ids)
        slot: Reply[object] = Reply()
        self.pending[rid] = slot
        try:
            data = encode_request(rid, method, params)
            if self.transport is None:
                await self._first(data, slot)
            elif self.transport == SSE:
                if self._endpoint is None:
                    await self._open_sse()
                await self._post_sse(data)
            else:
                await self._post(data, slot)
                if not slot.done:
                    self.end("the server ended its answer without a result")
            return await slot.wait()
        except trio.Cancelled:
            if self.protocol is not None and self._nursery is not None and not self.ended.is_set():
                note = encode_notification("notifications/cancelled", {"requestId": rid, "reason": "given up"})
                self._nursery.start_soon(self.send_quietly, note)
            raise
        finally:
            self.pending.pop(rid, None)

    async def send(self, data: bytes) -> None:
        """Send one notification or answer of ours; ProgramEnded when the session ended."""
        if self.ended.is_set():
            raise ProgramEnded(self.why or "it is not connected")
        if self.transport == SSE:
            await self._post_sse(data)
        else:
            await self._post(data, None)

    async def send_quietly(self, data: bytes) -> None:
        """send(), with a session that ended or a refusal left alone."""
        try:
            await self.send(data)
        except (ProgramEnded, WireError):
            pass

    def listen(self) -> None:
        """Streamable HTTP: open the stream the server may speak on unasked (best effort)."""
        if self.transport == STREAMABLE and self._nursery is not None:
            self._nursery.start_soon(self._listen)

    # ---- the wire ----

    def _dropped(self, exc: Exception) -> ProgramEnded:
        if self.transport is None or isinstance(exc, _httpx().ConnectError):
            self.end(f"no connection could be made: {_reason(exc)}")
        else:
            self.end(f"the connection dropped: {_reason(exc)}")
        return ProgramEnded(self.why)

    def _request_headers(self, accept: str | None, *, body: bool = False) -> dict[str, str]:
        headers = dict(self._headers)
        if accept:
            headers["Accept"] = accept
        if body:
            headers["Content-Type"] = JSON
        if self.transport == STREAMABLE:
            if self._session:
                headers["Mcp-Session-Id"] = self._session
            if self.protocol:
                headers["MCP-Protocol-Version"] = self.protocol
        return headers

    @property
    def _http(self) -> httpx.AsyncClient:
        if self._client is None or self.ended.is_set():
            raise ProgramEnded(self.why or "it is not connected")
        return self._client

    async def _first(self, data: bytes, slot: Reply[object]) -> None:
        """The first request: Streamable HTTP, or the older transport when the server
        answers it with a 4xx other than 401/403."""
        try:
            await self._post(data, slot)
            self.transport = STREAMABLE
        except HttpRefused as exc:
            if not 400 <= exc.status < 500 or exc.status in AUTH_STATUSES:
                raise
            log.info("MCP server at %s answered %d to a Streamable HTTP POST: trying the older SSE transport",
                     self.redact(self._url), exc.status)
            self.transport = SSE
            self._session = None
            await self._open_sse()
            await self._post_sse(data)
            return
        if not slot.done:
            self.end("the server ended its answer without a result")

    async def _post(self, data: bytes, slot: Reply[object] | None) -> None:
        """POST one message (Streamable HTTP) and read what comes back: nothing (202),
        a JSON message, or an event stream read until `slot` is filled."""
        try:
            async with self._http.stream("POST", self._url, content=data,
                                         headers=self._request_headers(f"{JSON}, {EVENT_STREAM}", body=True)) as resp:
                session = resp.headers.get("mcp-session-id")
                if session and self._session is None and len(session) <= MAX_SESSION_ID_CHARS and session.isprintable():
                    self._session = session
                if resp.status_code == 404 and self._session:
                    self.end("the server no longer knows this session")
                    raise ProgramEnded(self.why)
                if resp.status_code >= 300:
                    raise await self._refused(resp)
                if resp.status_code in (202, 204):
                    return
                media = _media(resp)
                if media == JSON:
                    self._take(await read_body(resp, MAX_MESSAGE_BYTES))
                elif media == EVENT_STREAM:
                    await self._read_events(resp, lambda: slot is not None and slot.done)
                elif slot is not None:
                    raise WireError(f"it answered with {media or 'no content type'}, not JSON or an event stream")
        except _httpx().TransportError as exc:
            raise self._dropped(exc) from None
        except StreamError as exc:
            raise WireError(str(exc)) from None

    async def _read_events(self, resp: httpx.Response, enough: Callable[[], bool] | None = None) -> None:
        """Hand each `message` event of `resp` on, until the stream ends or `enough()`."""
        events = SseEvents()

        async def on_line(line: str) -> bool:
            event = events.feed(line)
            if event is not None and event[0] == "message":
                self._take(event[1].encode("utf-8"))
            return enough is not None and enough()

        await body_lines(resp, on_line)

    def _take(self, raw: bytes) -> None:
        msg = parse(raw)
        if isinstance(msg, Response):
            answer(self.pending, msg)
        elif self._handle is not None and self._nursery is not None:
            self._handle(msg, self._nursery)

    async def _refused(self, resp: httpx.Response) -> HttpRefused:
        body = await read_head(resp, MAX_ERROR_BYTES)
        said = " ".join(body[:MAX_ERROR_BYTES].decode("utf-8", errors="replace").split())[:300]
        text = f"HTTP {resp.status_code} {resp.reason_phrase}".rstrip() + (f": {said}" if said else "")
        if resp.status_code in AUTH_STATUSES:
            text += " (check the headers of this server in mcp.json, and the secrets they name)"
        elif 300 <= resp.status_code < 400:
            text += " (it sends the daemon elsewhere: put the address it redirects to in mcp.json)"
        return HttpRefused(resp.status_code, self.redact(text))

    async def _open_sse(self) -> None:
        """The older transport: open the event stream and wait for its `endpoint`."""
        assert self._nursery is not None
        await self._nursery.start(self._read_sse_stream)

    async def _read_sse_stream(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with self._http.stream("GET", self._url, headers=self._request_headers(EVENT_STREAM)) as resp:
                if resp.status_code >= 300:
                    raise await self._refused(resp)
                if _media(resp) != EVENT_STREAM:
                    raise WireError(f"its GET answered {_media(resp) or 'no content type'}, not an event stream")
                events = SseEvents()

                async def on_line(line: str) -> bool:
                    nonlocal started
                    event = events.feed(line)
                    if event is None:
                        return False
                    if event[0] == "endpoint" and not started:
                        self._endpoint = self._same_origin(event[1])
                        started = True
                        task_status.started()
                    elif event[0] == "message":
                        self._take(event[1].encode("utf-8"))
                    return False

                await body_lines(resp, on_line)
        except (_httpx().TransportError, StreamError, WireError) as exc:
            if started:
                self.end(f"its event stream broke: {_reason(exc)}")
                return
            if isinstance(exc, _httpx().TransportError):
                raise self._dropped(exc) from None
            if isinstance(exc, StreamError):
                raise WireError(str(exc)) from None
            raise
        if not started:
            raise WireError("its event stream ended before it named where to send messages")
        self.end("the server closed its event stream")

    def _same_origin(self, endpoint: str) -> str:
        url = urljoin(self._url, endpoint.strip())
        mine, theirs = urlsplit(self._url), urlsplit(url)
        if (mine.scheme, mine.netloc) != (theirs.scheme, theirs.netloc):
            raise WireError("it named another server to send messages to; the daemon sends this server's headers "
                            "only to the address in mcp.json")
        return url

    async def _post_sse(self, data: bytes) -> None:
        """POST one message to the older transport's endpoint; the answer comes over the stream."""
        if self._endpoint is None:
            raise ProgramEnded(self.why or "it is not connected")
        try:
            async with self._http.stream("POST", self._endpoint, content=data,
                                         headers=self._request_headers(None, body=True)) as resp:
                if resp.status_code >= 300:
                    raise await self._refused(resp)
        except _httpx().TransportError as exc:
            raise self._dropped(exc) from None

    async def _listen(self) -> None:
        try:
            async with self._http.stream("GET", self._url, headers=self._request_headers(EVENT_STREAM)) as resp:
                if resp.status_code >= 300 or _media(resp) != EVENT_STREAM:
                    return  # a server without one (405) speaks only in its answers
                await self._read_events(resp)
        except (_httpx().TransportError, StreamError) as exc:
            self.end(f"the connection dropped: {_reason(exc)}")
        except ProgramEnded:
            pass

    async def _delete_session(self, client: httpx.AsyncClient) -> None:
        if self.transport != STREAMABLE or not self._session:
            return
        try:
            await client.delete(self._url, headers=self._request_headers(None))
        except _httpx().HTTPError as exc:
            log.debug("ending the session at %s failed: %s", self.redact(self._url), self.redact(_reason(exc)))
