"""Who may use what: the key, loopback clients, and the browser's Origin.

The key is compared in constant time and never logged. A request's locality comes
from the connection's address alone: headers like X-Forwarded-For are not trusted.
A browser page from another site cannot drive the daemon: a request that carries an
Origin header must come from a loopback origin or the daemon's own host.
"""

from __future__ import annotations

import enum
import hmac
import ipaddress
from urllib.parse import urlsplit

from bmoe_daemon.errors import ForbiddenOrigin, LocalOnly, Unauthorized


def is_loopback(addr: str | None) -> bool:
    if not addr:
        return False
    host = addr
    if host.startswith("[") and "]" in host:
        host = host[1 : host.index("]")]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def check_key(expected: str | None, authorization: str | None) -> None:
    if expected is None:
        return
    given = ""
    if authorization and authorization.lower().startswith("bearer "):
        given = authorization[7:].strip()
    if not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8")):
        raise Unauthorized("This daemon needs a key: send Authorization: Bearer <key>.")


def normalize_origin(origin: str) -> str | None:
    """`scheme://host[:port]` in lower case, or None when it is not such an origin."""
    try:
        parts = urlsplit(origin.strip())
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_origin(origin: str | None, host: str | None, allowed: tuple[str, ...] = ()) -> None:
    """A request with an Origin comes from a web page: only a page of this daemon's own
    origin (the one its Host header names, checked by check_host) or of an origin the
    person allowed (--allow-origin) may use it. Pages on other sites, other ports of
    this computer included, are refused, so a page in the person's own browser cannot
    drive the daemon. Clients that send no Origin (curl, the SDKs) pass."""
    if not origin:
        return
    if origin == "null":
        raise ForbiddenOrigin("Requests from sandboxed or file pages are refused.")
    try:
        parts = urlsplit(origin)
        parts.hostname  # noqa: B018  (raises on a malformed address)
    except ValueError:
        raise ForbiddenOrigin("The Origin header is malformed.") from None
    if origin.lower().rstrip("/") in allowed:
        return
    if host and parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower():
        return
    raise ForbiddenOrigin(
        f"Pages from {origin} may not use this daemon; start it with --allow-origin {origin} to let them."
    )


def check_host(host: str | None, configured: str | None = None) -> None:
    """The Host header must name this daemon: a loopback name, an IP address, or the
    configured --host. A page that reached the daemon through a DNS name of its own
    (DNS rebinding) is refused, since its Origin would otherwise match its Host."""
    if not host:
        return  # HTTP/1.0 clients and raw tools send none; the Origin check still applies
    try:
        name = urlsplit("//" + host).hostname
    except ValueError:
        raise ForbiddenOrigin("The Host header is malformed.") from None
    if name is None:
        raise ForbiddenOrigin("The Host header is malformed.")
    if name == "localhost" or name.endswith(".localhost") or is_loopback(name):
        return
    try:
        ipaddress.ip_address(name)
        return
    except ValueError:
        pass
    if configured and name == configured.strip("[]").lower():
        return
    raise ForbiddenOrigin(f"Requests for {name} are refused: reach the daemon by its address or localhost.")


def require_local(local: bool, what: str = "This") -> None:
    if not local:
        raise LocalOnly(f"{what} answers only to a client on this computer.")


# ---- which route answers to whom ----


class Locality(enum.Enum):
    OPEN = "open"  # any client that passes the key; what it returns may still be filtered
    LOCAL = "local"  # loopback clients only
    CONVERSATION = "conversation"  # loopback only when the conversation is this computer's


_CONV = "/api/conversations/<conversation_id>"

# Every route of the app, by method and rule. A route missing here is treated as LOCAL
# (tests/test_routes_access.py checks that none is missing). The LOCAL ones reach this
# computer's files, processes, secrets or settings; the text says what was refused.
_ROUTES: dict[tuple[str, str], tuple[Locality, str]] = {
    ("GET", "/health"): (Locality.OPEN, ""),
    ("GET", "/openapi.json"): (Locality.OPEN, ""),  # the routes' description: nothing of this computer's
    ("GET", "/"): (Locality.OPEN, ""),
    ("GET", "/static/<path:name>"): (Locality.OPEN, ""),
    ("GET", "/v1/models"): (Locality.OPEN, ""),
    ("POST", "/v1/chat/completions"): (Locality.OPEN, ""),
    ("GET", "/api/agent"): (Locality.OPEN, ""),  # MCP servers listed to local clients only
    ("GET", "/api/limits"): (Locality.OPEN, ""),  # the limits the daemon enforces: nothing of this computer's
    ("GET", "/api/events"): (Locality.OPEN, ""),  # local-only events go to local streams only
    ("WEBSOCKET", "/api/ws"): (Locality.OPEN, ""),
    ("GET", "/api/conversations"): (Locality.OPEN, ""),  # this computer's are not listed
    ("POST", "/api/conversations"): (Locality.OPEN, ""),  # see check_settings
    ("GET", "/api/search"): (Locality.OPEN, ""),  # this computer's conversations are not searched
    ("GET", _CONV): (Locality.CONVERSATION, "Reading this conversation"),
    ("PATCH", _CONV): (Locality.CONVERSATION, "Changing this conversation"),
    ("DELETE", _CONV): (Locality.CONVERSATION, "Deleting this conversation"),
    ("POST", _CONV + "/messages"): (Locality.CONVERSATION, "A message in this conversation"),
    ("POST", _CONV + "/edit"): (Locality.CONVERSATION, "An edit in this conversation"),
    ("POST", _CONV + "/stop"): (Locality.CONVERSATION, "Stopping this conversation"),
    ("POST", _CONV + "/approval"): (Locality.LOCAL, "An approval"),
    ("POST", _CONV + "/answer"): (Locality.LOCAL, "An answer to the agent's question"),
    # A client's tools run in the client, not on this computer.
    ("PUT", _CONV + "/tools"): (Locality.CONVERSATION, "Giving this conversation tools"),
    ("POST", _CONV + "/tool_result"): (Locality.CONVERSATION, "A tool's result in this conversation"),
    ("GET", _CONV + "/plan"): (Locality.CONVERSATION, "Reading this conversation's plan"),
    ("GET", _CONV + "/helpers"): (Locality.CONVERSATION, "Reading this conversation's helpers"),
    ("POST", _CONV + "/resume"): (Locality.CONVERSATION, "Resuming this conversation's run"),
    ("POST", _CONV + "/compact"): (Locality.CONVERSATION, "Compacting this conversation"),
    ("GET", _CONV + "/file"): (Locality.LOCAL, "A workspace file"),
    ("GET", _CONV + "/changes"): (Locality.LOCAL, "What the runs changed"),
    ("POST", _CONV + "/rewind"): (Locality.LOCAL, "A rewind"),
    ("POST", _CONV + "/fork"): (Locality.LOCAL, "A fork"),
    ("GET", _CONV + "/export"): (Locality.CONVERSATION, "Exporting this conversation"),
    ("POST", "/api/conversations/import"): (Locality.OPEN, ""),  # see check_settings
    ("GET", "/api/workspaces"): (Locality.LOCAL, "The list of workspaces"),
    ("GET", "/api/folders"): (Locality.LOCAL, "The list of this computer's folders"),
    ("POST", "/api/workspaces"): (Locality.LOCAL, "Adding a workspace"),
    ("PATCH", "/api/workspaces/<workspace_id>"): (Locality.LOCAL, "Changing a workspace (its network)"),
    ("DELETE", "/api/workspaces/<workspace_id>"): (Locality.LOCAL, "Removing a workspace"),
    ("GET", "/api/workspaces/<workspace_id>/files"): (Locality.LOCAL, "A workspace's files"),
    ("GET", "/api/workspaces/<workspace_id>/rules"): (Locality.LOCAL, "A workspace's always-allow rules"),
    ("POST", "/api/workspaces/<workspace_id>/rules"): (Locality.LOCAL, "Keeping an always-allow rule"),
    ("DELETE", "/api/workspaces/<workspace_id>/rules/<rule_id>"): (Locality.LOCAL, "Removing an always-allow rule"),
    ("GET", "/api/workspaces/<workspace_id>/memories"): (Locality.LOCAL, "A workspace's memories"),
    ("PATCH", "/api/workspaces/<workspace_id>/memories/<memory_id>"): (Locality.LOCAL, "Changing a memory"),
    ("DELETE", "/api/workspaces/<workspace_id>/memories/<memory_id>"): (Locality.LOCAL, "Forgetting a memory"),
    ("GET", "/api/debug/actors"): (Locality.LOCAL, "The actor tree"),
    ("GET", "/api/providers"): (Locality.LOCAL, "The list of providers"),
    ("POST", "/api/providers"): (Locality.LOCAL, "Saving a provider"),
    ("POST", "/api/providers/probe"): (Locality.LOCAL, "Testing a provider"),
    ("PUT", "/api/providers/<provider_id>"): (Locality.LOCAL, "Saving a provider"),
    ("DELETE", "/api/providers/<provider_id>"): (Locality.LOCAL, "Forgetting a provider"),
    ("POST", "/api/mcp/<server>/prompts/<name>"): (Locality.LOCAL, "An MCP server's prompt"),
    ("POST", "/api/mcp/servers"): (Locality.LOCAL, "Adding an MCP server"),
    ("PUT", "/api/mcp/servers/<name>"): (Locality.LOCAL, "Changing an MCP server"),
    ("PATCH", "/api/mcp/servers/<name>"): (Locality.LOCAL, "Switching an MCP server"),
    ("DELETE", "/api/mcp/servers/<name>"): (Locality.LOCAL, "Removing an MCP server"),
    ("GET", "/api/secrets"): (Locality.LOCAL, "The list of secrets"),
    ("PUT", "/api/secrets/<name>"): (Locality.LOCAL, "Saving a secret"),
    ("DELETE", "/api/secrets/<name>"): (Locality.LOCAL, "Forgetting a secret"),
    ("GET", "/api/connect"): (Locality.LOCAL, "The list of apps to connect"),
    ("GET", "/api/connect/<client_id>/preview"): (Locality.LOCAL, "What writing another app's settings changes"),
    ("POST", "/api/connect/<client_id>"): (Locality.LOCAL, "Writing another app's settings"),
    ("GET", "/api/skills"): (Locality.LOCAL, "The list of skills"),
    ("POST", "/api/skills"): (Locality.LOCAL, "Writing a skill"),
    ("GET", "/api/skills/<name>"): (Locality.LOCAL, "Reading a skill"),
    ("PUT", "/api/skills/<name>"): (Locality.LOCAL, "Writing a skill"),
    ("PATCH", "/api/skills/<name>"): (Locality.LOCAL, "Switching a skill"),
    ("DELETE", "/api/skills/<name>"): (Locality.LOCAL, "Deleting a skill"),
    ("GET", "/api/tasks"): (Locality.LOCAL, "The list of tasks"),
    ("POST", "/api/tasks"): (Locality.LOCAL, "Creating a task"),
    ("PUT", "/api/tasks/<task_id>"): (Locality.LOCAL, "Changing a task"),
    ("DELETE", "/api/tasks/<task_id>"): (Locality.LOCAL, "Deleting a task"),
    ("POST", "/api/tasks/<task_id>/run"): (Locality.LOCAL, "Running a task"),
    ("GET", "/api/hooks"): (Locality.LOCAL, "The list of hooks"),
    ("GET", "/api/models"): (Locality.LOCAL, "The list of this computer's models"),
    ("GET", "/api/usage"): (Locality.LOCAL, "What the models used and cost"),
    ("GET", "/api/model"): (Locality.OPEN, ""),  # the model's file's path to local clients only
    ("PUT", "/api/model"): (Locality.LOCAL, "Loading another model"),
}


def agent_route_locality(method: str, rule: str) -> tuple[Locality, str]:
    """Who may use the route `method rule` (the app's URL rule, not the path): the one
    rule for every route. HEAD goes as GET; an unknown route is local only."""
    method = "GET" if method == "HEAD" else method
    return _ROUTES.get((method, rule), (Locality.LOCAL, "This route"))


def known_routes() -> set[tuple[str, str]]:
    return set(_ROUTES)


def check_route_locality(method: str, rule: str | None, local: bool) -> None:
    """Before a route runs: a LOCAL route refuses a client on the network."""
    if rule is None or local:
        return
    locality, what = agent_route_locality(method, rule)
    if locality is Locality.LOCAL:
        raise LocalOnly(f"{what} answers only to a client on this computer.")


def check_conversation(local_only: bool, local: bool, what: str = "This conversation") -> None:
    """A conversation with a workspace or a provider route is this computer's alone."""
    if local_only and not local:
        raise LocalOnly(f"{what} has a workspace or a provider route: it answers only to a client on this computer.")


def check_settings(local: bool, *, workspace: str | None, route: str | None, mode: str | None) -> None:
    """A client on the network may not give a conversation a workspace or a provider
    route, nor full access (asking or reading only, it may)."""
    if local:
        return
    if workspace or (route is not None and route != "local") or mode == "full":
        raise LocalOnly("A workspace, a provider route or full access is given only by a client on this computer.")
