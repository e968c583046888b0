"""Changing the MCP servers' config from the Agent & MCP page: `McpFile`.

Each change reads the config file (`<data>/mcp.json`, or `--mcp-servers-config`),
changes one entry of its `mcpServers`, checks the entry as the loader would, writes the
file whole (actors/fs/atomic.py; through a link to the file it names) and then has the
running manager serve the new config (actors/peers/mcp/manager.py): the server is
started, started again, or ended, without a restart of the daemon. Every key of the
file and of an entry that this does not know is kept as it was.

A change that cannot be made (a bad name or entry, a name taken or unknown, a file that
is not JSON) raises before anything is written, so the file keeps its bytes. Changes
are made one at a time. Cancelled before the file is written, a change is not made;
after, the servers still follow it (shielded, at most APPLY_LIMIT_S).

An entry is given as mcp.json holds it. On a replace, a variable or header given
without a value (None) keeps the value the file has for it, and an address given as
the listing shows it (query values hidden) keeps the saved one: the values are never
read back, so an edit need not know them. A replace may give the server a new name: the
entry keeps its place and its values (so the secrets it names), and its program is ended
under the old name and started under the new one. A `cwd` given here must be the full
path of an existing folder (the loader also takes one relative to the file, as written by
hand).

The key store's secrets are the MCP servers' only (actors/model/providers/directory.py
keeps them apart from the providers' keys): once a server is removed, or an edit stops
naming a secret in its variables or headers, each secret it named that nothing left in
the file names is deleted from the store (`forget_secret`).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.errors import ActorError, DiskFull, Invalid, NotFound
from actors.fs.atomic import read_own_file, write_atomic
from actors.peers.mcp.config import (
    MAX_CONFIG_BYTES,
    MAX_SERVERS,
    SECRET_REF,
    SERVER_NAME,
    ConfigError,
    McpConfig,
    ServerSpec,
    is_off,
    mask_url,
    parse_config,
    parse_entry,
)
from actors.peers.mcp.manager import McpManager

log = logging.getLogger("bmoe.mcp")

# The entry's keys an add or a replace writes; any other key of an entry is kept.
KNOWN_KEYS = ("command", "args", "env", "cwd", "url", "type", "headers", "timeout_ms", "enabled", "disabled")
# How long the servers may take to follow a change once the file is written (each
# program ended is reaped within its kill grace and the reaping limit, far less).
APPLY_LIMIT_S = 15.0
# How long deleting the secrets no server names any more may take (a write of the key store each).
FORGET_LIMIT_S = 10.0
MAX_CWD_CHARS = 4096
NAME_TEXT = ("A server's name is 1-48 letters, digits, '_' or '-', starting with a letter or digit "
             "(it starts the names of its tools).")


class ServerExists(ActorError):
    """An MCP server added under a name the config already has (HTTP 409 exists)."""


Entry = dict[str, Any]
# Deletes a secret from the key store; whether it was stored.
ForgetSecret = Callable[[str], Awaitable[bool]]


class McpFile:
    """The config file of `manager`'s servers, changed one entry at a time.
    `commands`: whether programs may start here (else a stdio server is refused);
    `forget_secret`: deletes a secret no entry names any more from the key store."""

    def __init__(self, path: Path, manager: McpManager, *, commands: bool = True,
                 write: Callable[..., None] = write_atomic, forget_secret: ForgetSecret | None = None) -> None:
        self.path = path
        self._manager = manager
        self._commands = commands
        self._write = write
        self._forget_secret = forget_secret
        self._lock = trio.Lock()

    # ---- the changes ----

    async def add(self, name: str, entry: Entry) -> None:
        async with self._lock:
            data, servers = await trio.to_thread.run_sync(self._read)
            _check_name(name)
            if name in servers:
                raise ServerExists(f"There is already an MCP server named {name}; choose another name, or edit it.")
            if len([e for e in servers.values() if not is_off(e)]) >= MAX_SERVERS and not is_off(entry):
                raise Invalid(f"At most {MAX_SERVERS} MCP servers are started; switch one off or remove one first.")
            new = self._checked(name, _written(entry))
            _check_cwd(new.get("cwd"))
            servers[name] = new
            await self._save(data, f"MCP server {name} added")

    async def replace(self, name: str, entry: Entry, *, new_name: str | None = None) -> list[str]:
        """Replace the entry of `name` (under `new_name` when given: ServerExists when
        that name is taken); the secrets it no longer names that nothing else in the file
        names are deleted from the key store, and listed."""
        async with self._lock:
            data, servers = await trio.to_thread.run_sync(self._read)
            old = self._existing(servers, name)
            to = name if new_name is None else new_name
            if to != name:
                _check_name(to)
                if to in servers:
                    raise ServerExists(f"There is already an MCP server named {to}; choose another name for "
                                       f"{name}.")
            new = {k: v for k, v in old.items() if k not in KNOWN_KEYS} if isinstance(old, dict) else {}
            new.update(_written(_kept(entry, old)))
            if "enabled" not in entry and isinstance(old, dict):
                new.update({k: old[k] for k in ("enabled", "disabled") if k in old})
            checked = self._checked(to, new)
            _check_cwd(checked.get("cwd"))
            # The entry keeps its place in the file under its new name.
            data["mcpServers"] = {(to if k == name else k): (checked if k == name else v) for k, v in servers.items()}
            what = f"MCP server {name} changed" if to == name else f"MCP server {name} renamed {to} and changed"
            return await self._save(data, what, named=_named_secrets(old))

    async def switch(self, name: str, enabled: bool) -> None:
        async with self._lock:
            data, servers = await trio.to_thread.run_sync(self._read)
            old = self._existing(servers, name)
            if not isinstance(old, dict):
                raise Invalid(f"The entry of {name} in {self.path} is not an object; edit it to give it a command "
                              "or a url first.")
            new = dict(old)
            new.pop("disabled", None)
            if enabled:
                new.pop("enabled", None)
            else:
                new["enabled"] = False
            if enabled and not is_off(old) or not enabled and is_off(old):
                return  # already so: the file is left as it is
            if enabled and len([e for e in servers.values() if not is_off(e)]) >= MAX_SERVERS:
                raise Invalid(f"At most {MAX_SERVERS} MCP servers are started; switch one off or remove one first.")
            servers[name] = self._checked(name, new) if enabled else new
            await self._save(data, f"MCP server {name} switched {'on' if enabled else 'off'}")

    async def remove(self, name: str) -> list[str]:
        """Remove the entry of `name`; the secrets it named that nothing else in the
        file names are deleted from the key store, and listed."""
        async with self._lock:
            data, servers = await trio.to_thread.run_sync(self._read)
            old = self._existing(servers, name)
            del servers[name]
            return await self._save(data, f"MCP server {name} removed", named=_named_secrets(old))

    # ---- the file ----

    def _read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The file's object and its `mcpServers` (made when absent); Invalid, saying
        what to do, when the file cannot be changed safely."""
        try:
            raw = read_own_file(self.path, MAX_CONFIG_BYTES)
        except FileNotFoundError:
            data: dict[str, Any] = {}
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise Invalid(f"The MCP servers' config {self.path} cannot be read ({why}); fix or remove it by hand, "
                          "then try again.") from None
        else:
            try:
                data = json.loads(raw)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise Invalid(f"The MCP servers' config {self.path} is not valid JSON ({exc}); fix it by hand (the "
                              "daemon does not write over it), then try again.") from None
            if not isinstance(data, dict):
                raise Invalid(f"The MCP servers' config {self.path} does not hold a JSON object; fix it by hand "
                              "(the daemon does not write over it), then try again.")
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise Invalid(f"mcpServers in {self.path} is not an object of servers by name; fix it by hand (the "
                          "daemon does not write over it), then try again.")
        return data, servers

    def _existing(self, servers: dict[str, Any], name: str) -> Any:
        if name not in servers:
            raise NotFound(f"There is no MCP server named {name!r} in {self.path.name}.")
        return servers[name]

    def _checked(self, name: str, entry: Entry) -> Entry:
        """`entry` if the loader can start it; else Invalid with why, in plain words."""
        try:
            spec = parse_entry(name, entry, base=self.path.parent)
        except ConfigError as exc:
            text = str(exc)
            raise Invalid(text[:1].upper() + text[1:] + ".") from None
        if isinstance(spec, ServerSpec) and not self._commands and not is_off(entry):
            raise Invalid("Programs do not start on this computer, so a server with a command cannot run here; "
                          "give a remote server's url instead.")
        return entry

    async def _save(self, data: dict[str, Any], what: str, named: frozenset[str] = frozenset()) -> list[str]:
        """Write the file whole, then serve what it now says and delete from the key
        store each secret of `named` (the changed entry's, before) that the file no
        longer names; those deleted, by name."""
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        try:
            await trio.to_thread.run_sync(self._write_file, text.encode("utf-8"))
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(f"{self.path} cannot be written: the disk is full.") from None
            raise Invalid(f"{self.path} cannot be written ({exc.strerror or exc}); nothing was changed.") from None
        log.info("%s in %s", what, self.path)
        # The file is written: the servers follow it even if the request goes away now.
        with trio.move_on_after(APPLY_LIMIT_S) as scope:
            scope.shield = True
            await self._manager.apply(self.config(data))
        with trio.move_on_after(FORGET_LIMIT_S) as scope:
            scope.shield = True
            return await self._forget(named - _secrets_in(data))
        return []

    async def _forget(self, names: frozenset[str]) -> list[str]:
        """Delete each of `names` from the key store; those it held. One that cannot be
        deleted (the disk is full) is logged and stays: the change itself is made."""
        forgotten: list[str] = []
        if self._forget_secret is None:
            return forgotten
        for name in sorted(names):
            try:
                if await self._forget_secret(name):
                    forgotten.append(name)
            except (ActorError, OSError) as exc:
                log.warning("the secret %s, which no MCP server names any more, stays in the key store: %s",
                            name, exc)
        if forgotten:
            log.info("secrets no MCP server names any more deleted from the key store: %s", ", ".join(forgotten))
        return forgotten

    def _write_file(self, data: bytes) -> None:
        target = Path(os.path.realpath(self.path))  # a link stays a link to the file it names
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)  # the person's choice stays
        except OSError:
            mode = 0o600  # a new file: it may hold a key given in env or a header
        self._write(target, data, mode=mode)

    def config(self, data: dict[str, Any]) -> McpConfig:
        """What the manager serves of `data`: where programs do not start, the remote
        servers only (as at start)."""
        config = parse_config(data, base=self.path.parent)
        return config if self._commands else config.remote_only()


def _check_name(name: str) -> None:
    if not SERVER_NAME.match(name):
        raise Invalid(NAME_TEXT)


def _check_cwd(cwd: object) -> None:
    """A working folder given here: the full path of a folder that exists."""
    if cwd is None:
        return
    if not isinstance(cwd, str) or not cwd or "\0" in cwd or len(cwd) > MAX_CWD_CHARS:
        raise Invalid("The working folder (cwd) must be the full path of an existing folder, like /home/me/project.")
    path = os.path.expanduser(cwd)
    if not os.path.isabs(path):
        raise Invalid(f"The working folder (cwd) must be a full path (starting with / or ~/), like /home/me/project; "
                      f"{cwd[:200]} is not.")
    if not os.path.isdir(path):
        raise Invalid(f"The working folder (cwd) {cwd[:200]} is not an existing folder; give the full path of a "
                      "folder that exists.")


def _named_secrets(entry: object) -> frozenset[str]:
    """The secrets an entry's variables and headers name (`${secret:NAME}`)."""
    if not isinstance(entry, dict):
        return frozenset()
    values = [v for key in ("env", "headers") if isinstance(entry.get(key), dict) for v in entry[key].values()]
    return frozenset(n for v in values if isinstance(v, str) for n in SECRET_REF.findall(v))


def _secrets_in(value: object) -> frozenset[str]:
    """Every secret named anywhere in `value` (a parsed file): what the store keeps."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(SECRET_REF.findall(item))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return frozenset(found)


def _written(entry: Entry) -> Entry:
    """The entry as the file will hold it: its known keys that have a value, `enabled`
    only when false; neither a command nor a url, or both, is refused."""
    has_command = isinstance(entry.get("command"), str) and bool(entry["command"].strip())
    has_url = isinstance(entry.get("url"), str) and bool(entry["url"].strip())
    if has_command and has_url:
        raise Invalid("Give either a command (a program on this computer) or a url (a remote server), not both.")
    if not has_command and not has_url:
        raise Invalid("Give a command to start (a program on this computer) or the url of a remote server.")
    out = {k: entry[k] for k in KNOWN_KEYS if entry.get(k) is not None and k not in ("enabled", "disabled")}
    if has_command:
        out.pop("type", None)  # a transport is a remote server's
    else:
        out.pop("cwd", None)  # a working folder is a program's
    if entry.get("enabled") is False:
        out["enabled"] = False
    return out


def _kept(entry: Entry, old: Any) -> Entry:
    """`entry` with each variable or header given without a value (None) given the
    value `old` has for it, and an address as the listing shows it put back."""
    old = old if isinstance(old, dict) else {}
    out = dict(entry)
    for key in ("env", "headers"):
        given = entry.get(key)
        if not isinstance(given, dict):
            continue
        saved = old.get(key) if isinstance(old.get(key), dict) else {}
        values = {}
        for name, value in given.items():
            if value is None:
                if name not in saved:
                    what = "variable" if key == "env" else "header"
                    raise Invalid(f"The {what} {str(name)[:40]} has no saved value to keep; give its value.")
                value = saved[name]
            values[name] = value
        out[key] = values
    url, old_url = entry.get("url"), old.get("url")
    if isinstance(url, str) and isinstance(old_url, str) and url != old_url and url == mask_url(old_url):
        out["url"] = old_url
    return out
