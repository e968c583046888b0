"""Tool-call parser: the cost of one fed token while a long call is being written.

One answer holds a single `write_file` call whose `content` is Python-like source
(newlines, quotes, braces, some non-ASCII: all JSON-escaped as a model writes them)
of 10 KiB and of 100 KiB. The answer is fed to `ToolCallParser` in 4-character
pieces (about one token each), for the `hermes` and `generic` formats. Each size is
run `--reps` times; the figure is the best run's mean time per `feed()` call, so
that a stray pause elsewhere on the machine does not count. The p99 of the single
feed times of that run is printed too (each call timed on its own, which adds the
timer's own cost).

The parser scans each piece once and keeps its state between pieces, so the cost
per token must not grow with what was written before it. Target: the 100 KiB cost
per token <= 1.5 x the 10 KiB one ("flat"), for each format.

    .venv/bin/python ops/bench/parser_cost.py [--reps 5] [--piece 4] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import Report, parse_args, percentile  # noqa: E402

from actors.model.toolcalls import CallArgs, ToolCallParser

SIZES = (10 * 1024, 100 * 1024)
FORMATS = ("hermes", "generic")
FLAT_RATIO = 1.5

_LINES = [
    "def handle(request, *, retries=3):",
    '    """Serve one request; retry on "busy" answers."""',
    '    data = {"id": request.id, "tags": [t for t in request.tags if t]}',
    "    if not data['tags']:",
    '        raise ValueError(f"no tags in {request.id!r} — café")',
    "    for attempt in range(retries):",
    "        reply = client.post('/api/items', json=data)  # {braces} [brackets]",
    "        if reply.status != 503:",
    "            return reply.json()",
    "    return None",
    "",
]


def source(size: int, rng: random.Random) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(_LINES)
        out.append(line)
        total += len(line) + 1
    return "\n".join(out)[:size]


def answer(fmt: str, content: str) -> str:
    args = json.dumps({"path": "src/service/handler.py", "content": content}, ensure_ascii=False)
    call = '{"name": "write_file", "arguments": ' + args + "}"
    if fmt == "hermes":
        return "I'll write the handler now.\n<tool_call>\n" + call + "\n</tool_call>"
    return '{"tool_calls": [' + call + "]}"


def run_once(fmt: str, text: str, piece: int) -> tuple[float, float, int]:
    """Feed `text` in pieces; return (mean s per feed, p99 s per feed, args chars streamed)."""
    pieces = [text[i : i + piece] for i in range(0, len(text), piece)]
    parser = ToolCallParser(fmt)
    feed = parser.feed
    streamed = 0
    t0 = time.perf_counter()
    for p in pieces:
        feed(p)
    mean = (time.perf_counter() - t0) / len(pieces)
    parser.finish()
    # Again, each call timed on its own, for the tail.
    parser = ToolCallParser(fmt)
    single: list[float] = []
    clock = time.perf_counter
    for p in pieces:
        a = clock()
        events = parser.feed(p)
        single.append(clock() - a)
        streamed += sum(len(e.text) for e in events if isinstance(e, CallArgs))
    parser.finish()
    calls = parser.result.calls
    assert len(calls) == 1 and not parser.result.errors, parser.result.errors
    return mean, percentile(single, 99), streamed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--piece", type=int, default=4, help="characters per fed piece (~ one token)")
    args = parse_args(ap, quick={"reps": 2})
    rep = Report("parser_cost", f"ToolCallParser cost per {args.piece}-char token inside a 10 KiB / 100 KiB call")
    rng = random.Random(7)
    for fmt in FORMATS:
        per_token: dict[int, float] = {}
        for size in SIZES:
            text = answer(fmt, source(size, rng))
            runs = [run_once(fmt, text, args.piece) for _ in range(args.reps)]
            best = min(runs, key=lambda r: r[0])
            per_token[size] = best[0]
            label = f"{fmt}, {size // 1024} KiB call"
            rep.figure(f"{label}: mean per token", best[0] * 1e6, "µs", "{:.2f}")
            rep.figure(f"{label}: p99 per token (timed singly)", best[1] * 1e6, "µs", "{:.2f}")
            rep.figure(f"{label}: arguments streamed", best[2], "chars", "{}")
        ratio = per_token[SIZES[1]] / per_token[SIZES[0]]
        rep.figure(f"{fmt}: 100 KiB / 10 KiB cost per token", ratio, "", "{:.2f}")
        rep.note(
            f"{fmt}: {'flat' if ratio <= FLAT_RATIO else 'NOT flat'} (ratio {ratio:.2f}, flat means <= {FLAT_RATIO})"
        )
        rep.target(f"{fmt}: 100K/10K cost per token", ratio, "<=", FLAT_RATIO)
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
