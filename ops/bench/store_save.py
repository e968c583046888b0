"""Store save: the time to save one completed item in a conversation of 2,000 items.

A conversation of 2,000 items of realistic sizes is built in a repeating pattern of
a user message (~300 B), an assistant reply (~1 KB) that calls a tool, the tool's
card with its result (~4 KB), and a final assistant reply (~1 KB). Each of 50
saves completes the last item (an assistant reply, then a tool card, alternately,
as a run does) and awaits `Store.save_conversation` on the whole record, as the
conversation's saver does. The store writes under a fresh temporary folder (in the
data folder's parent instead when /tmp is a tmpfs, so that the fsyncs are real).
The figures are the median and p95 of those 50 saves.

For the diagnosis it also times the parts of one save on their own (the store's
encoding, the atomic write with its two fsyncs, and for reference the whole record's
`to_json` and JSON), and the longest stall of the trio loop during the saves (a task
ticking every millisecond), since the encoding runs in a worker thread but holds the
GIL.

    .venv/bin/python ops/bench/store_save.py [--items 2000] [--saves 50] [--dir PATH] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import string
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args, percentile  # noqa: E402

TARGET_MS = 30.0
USER_BYTES = 300
ASSISTANT_BYTES = 1024
TOOL_BYTES = 4096


def prose(rng: random.Random, size: int) -> str:
    words = []
    total = 0
    while total < size:
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
        words.append(w)
        total += len(w) + 1
    text = " ".join(words)[:size]
    return "\n".join(text[i : i + 80] for i in range(0, len(text), 80))


def make_items(n: int, rng: random.Random) -> list[Any]:
    from actors.ids import new_id
    from actors.record.items import Item, ToolCall

    items: list[Item] = []
    k = 0
    while len(items) < n:
        call_id = f"call_{k}"
        block = [
            Item(id=new_id("i"), kind="user", text=prose(rng, USER_BYTES)),
            Item(
                id=new_id("i"),
                kind="assistant",
                text=prose(rng, ASSISTANT_BYTES),
                streaming=False,
                tool_calls=(ToolCall(call_id, "read_file", json.dumps({"path": f"src/module_{k}.py"})),),
            ),
            Item(
                id=new_id("i"),
                kind="tool",
                tool="read_file",
                title=f"Read src/module_{k}.py",
                args={"path": f"src/module_{k}.py"},
                state="done",
                bytes=TOOL_BYTES,
                result=prose(rng, TOOL_BYTES),
                call_id=call_id,
            ),
            Item(id=new_id("i"), kind="assistant", text=prose(rng, ASSISTANT_BYTES), streaming=False),
        ]
        items.extend(block)
        k += 1
    return items[:n]


def completed(i: int, rng: random.Random) -> Any:
    from actors.ids import new_id
    from actors.record.items import Item

    if i % 2:
        return Item(
            id=new_id("i"),
            kind="tool",
            tool="read_file",
            title="Read src/app.py",
            args={"path": "src/app.py"},
            state="done",
            bytes=TOOL_BYTES,
            result=prose(rng, TOOL_BYTES),
            call_id=f"call_x{i}",
        )
    return Item(id=new_id("i"), kind="assistant", text=prose(rng, ASSISTANT_BYTES), streaming=False)


async def timed_saves(store: Any, info: Any, items: list[Any], saves: int, rng: random.Random) -> dict[str, Any]:
    from actors.record.items import ConversationRecord

    times: list[float] = []
    stalls: list[float] = []
    done = trio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await trio.sleep(0.001)
            now = time.perf_counter()
            stalls.append(now - last)
            last = now

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await store.save_conversation(ConversationRecord(info, tuple(items)))  # the file exists, as it would
        for i in range(saves):
            items[-1] = completed(i, rng)  # the run's last item, now complete
            record = ConversationRecord(info, tuple(items))
            t0 = time.perf_counter()
            await store.save_conversation(record)
            times.append(time.perf_counter() - t0)
            await trio.sleep(0.005)
        done.set()
    return {"times": times, "stalls": stalls}


def fs_type(path: Path) -> str:
    """The file system type /proc/mounts gives for the mount holding `path`."""
    best, kind = "", "?"
    real = str(path.resolve())
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                parts = line.split()
                mnt = parts[1]
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, kind = mnt, parts[2]
    except OSError:
        pass
    return kind


def pick_folder(data_dir: Path) -> Path:
    """The system temporary folder, unless it lives in memory while the data folder
    does not (then fsync costs nothing there): then the data folder's parent."""
    tmp = Path(tempfile.gettempdir())
    parent = data_dir.parent
    while not parent.exists():
        parent = parent.parent
    if fs_type(tmp) in ("tmpfs", "ramfs") and fs_type(parent) not in ("tmpfs", "ramfs"):
        return parent
    return tmp


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--saves", type=int, default=50)
    ap.add_argument("--dir", type=Path, default=None, help="where to make the temporary data folder")
    args = parse_args(ap, quick={"items": 500, "saves": 10})
    exit_on_sigterm()

    from actors.ids import new_id, now
    from actors.record.items import ConversationInfo, ConversationRecord
    from bmoe_daemon.config import default_data_dir
    from bmoe_daemon.store import Store, _dumps, write_atomic

    rng = random.Random(7)
    base = args.dir or pick_folder(default_data_dir())
    tmp = Path(tempfile.mkdtemp(prefix="bmoe-bench-store-", dir=base))
    try:
        store = Store(tmp / "data")
        t = now()
        info = ConversationInfo(
            id=new_id("c"),
            title="bench",
            workspace=None,
            mode="ask",
            route="local",
            agent="builtin",
            state="running",
            created=t,
            updated=t,
        )
        items = make_items(args.items, rng)
        rep = Report("store_save", f"save one completed item in a {args.items}-item conversation")
        watch = CpuWatch().start()
        out = trio.run(timed_saves, store, info, items, args.saves, rng)
        foreign = watch.foreign_cores()
        ms = [x * 1000 for x in out["times"]]
        loaded = store.load_conversation(info.id)
        rep.check(
            "the file reads back as the last record saved",
            loaded.items == tuple(items),
            f"{len(loaded.items)} items read, last {loaded.items[-1].id if loaded.items else None}, "
            f"saved {len(items)}, last {items[-1].id}",
        )
        path = store.conversation_path(info.id)
        # The parts of one save, each on its own (20 times, median), with one item
        # completed before each, as in the timed saves: the store's own encoding (what
        # save_conversation writes) and the atomic write; and, for reference, the whole
        # record encoded from scratch (to_json, then json).
        encode = getattr(store, "encode_record", None)  # the store's encoder, where it has one
        parts: dict[str, list[float]] = {"store encode": [], "write+fsync": [], "to_json": [], "json": []}
        for i in range(20):
            items[-1] = completed(100 + i, rng)
            record = ConversationRecord(info, tuple(items))
            t0 = time.perf_counter()
            data = encode(record) if encode is not None else _dumps(record.to_json())
            t1 = time.perf_counter()
            write_atomic(path, data)
            t2 = time.perf_counter()
            obj = record.to_json()
            t3 = time.perf_counter()
            _dumps(obj)
            t4 = time.perf_counter()
            parts["store encode"].append(t1 - t0)
            parts["write+fsync"].append(t2 - t1)
            parts["to_json"].append(t3 - t2)
            parts["json"].append(t4 - t3)
        kinds: dict[str, int] = {}
        for it in items:
            kinds[it.kind] = kinds.get(it.kind, 0) + 1
        rep.figure(
            "items (user / assistant / tool)",
            f"{kinds.get('user', 0)} / {kinds.get('assistant', 0)} / {kinds.get('tool', 0)}",
        )
        rep.figure("file size", path.stat().st_size / 1e6, "MB", "{:.2f}")
        rep.figure("folder (file system)", f"{tmp} ({fs_type(tmp)})")
        rep.figure("save median", median(ms), "ms", "{:.1f}")
        rep.figure("save p95", percentile(ms, 95), "ms", "{:.1f}")
        rep.figure("save min / max", f"{min(ms):.1f} / {max(ms):.1f}", "ms")
        rep.figure("the store encodes per item, with a cache", "yes" if encode is not None else "no")
        for name, vals in parts.items():
            ref = " (reference: whole record)" if name in ("to_json", "json") else ""
            rep.figure(f"  part: {name}{ref} (median)", median(vals) * 1000, "ms", "{:.1f}")
        stalls = [s * 1000 for s in out["stalls"]]
        rep.figure("trio loop: longest tick during saves", max(stalls) if stalls else float("nan"), "ms", "{:.1f}")
        rep.figure("trio loop: p99 tick during saves", percentile(stalls, 99), "ms", "{:.1f}")
        rep.figure("other processes' CPU during the saves", foreign, "cores", "{:.2f}")
        rep.target("save median", median(ms), "<=", TARGET_MS, "ms", "{:.1f}")
        rep.target("save p95", percentile(ms, 95), "<=", TARGET_MS, "ms", "{:.1f}")
        return rep.finish()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
