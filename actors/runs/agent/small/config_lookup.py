"""The whole command of a question about a value in a settings file the request names
(JSON or TOML): the value read by Python's own parser and printed, so the answer begins
with it.

Asked what a server's name is in a JSON file, SmolLM2-135M answered with another key's
value, or the file's name. The keys are there to be matched with the request's words
("the server's name": `server` › `name`), the one path whose keys the request says
most, so the command is known and shown:

    python3 -c "import json; print(json.load(open('conf.json'))['server']['name'])"

None where no key is said, two paths are said as much, or the value is no plain one
(a table, a list of tables).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from typing import Any

from actors.runs.agent.small.files_of import PLAIN_PATH

_FILE = re.compile(r"`?\b([\w./-]+\.(?:json|toml))\b`?", re.IGNORECASE)
_ASKS = re.compile(r"\b(?:what(?:'s|\s+is|\s+are)?|which|who|tell\s+me|show\s+me|how\s+(?:many|much|long|big)|"
                   r"is\s+\w+\s+(?:on|off|set|enabled|true|false))\b", re.IGNORECASE)
_CHANGES = re.compile(r"^\s*(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:set|change|make|turn|update|edit|put|"
                      r"bump|switch|rename|add|remove|delete)\b", re.IGNORECASE)
# Keys looked at at most.
CONFIG_KEYS = 2000


def config_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a question about a value in the one JSON or TOML file the
    request names (that `read` gives): the value printed; none otherwise, nor for a
    request to change it."""
    files = [f for f in dict.fromkeys(_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f)]
    if len(files) != 1 or not _ASKS.search(asked) or _CHANGES.search(asked):
        return {}
    text = read(files[0])
    if text is None:
        return {}
    toml = files[0].lower().endswith(".toml")
    try:
        data = tomllib.loads(text) if toml else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError):
        return {}
    path = key_path(_FILE.sub(" ", asked), data)  # (the file's own name says no key)
    if path is None:
        return {}
    keys = "".join(f"[{k!r}]" if isinstance(k, str) else f"[{k}]" for k in path)
    if '"' in keys or "\\" in keys:
        return {}
    load = f"tomllib; print(tomllib.load(open('{files[0]}', 'rb'))" if toml else \
        f"json; print(json.load(open('{files[0]}'))"
    return {"python3": [f'python3 -c "import {load}{keys})"']}


def key_path(asked: str, data: Any) -> tuple[str | int, ...] | None:
    """The path of keys to the plain value the request's words say most (each key's words
    said by it: `max_retries` by "max retries"), its own key said; None where none is
    said or two are said as much."""
    words = {_stem(w) for w in re.findall(r"[a-z0-9]+", asked.lower())}
    scored: list[tuple[int, int, tuple[str | int, ...]]] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if len(scored) > CONFIG_KEYS:
            return
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, str(k)))
        elif path and not isinstance(node, list | dict):
            said = [k for k in path if isinstance(k, str) and _said(k, words)]
            if said and _said(str(path[-1]), words):  # the leaf's own key said, and those above
                scored.append((len(said), len(path), path))

    walk(data, ())
    if not scored:
        return None
    best = max(s for s, _, _ in scored)
    paths = [p for s, _, p in scored if s == best]
    return paths[0] if len(paths) == 1 else None


def _said(key: str, words: set[str]) -> bool:
    """Whether every word of `key` (`max_retries`, `maxRetries`: max, retries) is said."""
    parts = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)
    return bool(parts) and all(_stem(p.lower()) in words for p in parts)


def _stem(word: str) -> str:
    """`word` without a plural's or possessive's s."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
