"""The MCP servers' configuration, in the common `mcpServers` format.

    {"mcpServers": {"docs": {"command": "npx", "args": ["-y", "some-mcp-server"],
                             "env": {"KEY": "value"}, "cwd": "/some/folder", "timeout_ms": 30000}}}

Read once when the daemon starts, from `<data>/mcp.json` or `--mcp-servers-config`.
Only stdio servers (a `command`) are started: an entry with a `url` (a remote server)
is left out with a warning, and so is an entry that does not parse; a warning is kept
with the entry's name so `GET /api/agent` can show it beside the servers.

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
from pathlib import Path

import attrs

from actors.fs.paths import open_regular, read_fd

log = logging.getLogger("bmoe.mcp")

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 60 * 60 * 1000
MAX_CONFIG_BYTES = 1024 * 1024
MAX_SERVERS = 64
# A server's name starts each of its tools' names (`<server>_<tool>`), which the model
# writes in a call: letters, digits, `_` and `-` only.
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")
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
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    timeout_ms: int = DEFAULT_TIMEOUT_MS

    @property
    def command_line(self) -> str:
        return shlex.join([self.command, *self.args])

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The program's environment: the inherited few, then the entry's own."""
        src = os.environ if base is None else base
        out = {k: src[k] for k in INHERITED_ENV if k in src}
        out.update(dict(self.env))
        return out


@attrs.frozen
class Skipped:
    """An entry left out, with why in plain words."""

    name: str
    command: str
    why: str


@attrs.frozen
class McpConfig:
    servers: tuple[ServerSpec, ...] = ()
    skipped: tuple[Skipped, ...] = ()


class ConfigError(ValueError):
    """An entry that cannot be used; the text says why."""


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
            raise ConfigError(f"env {key!r} must be a name with a string value")
        out.append((key, str(val)))
    return tuple(out)


def parse_entry(name: str, entry: object, *, base: Path | None = None) -> ServerSpec:
    """One `mcpServers` entry; raises ConfigError (a url entry included) with why."""
    if not SERVER_NAME.match(name):
        raise ConfigError(
            "the name must be 1-48 letters, digits, '_' or '-' (it starts the names of its tools)"
        )
    if not isinstance(entry, dict):
        raise ConfigError("the entry must be an object")
    if "url" in entry or entry.get("type") in ("sse", "http", "streamable-http", "streamableHttp"):
        raise ConfigError("it names a remote server (url); only servers started with a command (stdio) are used")
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
    timeout = entry.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_MS:
        raise ConfigError(f"timeout_ms must be a number of milliseconds from 1 to {MAX_TIMEOUT_MS}")
    return ServerSpec(
        name=name,
        command=command,
        args=_strings(entry.get("args"), "args"),
        env=_env(entry.get("env")),
        cwd=cwd,
        timeout_ms=int(timeout),
    )


def parse_config(data: object, *, base: Path | None = None) -> McpConfig:
    """The servers of a parsed config file; each bad entry is skipped with why."""
    if not isinstance(data, dict):
        raise ConfigError("the file must hold a JSON object with mcpServers")
    entries = data.get("mcpServers", {})
    if not isinstance(entries, dict):
        raise ConfigError("mcpServers must be an object of servers by name")
    servers: list[ServerSpec] = []
    skipped: list[Skipped] = []
    for name, entry in entries.items():
        shown = (entry.get("url") or entry.get("command") or "") if isinstance(entry, dict) else ""
        try:
            if len(servers) >= MAX_SERVERS:
                raise ConfigError(f"at most {MAX_SERVERS} servers are started")
            servers.append(parse_entry(name, entry, base=base))
        except ConfigError as exc:
            log.warning("MCP server %r left out: %s", name, exc)
            skipped.append(Skipped(name, str(shown) if isinstance(shown, str) else "", f"Left out: {exc}."))
    return McpConfig(tuple(servers), tuple(skipped))


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
