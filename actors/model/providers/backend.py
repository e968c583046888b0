"""The engine's Backend for one saved provider and model: `ProviderBackend`.

It POSTs the round to `<base_url>/chat/completions` with `stream: true` and the tools
as OpenAI tools, and turns the Server-Sent Events it gets back into pieces
(actors/model/chatstream.py). A turn's `think`, when it says on or off, goes as
`chat_template_kwargs: {enable_thinking}`, the switch llama.cpp's server and vLLM
hand to the model's chat template; `stream_options: {include_usage}` asks for the
answer's token counts at the end of the stream (OpenAI sends none in a stream
otherwise), which the usage ledger counts. Strict APIs (OpenAI's own) refuse a field
they do not know with a 400, so a refused request is sent once more without it (the
one the refusal names, else the thinking switch), and a provider that then accepts
is not sent it again while the daemon runs (`Learned`, which the directory keeps per
provider).

The key leaves this process only in the `Authorization` header of a request to its
own provider: never in an error, a log line or a `repr`.
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import threading
from typing import Any

import attrs
import httpx
import trio

from actors.errors import ContextFull, TurnFailed
from actors.model.chatstream import MAX_EVENT_BYTES, ChatStream, StreamError, error_text
from actors.model.http_read import body_lines, read_body, read_head
from actors.model.turns import Aborted, Emit, TurnInput, TurnResult, for_provider

log = logging.getLogger("bmoe.providers")

CONNECT_TIMEOUT_S = 15.0
# Between two reads of the stream: a local server may prefill a long prompt first.
READ_TIMEOUT_S = 300.0
WRITE_TIMEOUT_S = 60.0
MAX_ERROR_BODY_BYTES = 64 * 1024

# The field that carries the thinking switch, and the statuses a provider refuses an
# unknown field with (OpenAI: 400; servers that validate with pydantic: 422).
TEMPLATE_KWARGS = "chat_template_kwargs"
STREAM_OPTIONS = "stream_options"
OPTIONAL_FIELDS = (TEMPLATE_KWARGS, STREAM_OPTIONS)  # a provider that refuses one is sent the turn without it
REFUSED_FIELD_STATUSES = frozenset({400, 422})

_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
_CONTEXT_WORDS = re.compile(r"context (length|window|size)|maximum context|too many tokens|exceed\w* context", re.I)


# The certificates every turn's client verifies a provider with, loaded once per process
# (about 40 ms of CPU: an httpx client made without one loads them again, on the trio thread).
_TLS: list[ssl.SSLContext] = []
_TLS_LOCK = threading.Lock()


def _load_tls() -> ssl.SSLContext:
    with _TLS_LOCK:
        if not _TLS:
            # As httpx builds its own: certifi's, or SSL_CERT_FILE / SSL_CERT_DIR when set.
            _TLS.append(httpx.create_ssl_context())
        return _TLS[0]


async def tls_context() -> ssl.SSLContext:
    """The shared TLS context, loaded in a worker thread the first time, so no turn
    stalls the event loop reading the certificate store."""
    return _TLS[0] if _TLS else await trio.to_thread.run_sync(_load_tls)


@attrs.define
class Learned:
    """What a provider turned out to refuse, kept for it while the daemon runs."""

    refused: set[str] = attrs.field(factory=set)  # of OPTIONAL_FIELDS


class ProviderBackend:
    """The Backend for one provider and model; see the module docstring.

    Each turn opens its own HTTP client, so nothing outlives a round but the TLS
    context they share (`tls_context`). A stop closes
    the stream: the turn's `abort` flag at the next line read, the task's
    cancellation at once.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        label: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        read_timeout: float = READ_TIMEOUT_S,
        learned: Learned | None = None,
    ) -> None:
        """`learned` is shared by every backend of one provider (ProviderDirectory
        keeps it), so what one turn found out holds for the next."""
        self.model_id = model
        self.n_ctx = 0  # not known for a remote service
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._base_url = base_url.rstrip("/")
        self._key = api_key or None
        self._label = label or self._base_url
        self._learned = learned if learned is not None else Learned()
        self._timeout = httpx.Timeout(
            read_timeout, connect=connect_timeout, write=WRITE_TIMEOUT_S, pool=connect_timeout
        )

    def __repr__(self) -> str:  # no key in a traceback's locals or a log line
        return f"ProviderBackend({self._base_url!r}, model={self.model_id!r}, key={'set' if self._key else 'none'})"

    def payload(self, turn: TurnInput) -> dict[str, Any]:
        """The request body: the messages as given, the tools as OpenAI tools, the
        thinking switch when the turn sets it and the provider has not refused it."""
        body: dict[str, Any] = {"model": self.model_id, "messages": for_provider(turn.messages), "stream": True}
        if STREAM_OPTIONS not in self._learned.refused:
            body[STREAM_OPTIONS] = {"include_usage": True}
        if turn.tools:
            body["tools"] = [t.to_openai() for t in turn.tools]
            if turn.tool_choice in ("none", "required"):
                body["tool_choice"] = turn.tool_choice
            if not turn.parallel_calls:
                body["parallel_tool_calls"] = False
        if turn.max_tokens is not None:
            body["max_tokens"] = turn.max_tokens
        if turn.temperature is not None:
            body["temperature"] = turn.temperature
        if turn.answer_schema is not None:
            body["response_format"] = {
                "type": "json_schema", "json_schema": {"name": "answer", "schema": turn.answer_schema, "strict": True},
            }
        if turn.think is not None and TEMPLATE_KWARGS not in self._learned.refused:
            body[TEMPLATE_KWARGS] = {"enable_thinking": turn.think}
        return body

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        """Stream one answer. Raises Aborted on a stop, ContextFull when the provider
        says the request is too long, TurnFailed (plain words, never the key) otherwise.
        Cancelled: the stream is closed and the cancellation goes on."""
        headers = {"Accept": "text/event-stream"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        stream = ChatStream()
        ctype = ""
        try:
            verify = await tls_context()
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False, verify=verify) as client:
                resp = await self._accepted(client, turn, headers)
                try:
                    ctype = resp.headers.get("content-type", "").lower()
                    if ctype.startswith("application/json"):
                        # A server that ignored `stream` and answered whole.
                        body = await read_body(resp, MAX_EVENT_BYTES)
                        for piece in stream.feed_completion(_json(body)):
                            await emit(piece)
                        return stream.result()

                    async def on_line(line: str) -> bool:
                        if abort.is_set():
                            raise Aborted()
                        for piece in stream.feed_line(line):
                            await emit(piece)
                        return stream.done

                    if not await body_lines(resp, on_line):
                        for piece in stream.finish():
                            await emit(piece)
                finally:
                    await resp.aclose()
        except (Aborted, TurnFailed, ContextFull):
            raise
        except StreamError as exc:
            raise self._failed(f"The answer of {self._label} could not be read: {exc}.",
                               "Check that the address is an OpenAI-compatible API (often ending in /v1).") from None
        except httpx.TimeoutException as exc:
            what = (f"Connecting to {self._label} took too long" if isinstance(exc, httpx.ConnectTimeout)
                    else f"{self._label} did not answer in time")
            raise self._failed(what,
                               "Check that the service is up, or try again later.") from None
        except httpx.ConnectError as exc:
            raise self._failed(f"Could not connect to {self._label} ({_reason(exc)}).",
                               "Check that the service is running and its address is right.") from None
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            if not stream.complete:
                raise self._failed(
                    f"The stream from {self._label} was cut short before the answer ended ({_reason(exc)})",
                    "If it keeps happening, check the service's own log",
                ) from None
        except httpx.HTTPError as exc:
            raise self._failed(f"The request to {self._label} failed ({_reason(exc)}).",
                               "Check the provider's address, then send the message again.") from None
        if not stream.complete:
            if stream.chunks == 0 and not ctype.startswith("text/event-stream"):
                raise self._failed(
                    f"{self._label} answered with {ctype or 'no content type'}, not a stream of chat chunks",
                    "Check that the address is an OpenAI-compatible API (often ending in /v1)",
                )
            raise self._failed(f"The stream from {self._label} ended before the answer was complete",
                               "If it keeps happening, check the service's own log")
        return stream.result()

    async def _accepted(self, client: httpx.AsyncClient, turn: TurnInput, headers: dict[str, str]) -> httpx.Response:
        """The streaming response once the provider accepted the turn's request (the
        caller closes it); raises the refusal (TurnFailed, ContextFull) otherwise. A
        refused request that carried an optional field (OPTIONAL_FIELDS) is sent once
        more without the one the refusal names (without the thinking switch when it
        names none); if that one is accepted, the field was the trouble and this
        provider is not sent it again."""
        body = self.payload(turn)
        resp = await self._post(client, body, headers)
        while resp.status_code in REFUSED_FIELD_STATUSES and any(f in body for f in OPTIONAL_FIELDS):
            first = await self._refusal(resp)
            if isinstance(first, ContextFull):
                raise first
            sent = [f for f in OPTIONAL_FIELDS if f in body]
            # The field the refusal names; else the thinking switch, which a server may
            # refuse without naming it (stream_options is dropped only when named).
            dropped = [f for f in sent if f in str(first)] or [f for f in sent if f == TEMPLATE_KWARGS]
            if not dropped:
                raise first
            for field in dropped:
                del body[field]
            resp = await self._post(client, body, headers)
            if resp.status_code < 300:
                self._learned.refused.update(dropped)
                log.info("%s refused %s; it is not sent to it again", self._label, ", ".join(dropped))
        if resp.status_code >= 300:
            raise await self._refusal(resp)
        return resp

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        request = client.build_request("POST", self._url, json=body, headers=headers)
        return await client.send(request, stream=True)

    async def _refusal(self, resp: httpx.Response) -> Exception:
        """What a refused request's status and body say, in plain words; closes `resp`."""
        try:
            body = await read_head(resp, MAX_ERROR_BODY_BYTES)
        finally:
            await resp.aclose()
        status = resp.status_code
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        said = error_text(obj)
        heard = f"{self._label} answered {status} {resp.reason_phrase}".rstrip()
        heard += f": {said.rstrip('.')}" if said else ""
        if status == 400 and _is_context_full(obj, said):
            return ContextFull(self._redact(heard))
        if status in (401, 403):
            advice = "Check the key saved with this provider (save the provider again with the right key)."
        elif status == 404:
            advice = "Check the provider's address (usually ending in /v1) and the model's name."
        elif status in (408, 429):
            advice = "The provider is busy or limiting requests; wait a moment and send the message again."
        elif 300 <= status < 400:
            advice = "Save the provider with the address it redirects to."
        elif status >= 500:
            advice = "The provider failed on its side; try again later or pick another model."
        else:
            advice = "Check the provider's settings and the model's name."
        return self._failed(heard, advice)

    def _failed(self, what: str, todo: str) -> TurnFailed:
        # No closing full stop: the run appends its own sentence after the text.
        return TurnFailed(self._redact(f"{what.rstrip('.')}. {todo.rstrip('.')}"))

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[key]") if self._key else text

    async def aclose(self) -> None:
        return None


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        raise StreamError("the answer is not JSON") from None


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text[:200] if text else type(exc).__name__


def _is_context_full(obj: object, said: str | None) -> bool:
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict) and (err.get("code") in _CONTEXT_CODES or err.get("type") in _CONTEXT_CODES):
        return True
    return bool(said and _CONTEXT_WORDS.search(said))
