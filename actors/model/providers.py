"""Saved providers: OpenAI-compatible chat services a conversation may use.

`ProviderBackend` is the engine's Backend for one provider and model: it POSTs the
round to `<base_url>/chat/completions` with `stream: true` and the tools as OpenAI
tools, and turns the Server-Sent Events it gets back into pieces (actors/model/chatstream.py).
A turn's `think`, when it says on or off, goes as `chat_template_kwargs:
{enable_thinking}`, the switch llama.cpp's server and vLLM hand to the model's chat
template. Strict APIs (OpenAI's own) refuse a field they do not know with a 400, so a
refused request is sent once more without it, and a provider that then accepts is
not sent it again while the daemon runs.

`ProviderDirectory` holds the saved providers, `{id, name, base_url, models}`, in
`<data>/agent/providers.json` (a model is its name, or `{id, context_length}` when its
context is not DEFAULT_CONTEXT_LENGTH tokens: compaction reads it), and their keys in
`<data>/credentials.json` (a JSON object id -> key). The credentials file is readable by this user only before any key
is in it: it is created 0600 (O_EXCL), an older one has its mode fixed first, and each
write goes through a temporary file that `mkstemp` creates 0600 in the same folder
before it is renamed over. A key is never returned by a listing (`has_key` only), and
never goes into an error, a log line or a command line: it leaves this process only
in the `Authorization` header of a request to its own provider.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
import trio

from actors.errors import ContextFull, Invalid, NotFound, TurnFailed
from actors.fs.atomic import write_all, write_atomic
from actors.fs.paths import open_regular, read_fd
from actors.model.chatstream import MAX_EVENT_BYTES, ChatStream, StreamError, error_text
from actors.model.http_read import body_lines, read_body, read_until
from actors.model.turns import Aborted, Emit, TurnInput, TurnResult

log = logging.getLogger("bmoe.providers")

CONNECT_TIMEOUT_S = 15.0
# Between two reads of the stream: a local server may prefill a long prompt first.
READ_TIMEOUT_S = 300.0
WRITE_TIMEOUT_S = 60.0
MAX_ERROR_BODY_BYTES = 64 * 1024
MAX_SETTINGS_BYTES = 4 * 1024 * 1024  # providers.json and credentials.json: larger is refused
MAX_NAME_CHARS = 100
MAX_URL_CHARS = 2048
MAX_MODELS = 500
MAX_MODEL_CHARS = 256
# A model's context, in tokens, when its entry does not give one (most chat models take this much).
DEFAULT_CONTEXT_LENGTH = 128_000
MIN_CONTEXT_LENGTH = 256
MAX_CONTEXT_LENGTH = 16_777_216
MAX_KEY_CHARS = 8192
MAX_ID_CHARS = 40
CREDENTIALS_MODE = 0o600

# The field that carries the thinking switch, and the statuses a provider refuses an
# unknown field with (OpenAI: 400; servers that validate with pydantic: 422).
TEMPLATE_KWARGS = "chat_template_kwargs"
REFUSED_FIELD_STATUSES = frozenset({400, 422})

_CONTEXT_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"})
_CONTEXT_WORDS = re.compile(r"context (length|window|size)|maximum context|too many tokens|exceed\w* context", re.I)


# ---- the backend ----


@attrs.define
class Learned:
    """What a provider turned out to refuse, kept for it while the daemon runs."""

    refuses_template_kwargs: bool = False


class ProviderBackend:
    """The Backend for one provider and model; see the module docstring.

    Each turn opens its own HTTP client, so nothing outlives a round. A stop closes
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
        body: dict[str, Any] = {"model": self.model_id, "messages": list(turn.messages), "stream": True}
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
        if turn.think is not None and not self._learned.refuses_template_kwargs:
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
            async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
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
        refused request that carried the thinking switch is sent once more without
        it; if that one is accepted, the switch was the trouble and this provider is
        not sent it again."""
        body = self.payload(turn)
        resp = await self._post(client, body, headers)
        if resp.status_code in REFUSED_FIELD_STATUSES and TEMPLATE_KWARGS in body:
            first = await self._refusal(resp)
            if isinstance(first, ContextFull):
                raise first
            del body[TEMPLATE_KWARGS]
            resp = await self._post(client, body, headers)
            if resp.status_code < 300:
                self._learned.refuses_template_kwargs = True
                log.info("%s refused %s; it is not sent to it again", self._label, TEMPLATE_KWARGS)
        if resp.status_code >= 300:
            raise await self._refusal(resp)
        return resp

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
        request = client.build_request("POST", self._url, json=body, headers=headers)
        return await client.send(request, stream=True)

    async def _refusal(self, resp: httpx.Response) -> Exception:
        """What a refused request's status and body say, in plain words; closes `resp`."""
        body = b""

        async def on_bytes(chunk: bytes) -> bool:
            nonlocal body
            body += chunk
            return len(body) >= MAX_ERROR_BODY_BYTES

        try:
            await read_until(resp.aiter_bytes(), on_bytes)
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


def _read_settings(path: Path, *, follow: bool, mode: int | None = None) -> bytes:
    """A settings file's bytes: a regular file (a FIFO or a device is refused, never
    waited on or read for ever) of at most MAX_SETTINGS_BYTES; `mode` is set on it
    first. Raises FileNotFoundError, OSError, or ValueError when it is too large."""
    fd = open_regular(path, follow=follow)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        raw = read_fd(fd, MAX_SETTINGS_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ValueError(f"larger than {MAX_SETTINGS_BYTES} bytes")
    return raw


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


# ---- validation ----


def check_base_url(raw: str) -> str:
    """The provider's address, normalised (no trailing `/`); Invalid with a plain
    reason otherwise. `https` anywhere; `http` only for this machine or the local
    network (loopback, private or link-local addresses, `localhost`, `.local` names)."""
    url = raw.strip()
    if not url:
        raise Invalid("base_url is empty: give the provider's address, like https://api.example.com/v1.")
    if len(url) > MAX_URL_CHARS:
        raise Invalid(f"base_url is longer than {MAX_URL_CHARS} characters.")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise Invalid("base_url may not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise Invalid("base_url is not a valid address.") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Invalid("base_url must start with https:// (or http:// for a service on this machine or network).")
    if not host:
        raise Invalid("base_url has no host name.")
    if parts.username is not None or parts.password is not None:
        raise Invalid("base_url may not carry a user name or password; give the key as api_key instead.")
    if parts.query or parts.fragment:
        raise Invalid("base_url may not have a query (?...) or fragment (#...); give the address that "
                      "/chat/completions is added to.")
    if scheme == "http" and not _is_nearby(host):
        raise Invalid(f"http:// is accepted only for a service on this machine or the local network; "
                      f"{host} is neither, so use https://.")
    return url.rstrip("/")


def _is_nearby(host: str) -> bool:
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost") or name.endswith(".local"):
        return True
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_private or ip.is_link_local


def _clean(value: str, what: str, cap: int) -> str:
    text = value.strip()
    if not text:
        raise Invalid(f"{what} is empty.")
    if len(text) > cap:
        raise Invalid(f"{what} is longer than {cap} characters.")
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        raise Invalid(f"{what} may not contain control characters.")
    return text


def check_models(models: list[Any]) -> tuple[ProviderModel, ...]:
    """The models as saved: each entry a name, or `{"id": name, "context_length": n}`
    for a model whose context is not DEFAULT_CONTEXT_LENGTH. Invalid, in plain words,
    for anything else; a name given twice is kept once (its first entry)."""
    if len(models) > MAX_MODELS:
        raise Invalid(f"A provider lists at most {MAX_MODELS} models.")
    out: dict[str, ProviderModel] = {}
    for entry in models:
        model = _check_model(entry)
        out.setdefault(model.id, model)
    return tuple(out.values())


def _check_model(entry: object) -> ProviderModel:
    if isinstance(entry, str):
        return ProviderModel(_clean(entry, "A model's name", MAX_MODEL_CHARS))
    shape = 'A model is its name, or {"id": "name", "context_length": tokens}'
    if not isinstance(entry, dict):
        raise Invalid(f"{shape}; got {type(entry).__name__}.")
    extra = sorted(set(entry) - {"id", "context_length"})
    if extra:
        raise Invalid(f"{shape}; {', '.join(map(str, extra))} is not a model's field.")
    name = entry.get("id")
    if not isinstance(name, str):
        raise Invalid(f"{shape}: its id must be the model's name as a string.")
    length = entry.get("context_length")
    if length is not None:
        if not isinstance(length, int) or isinstance(length, bool):
            raise Invalid(f"The context_length of {name[:MAX_MODEL_CHARS]!r} must be a whole number of tokens.")
        if not MIN_CONTEXT_LENGTH <= length <= MAX_CONTEXT_LENGTH:
            raise Invalid(f"The context_length of {name[:MAX_MODEL_CHARS]!r} must be between {MIN_CONTEXT_LENGTH} "
                          f"and {MAX_CONTEXT_LENGTH} tokens (the model's card says how many it takes); "
                          f"leave it out for {DEFAULT_CONTEXT_LENGTH}.")
    return ProviderModel(_clean(name, "A model's name", MAX_MODEL_CHARS), length)


def check_key(key: str) -> str:
    """The key, stripped; Invalid (never quoting it) when a header cannot carry it."""
    text = key.strip()
    if len(text) > MAX_KEY_CHARS:
        raise Invalid(f"api_key is longer than {MAX_KEY_CHARS} characters.")
    if any(ord(ch) < 33 or ord(ch) > 126 for ch in text):
        raise Invalid("api_key may hold only printable ASCII characters without spaces.")
    return text


def slug(name: str) -> str:
    """The id part made from a name: lowercase ASCII words joined by `-`."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    out = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return out[:MAX_ID_CHARS].rstrip("-") or "provider"


# ---- the directory ----


@attrs.frozen
class ProviderModel:
    """One model a provider offers; `context_length` None means DEFAULT_CONTEXT_LENGTH."""

    id: str
    context_length: int | None = None

    def to_json(self) -> str | dict[str, Any]:
        """As it was given: the bare name, or the object when it carries a context length."""
        return self.id if self.context_length is None else {"id": self.id, "context_length": self.context_length}


@attrs.frozen
class Provider:
    id: str
    name: str
    base_url: str
    models: tuple[ProviderModel, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "base_url": self.base_url,
                "models": [m.to_json() for m in self.models]}

    def context_length(self, model: str) -> int:
        """The context of `model` in tokens (DEFAULT_CONTEXT_LENGTH for one not listed or not given)."""
        found = next((m for m in self.models if m.id == model), None)
        return found.context_length if found is not None and found.context_length else DEFAULT_CONTEXT_LENGTH


def ensure_private_file(path: Path) -> None:
    """Make sure `path` exists readable and writable by this user only: created 0600
    with O_EXCL (holding `{}`), or an existing file's mode fixed to 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), CREDENTIALS_MODE)
    except FileExistsError:
        os.chmod(path, CREDENTIALS_MODE)
        return
    try:
        os.fchmod(fd, CREDENTIALS_MODE)  # the umask could only have narrowed it; be exact
        write_all(fd, b"{}")
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` whole to `path` (0600): the file exists 0600 first, then the data
    goes into a temporary file made 0600 before its first byte, fsynced and renamed
    over it."""
    ensure_private_file(path)
    write_atomic(path, data, mode=CREDENTIALS_MODE)


class ProviderDirectory:
    """See the module docstring. Reads its files when made; every change is written
    whole before it shows in the listing: the providers through `write_file` (the
    daemon gives actors/fs/atomic.py's `write_atomic`), the keys through `write_private`.
    What a provider turned out to refuse (`Learned`) is kept in memory only, and
    forgotten when the provider is saved again or removed."""

    def __init__(self, data_dir: Path, *, write_file: Callable[[Path, bytes], None]) -> None:
        self._write_file = write_file
        self.providers_path = data_dir / "agent" / "providers.json"
        self.credentials_path = data_dir / "credentials.json"
        self._providers: dict[str, Provider] = {}
        self._keys: dict[str, str] = {}
        self._learned: dict[str, Learned] = {}  # by provider id; forgotten when it changes
        self._lock = trio.Lock()
        self._load()

    def _load(self) -> None:
        try:
            rows = json.loads(_read_settings(self.providers_path, follow=True))
        except FileNotFoundError:
            rows = []
        except (OSError, ValueError, RecursionError) as exc:
            log.warning("cannot read %s (%s); no provider is loaded from it", self.providers_path, type(exc).__name__)
            rows = []
        for row in rows if isinstance(rows, list) else []:
            try:
                p = Provider(str(row["id"]), str(row["name"]), str(row["base_url"]),
                             check_models(list(row.get("models") or ())))
            except (KeyError, TypeError, AttributeError, Invalid):
                continue
            if p.id and "/" not in p.id:
                self._providers[p.id] = p
        try:
            # Not through a link: its mode is fixed on the file itself, never on another one.
            keys = json.loads(_read_settings(self.credentials_path, follow=False, mode=CREDENTIALS_MODE))
        except FileNotFoundError:
            keys = {}
        except (OSError, ValueError, RecursionError) as exc:
            # Never log the contents: only which file and what kind of failure.
            log.warning("cannot read %s (%s); saved keys are not loaded", self.credentials_path, type(exc).__name__)
            keys = {}
        if isinstance(keys, dict):
            self._keys = {str(k): v for k, v in keys.items() if isinstance(v, str) and v}

    # ---- reading ----

    def listing(self) -> list[dict[str, Any]]:
        """Every saved provider, `{id, name, base_url, models, has_key}`; no key."""
        return [self._public(p) for p in self._providers.values()]

    def get(self, provider_id: str) -> dict[str, Any]:
        return self._public(self._provider(provider_id))

    def has_key(self, provider_id: str) -> bool:
        return bool(self._keys.get(provider_id))

    def knows(self, route: str) -> bool:
        """Whether a `<provider>/<model>` route names a saved provider."""
        provider_id, _, model = route.partition("/")
        return bool(model) and provider_id in self._providers

    def backend(self, route: str) -> ProviderBackend:
        """The backend for `<provider-id>/<model>` (split at the first `/`, so the
        model may hold more); NotFound when that provider is not saved."""
        provider_id, _, model = route.partition("/")
        provider = self._providers.get(provider_id)
        if provider is None or not model:
            raise NotFound(f"There is no saved provider {provider_id!r}.")
        return ProviderBackend(
            base_url=provider.base_url, model=model, api_key=self._keys.get(provider_id), label=provider.name,
            learned=self._learned.setdefault(provider_id, Learned()),
        )

    def context_length(self, route: str) -> int:
        """The context, in tokens, of the model a `<provider-id>/<model>` route names:
        its saved `context_length`, else DEFAULT_CONTEXT_LENGTH (a provider not saved too)."""
        provider_id, _, model = route.partition("/")
        provider = self._providers.get(provider_id)
        return provider.context_length(model) if provider is not None else DEFAULT_CONTEXT_LENGTH

    def _provider(self, provider_id: str) -> Provider:
        provider = self._providers.get(provider_id)
        if provider is None:
            raise NotFound("There is no such provider.")
        return provider

    def _public(self, p: Provider) -> dict[str, Any]:
        return {**p.to_json(), "has_key": self.has_key(p.id)}

    # ---- changing ----

    async def add(self, name: str, base_url: str, models: list[Any], api_key: str | None = None) -> dict[str, Any]:
        """Save a new provider; its id is made from the name (`-2`, `-3` when taken)."""
        clean_name = _clean(name, "name", MAX_NAME_CHARS)
        url = check_base_url(base_url)
        checked = check_models(models)
        key = check_key(api_key) if api_key else ""
        async with self._lock:
            base = slug(clean_name)
            pid, n = base, 1
            while pid in self._providers:
                n += 1
                pid = f"{base}-{n}"
            provider = Provider(pid, clean_name, url, checked)
            providers = {**self._providers, pid: provider}
            # The provider first, its key second: a crash between leaves no stray key.
            await self._save_providers(providers)
            self._providers = providers
            await self._set_key(pid, key)
        return self._public(provider)

    async def update(
        self, provider_id: str, name: str, base_url: str, models: list[Any], api_key: str | None = None
    ) -> dict[str, Any]:
        """Change a provider (its id stays). `api_key` None keeps the key, "" removes it."""
        self._provider(provider_id)
        clean_name = _clean(name, "name", MAX_NAME_CHARS)
        url = check_base_url(base_url)
        checked = check_models(models)
        key = None if api_key is None else (check_key(api_key) if api_key else "")
        async with self._lock:
            self._provider(provider_id)
            provider = Provider(provider_id, clean_name, url, checked)
            providers = {**self._providers, provider_id: provider}
            await self._save_providers(providers)
            self._providers = providers
            self._learned.pop(provider_id, None)  # its address may have changed
            if key is not None:
                await self._set_key(provider_id, key)
        return self._public(provider)

    async def remove(self, provider_id: str) -> None:
        """Forget a provider and its key (the key first: a crash between leaves a
        provider without a key, never a key without its provider)."""
        async with self._lock:
            self._provider(provider_id)
            await self._set_key(provider_id, "")
            providers = {k: v for k, v in self._providers.items() if k != provider_id}
            await self._save_providers(providers)
            self._providers = providers
            self._learned.pop(provider_id, None)

    async def _save_providers(self, providers: dict[str, Provider]) -> None:
        data = json.dumps([p.to_json() for p in providers.values()], ensure_ascii=False, indent=1).encode("utf-8")
        await trio.to_thread.run_sync(self._write_file, self.providers_path, data)

    async def _set_key(self, provider_id: str, key: str) -> None:
        if (self._keys.get(provider_id) or "") == key:
            return
        keys = dict(self._keys)
        if key:
            keys[provider_id] = key
        else:
            keys.pop(provider_id, None)
        data = json.dumps(keys, ensure_ascii=False).encode("utf-8")
        await trio.to_thread.run_sync(write_private, self.credentials_path, data)
        self._keys = keys
