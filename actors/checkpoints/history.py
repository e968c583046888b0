"""What a conversation's checkpoints say, with no I/O: the entries (a run's, or a rewind's),
the files each changed, and which files a rewind puts back and which it must not touch.

An entry is a message's runs (`m-<item id>`) or a rewind (`r-<id>`), each with a tree
taken before and one after. Entries are ordered by when their before-tree was taken.
A rewind to an entry puts every file the entries from it on changed back as it was in
that entry's before-tree; a file whose content now is not the after-tree of the last
entry that changed it was changed by someone else since (the person), and is not
overwritten unless forced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import attrs

RUN = "m-"
REWIND = "r-"
Kind = Literal["run", "rewind"]
Status = Literal["added", "modified", "deleted"]
# (mode, object id) of a path in a tree; None where the tree has no such file.
Blob = tuple[str, str] | None


@attrs.frozen
class Side:
    """One of an entry's two trees: the commit, its tree and what it names."""

    commit: str
    tree: str
    at_ns: int
    skipped: tuple[str, ...] = ()


@attrs.frozen
class Entry:
    key: str  # "m-<item id>" | "r-<rewind id>"
    before: Side
    after: Side | None  # None: the run is going on, or the daemon died in it
    of: str | None = None  # a rewind's: the item it went back to

    @property
    def kind(self) -> Kind:
        return "rewind" if self.key.startswith(REWIND) else "run"

    @property
    def item(self) -> str:
        return self.key[2:]


@attrs.frozen
class FileChange:
    path: str
    status: Status
    before: Blob
    after: Blob
    added: int | None = None  # lines; None for a binary file
    removed: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "status": self.status, "added": self.added or 0,
                "removed": self.removed or 0, "binary": self.added is None}


def message(key: str, phase: str, at_ns: int, skipped: Sequence[str], of: str | None) -> str:
    """A checkpoint commit's message: one line of JSON that says what it is."""
    return json.dumps({"key": key, "phase": phase, "at_ns": at_ns, "skipped": list(skipped), "of": of},
                      separators=(",", ":"))


def entries_from_refs(rows: Iterable[tuple[str, str, str, str]]) -> list[Entry]:
    """The entries, in order, from (ref name's last two parts: key, phase; commit; tree;
    message) rows; rows that do not read are left out."""
    sides: dict[str, dict[str, Side]] = {}
    ofs: dict[str, str | None] = {}
    for key, phase_commit, tree, text in rows:
        phase, _, commit = phase_commit.partition(" ")
        try:
            meta = json.loads(text)
            side = Side(commit, tree, int(meta["at_ns"]), tuple(str(p) for p in meta.get("skipped") or ()))
        except (ValueError, KeyError, TypeError):
            continue
        if phase in ("before", "after"):
            sides.setdefault(key, {})[phase] = side
            if phase == "before":
                ofs[key] = meta.get("of")
    out = [Entry(key, s["before"], s.get("after"), ofs.get(key)) for key, s in sides.items() if "before" in s]
    return sorted(out, key=lambda e: (e.before.at_ns, e.key))


def parse_diff(raw: bytes) -> list[FileChange]:
    """`git diff-tree -r -z --no-renames --raw --numstat` output, as file changes."""
    tokens = raw.decode("utf-8", "surrogateescape").split("\0")
    heads: dict[str, tuple[Blob, Blob, Status]] = {}
    counts: dict[str, tuple[int | None, int | None]] = {}
    order: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith(":") and i + 1 < len(tokens):
            old_mode, new_mode, old_id, new_id, letter = tok[1:].split(" ")[:5]
            path = tokens[i + 1]
            before: Blob = None if letter == "A" else (old_mode, old_id)
            after: Blob = None if letter == "D" else (new_mode, new_id)
            status: Status = "added" if letter == "A" else "deleted" if letter == "D" else "modified"
            heads[path] = (before, after, status)
            order.append(path)
            i += 2
            continue
        if tok.count("\t") >= 2:
            plus, minus, path = tok.split("\t", 2)
            counts[path] = (None, None) if plus == "-" else (int(plus), int(minus))
        i += 1
    out = []
    for path in order:
        before, after, status = heads[path]
        added, removed = counts.get(path, (None, None))
        out.append(FileChange(path, status, before, after, added, removed))
    return out


def entries_from(entries: Sequence[Entry], target: str, message_order: Sequence[str]) -> list[Entry]:
    """The entries a rewind to `target` (an entry's item, or a message with no entry of
    its own) undoes: the first entry at or after it, and every later one."""
    keys = {e.item: n for n, e in enumerate(entries)}
    if target in keys:
        return list(entries[keys[target]:])
    if target not in message_order:
        return []
    later = set(message_order[message_order.index(target):])
    first = next((n for n, e in enumerate(entries) if e.kind == "run" and e.item in later), None)
    return [] if first is None else list(entries[first:])


@attrs.frozen
class RewindPlan:
    paths: tuple[str, ...]  # every file the entries changed
    expected: Mapping[str, Blob]  # each one's content after the last entry that changed it
    conflicts: tuple[str, ...]  # the ones changed since (by the person): not overwritten unless forced


def plan_rewind(changes: Sequence[Sequence[FileChange]], now: Mapping[str, Blob],
                skipped_now: Iterable[str] = ()) -> RewindPlan:
    """Which files a rewind puts back, from the changes of each entry it undoes (in order)
    and the workspace's content now (`now`: every path of `changes` that exists; a path
    too big to keep now is in `skipped_now`, so it is changed since)."""
    expected: dict[str, Blob] = {}
    for entry_changes in changes:
        for change in entry_changes:
            expected[change.path] = change.after
    big = set(skipped_now)
    conflicts = tuple(sorted(p for p, blob in expected.items() if p in big or now.get(p) != blob))
    return RewindPlan(tuple(sorted(expected)), expected, conflicts)


def last_touch(changes: Sequence[tuple[Entry, Sequence[FileChange]]]) -> dict[str, str]:
    """For each path, the key of the last entry that changed it."""
    out: dict[str, str] = {}
    for entry, entry_changes in changes:
        for change in entry_changes:
            out[change.path] = entry.key
    return out
