"""Whole commands for three chores over many files at once: a piece of text replaced by
another wherever it is written (in the files, the folder or the kind of file named, or
every text file that holds it), the names of a folder's files given a prefix or a
suffix, and a backup copy of a file made beside it.

Asked to replace a word with another in all the docs, SmolLM2-135M edited one line of
one file; asked to give a folder's files a prefix, it made a folder of that name. Which
files hold the text, and what each name becomes, are read off the workspace, so the
command is known, shown and run as any other:

    sed -i 's/\\bcolour\\b/color/g' docs/a.md docs/b.md      replaced where it is written
    mv pics/a.jpg pics/old_a.jpg && mv pics/b.jpg pics/old_b.jpg   a prefix
    cp plan.md plan.md.bak                                  a backup beside it

None where the text is not written anywhere, a new name would land on one there, or a
name or the text would need quoting the command cannot give plainly.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, sed_pattern, sed_replacement

_Q = r"[\"'`“‘]?"
_QE = r"[\"'`”’]?"
_TEXT = r"[^\"'`“”‘’\n]{1,60}?"
# "replace colour with color", "change every 'colour' to 'color'", "swap colour for color".
_REPLACE = re.compile(rf"\b(?:replace|substitute)\s+(?:all\s+(?:the\s+)?|every\s+|each\s+)?"
                      rf"(?:(?:occurrences?|instances?|mentions?)\s+of\s+)?(?:the\s+(?:word|text|string)\s+)?{_Q}(?P<old>{_TEXT}){_QE}\s+(?:with|by)"
                      rf"\s+{_Q}(?P<new>{_TEXT}){_QE}(?=\s+(?:in|across|throughout|everywhere)\b|\s*[.!,]?\s*$)|"
                      rf"\b(?:change|switch|turn|swap)\s+(?:all\s+(?:the\s+)?|every\s+|each\s+)(?:(?:occurrences?|"
                      rf"instances?|mentions?)\s+of\s+)?(?:the\s+(?:word|text|string)\s+)?{_Q}(?P<old2>{_TEXT}){_QE}"
                      rf"\s+(?:to|into|for)\s+{_Q}(?P<new2>{_TEXT}){_QE}(?=\s+(?:in|across|throughout|everywhere)\b|"
                      rf"\s*[.!,]?\s*$)", re.IGNORECASE)
_FILE = re.compile(r"`?\b([\w./-]+\.[A-Za-z0-9]{1,8})\b`?")
_KIND = re.compile(r"(?<![\w/-])\*?(\.[A-Za-z][A-Za-z0-9]{0,7})\s+files\b", re.IGNORECASE)
# A prefix or suffix given to the names: "add the prefix old_ to", "prefix every file with 2024-",
# "add _v2 to the end of each name".
_PREFIX = re.compile(r"\b(?:add|put|give|stick)\s+(?:the\s+|a\s+)?prefix\s+[\"'`]?(?P<p>[\w.-]+?)[\"'`]?\s+(?:to|on)\b|"
                     r"\bprefix\s+(?:all\s+|every\s+|each\s+)?(?:the\s+)?(?:files?|names?|file\s*names?)\b.*?\bwith\s+"
                     r"[\"'`]?(?P<p2>[\w.-]+?)[\"'`]?(?=\s|$|[.,!])|\b(?:add|put|stick)\s+[\"'`]?(?P<p3>[\w.-]+?)[\"'`]?"
                     r"\s+(?:to\s+the\s+(?:start|front|beginning)\s+of|in\s+front\s+of|before)\b", re.IGNORECASE)
_SUFFIX = re.compile(r"\b(?:add|put|give|stick)\s+(?:the\s+|a\s+)?suffix\s+[\"'`]?(?P<s>[\w.-]+?)[\"'`]?\s+(?:to|on)\b|"
                     r"\b(?:add|put|stick)\s+[\"'`]?(?P<s2>[\w.-]+?)[\"'`]?\s+(?:to\s+the\s+end\s+of|after)\b",
                     re.IGNORECASE)
_BACKUP = re.compile(r"\b(?:back\s*up|backup|safety\s+copy|\.bak\s+copy)\b", re.IGNORECASE)
# Files a replace may touch at most.
REPLACE_FILES = 40


def replace_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                     children: Callable[[str], list[str] | None], is_file: Callable[[str], bool],
                     folders: list[str]) -> dict[str, list[str]]:
    """The whole command of a request to replace text over files (`texts`: (path, text)
    of the workspace's text files), to give a folder's files a prefix or suffix (what the
    folder holds: `children`), or to back up a file that is there; none otherwise."""
    replace = _REPLACE.search(asked)
    if replace is not None:
        old = (replace.group("old") or replace.group("old2") or "").strip()
        new = (replace.group("new") or replace.group("new2") or "").strip()
        named = [f for f in _FILE.findall(asked) if is_file(f)]
        kinds = [k.lower() for k in _KIND.findall(asked)]
        under = [f.rstrip("/") for f in folders]
        files = [p for p, t in texts() if old in t and (p in named if named else True)
                 and (not kinds or p.lower().endswith(tuple(kinds)))
                 and (not under or any(p.startswith(u + "/") for u in under))]
        command = replace_command(old, new, files)
        return {"sed": [command]} if command else {}
    prefix, suffix = _PREFIX.search(asked), _SUFFIX.search(asked)
    if prefix is not None or suffix is not None:
        held = {f: c for f in folders if (c := children(f.rstrip("/"))) is not None}
        if len(held) != 1:
            return {}
        ((folder, names),) = held.items()
        add = next(g for g in (prefix or suffix).groups() if g)  # type: ignore[union-attr]
        command = affix_command(folder.rstrip("/"), [n for n in names if is_file(f"{folder.rstrip('/')}/{n}")],
                                add, before=prefix is not None)
        return {"mv": [command]} if command else {}
    if _BACKUP.search(asked):
        named = [f for f in dict.fromkeys(_FILE.findall(asked)) if is_file(f) and PLAIN_PATH.fullmatch(f)
                 and not f.endswith(".bak")]
        if len(named) == 1 and not is_file(named[0] + ".bak"):
            return {"cp": [f"cp {named[0]} {named[0]}.bak"]}
    return {}


def replace_command(old: str, new: str, files: list[str]) -> str | None:
    """`sed` putting `new` in place of every `old` in `files` (as a whole word where it
    begins and ends with one); None where no file holds it, too many do, or it would need
    quoting."""
    if not files or len(files) > REPLACE_FILES or old == new or "'" in old + new or "\n" in old + new \
            or not all(PLAIN_PATH.fullmatch(f) for f in files):
        return None
    pattern = sed_pattern(old)
    if re.match(r"\w", old):
        pattern = r"\b" + pattern
    if re.search(r"\w$", old):
        pattern += r"\b"
    with_ = sed_replacement(new)
    return f"sed -i 's/{pattern}/{with_}/g' {' '.join(sorted(files))}"


def affix_command(folder: str, names: list[str], add: str, *, before: bool) -> str | None:
    """Each file of `folder` (its `names`) moved to its name with `add` before it (or
    after its stem, its extension kept); None where a name has it already, would land on
    one there, or is not written plainly."""
    moves = []
    for name in names:
        stem, dot, ext = name.rpartition(".") if "." in name[1:] else (name, "", "")
        new = add + name if before else f"{stem}{add}{dot}{ext}"
        if (name.startswith(add) if before else stem.endswith(add)) or new in names:
            return None
        moves.append((posixpath.join(folder, name), posixpath.join(folder, new)))
    if not moves or len(moves) > REPLACE_FILES or not all(PLAIN_PATH.fullmatch(p) for m in moves for p in m):
        return None
    return " && ".join(f"mv {a} {b}" for a, b in moves)
