"""The MCP servers' configuration, in the common `mcpServers` format.

    {"mcpServers": {"docs": {"command": "npx", "args": ["-y", "some-mcp-server"],
                             "env": {"KEY": "value"}, "cwd": "/some/folder", "timeout_ms": 30000},
                    "remote": {"url": "https://mcp.example.com/mcp",
                               "headers": {"Authorization": "Bearer ${secret:example}"}}}}

Read when the daemon starts, from `<data>/mcp.json` or `--mcp-servers-config`, and again
after each change made from the Agent & MCP page.
An entry with a `command` is a program the daemon starts (stdio); one with a `url` is a
remote server spoken to over HTTP (actors/peers/mcp/remote.py): the person pointed it
there, so the listing marks it as on the network. `"type": "sse"` says the server speaks
only the older HTTP+SSE transport; otherwise Streamable HTTP is tried first. A header's
value may hold `${secret:NAME}`, which stands for the secret NAME of the daemon's key
store (`PUT /api/secrets/NAME`, kept in `<data>/credentials.json`): it is put in when
the daemon connects, and shown nowhere (the listing names the header and its secrets).
`http://` is taken only for this machine or the local network; elsewhere `https://`.
An entry that does not parse is left out with a warning, kept with the entry's name so
`GET /api/agent` can show it beside the servers. An entry with `"enabled": false` (or
`"disabled": true`, as other apps write it) is switched off: kept, listed, never started.
An `env` value may hold `${secret:NAME}` as a header's may, put in when the program starts.
The file is changed whole from the Agent & MCP page (actors/peers/mcp/edit.py).

A server's program does not inherit the daemon's whole environment: it gets the few
variables a program needs to run (PATH, HOME, the locale, ...) plus the entry's `env`,
as the reference SDK's stdio client does, so nothing else the daemon was started with
reaches a third party's program.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

import attrs

from actors.fs.paths import open_regular, read_fd
from actors.model.providers.entries import is_nearby

log = logging.getLogger("bmoe.mcp")

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 60 * 60 * 1000
MAX_CONFIG_BYTES = 1024 * 1024
MAX_SERVERS = 64
# A server's name starts each of its tools' names (`<server>_<tool>`), which the model
# writes in a call: letters, digits, `_` and `-` only.
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")
MAX_URL_CHARS = 2048
MAX_HEADERS = 32
MAX_HEADER_CHARS = 8192
# `${secret:NAME}` in a header's value: the secret NAME of the key store.
SECRET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SECRET_REF = re.compile(r"\$\{secret:([^}]*)\}")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Headers the transport sets itself; an entry may not write them.
OWN_HEADERS = frozenset({"accept", "content-type", "content-length", "host", "mcp-session-id", "mcp-protocol-version",
                         "last-event-id", "transfer-encoding", "connection"})
REMOTE_TYPES = {"sse": "sse", "http": "auto", "streamable-http": "auto", "streamableHttp": "auto"}
INHERITED_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
    "SYSTEMROOT", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "TEMP", "TMP", "PATHEXT", "COMSPEC",
)


@attrs.frozen
class ServerSpec:
    """One stdio server: what to run, and how long one call may take."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)  # a value may be a key
    cwd: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @property
    def command_line(self) -> str:
        return shlex.join([self.command, *self.args])

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000

    @property
    def secret_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for _, v in self.env for n in SECRET_REF.findall(v)))

    def shown_env(self) -> list[dict[str, object]]:
        """Each variable's name and the secrets its value names; never a value."""
        return [{"name": k, "secrets": SECRET_REF.findall(v)} for k, v in self.env]

    def environment(self, base: dict[str, str] | None = None,
                    secret: Callable[[str], str | None] | None = None) -> dict[str, str]:
        """The program's environment: the inherited few, then the entry's own, each
        `${secret:NAME}` replaced by `secret` (MissingSecret names one not stored)."""
        src = os.environ if base is None else base
        out = {k: src[k] for k in INHERITED_ENV if k in src}
        out.update(put_secrets(self.env, secret or (lambda name: None), "variable")[0])
        return out


def mask_url(url: str) -> str:
    """The address with each query value and any user info hidden (a key may be passed
    there)."""
    try:
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            parts = parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2])
        if parts.query:
            query = "&".join(f"{quote(k)}=***" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
            parts = parts._replace(query=query)
        return urlunsplit(parts._replace(fragment=""))
    except ValueError:
        return "(an address that does not parse)"


class MissingSecret(ValueError):
    """A header or a variable names a secret the key store does not hold."""


def put_secrets(pairs: tuple[tuple[str, str], ...], secret: Callable[[str], str | None],
                what: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """`pairs` with each `${secret:NAME}` replaced, and the secret values put in (to be
    kept out of any text). MissingSecret names one that is not stored; `what` says
    where it is named (a header, a variable)."""
    used: list[str] = []

    def put(m: re.Match[str]) -> str:
        value = secret(m.group(1))
        if not value:
            raise MissingSecret(
                f"its {what} needs the secret {m.group(1)!r}, which the key store does not hold; add it on the "
                f"Agent & MCP page or with PUT /api/secrets/{m.group(1)}"
            )
        used.append(value)
        return value

    return {k: SECRET_REF.sub(put, v) for k, v in pairs}, tuple(used)


@attrs.frozen
class RemoteSpec:
    """One remote server: its address, its headers as written (a value may hold
    `${secret:NAME}`), which transport to speak, and how long one call may take.
    No header's value is in its repr."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...] = attrs.field(default=(), repr=False)
    transport: str = "auto"  # auto (Streamable HTTP, else the older SSE) | sse
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000

    @property
    def shown_url(self) -> str:
        return mask_url(self.url)

    @property
    def secret_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for _, v in self.headers for n in SECRET_REF.findall(v)))

    def shown_headers(self) -> list[dict[str, object]]:
        """Each header's name and the secrets its value names; never a value."""
        return [{"name": k, "secrets": SECRET_REF.findall(v)} for k, v in self.headers]

    def resolve_headers(self, secret: Callable[[str], str | None]) -> tuple[dict[str, str], tuple[str, ...]]:
        """The headers to send, each `${secret:NAME}` replaced, and the secret values
        put in (to be kept out of any text). MissingSecret names one that is not stored."""
        return put_secrets(self.headers, secret, "header")


@attrs.frozen
class Skipped:
    """An entry left out, with why in plain words."""

    name: str
    command: str  # or the url (query values hidden) of a remote server
    why: str
    remote: bool = False


@attrs.frozen
class McpConfig:
    servers: tuple[ServerSpec | RemoteSpec, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    off: tuple[ServerSpec | RemoteSpec, ...] = ()  # switched off: listed, never started

    def remote_only(self) -> McpConfig:
        """The servers to start where no program may start: the remote ones."""
        return McpConfig(tuple(s for s in self.servers if isinstance(s, RemoteSpec)), self.skipped, self.off)


class ConfigError(ValueError):
    """An entry that cannot be used; the text says why."""


def configured_transport(spec: ServerSpec | RemoteSpec) -> str:
    """`stdio`, or what a remote server's entry asks for (`sse`, else `streamable-http`)."""
    if isinstance(spec, ServerSpec):
        return "stdio"
    return "sse" if spec.transport == "sse" else "streamable-http"


def _strings(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{what} must be a list of strings")
    return tuple(value)


def _env(value: object) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ConfigError("env must be an object of strings")
    out = []
    for key, val in value.items():
        if not isinstance(val, (str, int, float)) or isinstance(val, bool) or not key or "=" in key or "\0" in key:
            raise ConfigError(f"env {key[:40]!r} must be a name with a string value")
        if isinstance(val, str) and "\0" in val:
            raise ConfigError(f"the value of env {key[:40]} may not hold a NUL character")
        _check_refs(str(val), f"env {key[:40]}")
        out.append((key, str(val)))
    return tuple(out)


def _check_refs(value: str, where: str) -> None:
    for ref in SECRET_REF.findall(value):
        if not SECRET_NAME.match(ref):
            raise ConfigError(f"{where} names a secret {ref[:70]!r}: a secret's name is 1-64 letters, "
                              "digits, '_', '.' or '-'")


def is_off(entry: object) -> bool:
    """Whether an entry is switched off (`"enabled": false`, or `"disabled": true`)."""
    return isinstance(entry, dict) and (entry.get("enabled") is False or entry.get("disabled") is True)


def _timeout(entry: dict[str, object]) -> int:
    timeout = entry.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_MS:
        raise ConfigError(f"timeout_ms must be a number of milliseconds from 1 to {MAX_TIMEOUT_MS}")
    return int(timeout)


def check_url(url: object) -> str:
    """A remote server's address: http(s), no user name or password in it, plain http
    only for this machine or the local network. ConfigError says what is wrong."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigError("url must be the server's address, like https://mcp.example.com/mcp")
    url = url.strip()
    if len(url) > MAX_URL_CHARS or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise ConfigError(f"url must be one address of at most {MAX_URL_CHARS} characters, without spaces")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ConfigError("url is not a valid address") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigError("url must start with https:// (or http:// for a server on this machine or network)")
    if parts.username is not None or parts.password is not None:
        raise ConfigError("url may not carry a user name or password; put the credential in headers, "
                          "with its value in the key store (${secret:NAME})")
    if parts.scheme.lower() == "http" and not is_nearby(parts.hostname):
        raise ConfigError(f"http:// is taken only for a server on this machine or the local network; "
                          f"{parts.hostname} is neither, so use https://")
    return url


def _headers(value: object) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or len(value) > MAX_HEADERS:
        raise ConfigError(f"headers must be an object of at most {MAX_HEADERS} names and string values")
    out = []
    for key, val in value.items():
        if not HEADER_NAME.match(key):
            raise ConfigError(f"the header name {key[:40]!r} is not a valid HTTP header name")
        if key.lower() in OWN_HEADERS:
            raise ConfigError(f"the header {key} is set by the daemon itself; leave it out")
        # Never the value in the text: it may be a token written in the file.
        if not isinstance(val, str) or len(val) > MAX_HEADER_CHARS or any(ch in val for ch in "\r\n\0"):
            raise ConfigError(f"the header {key} must have a string value on one line")
        _check_refs(val, f"the header {key}")
        out.append((key, val))
    return tuple(out)


def _remote(name: str, entry: dict[str, object]) -> RemoteSpec:
    kind = entry.get("type", "streamable-http")
    if not isinstance(kind, str) or kind not in REMOTE_TYPES:
        raise ConfigError(f"type must be one of {', '.join(REMOTE_TYPES)} for a server with a url")
    if "command" in entry:
        raise ConfigError("the entry has both a url and a command; keep one")
    return RemoteSpec(name=name, url=check_url(entry.get("url")), headers=_headers(entry.get("headers")),
                      transport=REMOTE_TYPES[kind], timeout_ms=_timeout(entry))


def parse_entry(name: str, entry: object, *, base: Path | None = None) -> ServerSpec | RemoteSpec:
    """One `mcpServers` entry; raises ConfigError with why."""
    if not SERVER_NAME.match(name):
        raise ConfigError(
            "the name must be 1-48 letters, digits, '_' or '-' (it starts the names of its tools)"
        )
    if not isinstance(entry, dict):
        raise ConfigError("the entry must be an object")
    for key in ("enabled", "disabled"):
        if key in entry and not isinstance(entry[key], bool):
            raise ConfigError(f"{key} must be true or false")
    if "url" in entry or entry.get("type") in REMOTE_TYPES:
        return _remote(name, entry)
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError("the entry needs a command")
    cwd = entry.get("cwd")
    if cwd is not None:
        if not isinstance(cwd, str) or not cwd:
            raise ConfigError("cwd must be a folder's path")
        cwd = os.path.expanduser(cwd)
        if base is not None and not os.path.isabs(cwd):
            cwd = str(base / cwd)
    return ServerSpec(
        name=name,
        command=command,
        args=_strings(entry.get("args"), "args"),
        env=_env(entry.get("env")),
        cwd=cwd,
        timeout_ms=_timeout(entry),
    )


def parse_config(data: object, *, base: Path | None = None) -> McpConfig:
    """The servers of a parsed config file; each bad entry is skipped with why."""
    if not isinstance(data, dict):
        raise ConfigError("the file must hold a JSON object with mcpServers")
    entries = data.get("mcpServers", {})
    if not isinstance(entries, dict):
        raise ConfigError("mcpServers must be an object of servers by name")
    servers: list[ServerSpec | RemoteSpec] = []
    skipped: list[Skipped] = []
    off: list[ServerSpec | RemoteSpec] = []
    for name, entry in entries.items():
        shown = (entry.get("command") or "") if isinstance(entry, dict) else ""
        remote = isinstance(entry, dict) and ("url" in entry or entry.get("type") in REMOTE_TYPES)
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            shown = mask_url(entry["url"])  # a key in its query stays hidden
        try:
            if is_off(entry):
                off.append(parse_entry(name, entry, base=base))
                continue
            if len(servers) >= MAX_SERVERS:
                raise ConfigError(f"at most {MAX_SERVERS} servers are started")
            servers.append(parse_entry(name, entry, base=base))
        except ConfigError as exc:
            log.warning("MCP server %r left out: %s", name, exc)
            skipped.append(Skipped(name, str(shown) if isinstance(shown, str) else "", f"Left out: {exc}.", remote))
    return McpConfig(tuple(servers), tuple(skipped), tuple(off))


def load_config(path: Path) -> McpConfig:
    """The config at `path`; none when the file is absent, none (with a log line) when
    it cannot be read or is not JSON."""
    try:
        # A regular file only: a FIFO would be waited on (the daemon would never start)
        # and a device (/dev/zero) read for ever.
        fd = open_regular(path, follow=True)
        try:
            raw = read_fd(fd, MAX_CONFIG_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return McpConfig()
    except OSError as exc:
        log.warning("cannot read the MCP servers config %s: %s", path, exc.strerror or exc)
        return McpConfig()
    if len(raw) > MAX_CONFIG_BYTES:
        log.warning("the MCP servers config %s is larger than %d bytes; no server is started", path, MAX_CONFIG_BYTES)
        return McpConfig()
    try:
        return parse_config(json.loads(raw), base=path.parent)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        log.warning("the MCP servers config %s is not usable (%s); no server is started", path, exc)
        return McpConfig()
