"""Searching inside conversations: a search over 10,000 conversations, and what keeping
the index up to date adds to each saved item.

A history of `--conversations` conversations of `--items` items each (a person's
message of ~30 words, then answers of ~120 words and tool cards, in turn) is written
into the full-text index (bmoe_daemon/fulltext.py) through `TextIndex.apply`, as the
indexer does when it builds the index from the files. Words are drawn from a vocabulary
of 20,000 made-up words with Zipf-like frequencies, so some are in nearly every
conversation and most in a few; a handful of planted words are in exactly one answer
each (the check: each is found, in the right conversation and item, marked in its
snippet).

Searches (`TextIndex.search`, the page of 20 the route asks for, snippets included),
each `--reps` times, round robin: a planted word, a rare word, a common word, a word in
almost every item, a prefix being typed, and two words. The figures are the p95 of all of
them (and each kind's median), wall time with the load average beside it, and the p95 of
their CPU time (what a search costs, whatever else runs on the machine).

The list's own `q` (which conversations hold the words, and a page's snippets): the p95
of its CPU time over the same queries.

Indexing per saved item: a conversation of `--items` items gets one more completed item
`--saves` times and each record is applied as the indexer applies a noted save (the
same item objects as last time: only the new one is read); the CPU time (process_time)
per apply, median and p95. And the save path's share: `Indexer.saved`, what the store
calls after a durable save, timed alone.

    .venv/bin/python ops/bench/conversation_search.py [--conversations 10000] [--items 20] [--reps 20] [--quick]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Report, exit_on_sigterm, median, parse_args, percentile  # noqa: E402

SEARCH_TARGET_MS = 50.0
APPLY_TARGET_MS = 2.0  # CPU per saved item, in the indexer's thread (off the save path)
HOOK_TARGET_US = 5.0  # on the save path
VOCABULARY = 20_000
PLANTED = 5
BATCH = 200  # conversations to a transaction while building


def make_words(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out: set[str] = set()
    while len(out) < VOCABULARY:
        out.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(out)


class Text:
    """Prose of the vocabulary's words, drawn with weights 1/rank (Zipf)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = make_words(rng)
        self.weights = [1 / (r + 1) for r in range(VOCABULARY)]
        self._pool: list[str] = []

    def words_of(self, n: int) -> str:
        if len(self._pool) < n:
            self._pool.extend(self.rng.choices(self.words, self.weights, k=max(n, 200_000)))
        out, self._pool = self._pool[:n], self._pool[n:]
        return " ".join(out)


def make_record(cid: str, n_items: int, text: Text, t: float, plant: str | None = None) -> Any:
    from actors.record.items import ConversationInfo, ConversationRecord, Item

    items = []
    for k in range(n_items):
        iid = f"{cid}-i{k}"
        if k % 4 == 0:
            items.append(Item(id=iid, kind="user", text=text.words_of(30)))
        elif k % 4 == 2:
            items.append(Item(id=iid, kind="tool", tool="read_file", title=f"Read src/{text.words_of(1)}.py",
                              state="done", result=text.words_of(200)))
        else:
            body = text.words_of(120)
            if plant is not None and k == 3:
                body = f"{body} {plant} {text.words_of(10)}"
            items.append(Item(id=iid, kind="assistant", text=body, streaming=False))
    info = ConversationInfo(id=cid, title=text.words_of(5), workspace=None, mode="ask", route="local",
                            agent="builtin", state="idle", created=t, updated=t)
    return ConversationRecord(info, tuple(items))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=10_000)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--saves", type=int, default=200)
    args = parse_args(ap, quick={"conversations": 1_000, "reps": 5, "saves": 40})
    exit_on_sigterm()

    import trio

    from actors.record.items import ConversationRecord, Item
    from bmoe_daemon.fulltext import TextIndex
    from bmoe_daemon.indexer import Indexer

    rng = random.Random(31)
    text = Text(rng)
    rep = Report("conversation_search",
                 f"search {args.conversations} conversations of {args.items} items; index a saved item")
    tmp = Path(tempfile.mkdtemp(prefix="bmoe-bench-fts-"))
    try:
        index = TextIndex(tmp)
        index.open()
        planted = {f"zzplant{n}q": f"c{n * (args.conversations // PLANTED):06d}" for n in range(PLANTED)}
        where = {cid: word for word, cid in planted.items()}
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        batch = []
        for n in range(args.conversations):
            cid = f"c{n:06d}"
            batch.append((make_record(cid, args.items, text, 1e9 + n, where.get(cid)), (n, 0, 0)))
            if len(batch) == BATCH:
                index.apply(batch)
                batch = []
        index.apply(batch)
        rep.figure("build: wall (text made and indexed)", time.perf_counter() - t0, "s")
        rep.figure("build: CPU", time.process_time() - cpu0, "s")
        rep.figure("index file", sum(p.stat().st_size for p in tmp.iterdir()) / 2**20, "MiB")

        # The searches.
        by_weight = text.words  # words[0] is drawn most
        queries = {
            "planted word": list(planted),
            "rare word": [by_weight[15_000 + k] for k in range(5)],
            "common word": [by_weight[50 + k] for k in range(5)],
            "most common word": [by_weight[k] for k in range(3)],
            "prefix typed": [by_weight[200 + k][:3] for k in range(5)],
            "two words": [f"{by_weight[30 + k]} {by_weight[400 + k]}" for k in range(5)],
        }
        times: dict[str, list[float]] = {k: [] for k in queries}
        every: list[float] = []
        every_cpu: list[float] = []
        found_ok = True
        for word, cid in planted.items():
            hits, _ = index.search(word, limit=20)
            ok = (len(hits) == 1 and hits[0].conversation == cid and hits[0].item == f"{cid}-i3"
                  and any(hits[0].snippet[a:b] == word for a, b in hits[0].marks))
            found_ok = found_ok and ok
        rep.check("each planted word found once, in its answer, marked in the snippet", found_ok)
        common_hits, more = index.search(queries["most common word"][0], limit=20)
        rep.check("a word in every conversation answers a full page and says there is more",
                  len(common_hits) == 20 and more, f"{len(common_hits)} hits, more={more}")
        for _ in range(args.reps):
            for kind, qs in queries.items():
                for q in qs:
                    c0, s = time.process_time(), time.perf_counter()
                    index.search(q, limit=20)
                    dt = (time.perf_counter() - s) * 1000
                    every_cpu.append((time.process_time() - c0) * 1000)
                    times[kind].append(dt)
                    every.append(dt)
        load = Path("/proc/loadavg").read_text().split()[0]
        for kind, ts in times.items():
            rep.figure(f"search, {kind}: median", median(ts), "ms")
        rep.figure("search, all kinds: p95", percentile(every, 95), "ms")
        rep.figure("search, all kinds: p95 of CPU time", percentile(every_cpu, 95), "ms")
        rep.figure("load average (1 min) during the searches", load)
        # Wall time is the target's own measure; on a shared machine the CPU time (the
        # search runs in this thread, SQLite included) says what it costs without the wait.
        rep.target(f"search p95 over {args.conversations} conversations (wall, load {load})",
                   percentile(every, 95), "<=", SEARCH_TARGET_MS, "ms")
        rep.target(f"search p95 over {args.conversations} conversations (CPU)", percentile(every_cpu, 95), "<=",
                   SEARCH_TARGET_MS, "ms")

        # The list's own `q` (GET /api/conversations?q=): which conversations hold the words,
        # each with its newest match, then the snippets of a page of 20 of them.
        list_times: list[float] = []
        list_cpu: list[float] = []
        for _ in range(max(1, args.reps // 4)):
            for qs in queries.values():
                for q in qs:
                    c0, s = time.process_time(), time.perf_counter()
                    matching = index.conversations_matching(q)
                    index.snippets(q, sorted(matching, reverse=True)[:20])
                    list_times.append((time.perf_counter() - s) * 1000)
                    list_cpu.append((time.process_time() - c0) * 1000)
        word, cid = next(iter(planted.items()))
        where_found = index.conversations_matching(word)
        found_at = index.snippets(word, [cid])
        rep.check("the list's q finds a planted word's conversation, its snippet from its answer",
                  where_found == {cid} and found_at[cid].item == f"{cid}-i3", repr((where_found, found_at)))
        rep.figure("list's q (matching conversations and a page's snippets), all kinds: median", median(list_times),
                   "ms")
        rep.target(f"list's q p95 over {args.conversations} conversations (CPU)", percentile(list_cpu, 95), "<=",
                   SEARCH_TARGET_MS, "ms")

        # Indexing per saved item, as the indexer applies a noted save.
        known: dict[str, Any] = {}
        base = make_record("csave", args.items, text, 2e9)
        items = list(base.items)
        index.apply([(base, (1, 0, 0))], known=known)
        cpu: list[float] = []
        for k in range(args.saves):
            items.append(Item(id=f"csave-new{k}", kind="assistant", text=f"{text.words_of(120)} zzsaved{k}q",
                              streaming=False))
            record = ConversationRecord(base.info, tuple(items))
            s = time.process_time()
            index.apply([(record, (2, k, 0))], known=known)
            cpu.append((time.process_time() - s) * 1000)
        last, _ = index.search(f"zzsaved{args.saves - 1}q", limit=2)
        rep.check("the last saved item is found", [(h.conversation, h.item) for h in last]
                  == [("csave", f"csave-new{args.saves - 1}")], repr(last))
        rep.figure("index a saved item: CPU median", median(cpu), "ms")
        rep.figure("index a saved item: CPU p95", percentile(cpu, 95), "ms")
        rep.target("index a saved item (CPU, indexer's thread) p95", percentile(cpu, 95), "<=", APPLY_TARGET_MS, "ms")

        async def hook_cost() -> float:
            indexer = Indexer(tmp / "hook", lambda: {}, lambda cid: (base, (0, 0, 0)))
            n = 20_000
            s = time.perf_counter()
            for k in range(n):
                indexer.saved(record, (k, 0, 0))
            return (time.perf_counter() - s) / n * 1e6

        us = trio.run(hook_cost)
        rep.figure("on the save path (Indexer.saved)", us, "µs")
        rep.target("on the save path", us, "<=", HOOK_TARGET_US, "µs")
        index.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
