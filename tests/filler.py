"""Long text for a scripted model to write that is not a loop.

A run cuts a model's answer where it repeats one short unit without end
(actors/model/backends/repeats.py), as a small local model does. A test that needs a long
answer or long call arguments (to fill a context, to stream a while) writes this:
as long as the plain repetition, each copy numbered, so nothing repeats."""

from __future__ import annotations


def numbered(unit: str, times: int) -> str:
    """`unit` `times` times, each copy after its number: "0 ok 1 ok 2 ok ..."."""
    return "".join(f"{n} {unit}" for n in range(times))
