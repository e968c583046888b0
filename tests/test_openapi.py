"""GET /openapi.json: every route the app registers is described, the document is valid
OpenAPI 3.1, and its bodies are the attrs classes the routes structure.

The app runs in-process (Quart's test client); tests/test_schemathesis.py checks the
real daemon against the same document.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import attrs
import pytest
from openapi_spec_validator import validate

from actors.record.modes import MODES
from bmoe_daemon import openapi
from bmoe_daemon.app import create_app
from bmoe_daemon.bodies import PATCH_TYPES
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.errors import ApiError

NET = {"client": ("192.0.2.7", 40000)}


@pytest.fixture
async def app(daemon, tmp_path: Path):
    ctx = DaemonContext(config=Config(data_dir=tmp_path, api_key="sekret"), hub=daemon.hub, engine=daemon.engine,
                        bus=daemon.bus)
    return create_app(ctx)


async def document(app: Any, scope: dict[str, Any] | None = None) -> dict[str, Any]:
    resp = await app.test_client().get("/openapi.json", scope_base=scope)
    assert resp.status_code == 200, await resp.get_data()
    assert resp.content_type == "application/json"
    doc: dict[str, Any] = await resp.get_json()
    return doc


def _as_path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


async def test_every_registered_route_and_method_is_described(app):
    doc = await document(app)
    rules = list(app.url_map.iter_rules())
    assert len(rules) >= 48  # the blueprints' routes, /openapi.json and Quart's /static among them
    for rule in rules:
        websocket = getattr(rule, "websocket", False)
        methods = {"GET"} if websocket else set(rule.methods or ()) - {"HEAD", "OPTIONS"}
        path = _as_path(rule.rule)
        assert path in doc["paths"], rule.rule
        for method in methods:
            op = doc["paths"][path].get(method.lower())
            assert op is not None, (method, rule.rule)
            assert not op["summary"].startswith("Not described yet."), (method, rule.rule)
            key = ("WEBSOCKET" if websocket else method, rule.rule)
            assert key in openapi.OPERATIONS, key
    described = {(m, r) for m, r in openapi.OPERATIONS}
    registered = {(m, r) for m, r, _ in openapi.routes(app)}
    assert described == registered  # nothing described that the app does not serve


async def test_the_document_is_valid_openapi_3_1(app):
    doc = await document(app)
    assert doc["openapi"].startswith("3.1")
    validate(doc)  # raises OpenAPIValidationError on a document that is not valid OpenAPI 3.1
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    for item in doc["paths"].values():
        for op in item.values():
            for answer in op["responses"].values():
                for link in answer.get("links", {}).values():
                    assert link["operationId"] in ids


async def test_a_route_without_a_description_is_listed_all_the_same(app):
    @app.get("/api/brand-new")
    async def brand_new() -> str:
        return "new"

    doc = openapi.build(app)
    assert doc["paths"]["/api/brand-new"]["get"]["summary"].startswith("Not described yet.")


async def test_bodies_are_the_classes_the_routes_structure(app):
    doc = await document(app)
    schemas = doc["components"]["schemas"]
    new_conv = schemas["NewConversation"]
    assert new_conv["properties"]["mode"] == {"type": "string", "enum": list(MODES), "default": "ask"}
    assert "required" not in new_conv  # every field has a default
    assert schemas["SendMessage"]["required"] == ["text"]
    assert schemas["SendMessage"]["properties"]["images"] == {"anyOf": [
        {"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None}
    conv = doc["paths"]["/api/conversations"]["post"]
    assert conv["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NewConversation"}
    patch = doc["paths"]["/api/conversations/{conversation_id}"]["patch"]
    props = patch["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert set(props) == set(PATCH_TYPES)
    assert props["workspace"] == {"type": ["string", "null"]}
    # PUT /api/tasks/<id> refuses fields it does not know; the other bodies ignore them.
    put_task = doc["paths"]["/api/tasks/{task_id}"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert put_task["additionalProperties"] is False and "required" not in put_task


@attrs.frozen
class Inner:
    n: int


@attrs.frozen
class Outer:
    name: str
    ratio: float
    on: bool
    kind: Literal["a", "b"]
    inner: Inner
    many: list[Inner]
    maybe: str | None = None
    pair: tuple[int, int] | None = None
    extra: dict[str, Any] | None = None


def test_schema_of_walks_attrs_classes():
    c = openapi.Components()
    assert openapi.schema_of(Outer, c) == {"$ref": "#/components/schemas/Outer"}
    assert c.schemas["Outer"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string"}, "ratio": {"type": "number"}, "on": {"type": "boolean"},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "inner": {"$ref": "#/components/schemas/Inner"},
            "many": {"type": "array", "items": {"$ref": "#/components/schemas/Inner"}},
            "maybe": {"type": ["string", "null"], "default": None},
            "pair": {"anyOf": [{"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                                "minItems": 2, "maxItems": 2}, {"type": "null"}], "default": None},
            "extra": {"type": ["object", "null"], "default": None},
        },
        "required": ["name", "ratio", "on", "kind", "inner", "many"],
    }
    assert c.schemas["Inner"] == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert openapi.schema_of(Literal["x"] | None, c) == {"type": ["string", "null"], "enum": ["x", None]}
    with pytest.raises(TypeError):
        openapi.schema_of(set[int], c)


async def test_every_error_code_is_in_the_error_schema(app):
    doc = await document(app)
    codes = set(doc["components"]["schemas"]["Error"]["properties"]["code"]["enum"])
    pending: list[type[ApiError]] = [ApiError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        assert cls.code in codes, cls
    local = doc["paths"]["/api/workspaces"]["get"]["responses"]["403"]["content"]["application/json"]["schema"]
    assert {"properties": {"code": {"enum": ["local_only", "forbidden_origin"]}}} in local["allOf"] or \
        {"properties": {"code": {"enum": ["forbidden_origin", "local_only"]}}} in local["allOf"]


async def test_the_document_is_open_like_health(app):
    """No key and a client on the network: it describes routes, nothing of this computer's."""
    doc = await document(app, NET)
    assert "/api/conversations" in doc["paths"]
    resp = await app.test_client().get("/api/conversations", scope_base=NET)
    assert resp.status_code == 401  # the key still guards the API itself
