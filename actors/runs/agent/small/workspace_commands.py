"""Whole commands for questions about the workspace's files and for unpacking an
archive: how many files of a kind there are, which file is the biggest (or smallest),
what a Python file imports; an archive the request names unpacked. And the kinds of file
people say in words ("the log files", "python scripts") said as the extensions the other
commands read (`with_kinds`).

Asked how many Python files there were, SmolLM2-135M counted the lines of one; asked to
unzip an archive, it searched the text of the files for the archive's name. Each is one
command a person would type, so it is known, shown and run as any other (mode and
sandbox decide), and the answer begins with what it printed:

    find . -name '*.py' -not -path '*/.*' | wc -l           how many .py files
    find . -type f -not -path '*/.*' -printf '%s %p\\n' | sort -n | tail -1   the biggest
    grep -nE '^\\s*(import|from)\\s' app.py                  what app.py imports
    find src -type f -name '*.py' -printf '%f\\n' | sort > names.txt   their names, one a line
    unzip -n pack.zip -d out                                 unpacked, nothing there overwritten
"""

from __future__ import annotations

import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE

# Kinds of file said in words, and the extension each is ("python files": .py files).
KIND_WORDS = {"python": ".py", "log": ".log", "text": ".txt", "markdown": ".md", "csv": ".csv", "json": ".json",
              "yaml": ".yaml", "html": ".html", "css": ".css", "javascript": ".js", "shell": ".sh", "bash": ".sh",
              "pdf": ".pdf", "png": ".png", "jpeg": ".jpeg", "jpg": ".jpg", "gif": ".gif", "svg": ".svg",
              "toml": ".toml", "xml": ".xml", "sql": ".sql", "ruby": ".rb", "typescript": ".ts", "rust": ".rs",
              "backup": ".bak", "temp": ".tmp", "tmp": ".tmp"}
_KIND_WORD = re.compile(rf"(?<![.\w-])({'|'.join(KIND_WORDS)})\s+(?=(?:files|scripts|sources|docs|documents)\b)",
                        re.IGNORECASE)
_COUNTS = re.compile(r"\bhow\s+many\b|\bcount\s+(?:the|all|up)?\b|\bnumber\s+of\b", re.IGNORECASE)
_FILES_OF = re.compile(r"(?<![\w/-])\*?(\.[A-Za-z][A-Za-z0-9]{0,7})\s+(?:files?|scripts?|sources?|docs?)\b",
                       re.IGNORECASE)
_SIZE = re.compile(r"\b(?P<big>biggest|largest|heaviest|huge(?:st)?)\b|\b(?P<small>smallest|tiniest|lightest)\b",
                   re.IGNORECASE)
_FILE_WORD = re.compile(r"\bfiles?\b", re.IGNORECASE)
_IMPORTS = re.compile(r"\b(?:what|which)\b.*\b(?:imports?|modules?|librar(?:y|ies)|packages?|dependenc(?:y|ies))\b|"
                      r"\bwhat\s+does\s+\S+\s+(?:import|depend\s+on|need)\b", re.IGNORECASE)
_UNPACK = re.compile(r"\b(?:unzip|extract|unpack|untar|decompress|open\s+up|expand)\b", re.IGNORECASE)
_ARCHIVE = re.compile(r"(?<![\w/.-])([\w./-]+\.(?:zip|tar\.gz|tgz|tar))(?![\w.-])", re.IGNORECASE)
_INTO = re.compile(r"\b(?:into|to|in)\s+(?:a\s+)?(?:new\s+)?(?:folder\s+|directory\s+)?(?:called\s+|named\s+)?"
                   r"`?([\w.-]+(?:/[\w.-]+)*)/?`?", re.IGNORECASE)
_HIDDEN = "-not -path '*/.*'"
# The names of the files of a kind put in a file, one a line ("put the names of the .py
# files in src/ into names.txt", "write the paths of the .md files to docs.txt").
_LIST_INTO = re.compile(r"\b(?:put|write|save|list|dump|store|record|send)\b.*\b(?:names?|paths?|list)\b.*?"
                        r"\b(?:into|in|to)\s+(?:a\s+(?:new\s+)?file\s+(?:called\s+|named\s+)?)?`?"
                        r"(?P<into>[\w./-]+\.(?:txt|md|csv|lst|list))\b", re.IGNORECASE)


def with_kinds(asked: str) -> str:
    """`asked` with the kinds of file it says in words said as their extensions ("the
    python files": "the .py files"; of files in the plural only: "the text file a.md"
    names one file)."""
    return _KIND_WORD.sub(lambda m: KIND_WORDS[m.group(1).lower()] + " ", asked)


def workspace_commands(asked: str, is_file: Callable[[str], bool], is_dir: Callable[[str], bool],
                       folders: list[str]) -> dict[str, list[str]]:
    """The whole command of a request to unpack an archive that is there, or of a question
    of how many files of a kind there are (under the one folder it names, if one), which
    is the biggest or smallest file, what a Python file it names imports; none otherwise."""
    asked = with_kinds(asked)
    under = [f.rstrip("/") for f in folders if is_dir(f.rstrip("/")) and PLAIN_PATH.fullmatch(f.rstrip("/"))]
    where = under[0] if len(under) == 1 else "."
    archives = [a for a in dict.fromkeys(_ARCHIVE.findall(asked)) if is_file(a) and PLAIN_PATH.fullmatch(a)]
    if _UNPACK.search(asked) and len(archives) == 1:
        command = unpack_command(archives[0], asked, is_file)
        return {"unzip" if archives[0].lower().endswith(".zip") else "tar": [command]} if command else {}
    kinds = list(dict.fromkeys(k.lower() for k in _FILES_OF.findall(asked)))
    listed = _LIST_INTO.search(asked)
    if listed is not None and len(kinds) == 1 and PLAIN_PATH.fullmatch(listed.group("into")) \
            and not listed.group("into").lower().endswith(kinds[0]):
        shown = "%P" if re.search(r"\bpaths?\b", asked, re.IGNORECASE) else "%f"
        return {"find": [f"find {where} -type f -name '*{kinds[0]}' {_HIDDEN} -printf '{shown}\\n' | sort"
                         f" > {listed.group('into')}"]}
    if _COUNTS.search(asked) and len(kinds) == 1:
        return {"find": [f"find {where} -type f -name '*{kinds[0]}' {_HIDDEN} | wc -l"]}
    size = _SIZE.search(asked)
    if size is not None and _FILE_WORD.search(asked):
        end = "tail" if size.group("big") else "head"
        kind = f" -name '*{kinds[0]}'" if len(kinds) == 1 else ""
        return {"find": [f"find {where} -type f{kind} {_HIDDEN} -printf '%s %p\\n' | sort -n | {end} -1"]}
    named = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if is_file(f) and PLAIN_PATH.fullmatch(f)]
    if _IMPORTS.search(asked) and len(named) == 1 and "?" in asked + "?" and not re.search(
            r"\b(?:add|remove|delete|drop|sort|fix|change|clean)\b", asked, re.IGNORECASE):
        return {"grep": [f"grep -nE '^\\s*(import|from)\\s' {named[0]}"]}
    return {}


def unpack_command(archive: str, asked: str, is_file: Callable[[str], bool]) -> str | None:
    """`archive` unpacked where the request says (`into out/`), else where it is; a file
    that is there never overwritten (`unzip -n`, `tar --skip-old-files`)."""
    into = next((m.group(1) for m in _INTO.finditer(asked) if m.group(1) != archive and "." not in m.group(1)), None)
    if into is not None and (not PLAIN_PATH.fullmatch(into) or is_file(into)):
        return None
    if archive.lower().endswith(".zip"):
        return f"unzip -n {archive}" + (f" -d {into}" if into else "")
    flags = "-xzf" if archive.lower().endswith((".gz", ".tgz")) else "-xf"
    return (f"mkdir -p {into} && " if into else "") + f"tar --skip-old-files {flags} {archive}" + (
        f" -C {into}" if into else "")
