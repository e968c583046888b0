"""The Quart-Trio application: access checks, the error shape, and the routes.

Every error leaves as {"error", "code"}; an unexpected exception is logged and
answered `500 internal` without its details.
"""

from __future__ import annotations

import logging
from typing import Any

from quart import Response, has_request_context, jsonify, request, websocket
from quart_trio import QuartTrio
from werkzeug import exceptions as wz

from actors.errors import ActorError
from bmoe_daemon import access, api_doc
from bmoe_daemon.context import EXTENSION, DaemonContext
from bmoe_daemon.errors import ApiError, MethodNotAllowed, TooLarge, from_actor
from bmoe_daemon.routes import (
    agent,
    connect,
    conversations,
    debug,
    events,
    files,
    folders,
    health,
    hooks,
    limits,
    mcp,
    models,
    openai,
    providers,
    search,
    secrets,
    skills,
    tasks,
    usage,
    web,
    workspaces,
)

log = logging.getLogger("bmoe.http")

MIB = 1024 * 1024
MAX_BODY_BYTES = 64 * MIB

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden_origin", 404: "not_found", 409: "busy"}


def _has_body() -> bool:
    """Whether the current request carries a body."""
    return (request.headers.get("Content-Length", "0") not in ("", "0") or
            "chunked" in request.headers.get("Transfer-Encoding", ""))


def _error(status: int, code: str, text: str, body: dict[str, object] | None = None) -> Response:
    resp = jsonify(body if body is not None else {"error": text, "code": code})
    resp.status_code = status
    if has_request_context() and _has_body():
        # The body may be unread (a refusal comes before it is needed): close the
        # connection rather than leave those bytes in front of the next request.
        resp.headers["Connection"] = "close"
    return resp


def _api_error(err: ApiError) -> Response:
    return _error(err.status, err.code, err.message, dict(err.body()))


def _own_methods(app: QuartTrio, path: str) -> list[str] | None:
    """A path that is a route of its own (POST /api/conversations/import) also fits a
    route with a part to fill (/api/conversations/<conversation_id>): the methods it
    offers (Allow, on a 405 or an OPTIONS) are its own route's, as the API's document
    says. None for any other path."""
    own = [r for r in app.url_map.iter_rules() if r.rule == path and not r.arguments]
    if not own or not any(r.rule != path and r.arguments for r in app.url_map.iter_rules()
                          if r.rule.count("/") == path.count("/") and path.startswith(r.rule.split("<")[0])):
        return None
    return sorted({m for r in own for m in r.methods or ()})


def create_app(ctx: DaemonContext) -> QuartTrio:
    # No static folder of Quart's own: the UI's files are routes/web.py's, under /static/<path:name>.
    app = QuartTrio("bmoe_daemon", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.config["BODY_TIMEOUT"] = 60
    app.config["RESPONSE_TIMEOUT"] = None
    app.extensions[EXTENSION] = ctx

    for bp in (health.bp, workspaces.bp, folders.bp, conversations.bp, files.bp, events.bp, debug.bp, providers.bp,
               agent.bp, skills.bp, tasks.bp, connect.bp, hooks.bp, models.bp, limits.bp, openai.bp, web.bp,
               api_doc.bp, secrets.bp, usage.bp, search.bp, mcp.bp):
        app.register_blueprint(bp)

    def guard(path: str, headers: Any, method: str, rule: Any, remote: str | None) -> None:
        if not (path.startswith("/api/") or path.startswith("/v1/") or path in ("/api", "/v1")):
            return
        access.check_host(headers.get("Host"), ctx.config.host)
        access.check_origin(headers.get("Origin"), headers.get("Host"), ctx.config.allowed_origins)
        if method == "OPTIONS":
            return  # a CORS preflight from an allowed origin: it carries no key and does nothing
        access.check_key(ctx.config.api_key, headers.get("Authorization"))
        access.check_route_locality(method, rule.rule if rule is not None else None, access.is_loopback(remote))

    @app.before_request
    async def before_request() -> None:
        guard(request.path, request.headers, request.method, request.url_rule, request.remote_addr)

    @app.before_websocket
    async def before_websocket() -> None:
        guard(websocket.path, websocket.headers, "WEBSOCKET", websocket.url_rule, websocket.remote_addr)

    @app.after_request
    async def whole_body(resp: Response) -> Response:
        # A body the route never read (a GET's, an OPTIONS', a route that needs none)
        # is taken whole before the answer goes: an answer that left before its
        # request's last bytes arrived stalled the next request on that connection in
        # hypercorn's HTTP/1.1 (Schemathesis found it). Refusals close instead (_error).
        if _has_body() and resp.headers.get("Connection") != "close":
            await request.get_data()
        return resp

    @app.after_request
    async def own_allow(resp: Response) -> Response:
        own = _own_methods(app, request.path) if "Allow" in resp.headers else None
        if own:
            resp.headers["Allow"] = ", ".join(own)
        return resp

    @app.after_request
    async def cors(resp: Response) -> Response:
        # Only the origins the person allowed get CORS headers (the daemon's own pages
        # are same-origin and need none); any other origin was refused by the guard.
        origin = request.headers.get("Origin")
        if origin and origin.lower().rstrip("/") in ctx.config.allowed_origins:
            resp.headers["Access-Control-Allow-Origin"] = origin
            resp.headers["Vary"] = "Origin"
            if request.method == "OPTIONS":
                resp.headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, PATCH, DELETE"
                resp.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, Last-Event-ID"
                resp.headers["Access-Control-Max-Age"] = "600"
        return resp

    @app.errorhandler(ApiError)
    async def api_error(exc: ApiError) -> Response:
        return _api_error(exc)

    @app.errorhandler(ActorError)
    async def actor_error(exc: ActorError) -> Response:
        return _api_error(from_actor(exc))

    @app.errorhandler(wz.HTTPException)
    async def http_error(exc: wz.HTTPException) -> Response:
        status = exc.code or 400
        if status == 404:
            return _error(404, "not_found", "There is no such route.")
        if status == 405:
            allowed = sorted(exc.valid_methods or ()) if isinstance(exc, wz.MethodNotAllowed) else []
            allowed = _own_methods(app, request.path) or allowed
            taken = [m for m in allowed if m not in ("HEAD", "OPTIONS")]
            text = f"{request.method} is not allowed on {request.path}"
            resp = _api_error(MethodNotAllowed(f"{text}; send {' or '.join(taken)} instead." if taken else f"{text}."))
            if allowed:
                resp.headers["Allow"] = ", ".join(allowed)
            return resp
        if status == 413:
            limit = app.config["MAX_CONTENT_LENGTH"] / MIB
            return _api_error(TooLarge(
                f"The request body is larger than {limit:g} MiB, the most the daemon takes; "
                "send less in one request (fewer or smaller images, for example)."
            ))
        code = _HTTP_CODES.get(status, "bad_request" if status < 500 else "internal")
        return _error(status, code, exc.description or "The request could not be served.")

    @app.errorhandler(Exception)
    async def unexpected(exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.path)
        return _error(500, "internal", "Something went wrong inside the daemon; the log has the details.")

    return app
