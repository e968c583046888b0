"""`bmoe-daemon run`'s HTTP client, on the standard library alone (http.client): a call
whose answer is JSON, and the event stream (GET /api/events) read line by line.

A call asks once and ends, so its start-up is most of its cost: an async HTTP stack
(trio and httpx) cost the command about 170 ms of imports before it sent a byte
(ops/bench/run_cli.py). Each call has a connection of its own (on loopback that costs
less than a millisecond, and no connection is reused after the daemon closed it); the
event stream keeps its own for as long as it is read.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from bmoe_daemon.run_cmd.locate import RunError

TIMEOUT_S = 30.0
MAX_SHOWN_CHARS = 200  # of an answer that is not the API's {"error", "code"}


def refusal(status: int, reason: str, raw: bytes) -> RunError:
    """The RunError for an answer of 400 or more: 401 and the client's own mistakes are usage
    errors (2), the daemon's refusals 3, its failures 1."""
    try:
        body = json.loads(raw)
        text = f"{body['error']} ({body['code']})"
    except (ValueError, KeyError, TypeError):
        text = raw[:MAX_SHOWN_CHARS].decode(errors="replace") or reason
    if status == 401:
        return RunError(f"the daemon asks for its key: {text}; pass --api-key-file", 2)
    code = 2 if status in (400, 404, 422) else 3 if status < 500 else 1
    return RunError(f"the daemon answered {status}: {text}", code)


def unreachable(base_url: str, exc: BaseException) -> RunError:
    return RunError(f"cannot reach the daemon at {base_url}: {exc or type(exc).__name__}", 1)


class Client:
    """The daemon at `base_url` (http://host:port), with its key when it has one."""

    def __init__(self, base_url: str, key: str | None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise RunError(f"the daemon's address {base_url!r} is not an http:// address; "
                           "restart the daemon to write it again", 1)
        self.base_url = base_url
        self._host = parts.hostname
        self._port = parts.port or 80
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """`method path` with `body` as JSON; the answer's JSON. RunError when the daemon
        cannot be reached, refuses (refusal) or answers with something that is not JSON."""
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn = http.client.HTTPConnection(self._host, self._port, timeout=TIMEOUT_S)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise unreachable(self.base_url, exc) from None
        finally:
            conn.close()
        if resp.status >= 400:
            raise refusal(resp.status, resp.reason, raw)
        try:
            return json.loads(raw)
        except ValueError:
            raise RunError(f"the daemon answered {method} {path} with something that is not JSON", 1) from None

    def events(self) -> EventStream:
        """GET /api/events, open (its answer's head read); RunError as `call`'s."""
        conn = http.client.HTTPConnection(self._host, self._port, timeout=TIMEOUT_S)
        try:
            conn.request("GET", "/api/events", headers={**self._headers, "Accept": "text/event-stream"})
            sock = conn.sock  # kept: the connection lets go of it when the answer is to close it
            assert sock is not None
            resp = conn.getresponse()
            if resp.status >= 400:
                raise refusal(resp.status, resp.reason, resp.read())
            sock.settimeout(None)  # the stream is quiet between runs' events (the daemon pings)
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise unreachable(self.base_url, exc) from None
        except RunError:
            conn.close()
            raise
        return EventStream(conn, resp, sock, self.base_url)


class EventStream:
    """An open event stream. `lines()` reads it from one thread; `close()` may come from
    another, and ends that reading (as the daemon closing the stream would)."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, sock: socket.socket,
                 base_url: str) -> None:
        self._conn = conn
        self._resp = resp
        self._sock = sock
        self._base_url = base_url
        self.closed = False

    def lines(self) -> Iterator[str]:
        """Each line as it comes, without its line end, until the stream ends; RunError
        when it breaks (nothing after `close()`). The connection is closed once it ends."""
        try:
            while raw := self._resp.readline():
                yield raw.decode("utf-8", errors="replace").rstrip("\r\n")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if not self.closed:
                raise unreachable(self._base_url, exc) from None
        finally:
            self._resp.close()
            self._conn.close()

    def close(self) -> None:
        """Ends the reading: the socket is shut down, which wakes a reader blocked in
        recv (closing the file under it would not, and would wait for its lock)."""
        self.closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
