"""How many threads the local model runs on: BMOE_THREADS where no `--threads` is
given, else one less than the cores while it writes and every core while it reads a
prompt (actors/model/backends/local.py's load)."""

from __future__ import annotations

import os

THREADS_ENV = "BMOE_THREADS"


def env_threads() -> int | None:
    """BMOE_THREADS: the local model's threads, writing and reading alike, where no
    `--threads` is given; None when it is not set. For a machine shared with other heavy
    work: there two threads that wait for each other at every step of a prompt's reading
    lose the core they share, and one thread reads faster on less CPU (a 1,240-token
    prompt beside a busy core, 2 cores: 12-15 s on 15-19 s of CPU with two, 11.5-12.6 s
    on 12 s with one). CI runs its model tests beside the rest with 1. Raises ValueError,
    in words, for anything but a whole number above 0."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{THREADS_ENV} must be a whole number of threads above 0, not {value!r}: "
                         f"fix it or unset it")
    return int(value)


def default_threads() -> int:
    """Generation threads: BMOE_THREADS when set; else one less than the cores (at least
    one), so the daemon's own thread (events, HTTP, tools) is not starved by the model.
    On 2 cores this measured a higher harness/raw token ratio than two threads
    (ops/bench/harness_overhead.py)."""
    return env_threads() or max(1, (os.cpu_count() or 1) - 1)


def default_batch_threads() -> int:
    """Prompt-reading (prefill) threads: BMOE_THREADS when set; else every core. Reading
    a prompt is a few large matrix products that split well, and the daemon's thread has
    little to do while they run; on 2 cores two threads read the bundled model's long
    prompts twice as fast as one (2,590 tokens: 164 -> 322 tokens/s), which is the first
    token's wait."""
    return env_threads() or max(1, os.cpu_count() or 1)
