"""The checkpoints of every workspace: one git object store each, in the data folder
(`<data>/agent/checkpoints/<workspace id>.git`, actors/checkpoints/git.py).

A run that may change its workspace is wrapped by the conversation actor in
`before_run` (kept once per message: the first run of it) and `after_run` (the last).
Each is a commit under `refs/bmoe/<conversation>/m-<item>/{before,after}`; a rewind
is one too (`r-<id>`), so it can be rewound in turn. Refs keep what they name through
git's own pruning; `tidy` drops the oldest (never a conversation's last entry) by age
and by the total size set in `<data>/agent/checkpoints/limits.json`
(`{"max_mib": 2048, "max_age_days": 30}`, the defaults), then lets git prune.

Snapshots of one workspace share its index, so they take turns (a lock per
workspace). Every method raises GitFailed when git cannot do it, and Cancelled leaves
the store consistent (a ref is written last).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import trio

from actors.checkpoints import history, restore
from actors.checkpoints.git import EMPTY_TREE, GitFailed, GitStore, Snapshot
from actors.checkpoints.history import Blob, Entry, FileChange
from actors.errors import ChangedSince, NotFound

log = logging.getLogger("bmoe.checkpoints")

LIMITS_FILE = "limits.json"
DEFAULT_MAX_MIB = 2048
DEFAULT_MAX_AGE_DAYS = 30.0
TIDY_EVERY = 20  # after-run checkpoints between two looks at the store's size
MAX_DIFF_BYTES = 1024 * 1024  # a diff answered is cut here (and says so)
CAT_BATCH = 64  # files read from the store in one git process
_DIFF_CACHE = 512  # diffs between two trees kept (they never change)


@attrs.frozen
class RewindResult:
    rewind: str | None  # the rewind's own entry (rewind it to undo this one); None when nothing changed
    restored: tuple[str, ...]
    removed: tuple[str, ...]
    not_restorable: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"rewind": self.rewind, "restored": list(self.restored), "removed": list(self.removed),
                "not_restorable": list(self.not_restorable)}


class _Workspace:
    def __init__(self, git: GitStore) -> None:
        self.git = git
        self.lock = trio.Lock()
        self.after_runs = 0


class Checkpoints:
    """See the module docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._stores: dict[tuple[str, Path], _Workspace] = {}
        self._diffs: dict[tuple[str, str], list[FileChange]] = {}

    def _ws(self, workspace_id: str, path: Path) -> _Workspace:
        key = (workspace_id, path)
        ws = self._stores.get(key)
        if ws is None:
            ws = self._stores[key] = _Workspace(GitStore(self.root / f"{workspace_id}.git", path))
        return ws

    # ---- taking ----

    async def _commit(self, git: GitStore, snap: Snapshot, ref: str, key: str, phase: str,
                      of: str | None = None) -> None:
        text = history.message(key, phase, time.time_ns(), snap.skipped, of)
        commit = (await git.git("commit-tree", snap.tree, "-m", text)).decode().strip()
        await git.git("update-ref", ref, commit)

    async def before_run(self, workspace_id: str, path: Path, conversation: str, item: str) -> None:
        """Checkpoint the workspace before a run of the message `item`, unless an earlier
        run of the same message already did."""
        ws = self._ws(workspace_id, path)
        ref = _ref(conversation, history.RUN + item, "before")
        async with ws.lock:
            await ws.git.ensure()
            if await _ref_exists(ws.git, ref):
                return
            snap = await ws.git.snapshot()
            await self._commit(ws.git, snap, ref, history.RUN + item, "before")

    async def after_run(self, workspace_id: str, path: Path, conversation: str, item: str) -> bool:
        """Checkpoint the workspace after a run of `item` (its before is kept); True
        when the store is due a look at its size (`tidy`)."""
        ws = self._ws(workspace_id, path)
        async with ws.lock:
            snap = await ws.git.snapshot()
            await self._commit(ws.git, snap, _ref(conversation, history.RUN + item, "after"),
                               history.RUN + item, "after")
            ws.after_runs += 1
            return ws.after_runs % TIDY_EVERY == 1

    async def settle(self, workspace_id: str, path: Path, conversation: str) -> None:
        """A run the daemon died in has a before and no after: its after is the
        workspace now (called when the conversation's actor starts, before it serves)."""
        git = self._ws(workspace_id, path).git
        if not (git.git_dir / "HEAD").exists():
            return
        entries = await self._entries(git, conversation)
        if entries and entries[-1].after is None and entries[-1].kind == "run":
            await self.after_run(workspace_id, path, conversation, entries[-1].item)

    # ---- reading ----

    async def _entries(self, git: GitStore, conversation: str) -> list[Entry]:
        if not (git.git_dir / "HEAD").exists():
            return []
        fmt = "%(refname)%00%(objectname)%00%(tree)%00%(contents:subject)"
        out = await git.git("for-each-ref", f"--format={fmt}", f"refs/bmoe/{conversation}/")
        rows = []
        for line in out.decode("utf-8", "replace").splitlines():
            parts = line.split("\0")
            if len(parts) != 4:
                continue
            name, commit, tree, text = parts
            segs = name.split("/")
            if len(segs) != 5:
                continue
            rows.append((segs[3], f"{segs[4]} {commit}", tree, text))
        return history.entries_from_refs(rows)

    async def _diff(self, git: GitStore, a: str, b: str) -> list[FileChange]:
        cached = self._diffs.get((a, b))
        if cached is None:
            out = await git.git("diff-tree", "-r", "-z", "--no-renames", "--raw", "--numstat", a, b)
            cached = history.parse_diff(out)
            if len(self._diffs) >= _DIFF_CACHE:
                self._diffs.pop(next(iter(self._diffs)))
            self._diffs[(a, b)] = cached
        return cached

    async def _blobs(self, git: GitStore, tree: str, paths: Sequence[str]) -> dict[str, Blob]:
        """(mode, id) of each of `paths` that `tree` has."""
        out: dict[str, Blob] = {}
        for start in range(0, len(paths), 500):
            chunk = paths[start:start + 500]
            raw = await git.git("ls-tree", "-r", "-z", "--full-tree", tree, "--", *chunk)
            for row in raw.decode("utf-8", "surrogateescape").split("\0"):
                if "\t" in row:
                    head, name = row.split("\t", 1)
                    mode, _, oid = head.split(" ")
                    out[name] = (mode, oid)
        return out

    async def _changes(self, git: GitStore, entries: Sequence[Entry], now: str) -> list[list[FileChange]]:
        return [await self._diff(git, e.before.tree, e.after.tree if e.after else now) for e in entries]

    async def changes(self, workspace_id: str, path: Path, conversation: str,
                      messages: Sequence[str]) -> list[dict[str, object]]:
        """Each entry that changed files, in order: a message's runs (`messages`: the
        conversation's message ids now; a message dropped since is left out) or a
        rewind; each file with its counts, and `changed_since` where the workspace now
        differs from what the last entry that changed it left."""
        ws = self._ws(workspace_id, path)
        async with ws.lock:
            entries = [e for e in await self._entries(ws.git, conversation)
                       if e.kind == "rewind" or e.item in messages]
            if not entries:
                return []
            snap = await ws.git.snapshot()
            per = await self._changes(ws.git, entries, snap.tree)
            last = history.last_touch(list(zip(entries, per, strict=True)))
            now = await self._blobs(ws.git, snap.tree, sorted(last))
        out: list[dict[str, object]] = []
        for entry, files in zip(entries, per, strict=True):
            skipped = sorted(set(entry.before.skipped) | set(entry.after.skipped if entry.after else ()))
            if not files and not skipped:
                continue
            rows = []
            for change in files:
                row = change.to_json()
                row["changed_since"] = (last[change.path] == entry.key
                                        and (change.path in snap.skipped or now.get(change.path) != change.after))
                rows.append(row)
            out.append({
                "item": entry.item, "kind": entry.kind, "of": entry.of,
                "at": _iso(entry.before.at_ns), "ended": _iso(entry.after.at_ns) if entry.after else None,
                "files": rows, "not_restorable": skipped,
            })
        return out

    async def diff(self, workspace_id: str, path: Path, conversation: str, item: str,
                   file: str | None = None) -> tuple[str, bool]:
        """The unified diff of an entry (of one of its files); and whether it was cut at
        MAX_DIFF_BYTES. NotFound for an entry or file it does not have."""
        ws = self._ws(workspace_id, path)
        async with ws.lock:
            entry = next((e for e in await self._entries(ws.git, conversation) if e.item == item), None)
            if entry is None:
                raise NotFound("That message changed no files (or its checkpoint is gone).")
            after = entry.after.tree if entry.after else (await ws.git.snapshot()).tree
            if file is not None and file not in {c.path for c in await self._diff(ws.git, entry.before.tree, after)}:
                raise NotFound("That run did not change that file.")
            args = ["diff-tree", "-p", "-r", "--no-renames", "--no-color", "--full-index", entry.before.tree, after]
            out = await ws.git.git(*args, *(["--", file] if file is not None else []))
        cut = len(out) > MAX_DIFF_BYTES
        return out[:MAX_DIFF_BYTES].decode("utf-8", "replace"), cut

    # ---- rewinding ----

    async def rewind(self, workspace_id: str, path: Path, conversation: str, item: str,
                     messages: Sequence[str], *, force: bool = False) -> RewindResult:
        """Put every file the entries from `item` on changed back as it was before it.
        ChangedSince (nothing changed) when a file was changed since by someone else,
        unless `force`. The rewind is itself an entry (`r-<id>`), so it can be rewound."""
        ws = self._ws(workspace_id, path)
        async with ws.lock:
            entries = [e for e in await self._entries(ws.git, conversation)
                       if e.kind == "rewind" or e.item in messages]
            undone = history.entries_from(entries, item, messages)
            if not undone:
                if item not in messages and not any(e.item == item for e in entries):
                    raise NotFound("There is no such message or rewind in this conversation.")
                return RewindResult(None, (), (), ())
            if all(e.after is not None for e in undone):
                # Only the paths those entries changed matter (are they as the entries
                # left them? what do they go back to?): they are taken as they are now
                # without listing the whole workspace. So the rewind's own entry holds
                # its paths alone, and a change someone made elsewhere meanwhile is left
                # to the next snapshot rather than undone with the rewind.
                per = await self._changes(ws.git, undone, EMPTY_TREE)
                paths = sorted({c.path for changes in per for c in changes})
                snap = await ws.git.snapshot(only=paths)
            else:  # a run the daemon died in, not settled: its changes run to now
                snap = await ws.git.snapshot()
                per = await self._changes(ws.git, undone, snap.tree)
                paths = sorted({c.path for changes in per for c in changes})
            now = await self._blobs(ws.git, snap.tree, paths)
            plan = history.plan_rewind(per, now, snap.skipped)
            if plan.conflicts and not force:
                raise ChangedSince("Files were changed since that run; they are not overwritten. "
                                   "Rewind with force to put them back anyway.", plan.conflicts)
            base = undone[0].before
            target = await self._blobs(ws.git, base.tree, list(plan.paths))
            keep_out = set(base.skipped)
            writes = {p: b for p, b in target.items() if b is not None and p not in keep_out and now.get(p) != b}
            removals = [p for p in plan.paths if p not in target and p not in keep_out and p in now]
            removals += [p for p in plan.paths if p not in target and p not in keep_out and p in snap.skipped]
            data = await self._read_blobs(ws.git, writes)
            rewind_id = f"{time.time_ns():x}"
            key = history.REWIND + rewind_id
            await self._commit(ws.git, snap, _ref(conversation, key, "before"), key, "before", of=item)
            try:
                await trio.to_thread.run_sync(restore.apply, path, data, removals)
            finally:
                with trio.CancelScope(shield=True):
                    # The rewind's own paths, without listing the whole workspace again.
                    gone = set(removals)
                    after = await ws.git.snapshot(only=sorted(set(writes) | gone),
                                                  still_skipped=[p for p in snap.skipped if p not in gone])
                    await self._commit(ws.git, after, _ref(conversation, key, "after"), key, "after", of=item)
        return RewindResult(rewind_id, tuple(sorted(writes)), tuple(sorted(removals)),
                            tuple(sorted(keep_out & set(plan.paths))))

    async def _read_blobs(self, git: GitStore, blobs: Mapping[str, Blob]) -> dict[str, tuple[str, bytes]]:
        out: dict[str, tuple[str, bytes]] = {}
        items = [(p, b) for p, b in blobs.items() if b is not None]
        for start in range(0, len(items), CAT_BATCH):
            chunk = items[start:start + CAT_BATCH]
            raw = await git.git("cat-file", "--batch", stdin="".join(f"{b[1]}\n" for _, b in chunk).encode())
            pos = 0
            for rel, (mode, _) in chunk:
                nl = raw.index(b"\n", pos)
                size = int(raw[pos:nl].split(b" ")[2])
                out[rel] = (mode, raw[nl + 1:nl + 1 + size])
                pos = nl + 1 + size + 1
        return out

    # ---- forgetting ----

    async def forget(self, workspace_id: str, path: Path, conversation: str,
                     items: Sequence[str] | None = None) -> None:
        """Drop a conversation's checkpoints (all, or the messages `items`')."""
        ws = self._ws(workspace_id, path)
        if not (ws.git.git_dir / "HEAD").exists():
            return
        async with ws.lock:
            out = await ws.git.git("for-each-ref", "--format=%(refname)", f"refs/bmoe/{conversation}/")
            names = out.decode("utf-8", "replace").split()
            if items is not None:
                wanted = {f"{history.RUN}{i}" for i in items}
                names = [n for n in names if n.split("/")[3] in wanted]
            if names:
                await ws.git.git("update-ref", "--stdin", stdin="".join(f"delete {n}\n" for n in names).encode())

    async def tidy(self, workspace_id: str, path: Path, *, now_ns: int | None = None) -> int:
        """Keep the store within its age and size (limits.json): drop the oldest entries
        (never a conversation's last) and let git prune; the entries dropped."""
        ws = self._ws(workspace_id, path)
        max_mib, max_age_days = read_limits(self.root / LIMITS_FILE)
        now_ns = now_ns if now_ns is not None else time.time_ns()
        dropped = 0
        for _ in range(4):
            async with ws.lock:
                size = await store_size(ws.git)
                out = await ws.git.git("for-each-ref", "--format=%(refname)%00%(contents:subject)", "refs/bmoe/")
                entries = _droppable(out.decode("utf-8", "replace"))
                old = [n for at, n in entries if now_ns - at > max_age_days * 86400e9]
                over = size > max_mib * 1024 * 1024
                going = old or ([n for _, n in entries[: max(1, len(entries) // 4)]] if over else [])
                if not going:
                    return dropped
                lines = "".join(f"delete {prefix}/{phase}\n" for prefix in going for phase in ("before", "after"))
                await ws.git.git("update-ref", "--stdin", stdin=lines.encode(), check=False)
                await ws.git.git("gc", "--prune=now", "--quiet")
                dropped += len(going)
        return dropped


def _droppable(listing: str) -> list[tuple[int, str]]:
    """(time, ref prefix) of every entry but each conversation's last, oldest first."""
    per_conv: dict[str, dict[str, int]] = {}
    for line in listing.splitlines():
        name, _, text = line.partition("\0")
        segs = name.split("/")
        if len(segs) != 5 or segs[4] != "before":
            continue
        try:
            at = int(json.loads(text)["at_ns"])
        except (ValueError, KeyError, TypeError):
            at = 0
        per_conv.setdefault(segs[2], {})["/".join(segs[:4])] = at
    out: list[tuple[int, str]] = []
    for refs in per_conv.values():
        ordered = sorted((at, n) for n, at in refs.items())
        out.extend(ordered[:-1])
    return sorted(out)


async def store_size(git: GitStore) -> int:
    """The bytes the store takes (loose objects and packs)."""
    out = (await git.git("count-objects", "-v")).decode()
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return (int(fields.get("size", 0)) + int(fields.get("size-pack", 0))) * 1024


def read_limits(path: Path) -> tuple[float, float]:
    """(max MiB, max age in days) from limits.json; the defaults where it says none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}

    def positive(name: str, default: float) -> float:
        value = data.get(name)
        return float(value) if isinstance(value, int | float) and value > 0 else default

    return positive("max_mib", DEFAULT_MAX_MIB), positive("max_age_days", DEFAULT_MAX_AGE_DAYS)


async def _ref_exists(git: GitStore, ref: str) -> bool:
    out = await git.git("for-each-ref", "--format=%(refname)", ref)
    return bool(out.strip())


def _ref(conversation: str, key: str, phase: str) -> str:
    return f"refs/bmoe/{conversation}/{key}/{phase}"


def _iso(at_ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at_ns / 1e9))


__all__ = ["Checkpoints", "GitFailed", "RewindResult"]
