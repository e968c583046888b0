"""The provider routes: saved OpenAI-compatible services, for a client on this computer only.

A provider's key is taken in a body and never given back: every answer carries
`has_key` instead (actors/model/providers/directory.py keeps it in `<data>/credentials.json`).
`POST /api/providers/probe` asks an address for its models with a key typed or saved,
to test both before saving (actors/model/providers/probe.py).
"""

from __future__ import annotations

from typing import Any

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.model.providers.directory import ProviderDirectory
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import ApiError

bp = Blueprint("providers", __name__)


@attrs.frozen(repr=False)
class ProviderBody:
    """`POST /api/providers` and `PUT /api/providers/<id>`: `api_key` absent (or
    null) keeps the key, `""` removes it. A model is its name or `{id, context_length}`
    (actors/providers.check_models says what is refused, a 400). `prices` (US dollars per
    million tokens, `{input, output, cached}`; entries.check_prices) price its answers in
    GET /api/usage; absent or null: none, and its answers have no cost."""

    name: str
    base_url: str
    models: list[Any]
    api_key: str | None = None
    prices: dict[str, Any] | None = None

    def __repr__(self) -> str:  # the key stays out of any log or traceback
        return f"ProviderBody(name={self.name!r}, base_url={self.base_url!r}, models={self.models!r})"


@attrs.frozen(repr=False)
class ProbeBody:
    """`POST /api/providers/probe`: the address to ask for `/models`, with `api_key`, or
    else the saved key of `provider_id` (sent only to that provider's own host)."""

    base_url: str
    api_key: str | None = None
    provider_id: str | None = None

    def __repr__(self) -> str:  # the key stays out of any log or traceback
        return f"ProbeBody(base_url={self.base_url!r}, provider_id={self.provider_id!r})"


def _directory() -> ProviderDirectory:
    providers = daemon().providers
    if providers is None:
        raise ApiError("Providers are not available in this daemon.")
    return providers


async def _body() -> ProviderBody:
    return structure(parse_json(await request.get_data()), ProviderBody)


@bp.get("/api/providers")
async def get_providers() -> Response:
    return jsonify(_directory().listing())


@bp.post("/api/providers")
async def post_providers() -> tuple[Response, int]:
    providers = _directory()
    body = await _body()
    saved = await providers.add(body.name, body.base_url, body.models, body.api_key, body.prices)
    return jsonify(saved), 201


@bp.post("/api/providers/probe")
async def probe_provider() -> Response:
    """GET `<base_url>/models` with the key: 200 with `{ok, models, failure, message,
    status}` whether or not the service answered well; 400/404 for a bad request."""
    providers = _directory()
    body = structure(parse_json(await request.get_data()), ProbeBody)
    probe = await providers.probe(body.base_url, body.api_key, body.provider_id)
    return jsonify(probe.to_json())


@bp.put("/api/providers/<provider_id>")
async def put_provider(provider_id: str) -> Response:
    providers = _directory()
    providers.get(provider_id)  # an unknown id is 404 before the body is read
    body = await _body()
    saved = await providers.update(provider_id, body.name, body.base_url, body.models, body.api_key, body.prices)
    return jsonify(saved)


@bp.delete("/api/providers/<provider_id>")
async def delete_provider(provider_id: str) -> Response:
    providers = _directory()
    await providers.remove(provider_id)
    return jsonify({"deleted": provider_id})
