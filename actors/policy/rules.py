"""Always-allow rules: what the person said yes to for good, per workspace.

An approval card for a command or a file change offers a rule, the text that would be
remembered: for a command, the program and its leading plain words (`npm test`,
`cargo build`), offered only for one simple command; for a file change, the folder
of the path inside the workspace (`src/`). `approve_always` stores it in
`<data>/agent/permission-rules.json` (written whole, readable by this user only).

Later, in `ask`, a call a rule matches runs without a card and says which rule let it.
A command matches at word boundaries (`git log` matches `git log --oneline`, never
`git logger`) and only when it is itself one simple command whose words stay inside
the workspace; a path matches when it resolves inside the rule's folder. The policy
(actors/policy/modes.py) decides where rules apply at all: never in `read_only` or plan
mode, never for a network client.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

import attrs
import trio

from actors.fs.atomic import read_own_file, write_atomic
from actors.fs.paths import PathRefused, relative, resolve
from actors.ids import new_id, now
from actors.tools.shell_words import NotPlain, Word, split_pipeline

log = logging.getLogger("bmoe.rules")

RuleKind = Literal["command", "path"]
COMMAND_TOOLS = ("exec_shell_command",)
PATH_TOOLS = ("write_file", "edit_file")
MAX_RULES = 200  # per workspace
MAX_RULE_CHARS = 200
MAX_RULES_FILE_BYTES = 4 * 1024 * 1024
_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+:@%,-")


class BadRule(ValueError):
    """A rule that cannot be kept; the text says why."""


@attrs.frozen
class Rule:
    id: str
    kind: RuleKind
    text: str
    created: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "created": self.created}


def _simple_words(command: str) -> list[Word] | None:
    """The words of `command` when it is one simple command, else None."""
    try:
        stages = split_pipeline(command)
    except NotPlain:
        return None
    return stages[0] if len(stages) == 1 and stages[0] else None


def _plain_prefix(command: str, words: list[Word]) -> list[str]:
    """The leading words that are written plainly (no quote, escape or glob) and are
    neither an option nor path-like."""
    raw = command.split()
    out: list[str] = []
    for i, word in enumerate(words):
        text = word.text
        if i >= len(raw) or raw[i] != text or word.globbed or not text:
            break
        if text.startswith("-") or not set(text) <= _PLAIN:
            break  # an option, or a word with / . ~ = or other marks: a path or a value
        out.append(text)
    return out


def command_rule(command: str) -> str | None:
    """The rule a card for `command` offers, or None (not one simple command, or no
    plain program name to remember)."""
    words = _simple_words(command)
    if words is None or "=" in words[0].text:
        return None
    prefix = _plain_prefix(command, words)
    return " ".join(prefix) if prefix else None


def path_rule(rel: str) -> str:
    """The rule a card for a change of `rel` (workspace-relative) offers: its folder."""
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    return f"{folder}/" if folder else "./"


def check_rule(kind: str, text: str) -> tuple[RuleKind, str]:
    """A rule as a person may write it by hand; BadRule says what is wrong."""
    text = text.strip()
    if not text or len(text) > MAX_RULE_CHARS:
        raise BadRule(f"A rule is 1 to {MAX_RULE_CHARS} characters.")
    if kind == "command":
        if command_rule(text) != " ".join(text.split()):
            raise BadRule(
                f"{text!r} is not a command rule: give the program and its leading plain words "
                "(like `npm test`), without options, paths, quotes or operators."
            )
        return "command", " ".join(text.split())
    if kind == "path":
        parts = [p for p in text.strip("/").split("/") if p]
        if text.startswith("/") or any(p in (".", "..") for p in parts) or "\\" in text:
            raise BadRule(f"{text!r} is not a folder inside the workspace: give it relative, like `src/`.")
        return "path", ("/".join(parts) + "/") if parts else "./"
    raise BadRule("kind is `command` or `path`.")


def command_matches(rule: str, command: str) -> bool:
    """Whether `command` is one simple command that starts with the rule's words."""
    words = _simple_words(command)
    if words is None:
        return False
    wanted = rule.split()
    return _plain_prefix(command, words)[: len(wanted)] == wanted


def path_matches(rule: str, rel: str) -> bool:
    return rule == "./" or rel.startswith(rule)


class RuleBook:
    """The rules of every workspace, by workspace id, kept in one file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._rules: dict[str, list[Rule]] = {}
        self._lock = trio.Lock()
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(read_own_file(self._path, MAX_RULES_FILE_BYTES))
            for ws, rows in data.items():
                self._rules[str(ws)] = [Rule(str(r["id"]), r["kind"], str(r["text"]), float(r["created"]))
                                        for r in rows if r.get("kind") in ("command", "path")]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("the always-allow rules in %s cannot be read (%s); none apply until it is fixed",
                        self._path, exc)

    def listing(self, workspace_id: str) -> list[Rule]:
        return list(self._rules.get(workspace_id, ()))

    async def add(self, workspace_id: str, kind: str, text: str) -> Rule:
        """Keep a rule (the same one twice is kept once); BadRule when it cannot be."""
        kind, text = check_rule(kind, text)
        rules = self._rules.setdefault(workspace_id, [])
        for rule in rules:
            if rule.kind == kind and rule.text == text:
                return rule
        if len(rules) >= MAX_RULES:
            raise BadRule(f"This workspace has {MAX_RULES} rules already; remove some first.")
        rule = Rule(new_id("r"), kind, text, now())
        rules.append(rule)
        await self._save()
        return rule

    async def remove(self, workspace_id: str, rule_id: str) -> bool:
        rules = self._rules.get(workspace_id, [])
        kept = [r for r in rules if r.id != rule_id]
        if len(kept) == len(rules):
            return False
        self._rules[workspace_id] = kept
        await self._save()
        return True

    async def _save(self) -> None:
        data = json.dumps({ws: [r.to_json() for r in rules] for ws, rules in self._rules.items()}, indent=1)
        async with self._lock:
            await trio.to_thread.run_sync(lambda: write_atomic(self._path, data.encode(), mode=0o600))

    def allowing(self, workspace_id: str, workspace: Path, tool: str, args: dict[str, Any]) -> Rule | None:
        """The rule that lets this call run without a card, or None. It looks at the
        folder (a path's links, a command's words on disk): call it in a worker thread."""
        rules = self._rules.get(workspace_id)
        if not rules:
            return None
        if tool in COMMAND_TOOLS:
            command = args.get("command")
            if not isinstance(command, str):
                return None
            for rule in rules:
                if rule.kind == "command" and command_matches(rule.text, command):
                    return rule if command_stays_inside(command, workspace) else None
            return None
        if tool in PATH_TOOLS:
            raw = args.get("path")
            if not isinstance(raw, str) or not raw:
                return None
            try:
                rel = relative(workspace, resolve(workspace, raw))
            except PathRefused:
                return None
            if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
                return None
            return next((r for r in rules if r.kind == "path" and path_matches(r.text, rel)), None)
        return None


def command_stays_inside(command: str, workspace: Path) -> bool:
    """Whether every word of a simple command that could name a path (an option's value
    too: `--out=x`, `-ox`) stays inside the workspace, as written and through links,
    including paths that do not exist yet (a command a rule lets run may create them),
    and the walks its program makes do too (actors/tools/links.py)."""
    from actors.tools.shell import arguments_stay_inside

    words = _simple_words(command)
    if words is None:
        return False
    root = os.path.realpath(workspace)
    for word in words[1:]:
        text = word.text
        candidates = [text]
        if "=" in text:
            candidates.append(text.split("=", 1)[1])
        if text.startswith("-") and not text.startswith("--") and len(text) > 2:
            candidates.append(text[2:])
        for candidate in candidates:
            if candidate.startswith(("/", "~")):
                return False
            joined = os.path.normpath(os.path.join(root, candidate))
            if joined != root and not joined.startswith(root + os.sep):
                return False
            try:  # through links in the folders that exist (a new file's parent included)
                resolve(Path(root), candidate)
            except PathRefused:
                return False
    return arguments_stay_inside(command, workspace)


# Another agent's tool kinds (ACP) that rules speak of, as the built-in tool they are.
ACP_KINDS = {"execute": "exec_shell_command", "edit": "write_file"}


def as_builtin(tool: str | None, args: dict[str, Any] | None, file: str | None) -> tuple[str, dict[str, Any]] | None:
    """Another agent's call (its kind, raw input and the file it names) as the built-in
    call a rule matches, or None when rules do not speak of it."""
    builtin = ACP_KINDS.get(tool or "")
    if builtin == "exec_shell_command" and isinstance((args or {}).get("command"), str):
        return builtin, {"command": (args or {})["command"]}
    if builtin == "write_file" and file:
        return builtin, {"path": file}
    return None


def kind_of(tool: str | None) -> RuleKind:
    """The kind of rule a card of `tool` (built-in or another agent's) offers."""
    return "command" if tool in COMMAND_TOOLS or ACP_KINDS.get(tool or "") in COMMAND_TOOLS else "path"


def offered_rule(tool: str, args: dict[str, Any], workspace: Path | None) -> tuple[RuleKind, str] | None:
    """The rule an approval card for this call offers, or None (resolves a path: call
    it in a worker thread)."""
    if tool in COMMAND_TOOLS:
        command = args.get("command")
        text = command_rule(command) if isinstance(command, str) else None
        return ("command", text) if text else None
    if tool in PATH_TOOLS and workspace is not None:
        raw = args.get("path")
        if not isinstance(raw, str) or not raw:
            return None
        try:
            rel = relative(workspace, resolve(workspace, raw))
        except PathRefused:
            return None
        return ("path", path_rule(rel)) if rel != "." else None
    return None
