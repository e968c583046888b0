"""The document: every route the app serves (`routes`), each with its operation from
OPERATIONS (or "Not described yet."), the error answers errors.py defines for its
statuses and who may call it (access.py), assembled into OpenAPI 3.1 (`build`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

import bmoe_daemon
from bmoe_daemon import access, errors
from bmoe_daemon.openapi.operations import OPERATIONS, Op
from bmoe_daemon.openapi.schemas import Components, Schema

OPENAPI_VERSION = "3.1.0"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ERROR_REF = "#/components/schemas/Error"
# The prefixes access.py's guard covers: the key, the Origin and the Host are checked there.
GUARDED = ("/api/", "/v1/")


def _error_codes() -> dict[int, list[str]]:
    """Each HTTP status errors.py answers, with its codes."""
    out: dict[int, list[str]] = {}
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        codes = out.setdefault(cls.status, [])
        if cls.code not in codes:
            codes.append(cls.code)
    return out


_STATUS_TEXT = {
    400: "The request is malformed: not JSON, a wrong type, an unknown value or a missing field.",
    401: "The daemon was started with a key and the request has none, or the wrong one.",
    403: "Refused: a page from another origin, a Host that is not this daemon's, or a client on the network "
         "asking for what is this computer's alone.",
    404: "There is no such id (or route).",
    405: "The route takes other methods (the Allow header names them).",
    409: "Busy (a run is going on), exists already, or no model is loaded.",
    413: "The body is larger than the daemon takes.",
    507: "The disk is full: nothing was saved.",
}


def _path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def _path_params(rule: str) -> list[str]:
    return re.findall(r"<(?:[^:<>]+:)?([^<>]+)>", rule)


def _errors(method: str, rule: str, op: Op) -> set[int]:
    out = set(op.errors)
    if rule.startswith(GUARDED):
        out |= {401, 403}
    if _path_params(rule):
        out.add(404)
    if op.body is not None:
        out |= {400, 413}
    if access.agent_route_locality(method, rule)[0] is not access.Locality.OPEN:
        out.add(403)
    return out


def _operation(method: str, rule: str, op: Op, c: Components, ids: Mapping[tuple[str, str], str]) -> Schema:
    locality, what = access.agent_route_locality(method, rule)
    summary = op.summary
    if locality is access.Locality.LOCAL:
        summary += f" Local clients only ({what.lower()})."
    elif locality is access.Locality.CONVERSATION:
        summary += " Local clients only when the conversation has a workspace or a provider route."
    out: Schema = {"operationId": ids[(method, rule)], "summary": summary}
    params: list[Schema] = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in _path_params(rule)
    ]
    params += [{"name": p.name, "in": p.where, "required": False, "schema": p.schema, "description": p.description}
               for p in op.query]
    if params:
        out["parameters"] = params
    if op.body is not None:
        body = c.ref(op.body) if attrs.has(op.body) else op.body(c)
        out["requestBody"] = {"required": op.body_required, "content": {"application/json": {"schema": body}}}
    ok: Schema = {"description": "Done."}
    content: dict[str, Schema] = {}
    if op.answer is not None:
        content["application/json"] = {"schema": op.answer(c)}
    for media, schema in (op.media or {}).items():
        content[media] = {"schema": schema}
    if content:
        ok["content"] = content
    if op.links:
        ok["links"] = {name: {"operationId": ids[link.to], "parameters": dict(link.parameters)}
                       for name, link in op.links.items()}
    responses: dict[str, Schema] = {str(op.status): ok}
    codes = _error_codes()
    for status in sorted(_errors(method, rule, op)):
        schema = {"allOf": [{"$ref": ERROR_REF}, {"properties": {"code": {"enum": codes[status]}}}]}
        responses[str(status)] = {"description": _STATUS_TEXT[status],
                                  "content": {"application/json": {"schema": schema}}}
    out["responses"] = responses
    if rule.startswith(GUARDED):
        out["security"] = [{"bearer": []}, {}]
    return out


def routes(app: Any) -> list[tuple[str, str, str]]:
    """Every (method, rule, endpoint) the app serves, a WebSocket's method as WEBSOCKET
    (as access.py names it); HEAD and OPTIONS, which every GET and every route answer by
    themselves, left out."""
    out = []
    for rule in app.url_map.iter_rules():
        methods = ["WEBSOCKET"] if getattr(rule, "websocket", False) else sorted(rule.methods or ())
        out += [(m, rule.rule, rule.endpoint) for m in methods if m not in ("HEAD", "OPTIONS")]
    return sorted(out, key=lambda r: (r[1], r[0]))


def build(app: Any) -> Schema:
    """The OpenAPI 3.1 document of `app`'s routes. An operation's id is its handler's
    endpoint (`conversations.get_conversation` as `conversations_get_conversation`)."""
    found = routes(app)
    ids = {(method, rule): endpoint.replace(".", "_") for method, rule, endpoint in found}
    c = Components()
    paths: dict[str, Schema] = {}
    for method, rule, _ in found:
        op = OPERATIONS.get((method, rule)) or Op("Not described yet.")
        # A WebSocket is opened with a GET that asks for the upgrade.
        verb = "get" if method == "WEBSOCKET" else method.lower()
        paths.setdefault(_path(rule), {})[verb] = _operation(method, rule, op, c, ids)
    c.schemas["Error"] = {
        "type": "object", "required": ["error", "code"],
        "properties": {"error": {"type": "string"},
                       "code": {"type": "string", "enum": sorted({k for v in _error_codes().values() for k in v} |
                                                                 {"method_not_allowed"})}},
    }
    return {
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
        "info": {"title": "bmoe-daemon", "version": bmoe_daemon.__version__,
                 "description": "The daemon's HTTP API: conversations, workspaces, skills, tasks, providers, "
                                "the event stream and an OpenAI-compatible /v1. Errors are {error, code}."},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(c.schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "Needed when the daemon was started with --api-key-file."}},
        },
    }
