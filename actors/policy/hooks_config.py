"""hooks.json, read and matched: the pure half of the person's hooks (actors/policy/hooks.py runs them).

The file is `<data>/agent/hooks.json`::

    {"pre_tool_use":  [{"matcher": "exec_shell_command", "command": "~/bin/check.sh", "timeout_s": 10}],
     "post_tool_use": [{"matcher": "mcp_*", "command": "logger -t bmoe \\"$BMOE_TOOL\\""}],
     "session_start": [{"command": "notify-send started"}],
     "session_end":   [],
     "http": [{"url": "http://127.0.0.1:8123/bmoe", "events": ["post_tool_use", "session_end"]}]}

Every key is optional. An unknown key, event or field, a bad value, a timeout_s above
120 makes the whole file unusable (`parse_config` says where): a typo in a blocking hook
must not pass unseen, and the caller keeps the last good version.

- `command`: run by `/bin/sh -c`; `timeout_s`: 30 by default, above 0, at most 120.
- `matcher` (the tool events only; none matches every tool): a glob on the tool's name
  as the model calls it (`*` any run of characters, `?` one; every other character
  stands for itself), so `github_*` matches the tools of the MCP server `github`
  (`<server>_<tool>`). A matcher that starts with `mcp_` matches MCP tools only (those
  whose Tool has an `mcp`), against `mcp_<server>_<tool>`: `mcp_*` is every MCP tool,
  `mcp_github_*` the server `github`'s; a built-in tool never matches it. Matching
  takes time linear in the name (`NameGlob`).
- `http`: `url` (http:// or https://) and `events` (all four when left out).

What a hook is told: `event_json` (its stdin, an HTTP hook's body) and
`hook_environment` (a command's variables, without the provider keys).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

import attrs

from actors.process import command_environment

HookName = Literal["session_start", "session_end", "pre_tool_use", "post_tool_use"]


@attrs.frozen
class HookEvent:
    """What a hook is told (actors/policy/hooks.py): the event, the conversation, its
    workspace, and for a tool's events the tool, its arguments and (after) its result."""

    name: HookName
    conversation: str
    workspace: Path | None
    tool: str | None = None
    args: dict[str, Any] | None = None
    result: str | None = None
    state: str | None = None  # post_tool_use: how the call ended

EVENTS: tuple[HookName, ...] = get_args(HookName)
TOOL_EVENTS = ("pre_tool_use", "post_tool_use")
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 120.0
MAX_HOOKS = 100
MAX_COMMAND_CHARS = 8192
MAX_MATCHER_CHARS = 256
MAX_URL_CHARS = 2048
RESULT_ENV_CHARS = 2000
ARGS_ENV_CHARS = 32 * 1024  # an environment string is at most 128 KiB on Linux
RESULT_STDIN_CHARS = 256 * 1024

# ---- the matcher (pure) ----


class NameGlob:
    """A glob over a tool's name: `*` any run of characters, `?` one, the rest literal.

    The pieces between the stars have fixed lengths; each is placed at its leftmost fit
    after the one before (a later fit is never better: the next star takes up what lies
    between), the first at the start and the last at the end. Nothing is tried twice, so
    a match costs at most the name's length times the pattern's, with no backtracking."""

    __slots__ = ("pattern", "_pieces", "_starred")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._pieces = pattern.split("*")
        self._starred = len(self._pieces) > 1

    @staticmethod
    def _fits(piece: str, name: str, at: int) -> bool:
        if at + len(piece) > len(name):
            return False
        return all(p == "?" or p == name[at + i] for i, p in enumerate(piece))

    def match(self, name: str) -> bool:
        pieces = self._pieces
        if not self._starred:
            return len(name) == len(pieces[0]) and self._fits(pieces[0], name, 0)
        first, *middle, last = pieces
        if len(first) + len(last) > len(name) or not self._fits(first, name, 0):
            return False
        end = len(name) - len(last)
        if not self._fits(last, name, end):
            return False
        at = len(first)
        for piece in middle:
            while True:
                if at + len(piece) > end:
                    return False
                if self._fits(piece, name, at):
                    break
                at += 1
            at += len(piece)
        return True

    def __repr__(self) -> str:
        return f"NameGlob({self.pattern!r})"


# ---- the configuration (pure) ----


@attrs.frozen
class CommandHook:
    event: HookName
    command: str
    matcher: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    _glob: NameGlob | None = attrs.field(default=None, eq=False, repr=False, alias="glob")

    @property
    def key(self) -> tuple[str, ...]:
        return ("command", self.event, self.matcher or "", self.command)

    def matches(self, tool: str | None, is_mcp: Callable[[str], bool]) -> bool:
        """Whether the hook applies to a call of `tool` (see the module's docstring)."""
        if self._glob is None or tool is None:
            return True
        if self._glob.pattern.startswith("mcp_"):
            return is_mcp(tool) and self._glob.match("mcp_" + tool)
        return self._glob.match(tool)


@attrs.frozen
class HttpHook:
    url: str
    events: tuple[HookName, ...]

    @property
    def key(self) -> tuple[str, ...]:
        return ("http", self.url, *self.events)


@attrs.frozen
class HookConfig:
    commands: tuple[CommandHook, ...] = ()
    http: tuple[HttpHook, ...] = ()

    def table(self) -> dict[str, tuple[tuple[CommandHook, ...], tuple[HttpHook, ...]]]:
        """Per event that has a hook: its command hooks in file order, and its HTTP hooks."""
        out: dict[str, tuple[tuple[CommandHook, ...], tuple[HttpHook, ...]]] = {}
        for event in EVENTS:
            cmds = tuple(h for h in self.commands if h.event == event)
            posts = tuple(h for h in self.http if event in h.events)
            if cmds or posts:
                out[event] = (cmds, posts)
        return out


def parse_config(data: bytes) -> HookConfig:
    """hooks.json's text as a HookConfig; ValueError saying where and what is wrong."""
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"it is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError("it must hold a JSON object")
    unknown = sorted(set(raw) - {*EVENTS, "http"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (the keys are {', '.join(EVENTS)} and http)")
    commands: list[CommandHook] = []
    for event in EVENTS:
        for i, entry in enumerate(_list(raw, event)):
            commands.append(_command_hook(event, entry, f"{event}[{i}]"))
    posts = [_http_hook(entry, f"http[{i}]") for i, entry in enumerate(_list(raw, "http"))]
    if len(commands) + len(posts) > MAX_HOOKS:
        raise ValueError(f"it has more than {MAX_HOOKS} hooks")
    return HookConfig(tuple(commands), tuple(posts))


def _list(raw: dict[str, Any], key: str) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list")
    return value


def _fields(entry: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be an object")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r} (the fields are {', '.join(sorted(allowed))})")
    return entry


def _command_hook(event: HookName, entry: Any, where: str) -> CommandHook:
    fields = _fields(entry, where, {"command", "matcher", "timeout_s"})
    command = fields.get("command")
    if not isinstance(command, str) or not command.strip() or len(command) > MAX_COMMAND_CHARS or "\0" in command:
        raise ValueError(f"{where}: command must be a non-empty string of at most {MAX_COMMAND_CHARS} characters")
    matcher = fields.get("matcher")
    if matcher is not None:
        if event not in TOOL_EVENTS:
            raise ValueError(f"{where}: matcher applies to pre_tool_use and post_tool_use only")
        if not isinstance(matcher, str) or not matcher or len(matcher) > MAX_MATCHER_CHARS:
            raise ValueError(f"{where}: matcher must be a non-empty string of at most {MAX_MATCHER_CHARS} characters")
    timeout = fields.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise ValueError(f"{where}: timeout_s must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}")
    glob = NameGlob(matcher) if matcher is not None else None
    return CommandHook(event, command, matcher, float(timeout), glob=glob)


def _http_hook(entry: Any, where: str) -> HttpHook:
    fields = _fields(entry, where, {"url", "events"})
    url = fields.get("url")
    if not isinstance(url, str) or len(url) > MAX_URL_CHARS:
        raise ValueError(f"{where}: url must be a string of at most {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise ValueError(f"{where}: url is not a valid address") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{where}: url must be an http:// or https:// address with a host")
    events = fields.get("events", list(EVENTS))
    if not isinstance(events, list) or not events or any(e not in EVENTS for e in events):
        raise ValueError(f"{where}: events must be a non-empty list of {', '.join(EVENTS)}")
    return HttpHook(url, tuple(e for e in EVENTS if e in events))


def shown_url(url: str) -> str:
    """The URL without a user name or password, for a listing."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))


# ---- what a hook is told ----


def event_json(event: HookEvent) -> dict[str, Any]:
    """The event as the JSON a hook reads (stdin, an HTTP hook's body)."""
    result = event.result
    if result is not None and len(result) > RESULT_STDIN_CHARS:
        result = result[:RESULT_STDIN_CHARS]
    return {
        "event": event.name,
        "conversation": event.conversation,
        "workspace": str(event.workspace) if event.workspace is not None else None,
        "tool": event.tool,
        "args": event.args,
        "result": result,
        "state": event.state,
    }


def _env_text(text: str) -> str:
    # No NUL in a variable, and nothing that cannot be encoded.
    return text.replace("\0", "").encode("utf-8", "replace").decode("utf-8")


def hook_environment(event: HookEvent) -> dict[str, str]:
    """A command hook's environment: the daemon's without its own variables and the
    provider keys, and the event's variables."""
    env = command_environment()
    args = json.dumps(event.args, default=str) if event.args is not None else ""
    env.update({
        "BMOE_EVENT": event.name,
        "BMOE_CONVERSATION": event.conversation,
        "BMOE_WORKSPACE": _env_text(str(event.workspace)) if event.workspace is not None else "",
        "BMOE_TOOL": _env_text(event.tool or ""),
        "BMOE_TOOL_ARGS": args[:ARGS_ENV_CHARS],
        "BMOE_TOOL_RESULT": _env_text((event.result or "")[:RESULT_ENV_CHARS]),
        "BMOE_TOOL_STATE": _env_text(event.state or ""),
    })
    return env
