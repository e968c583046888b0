"""The whole command of a request to bump a project's version, and to write the release's
entry in its changelog where the request gives one.

Asked to bump a package to a new version and put a line in the changelog for it,
SmolLM2-135M rewrote the changelog's title as a version and answered with the request's
words. Where the version is written is read off the files (`__version__ = "…"`, a
`version = "…"` or `"version": "…"` of a build file, a VERSION file), and the changelog's
newest entry shows the shape a new one takes (its heading's level and brackets, its
bullet), so the command is known:

    sed -i '3s/0\\.4\\.2/0.5.0/' pkg/__init__.py && sed -i '3i ## 0.5.0\\n- added x\\n' CHANGELOG.md

None where the version is written with more than one value (which one moves is the
person's to say), or not at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH

# Asked to move the version: "bump mylib to 2.1.0", "set the version to 2.1", "release 1.4.0".
_NEW = r"v?(\d+\.\d+(?:\.\d+)?(?:[-.]?(?:a|b|rc|alpha|beta|dev|post)\d*)?)"
_BUMP = re.compile(rf"\b(?:bump|raise|increment|move|set|change|update|make|release|tag|cut)\b[^.?!\n]*?"
                   rf"\b(?:to|as|at)\s+{_NEW}(?![\w.])|\brelease\s+{_NEW}(?![\w.])|\bversion\s+{_NEW}(?![\w.])",
                   re.IGNORECASE)
_VERSION_WORD = re.compile(r"\b(?:bump|version|release)\b", re.IGNORECASE)
# Where a version is written: a Python assignment, a TOML or INI key, a JSON key.
_WRITTEN = re.compile(r"""^[ \t]*(?:__version__|version|VERSION)[ \t]*[:=][ \t]*"""
                      r"""(?P<q>["'])(?P<old>\d+\.\d+[^"'\s]*)(?P=q)|"""
                      r"""^[ \t]*"version"[ \t]*:[ \t]*"(?P<json>\d+\.\d+[^"\s]*)\"""", re.MULTILINE)
_VERSION_FILES = (".py", ".toml", ".cfg", ".json")
# A changelog, and the line of the request that is its entry ("put a line in CHANGELOG.md
# for it: added x", "note 'fixed y' in the changelog").
_CHANGELOG = re.compile(r"(?:^|/)(?:CHANGE[S_-]?LOG|CHANGES|HISTORY|NEWS|RELEASE[S_-]?NOTES)(?:\.(?:md|rst|txt))?$",
                        re.IGNORECASE)
_ENTRY = re.compile(r"(?:change\s*log|changes|history|news|release\s+notes|CHANGE\w*\.md|HISTORY\.md|NEWS\.md|"
                    r"entry|line|note)\b[^:\"'\n]*?(?::\s*|\s+(?:saying|that\s+says|reading)\s+)[\"'“]?(?P<entry>[^\"'”\n]+?)"
                    r"[\"'”]?\s*[.!]?\s*$|[\"'“](?P<quoted>[^\"'”\n]{3,})[\"'”]", re.IGNORECASE)
# A changelog's version heading: "## 0.4.2", "## [0.4.2] - 2024-01-01", "0.4.2 (date)".
_HEADING = re.compile(r"^(?P<mark>#+\s+)?(?P<open>\[?)v?\d+\.\d+[^\s\]]*(?P<close>\]?)", re.MULTILINE)
_BULLET = re.compile(r"^(?P<bullet>[-*+]\s+)", re.MULTILINE)


def release_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command of a request to bump the version (`_BUMP`) over the workspace's
    text files (`texts`: (path, text) of each): each line that writes the one old version
    given the new, and, where the request gives an entry and a changelog is there, the
    entry put above its newest; none otherwise."""
    bump = _BUMP.search(asked)
    if bump is None or not _VERSION_WORD.search(asked):
        return {}
    new = next(g for g in bump.groups() if g)
    found: list[tuple[str, int, str]] = []
    changelogs: list[tuple[str, str]] = []
    for path, text in texts():
        if _CHANGELOG.search(path):
            changelogs.append((path, text))
        elif path.endswith(_VERSION_FILES) or path.rsplit("/", 1)[-1] == "VERSION":
            found += version_lines(path, text)
    olds = {old for *_, old in found}
    if len(olds) != 1 or new in olds or not all(PLAIN_PATH.fullmatch(p) for p, *_ in found):
        return {}
    (old,) = olds
    parts = [f"sed -i '{n}s/{re.escape(old)}/{new}/' {path}" for path, n, _ in found]
    entry = _entry(asked, bump.group(0))
    if entry and len(changelogs) == 1 and PLAIN_PATH.fullmatch(changelogs[0][0]):
        added = changelog_command(*changelogs[0], new, entry)
        if added:
            parts.append(added)
    return {"sed": [" && ".join(parts)]}


def version_lines(path: str, text: str) -> list[tuple[str, int, str]]:
    """The lines of `path` (its `text`) that write a version, as (path, line number, the
    version); a VERSION file's one line."""
    if path.rsplit("/", 1)[-1] == "VERSION":
        line = text.strip()
        return [(path, 1, line)] if re.fullmatch(r"v?\d+\.\d+[\w.-]*", line) and "\n" not in line else []
    return [(path, text.count("\n", 0, m.start()) + 1, m.group("old") or m.group("json"))
            for m in _WRITTEN.finditer(text)]


def changelog_command(path: str, text: str, version: str, entry: str) -> str | None:
    """The `entry` put in the changelog `path` (its `text`) as `version`'s, above the newest
    version's heading, in its shape (the heading's marks and brackets, the bullet of its
    lines); None where it has no version heading, or the entry would need quoting."""
    heading = _HEADING.search(text)
    if heading is None or "'" in entry or "\\" in entry:
        return None
    line = text.count("\n", 0, heading.start()) + 1
    bullet = _BULLET.search(text[heading.end():])
    said = f"{heading.group('mark') or ''}{heading.group('open')}{version}{heading.group('close')}"
    return f"sed -i '{line}i {said}\\n{bullet.group('bullet') if bullet else '- '}{entry}\\n' {path}"


def _entry(asked: str, bump: str) -> str | None:
    """The changelog entry the request gives, the bump's own words left out."""
    rest = asked.replace(bump, " ")
    found = _ENTRY.search(rest)
    if found is None:
        return None
    entry = (found.group("entry") or found.group("quoted") or "").strip().rstrip(".!")
    return entry if 2 < len(entry) <= 200 and "/" not in entry and not entry.lower().startswith("it") else None
