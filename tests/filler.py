"""Long text for a scripted model to write that is not a loop.

A run cuts a model's answer where it repeats one short unit without end, or counts on
without end (actors/model/backends/repeats.py), as a small local model does. A test that
needs a long answer or long call arguments (to fill a context, to stream a while) writes
this: as long as the plain repetition, each copy after a number of its own, the numbers
out of order, so nothing repeats and nothing counts."""

from __future__ import annotations

from math import gcd


def numbered(unit: str, times: int) -> str:
    """`unit` `times` times, each copy after its own number of 0 to times - 1, in a
    shuffled order ("0 ok 62 ok 24 ok ..."): the numbers jump by about 0.618 of
    `times`, so no run of them rises for long."""
    step = next(s for s in range(max(1, round(times * 0.618)), times + 2) if gcd(s, times) == 1)
    return "".join(f"{n * step % times} {unit}" for n in range(times))
