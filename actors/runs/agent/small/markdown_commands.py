"""The whole command of a request to give a Markdown file a table of contents: a list of
links to its sections (the headings under its title, with the anchors a renderer such as
GitHub's gives them), put above the first section.

Asked for a table of contents, SmolLM2-135M wrote a heading and one made-up line. The
sections are the file's headings, and their anchors a rule, so the one command is known:

    sed -i '5i\\## Contents\\n\\n- [Getting started](#getting-started)\\n- [Usage](#usage)\\n' guide.md

None where the file has one section or none, already has a contents list, or a heading
cannot be written in the command as it is.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH

_ASKS = re.compile(r"\b(?:table\s+of\s+contents|toc|contents\s+(?:list|section|block)|list\s+of\s+(?:the\s+)?"
                   r"(?:sections|headings))\b", re.IGNORECASE)
_MD_FILE = re.compile(r"`?\b([\w./-]+\.(?:md|markdown))\b`?", re.IGNORECASE)
_HEADING = re.compile(r"(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"\s*(```|~~~)")


def contents_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a request for the table of contents of the one Markdown file it names."""
    if not _ASKS.search(asked) or re.search(r"\b(?:remove|delete|drop|take\s+out)\b", asked, re.IGNORECASE):
        return {}
    files = [f for f in dict.fromkeys(_MD_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(files) != 1:
        return {}
    command = contents_command(files[0], read(files[0]) or "")
    return {"sed": [command]} if command else {}


def contents_command(path: str, text: str) -> str | None:
    """The `sed` that puts a linked list of `path`'s sections above its first one."""
    headings = _headings(text)
    if not headings:
        return None
    top = min(level for _, level, _ in headings)
    titled = sum(level == top for _, level, _ in headings) == 1 and headings[0][1] == top
    level = min((lv for _, lv, _ in headings if lv > top), default=None) if titled else top
    sections = [(n, title) for n, lv, title in headings if lv == level]
    if level is None or len(sections) < 2 or any(re.fullmatch(r"(?:table\s+of\s+)?contents", t, re.IGNORECASE)
                                                   for _, _, t in headings):
        return None
    items = []
    for _, title in sections:
        if re.search(r"['\\\n]", title) or "[" in title or "]" in title:
            return None
        items.append(f"- [{title}](#{anchor(title)})")
    mark = "#" * level
    body = "\\n".join([f"{mark} Contents", "", *items, ""])
    return f"sed -i '{sections[0][0]}i\\{body}' {path}"


def anchor(title: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading: lower case, the marks
    other than `-` and `_` taken out, each space a `-`."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _headings(text: str) -> list[tuple[int, int, str]]:
    """The (line, level, title) of each heading of `text`, none inside a fenced block."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.fullmatch(line)
        if m:
            out.append((n, len(m.group(1)), m.group(2)))
    return out
