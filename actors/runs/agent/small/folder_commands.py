"""Whole commands for requests about what a folder holds: the names of its files made
lower or upper case, all it holds put into another folder, the folder packed into one
archive.

Asked to make the file names of a folder lower case, SmolLM2-135M searched the text of
the files for a worked example's words; asked to put everything of one folder into
another and get rid of the first, it read each file, then echoed the same word thirty
rounds. The folder is there and its files can be listed, so the command is known: each
file moved to its new name, or all of them moved into the other folder, one after
another (`&&`), and shown and run as any other:

    mv notes/A.txt notes/a.txt && mv notes/B.md notes/b.md     names lower case
    mv old/a.txt old/b.txt new && rmdir old                     all of old/ into new/, old/ gone
    zip -r old.zip old                                          old/ zipped (tar -czf for a .tar.gz)

None where a name would land on one that is there (two names alike but for case, a file
of the same name in the other folder): what to keep is the person's to say.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH
from actors.runs.agent.small.lookup import named_folders

# Names made lower or upper case: the case asked for, and that it is of names.
_CASE = re.compile(r"\b(?P<case>lower|upper|small|capital)[\s-]*(?:case|letters?)\b|\b(?P<caps>capitali[sz]ed?|"
                   r"all\s+caps)\b", re.IGNORECASE)
_NAMES = re.compile(r"\b(?:file\s*names?|names?\s+of\s+(?:the\s+|all\s+the\s+)?files|rename)\b", re.IGNORECASE)
# All a folder holds, put into another: "everything", "all the files", "the contents", "merge".
_ALL_OF = re.compile(r"\b(?:everything|all\s+(?:of\s+)?(?:the\s+)?(?:files?|stuff|contents?|that'?s)|"
                     r"(?:the\s+)?contents?\s+of|whatever'?s|merge|combine|fold)\b", re.IGNORECASE)
# Put rather than copied: a copy keeps the first folder.
_COPIES = re.compile(r"\b(?:copy|copies|duplicate|back\s*up)\b", re.IGNORECASE)
# The first folder asked to go afterwards.
_GOES = re.compile(r"\b(?:get\s+rid\s+of|remove|delete|drop|bin|ditch|trash|lose|and\s+the\s+(?:old\s+)?"
                   r"(?:folder|one)\s+(?:gone|goes))\b|\bmerge\b", re.IGNORECASE)
# A folder packed into one archive: zipped, compressed, archived, a tarball made of it.
_PACK = re.compile(r"\b(?:g?zip|compress|archive|tar|pack|bundle)(?:\s+up)?\b|\btarball\b", re.IGNORECASE)
_UNPACK = re.compile(r"\b(?:unzip|extract|unpack|untar|decompress|open)\b", re.IGNORECASE)
_ARCHIVE = re.compile(r"(?<![\w/.-])([\w.-]+\.(?:zip|tar\.gz|tgz|tar))(?![\w.-])", re.IGNORECASE)
# The kind of archive asked for where none is named whole ("a .tar.gz of it", "tar it up",
# "a tarball", "gzip it"): a compressed tar, else a plain one; a zip otherwise.
_TAR_GZ = re.compile(r"\.?\btar\.gz\b|\.?\btgz\b|\btarball\b|\bg?zip(?:ped)?\s+tar\b|\bgz(?:ip(?:ped)?)?\b",
                     re.IGNORECASE)
_TAR = re.compile(r"\btar(?:red|ring)?\b(?!\.)", re.IGNORECASE)
# Files at most: more is not a job to list file by file in one command.
FOLDER_FILES = 40


# Files put in folders by the date their names begin with: "a folder per year", "by month".
_BY_DATE = re.compile(r"\b(?:folders?|director(?:y|ies)|dirs?|subfolders?)\s+"
                      r"(?:per|for\s+(?:each|every)|by|of\s+(?:each|its))\s+(?P<unit>year|month)\b|\b(?:sort|organi[sz]e|group|file|move|put|split)\b.*\bby\s+"
                      r"(?P<unit2>year|month)\b", re.IGNORECASE)
# A name that begins with a date: its year, and its month where it has one.
_DATED = re.compile(r"(?P<year>(?:19|20)\d\d)(?:[-_.]?(?P<month>0[1-9]|1[0-2])(?:[-_.]?(?:[0-2]\d|3[01]))?)?(?!\d)")


def folder_commands(asked: str, children: Callable[[str], list[str] | None]) -> dict[str, list[str]]:
    """The whole command of a request about the folders it names that `children` lists
    (what each holds directly, None where it is no folder): `case_command` asked to
    make the names lower or upper case, `merge_command` asked to put all of one into
    another; none otherwise."""
    folders = [f for f in named_folders(asked) if PLAIN_PATH.fullmatch(f)]
    held = {f: c for f in folders if (c := children(f)) is not None}
    by = _BY_DATE.search(asked)
    tops = {f: c for f, c in held.items() if not any(f.startswith(o + "/") for o in held)}  # (its year's named too)
    if by is not None and len(tops) == 1:
        (folder, names), = tops.items()
        command = dated_command(folder, names, month=(by.group("unit") or by.group("unit2")).lower() == "month")
        return {"mv": [command]} if command else {}
    case = _CASE.search(asked)
    if case is not None and _NAMES.search(asked) and len(held) == 1:
        (folder, names), = held.items()
        upper = (case.group("case") or "").lower() in ("upper", "capital") or case.group("caps") is not None
        command = case_command(folder, names, upper=upper)
        return {"mv": [command]} if command else {}
    if _PACK.search(asked) and not _UNPACK.search(asked) and len(held) == 1 and len(folders) == 1:
        named = _ARCHIVE.findall(asked)
        if not named:  # a kind asked for, the folder's name for its name
            kind = ".tar.gz" if _TAR_GZ.search(asked) else ".tar" if _TAR.search(asked) else ".zip"
            named = [f"{folders[0].rstrip('/')}{kind}"]
        command = pack_command(folders[0], named)
        return {command.split(" ", 1)[0]: [command]} if command else {}
    if _ALL_OF.search(asked) and len(folders) == 2 and folders[0] in held:
        source, to = folders
        command = merge_command(source, held[source], to, held.get(to), copy=bool(_COPIES.search(asked)),
                                remove=bool(_GOES.search(asked)))
        return {"cp" if _COPIES.search(asked) else "mv": [command]} if command else {}
    return {}


def case_command(folder: str, names: list[str], *, upper: bool) -> str | None:
    """Each name of `folder` (its `names`) that changes moved to its lower case one (`upper`:
    upper case, its extension kept); None where none changes, one would land on a name there, or a name may not
    be written plain."""
    new = {n: _upper(n) if upper else n.lower() for n in names}
    moves = [(old, to) for old, to in new.items() if old != to]
    kept = [n for n in names if new[n] == n]
    targets = [to for _, to in moves]
    if not moves or len(moves) > FOLDER_FILES or len(set(targets)) != len(targets) or set(targets) & set(kept) \
            or not all(PLAIN_PATH.fullmatch(n) for n in names if n in new and new[n] != n):
        return None
    return " && ".join(f"mv {folder}/{old} {folder}/{to}" for old, to in moves)


def pack_command(folder: str, named: list[str]) -> str | None:
    """The folder `folder` packed whole into the one archive the request `named` (a .zip
    by `zip -r`, a .tar.gz or .tgz by `tar -czf`, a .tar by `tar -cf`), or `folder`.zip
    where it names none; None where it names more than one, or one not plain."""
    if len(named) > 1:
        return None
    to = named[0] if named else f"{folder.rstrip('/')}.zip"
    if not PLAIN_PATH.fullmatch(to):
        return None
    if to.lower().endswith(".zip"):
        return f"zip -r {to} {folder}"
    return f"tar -c{'z' if to.lower().endswith(('.gz', '.tgz')) else ''}f {to} {folder}"


def _upper(name: str) -> str:
    """`name` in upper case but for its extension (`notes.txt`: NOTES.txt)."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem.upper()}{dot}{ext}" if stem else name.upper()


def merge_command(source: str, names: list[str], to: str, there: list[str] | None, *, copy: bool,
                  remove: bool) -> str | None:
    """All of `source` (its `names`) moved (`copy`: copied) into the folder `to` (made first
    where it is not: `there` None), and `source` removed after (`remove`, when moved);
    None where it holds nothing, too much, a name that would land on one in `to`, or a
    name that may not be written plain."""
    if not names or len(names) > FOLDER_FILES or set(names) & set(there or ()) \
            or not all(PLAIN_PATH.fullmatch(n) for n in names):
        return None
    make = f"mkdir {to} && " if there is None else ""
    listed = " ".join(f"{source}/{n}" for n in names)
    if copy:
        return f"{make}cp -r {listed} {to}"
    return f"{make}mv {listed} {to}" + (f" && rmdir {source}" if remove else "")


def dated_command(folder: str, names: list[str], *, month: bool = False) -> str | None:
    """`mkdir` and `mv` putting each of `folder`'s files (`names`: what it holds, a
    folder's name ending in `/`) whose name begins with a date (`2021-06-02_x.md`,
    `20210602-x.md`, `2021_x.md`) into a folder of its year (`folder/2021/`), or of its
    year and month (`folder/2021-06/`); the others left. None where none is dated."""
    groups: dict[str, list[str]] = {}
    for name in names:
        m = _DATED.match(name)
        if name.endswith("/") or m is None or month and m.group("month") is None:
            continue
        into = f"{m.group('year')}-{m.group('month')}" if month else m.group("year")
        if name.rstrip("/") != into:
            groups.setdefault(into, []).append(name)
    if not groups:
        return None
    at = (lambda rel: shlex.quote(f"{folder}/{rel}")) if folder not in (".", "") else shlex.quote
    made = "mkdir -p " + " ".join(at(g) for g in sorted(groups))
    moves = [f"mv {' '.join(at(n) for n in sorted(ns))} {at(g)}/" for g, ns in sorted(groups.items())]
    count = sum(map(len, groups.values()))
    told = f"Moved {count} file{'s' if count > 1 else ''} into " + ", ".join(
        f"{folder}/{g}/" if folder not in (".", "") else f"{g}/" for g in sorted(groups)) + "."
    return " && ".join([made, *moves, f"echo {shlex.quote(told)}"])
