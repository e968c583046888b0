"""The daemon's own words, copied by a small model into a file or an answer (`echoed`),
and a text's first sentence (what of a note or a refusal is quoted back)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Where a sentence ends (a dot in `config.py` does not).
SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")


def first_sentence(text: str) -> str:
    """`text` up to its first sentence's end, its blanks made one."""
    end = SENTENCE_END.search(text)
    return " ".join(text[:end.start() if end else len(text)].split())


# An echo is measured in word trigrams: a text of ECHO_MIN_GRAMS at least repeats one of
# the daemon's notes when ECHO_SHARE of its trigrams are that note's.
ECHO_GRAM = 3
ECHO_MIN_GRAMS = 3
ECHO_SHARE = 0.5
_WORD = re.compile(r"[^\W_]+")


def _grams(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i:i + ECHO_GRAM]) for i in range(len(words) - ECHO_GRAM + 1)}


def echoed(text: str, ours: Iterable[str]) -> str | None:
    """The first sentence of the note of `ours` (what the daemon told the model in this
    run: its notices, its refusals) that `text` mostly repeats, None when it repeats
    none. Told that a file the person asked for was not there yet and to make it with
    a tool, SmolLM2 wrote "The <file> is not there yet. Make it with a tool, …" into that
    file, and answered the same: the daemon's words are never the person's file or
    answer. What a note quotes (between \u201c and \u201d: the model's own answer, a file's
    line) is not the daemon's words: sent back with its answer quoted, SmolLM2 answered
    the same again, which is no echo of the note."""
    grams = _grams(text)
    if len(grams) < ECHO_MIN_GRAMS:
        return None
    for note in ours:
        if len(grams & _grams(_QUOTED.sub(" ", note))) >= ECHO_SHARE * len(grams):
            return first_sentence(note)
    return None


# A quote in a note of the daemon's.
_QUOTED = re.compile("\u201c[^\u201d]*\u201d")


_ANY_WORD = re.compile(r"\w+")


def parrots(text: str, printed: str) -> bool:
    """Whether the answer `text` has words, and no word of its own: every one is a word
    of `printed`, what the run's tools printed (case aside)."""
    words = {w.lower() for w in _ANY_WORD.findall(text)}
    return bool(words) and words <= {w.lower() for w in _ANY_WORD.findall(printed)}
