"""Always-allow rules: what the person said yes to for good, per workspace.

An approval card for a command or a file change offers the rules it could keep,
narrowest first (`offered_rules`), each saying how much it covers:

- a file change: the file itself (an `exact` path rule, `src/app.py`), then its folder
  (`src/`, every file under it) and the whole workspace (`./`);
- a command: the command itself (an `exact` command rule: the program and all its
  words, `python app.py`), then its leading plain words (`cargo build`: every command
  that starts with them) and the program alone (`python`: every `python` command),
  offered only for one simple command.

`approve_always` keeps the narrowest unless the person picked a wider one of those
offered; the rules go to `<data>/agent/permission-rules.json` (written whole, readable
by this user only; an entry without `exact` is a folder or a leading-words rule, as
every rule kept before exact rules existed).

Later, in `ask`, a call a rule matches runs without a card and says which rule let it.
A leading-words rule matches at word boundaries (`git log` matches `git log --oneline`,
never `git logger`), an exact one the same words only, and either only when the call is
itself one simple command whose words stay inside the workspace; a path matches when it
resolves to the rule's file, or inside the rule's folder. The policy
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
# How much an offered rule covers, for the card's words: one file, a folder's files, the
# workspace's files, one command, every command starting with some words.
Covers = Literal["file", "folder", "workspace", "command", "commands"]
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
    exact: bool = False  # this one file, this one command (else a folder, leading words)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "created": self.created, "exact": self.exact}


@attrs.frozen
class Offer:
    """One rule an approval card offers to keep."""

    kind: RuleKind
    text: str
    exact: bool
    covers: Covers

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "exact": self.exact, "covers": self.covers}

    @classmethod
    def from_json(cls, data: Any) -> Offer | None:
        """An offer as a card keeps it, or None when it is not one (a damaged record)."""
        if not isinstance(data, dict):
            return None
        kind, text, exact, covers = data.get("kind"), data.get("text"), data.get("exact"), data.get("covers")
        if kind not in ("command", "path") or not isinstance(text, str) or not isinstance(exact, bool):
            return None
        if covers not in ("file", "folder", "workspace", "command", "commands"):
            return None
        return cls(kind, text, exact, covers)


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
    """The leading-words rule for `command`: the program and its leading plain words,
    or None (not one simple command, or no plain program name to remember)."""
    words = _simple_words(command)
    if words is None or "=" in words[0].text:
        return None
    prefix = _plain_prefix(command, words)
    return " ".join(prefix) if prefix else None


def exact_command_rule(command: str) -> str | None:
    """The exact rule for `command` (the command as written, trimmed), or None when it
    is not one simple command that starts with a program's name, or is too long to keep."""
    text = command.strip()
    words = _simple_words(text)
    if words is None or "=" in words[0].text or not text or len(text) > MAX_RULE_CHARS:
        return None
    return text


def command_offers(command: str) -> list[Offer]:
    """What a card for `command` offers, narrowest first: the command itself, then
    every command that starts with its leading plain words, then with its program."""
    out: list[Offer] = []
    exact = exact_command_rule(command)
    if exact is not None:
        out.append(Offer("command", exact, True, "command"))
    words = _simple_words(command)
    prefix = _plain_prefix(command, words) if words is not None and "=" not in words[0].text else []
    for text in dict.fromkeys([" ".join(prefix), prefix[0] if prefix else ""]):
        if text and len(text) <= MAX_RULE_CHARS:
            out.append(Offer("command", text, False, "commands"))
    return out


def path_rule(rel: str) -> str:
    """The folder rule for a change of `rel` (workspace-relative): its folder, `./` for
    a file at the workspace's root."""
    folder = rel.rsplit("/", 1)[0] if "/" in rel else ""
    return f"{folder}/" if folder else "./"


def path_offers(rel: str) -> list[Offer]:
    """What a card for a change of `rel` (workspace-relative) offers, narrowest first:
    the file, its folder (when it is not the workspace's root), the whole workspace."""
    out = [Offer("path", rel, True, "file")] if len(rel) <= MAX_RULE_CHARS else []
    folder = path_rule(rel)
    if folder != "./" and len(folder) <= MAX_RULE_CHARS:
        out.append(Offer("path", folder, False, "folder"))
    out.append(Offer("path", "./", False, "workspace"))
    return out


def check_rule(kind: str, text: str, exact: bool = False) -> tuple[RuleKind, str]:
    """A rule as it is kept: BadRule says what is wrong. Not `exact`, a command rule is
    leading plain words and a path rule a folder (`src` is kept as `src/`; `./` or `.`
    is the whole workspace); `exact`, a command is one simple command and
    a path one file."""
    text = text.strip()
    if not text or len(text) > MAX_RULE_CHARS:
        raise BadRule(f"A rule is 1 to {MAX_RULE_CHARS} characters.")
    if kind == "command":
        if exact:
            if exact_command_rule(text) is None:
                raise BadRule(f"{text!r} is not one simple command (a program and its words, without operators).")
            return "command", text
        if command_rule(text) != " ".join(text.split()):
            raise BadRule(
                f"{text!r} is not a command rule: give the program and its leading plain words "
                "(like `npm test`), without options, paths, quotes or operators."
            )
        return "command", " ".join(text.split())
    if kind == "path":
        parts = [p for p in text.split("/") if p]
        if parts == ["."] and not exact:
            parts = []  # `./`: the workspace, as a card offers it
        if text.startswith("/") or any(p in (".", "..") for p in parts) or "\\" in text:
            what = "a file" if exact else "a folder"
            raise BadRule(f"{text!r} is not {what} inside the workspace: give it relative, like `src/`.")
        if exact:
            if not parts or text.endswith("/"):
                raise BadRule(f"{text!r} is not a file: give its path in the workspace, like `src/app.py`.")
            return "path", "/".join(parts)
        return "path", ("/".join(parts) + "/") if parts else "./"
    raise BadRule("kind is `command` or `path`.")


def command_matches(rule: str, command: str, exact: bool = False) -> bool:
    """Whether `command` is one simple command that starts with the rule's words (with
    `exact`: that has the rule's words, all of them and no more)."""
    words = _simple_words(command)
    if words is None:
        return False
    if exact:
        return words == _simple_words(rule)
    wanted = rule.split()
    return _plain_prefix(command, words)[: len(wanted)] == wanted


def path_matches(rule: str, rel: str, exact: bool = False) -> bool:
    """Whether the workspace-relative `rel` is the rule's file (`exact`) or inside its folder."""
    if exact:
        return rel == rule
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
                self._rules[str(ws)] = [Rule(str(r["id"]), r["kind"], str(r["text"]), float(r["created"]),
                                             r.get("exact") is True)
                                        for r in rows if r.get("kind") in ("command", "path")]
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("the always-allow rules in %s cannot be read (%s); none apply until it is fixed",
                        self._path, exc)

    def listing(self, workspace_id: str) -> list[Rule]:
        return list(self._rules.get(workspace_id, ()))

    def check(self, workspace_id: str, kind: str, text: str, exact: bool = False) -> Rule:
        """The rule `add` would keep (one kept already, or a new one not kept yet);
        BadRule when it cannot be kept. No I/O: a card's answer asks it first, so a rule
        that cannot be kept refuses the answer instead of letting the call run alone."""
        kind, text = check_rule(kind, text, exact)
        rules = self._rules.get(workspace_id, [])
        for rule in rules:
            if (rule.kind, rule.text, rule.exact) == (kind, text, exact):
                return rule
        if len(rules) >= MAX_RULES:
            raise BadRule(f"This workspace has {MAX_RULES} rules already; remove some first.")
        return Rule(new_id("r"), kind, text, now(), exact)

    async def add(self, workspace_id: str, kind: str, text: str, exact: bool = False) -> Rule:
        """Keep a rule (the same one twice is kept once); BadRule when it cannot be."""
        rule = self.check(workspace_id, kind, text, exact)
        rules = self._rules.setdefault(workspace_id, [])
        if rule not in rules:
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
                if rule.kind == "command" and command_matches(rule.text, command, rule.exact):
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
            return next((r for r in rules if r.kind == "path" and path_matches(r.text, rel, r.exact)), None)
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


def offered_rules(tool: str, args: dict[str, Any], workspace: Path | None) -> list[Offer]:
    """The rules an approval card for this call offers, narrowest first; none for a call
    rules do not speak of (resolves a path: call it in a worker thread)."""
    if tool in COMMAND_TOOLS:
        command = args.get("command")
        return command_offers(command) if isinstance(command, str) else []
    if tool in PATH_TOOLS and workspace is not None:
        raw = args.get("path")
        if not isinstance(raw, str) or not raw:
            return []
        try:
            rel = relative(workspace, resolve(workspace, raw))
        except PathRefused:
            return []
        if rel == "." or rel == ".." or rel.startswith("../"):
            return []
        return path_offers(rel)
    return []


def card_fields(offers: list[Offer]) -> dict[str, Any]:
    """What a waiting card carries of its offers: `rule`, the narrowest one's text (what
    `approve_always` keeps unless another is picked), and `rules`, all of them."""
    if not offers:
        return {"rule": None, "rules": None}
    return {"rule": offers[0].text, "rules": [o.to_json() for o in offers]}


def chosen_offer(rules: list[Any] | None, rule: str | None, tool: str | None, picked: dict[str, Any] | None) -> Offer:
    """The rule to keep for a card (its `rules` and `rule`, of a call of `tool`): the one
    `picked` when it is one of those offered, else the narrowest. A card kept before
    cards offered several (only `rule`) offers its `rule` as it was then. BadRule when
    the card offers none, or `picked` is not among them."""
    offers = [o for o in (Offer.from_json(r) for r in rules or ()) if o is not None]
    if not offers and rule:
        kind = kind_of(tool)
        covers: Covers = "commands" if kind == "command" else "workspace" if rule == "./" else "folder"
        offers = [Offer(kind, rule, False, covers)]
    if not offers:
        raise BadRule("This card offers no rule to keep; approve it once instead.")
    if picked is None:
        return offers[0]
    wanted = (picked.get("kind"), picked.get("text"), picked.get("exact", False))
    for offer in offers:
        if (offer.kind, offer.text, offer.exact) == wanted:
            return offer
    raise BadRule(
        "That rule is not one this card offers; pick one of its `rules`: "
        + ", ".join(f"{o.text!r} ({o.covers})" for o in offers) + "."
    )
