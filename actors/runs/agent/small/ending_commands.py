"""The whole command of a request to change the line endings of text files: Windows'
(CRLF, the `^M` a diff shows) to Unix's (LF), or the other way, in the files or folder
the request names, else in every text file of the workspace that has them.

Asked to convert a folder's files to Unix line endings, SmolLM2-135M searched for a word
of the request and answered with the line it found. Which files end their lines with
CR LF is the files' bytes to say, so the one command is known:

    sed -i 's/\\r$//' notes/a.txt notes/b.md            (to Unix: the CR before each LF out)
    sed -i 's/\\r*$/\\r/' run.bat                        (to Windows: one CR before each LF)

Unasked for a place, a conversion to Unix leaves Windows' own scripts (.bat, .cmd) as
they are; a conversion to Windows is only made where the request names the files or
folder. Where no file has the endings to change, the command says so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable

# Line endings, however said.
_ENDINGS = re.compile(r"\bline[\s-]*(?:endings?|terminators?)\b|\^M|"
                      r"\bcarriage[\s-]*returns?\b|\bcr\s*/?\s*lf\b|\bcrlf\b|\\r\\n|\bdos2unix\b|\bunix2dos\b",
                      re.IGNORECASE)
# To Windows' endings: said as where they go.
_TO_WINDOWS = re.compile(r"\bunix2dos\b|\b(?:to|into|as|use|want)\s+(?:the\s+)?(?:windows|dos|crlf|cr\s*/?\s*lf)\b",
                         re.IGNORECASE)
# To Unix's: said as where they go (this wins: "files that use windows endings, to unix ones").
_TO_UNIX = re.compile(r"\bdos2unix\b|\b(?:to|into|as|use|want)\s+(?:the\s+)?(?:normal\s+|plain\s+)?"
                      r"(?:unix|linux|lf|mac|normal|plain)\b", re.IGNORECASE)
# A change asked (not a question of which files have them).
_CHANGE = re.compile(r"\b(?:convert|change|fix|switch|make|turn|normali[sz]e|strip|remove|get\s+rid|replace|"
                     r"clean|use|dos2unix|unix2dos|save|set|sort\s+out)\b", re.IGNORECASE)
# Windows' own scripts, kept as they are unless named.
_WINDOWS_SCRIPTS = (".bat", ".cmd")


def ending_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]], named: list[str],
                    folders: list[str]) -> dict[str, list[str]]:
    """The whole command of a request to change the files' line endings; none otherwise."""
    if not _ENDINGS.search(asked) or not _CHANGE.search(asked):
        return {}
    to_windows = _TO_WINDOWS.search(asked) is not None and not _TO_UNIX.search(asked)
    scoped = bool(named or folders)
    if to_windows and not scoped:
        return {}
    under = tuple(f.rstrip("/") + "/" for f in folders)
    files = [(p, t) for p, t in texts()
             if (p in named or under and p.startswith(under) or not scoped)
             and (scoped or not p.lower().endswith(_WINDOWS_SCRIPTS))]
    if to_windows:
        change = [p for p, t in files if re.search(r"(?<!\r)\n", t)]
        if not change:
            return {"echo": ["echo 'Every file asked for already ends its lines with CR LF (Windows).'"]}
        return {"sed": ["sed -i 's/\\r*$/\\r/' " + " ".join(shlex.quote(p) for p in change)]}
    change = [p for p, t in files if "\r\n" in t]
    if not change:
        return {"echo": ["echo 'No file asked for has CR LF (Windows) line endings: they end lines with LF "
                         "already.'"]}
    return {"sed": ["sed -i 's/\\r$//' " + " ".join(shlex.quote(p) for p in change)]}
