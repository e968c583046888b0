"""Asking a provider for its models before it is saved: `probe_models`.

One `GET <base_url>/models` with the key (when there is one) in the `Authorization`
header, redirects not followed (the key goes to the address given and nowhere else),
bounded in time (PROBE_TIMEOUT_S for the whole exchange) and in size (MAX_PROBE_BYTES of
body). The answer is `Probe`: the model ids the service lists, or what failed in words
a person reads (`failure` one of FAILURES). The key is never in a `Probe`, a log line
or an exception's text.
"""

from __future__ import annotations

import json
import logging
from types import ModuleType
from typing import TYPE_CHECKING as _TYPE_CHECKING

import attrs
import trio

from actors.model.chatstream import StreamError
from actors.model.http_read import read_body

if _TYPE_CHECKING:
    pass


def _httpx() -> ModuleType:
    """httpx, imported with its first use: the daemon's start does not pay for it."""
    import httpx

    return httpx


log = logging.getLogger("bmoe.providers")

PROBE_TIMEOUT_S = 10.0
MAX_PROBE_BYTES = 2 * 1024 * 1024
MAX_PROBE_MODELS = 1000
MAX_MODEL_ID_CHARS = 200
FAILURES = ("unreachable", "timeout", "key_refused", "not_found", "not_openai", "too_large", "refused")


@attrs.frozen
class Probe:
    ok: bool
    models: tuple[str, ...] = ()
    failure: str | None = None  # one of FAILURES when not ok
    message: str = ""
    status: int | None = None  # the HTTP status the service answered, when it answered

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "models": list(self.models), "failure": self.failure, "message": self.message,
                "status": self.status}


def _failed(failure: str, message: str, status: int | None = None) -> Probe:
    return Probe(ok=False, failure=failure, message=message, status=status)


def model_ids(data: object) -> list[str] | None:
    """The model ids of an OpenAI-style list (`{"data": [{"id": ...}]}`), sorted and
    without repeats; None when `data` is not one."""
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    ids = {r["id"] for r in rows if isinstance(r, dict) and isinstance(r.get("id"), str)
           and 0 < len(r["id"]) <= MAX_MODEL_ID_CHARS and r["id"].isprintable()}
    if rows and not ids:
        return None
    return sorted(ids)


async def probe_models(base_url: str, api_key: str | None) -> Probe:
    """GET `<base_url>/models` (base_url already checked, as check_base_url gives it)."""
    url = base_url.rstrip("/") + "/models"
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    status: int | None = None
    body = b""
    with trio.move_on_after(PROBE_TIMEOUT_S) as timer:
        try:
            async with _httpx().AsyncClient(timeout=PROBE_TIMEOUT_S, follow_redirects=False) as client, \
                    client.stream("GET", url, headers=headers) as resp:
                status = resp.status_code
                if status in (401, 403):
                    return _failed("key_refused", "The service refused the key: check it, or give one if the "
                                   "service needs it." if api_key else
                                   "The service needs a key: give its API key and test again.", status)
                if status == 404:
                    return _failed("not_found", f"Nothing answers at {url}: check the address; OpenAI-compatible "
                                   "services usually end it with /v1.", status)
                if 300 <= status < 400:
                    return _failed("not_openai", f"The address redirects elsewhere ({status}); give the address "
                                   "it leads to.", status)
                if status != 200:
                    return _failed("refused", f"The service answered {status} to GET /models; it may be down or "
                                   "not OpenAI-compatible.", status)
                body = await read_body(resp, MAX_PROBE_BYTES)
        except StreamError:
            return _failed("too_large", f"The model list is larger than {MAX_PROBE_BYTES // (1024 * 1024)} MiB; "
                           "type the model names instead.", status)
        except _httpx().TimeoutException:
            return _failed("timeout", f"The service did not answer within {PROBE_TIMEOUT_S:.0f} seconds.", status)
        except (_httpx().HTTPError, OSError) as exc:
            log.info("probing %s: %s", url, type(exc).__name__)  # the type only: never the request's headers
            return _failed("unreachable", "Nothing could be reached at that address: check the host and port, "
                           "and that the service is running.")
    if timer.cancelled_caught:
        return _failed("timeout", f"The service did not answer within {PROBE_TIMEOUT_S:.0f} seconds.", status)
    try:
        ids = model_ids(json.loads(body))
    except (ValueError, RecursionError):
        ids = None
    if ids is None:
        return _failed("not_openai", "The service answered, but not with an OpenAI-compatible model list "
                       "(a JSON object with a `data` list of models).", status)
    shown = tuple(ids[:MAX_PROBE_MODELS])
    words = f"The key works; the service lists {len(ids)} model{'s' if len(ids) != 1 else ''}." if api_key \
        else f"The service answered; it lists {len(ids)} model{'s' if len(ids) != 1 else ''}."
    return Probe(ok=True, models=shown, message=words, status=status)
