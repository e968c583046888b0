"""History scale: how start, memory, the list and one conversation cost as the
history grows (issue 20).

Three data folders, made once and kept under --cache (default: a folder in the
system's temporary directory, reused by later runs): 100 and 10,000 conversations
of 40 items each, and 100,000 of 4 items. Each file is written with the store's own
encoder (`Store.encode_record`), so it is exactly what the daemon saves. A quarter of
the conversations are runs of one of four tasks.

For each folder: the index file the daemon may keep is removed, then `serve --port 0
--scripted` starts twice (the first start rebuilds what it needs from the files, the
second may use what the first kept). For each start: spawn -> `/health` 200, the idle
RSS one second later; after the second start: `GET /api/conversations?limit=50` (the
first page; a daemon without paging answers the whole list, and the rows it
answered are shown), `GET` of the oldest conversation (whose items nothing read yet)
and a message to it (POST -> 202, and POST -> its run ended: `GET` reads `idle` with
the scripted answer). A start that passes --start-timeout is stopped and said so.

    .venv/bin/python ops/bench/history_scale.py [--sizes 100 10000 100000] [--cache DIR] [--start-timeout 300] [--quick]

--quick: folders of 100 and 1,000 conversations (the targets, set at 10,000 and 100,000,
are then not judged; the checks are).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    REPO,
    DaemonProcess,
    Report,
    exit_on_sigterm,
    median,
    parse_args,
    proc_status_kb,
    split_address,
)

sys.path.insert(0, str(REPO))

ITEMS = {100: 40, 10_000: 40, 100_000: 4}
TASKS = ("t-backup", "t-digest", "t-lint", "t-sync")
PAGE = 50
REPS = 5  # requests per figure, median
POLL_S = 0.01
SETTLE_S = 1.0
INDEX_NAMES = ("conversations-index.json",)  # what a daemon may keep beside the files, removed before the first start
# Issue 20's targets.
TARGET_START_10K_S = 1.5
TARGET_START_100K_S = 3.0
TARGET_RSS_10K_MB = 90.0
TARGET_PAGE_10K_MS = 20.0
TARGET_OPEN_10K_MS = 50.0
TARGET_RATIO = 1.5
SCRIPT = {"token_delay": 0.0, "default": {"text": "Done."}}


def make_items(n_items: int, serial: int, t0: float) -> list[Any]:
    """A conversation's items, about 750 bytes each: messages, answers, and tool calls
    with their results."""
    from actors.record.items import Item, ToolCall

    items = []
    for k in range(n_items):
        created = t0 + k
        iid = f"i{serial}x{k}"
        kind = k % 4
        if kind == 0:
            text = f"Please look at part {k} of the report. " * 8
            items.append(Item(id=iid, kind="user", created=created, text=text))
        elif kind == 1:
            call = ToolCall(id=f"call{k}", name="read_file", arguments=json.dumps({"path": f"src/part{k}.py"}))
            items.append(Item(id=iid, kind="assistant", created=created, text="Reading it first.", tool_calls=(call,)))
        elif kind == 2:
            items.append(Item(id=iid, kind="tool", created=created, tool="read_file", title=f"src/part{k}.py",
                              args={"path": f"src/part{k}.py"}, state="done", call_id=f"call{k}",
                              result="def part():\n    return 42\n" * 20))
        else:
            text = f"Part {k} looks fine; it returns 42. " * 6
            items.append(Item(id=iid, kind="assistant", created=created, text=text))
    return items


def make_folder(folder: Path, count: int, n_items: int) -> None:
    """`count` conversations, written as the store writes them; `.complete` marks a
    folder made whole (an interrupted one is made again)."""
    from actors.record.items import ConversationInfo, ConversationRecord
    from bmoe_daemon.store import Store

    if (folder / ".complete").exists():
        return
    shutil.rmtree(folder, ignore_errors=True)
    store = Store(folder / "data")
    t_start = time.perf_counter()
    base = 1_600_000_000.0
    for n in range(count):
        t0 = base + n * 60
        info = ConversationInfo(
            id=f"c{n:07d}", title=f"Conversation number {n}", workspace=None, mode="ask", route="local",
            agent="builtin", state="idle", created=t0, updated=t0 + n_items,
            task=TASKS[n % len(TASKS)] if n % 4 == 0 else None, end_reason="answered",
        )
        record = ConversationRecord(info, tuple(make_items(n_items, n, t0)))
        store.conversation_path(info.id).write_bytes(store.encode_record(record))
    (folder / ".complete").write_text("")
    print(f"   made {count} conversations of {n_items} items in {time.perf_counter() - t_start:.0f} s", flush=True)


def request(host: str, port: int, method: str, path: str, body: Any = None) -> tuple[int, bytes, float]:
    """(status, body, seconds) of one request on a new connection."""
    conn = http.client.HTTPConnection(host, port, timeout=600)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        t0 = time.perf_counter()
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, raw, time.perf_counter() - t0
    finally:
        conn.close()


def wait_health(daemon: DaemonProcess, deadline: float) -> tuple[str, int]:
    assert daemon.address is not None
    host, port = split_address(daemon.address)
    while True:
        try:
            if request(host, port, "GET", "/health")[0] == 200:
                return host, port
        except OSError:
            pass
        if time.perf_counter() > deadline:
            raise TimeoutError("/health never answered 200")
        time.sleep(POLL_S)


def one_size(folder: Path, script: Path, timeout: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    data = folder / "data"
    for name in INDEX_NAMES:
        (data / "agent" / name).unlink(missing_ok=True)
    probe = data / "agent" / "conversations" / "c0000000.json"
    kept = probe.read_bytes()  # put back afterwards: the message changes it, the next run starts the same
    try:
        return _starts(data, folder, script, timeout, out)
    finally:
        probe.write_bytes(kept)


def timed_gets(host: str, port: int, paths: list[str]) -> tuple[float, bytes]:
    """GET each of `paths` (each must answer 200): the median time and the last body."""
    took_all, raw = [], b""
    for path in paths:
        status, raw, took = request(host, port, "GET", path)
        assert status == 200, raw[:300]
        took_all.append(took)
    return median(took_all), raw


def _starts(data: Path, folder: Path, script: Path, timeout: float, out: dict[str, Any]) -> dict[str, Any]:
    for start in ("first", "second"):
        daemon = DaemonProcess(["serve", "--port", "0", "--scripted", str(script), "--data-dir", str(data)],
                               log_path=folder / f"daemon-{start}.log")
        try:
            try:
                daemon.start(timeout=timeout)
                host, port = wait_health(daemon, daemon.started_at + timeout)
            except (TimeoutError, RuntimeError) as exc:
                out[f"{start}_error"] = f"did not serve within {timeout:g} s" if isinstance(exc, TimeoutError) \
                    else str(exc)[:300]
                return out
            out[f"{start}_start"] = time.perf_counter() - daemon.started_at
            time.sleep(SETTLE_S)
            out[f"{start}_rss"] = proc_status_kb(daemon.pid, "VmRSS") / 1024
            if start == "first":
                continue
            status, raw, _ = request(host, port, "GET", "/api/search?q=conversation&limit=1")
            assert status == 200, raw[:300]
            out["indexing"] = bool(json.loads(raw).get("indexing"))
            out["page"], raw = timed_gets(host, port, [f"/api/conversations?limit={PAGE}"] * REPS)
            out["page_rows"] = len(json.loads(raw))
            # A conversation's first open reads it from disk: REPS different ones, the median
            # (one sample swung 1.9 to 5.5 ms between runs, on no figure of the history's size).
            out["open_first"], _ = timed_gets(host, port, [f"/api/conversations/c{n:07d}" for n in range(REPS)])
            out["open"] = median([request(host, port, "GET", "/api/conversations/c0000000")[2] for _ in range(REPS)])
            t0 = time.perf_counter()
            status, raw, took = request(host, port, "POST", "/api/conversations/c0000000/messages", {"text": "hi"})
            assert status == 202, raw[:300]
            out["send_accepted"] = took
            while True:
                status, raw, _ = request(host, port, "GET", "/api/conversations/c0000000")
                conv = json.loads(raw)
                if conv["state"] == "idle" and conv["items"][-1].get("text") == "Done.":
                    break
                if time.perf_counter() - t0 > 60:
                    raise TimeoutError("the message's run did not end in 60 s")
                time.sleep(POLL_S)
            out["send_done"] = time.perf_counter() - t0
        finally:
            daemon.stop(timeout=60)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(ITEMS))
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "bmoe-bench-history")
    ap.add_argument("--start-timeout", type=float, default=300.0, help="seconds a start may take before it is stopped")
    args = parse_args(ap, quick={"sizes": [100, 1000], "start_timeout": 60.0})
    exit_on_sigterm()

    rep = Report("history_scale", "start, idle RSS, list, open and send as the history grows")
    args.cache.mkdir(parents=True, exist_ok=True)
    script = args.cache / "script.json"
    script.write_text(json.dumps(SCRIPT))
    results: dict[int, dict[str, Any]] = {}
    for size in args.sizes:
        folder = args.cache / f"h{size}"
        make_folder(folder, size, ITEMS.get(size, 40))
        print(f"-- {size} conversations", flush=True)
        r = results[size] = one_size(folder, script, args.start_timeout)
        label = f"{size:,}:"
        for start in ("first", "second"):
            if f"{start}_error" in r:
                rep.figure(f"{label} {start} start", r[f"{start}_error"])
                continue
            if f"{start}_start" in r:
                rep.figure(f"{label} {start} start -> /health", r[f"{start}_start"] * 1000, "ms", "{:.0f}")
                rep.figure(f"{label} idle RSS after the {start} start", r[f"{start}_rss"], "MB", "{:.1f}")
        if "page" in r:
            rep.figure(f"{label} GET ?limit={PAGE} (rows answered: {r['page_rows']})", r["page"] * 1000, "ms", "{:.1f}")
            rep.figure(f"{label} search index still reading files then", "yes" if r["indexing"] else "no")
            rep.figure(f"{label} GET a conversation, first time (median of 5)", r["open_first"] * 1000, "ms", "{:.1f}")
            rep.figure(f"{label} GET it again (median)", r["open"] * 1000, "ms", "{:.1f}")
            rep.figure(f"{label} POST a message -> 202", r["send_accepted"] * 1000, "ms", "{:.1f}")
            rep.figure(f"{label} POST a message -> its run ended", r["send_done"] * 1000, "ms", "{:.0f}")
        errors = [r[f"{start}_error"] for start in ("first", "second") if f"{start}_error" in r]
        rep.check(f"{label} both starts served /health", not errors, "; ".join(errors))
        rows = r.get("page_rows")
        rep.check(f"{label} the first page has {min(PAGE, size)} rows", rows == min(PAGE, size), f"{rows} rows")
        rep.check(f"{label} the message's run ended with the answer", "send_done" in r)

    def judge(size: int, key: str, label: str, limit: float, unit: str, scale: float) -> None:
        r = results.get(size)
        if r is None:
            return
        if key in r:
            rep.target(f"{size:,}: {label}", r[key] * scale, "<=", limit, unit, "{:.1f}")
        else:
            rep.not_judged(f"{size:,}: {label}", "<=", limit, unit, "did not get that far")

    judge(10_000, "second_start", "start -> /health", TARGET_START_10K_S * 1000, "ms", 1000)
    judge(10_000, "second_rss", "idle RSS", TARGET_RSS_10K_MB, "MB", 1)
    judge(10_000, "page", "first page", TARGET_PAGE_10K_MS, "ms", 1000)
    judge(10_000, "open_first", "open one conversation", TARGET_OPEN_10K_MS, "ms", 1000)
    judge(100_000, "second_start", "start -> /health", TARGET_START_100K_S * 1000, "ms", 1000)
    small, big = results.get(100), results.get(10_000)
    if small is not None and big is not None:
        for key, label in (("second_start", "start"), ("second_rss", "idle RSS"), ("page", "first page"),
                           ("open_first", "open"), ("send_accepted", "message -> 202"),
                           ("send_done", "message -> its run ended")):
            if key in small and key in big:
                rep.target(f"10,000 / 100: {label}", big[key] / small[key], "<=", TARGET_RATIO, "x", "{:.2f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
