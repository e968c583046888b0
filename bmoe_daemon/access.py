"""Who may use what: the key, loopback clients, and the browser's Origin.

The key is compared in constant time and never logged. A request's locality comes
from the connection's address alone: headers like X-Forwarded-For are not trusted.
A browser page from another site cannot drive the daemon: a request that carries an
Origin header must come from a loopback origin or the daemon's own host.
"""

from __future__ import annotations

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


def check_origin(origin: str | None, host: str | None) -> None:
    if not origin:
        return
    if origin == "null":
        raise ForbiddenOrigin("Requests from sandboxed or file pages are refused.")
    try:
        parts = urlsplit(origin)
        hostname = parts.hostname
    except ValueError:
        raise ForbiddenOrigin("The Origin header is malformed.") from None
    if hostname is not None and is_loopback(hostname):
        return
    if host and parts.netloc == host:
        return
    raise ForbiddenOrigin(f"Pages from {origin} may not use this daemon.")


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
