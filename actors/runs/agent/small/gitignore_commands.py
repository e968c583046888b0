"""The whole command of a request to make git ignore files: the patterns the request
names (files of a kind, a folder, a file, the usual generated folders by their names)
added to the workspace's .gitignore, made where there is none, a pattern it has already
left out:

    printf '%s\\n' '*.log' 'renders/' >> .gitignore

Asked for a .gitignore so that `git status` stops listing some files, SmolLM2-135M
ran `git status`, then a command of its own making, and answered with git's error.
What to ignore is in the request's words; the .gitignore's syntax is
git's (a folder's pattern ends with `/`; one with a `/` before its end is anchored to
the top). None where the request names nothing to ignore, or asks a question of it.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable

from actors.runs.agent.small.lookup import KIND

# A request about what git ignores, or what it keeps showing.
_GIT_IGNORE = re.compile(
    r"\.?git\s*ignore\b|\bgit\b[^.?!]*\b(?:ignore|stop\s+(?:tracking|showing|listing|seeing)|shut\s+up|"
    r"(?:keeps?|kept)\s+(?:listing|showing|picking|complaining)|untracked)\b|"
    r"\b(?:ignore|untrack)\b[^.?!]*\b(?:in|by|from)\s+git\b",
    re.IGNORECASE)
# A question about it, not a change.
_QUESTION = re.compile(r"^\s*(?:what|which|why|does|do|is|are|how|where|when|can\s+git)\b", re.IGNORECASE)
# Folders and files tools make, known by their names (ignored wherever they are).
_USUAL = ("__pycache__/", "node_modules/", ".venv/", "venv/", "dist/", "build/", ".pytest_cache/", ".mypy_cache/",
          ".ruff_cache/", ".tox/", "htmlcov/", ".idea/", ".vscode/", ".DS_Store", ".coverage", ".env")
_USUAL_WORD = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(u.rstrip("/")) for u in _USUAL) + r")(?![\w-])")
_SAFE = re.compile(r"[\w.*/-]+")


def gitignore_commands(asked: str, read: Callable[[str], str | None], folders: list[str],
                       named: list[str]) -> dict[str, list[str]]:
    """The whole command that adds what the request names to .gitignore; none otherwise."""
    if not _GIT_IGNORE.search(asked) or _QUESTION.search(asked):
        return {}
    patterns: list[str] = []
    patterns += [f"*{k.lower()}" for k in KIND.findall(asked)]
    by_name = {u.rstrip("/"): u for u in _USUAL}
    patterns += [by_name[w] for w in _USUAL_WORD.findall(asked)]
    patterns += [(f"/{f}/" if "/" in f else f"{f}/") for f in folders if f.rstrip("/") not in by_name]
    patterns += [f"/{n}" if "/" in n else n for n in named if posixpath.basename(n) != ".gitignore"]
    patterns = [p for p in dict.fromkeys(patterns) if _SAFE.fullmatch(p)]
    if not patterns:
        return {}
    have = read(".gitignore") or ""
    kept = {line.strip() for line in have.splitlines()}
    new = [p for p in patterns if p not in kept and p.lstrip("/") not in kept]
    if not new:
        return {"echo": ["echo '.gitignore already has " + " ".join(patterns) + "'"]}
    lead = ["''"] if have and not have.endswith("\n") else []  # (its last line ended first)
    return {"printf": ["printf '%s\\n' " + " ".join(lead + [shlex.quote(p) for p in new]) + " >> .gitignore"]}
