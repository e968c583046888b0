"""Whole commands for requests about one text file the request names: its lines, words,
functions or classes counted, a line put at its end, its lines sorted, its dates
rewritten in another layout.

Asked how many lines a file has, SmolLM2-135M read it and answered a number of its own
(counting is beyond it); asked to put a line at a file's end, or to sort one, it edited
a line of it into something else; asked for a CSV file's dates in another layout, it
added a column's name to its header. Each is one command of the usual programs, built from
the file (there, text, small) and the words the request gives, and shown and run as any
other command:

    wc -l log.md            how many lines (wc -w: words)
    grep -HcE '^ *(async )?def ' x.py   how many functions (grep -Hc '^ *class ': classes)
    tail -n +2 d.csv | cut -d, -f2 | sort -u | wc -l    how many different (a column's name)
    echo 'a line' >> b.txt  append the line 'a line' to b.txt (a file ending in a line break)
    tail -n 1 d.log         the last line (head: the first; -n 3: three)
    sort -o c.txt c.txt     sort c.txt (alphabetically; not in reverse, nor by number)
    sed -E -i 's#([0-9]{2})/([0-9]{2})/([0-9]{4})#\\3-\\2-\\1#g' d.csv   its dates in the layout asked for
    sed -i '/^[[:space:]]*$/d' a.txt    its blank lines out (trailing blanks, lines said twice, lines with a word)

and how many times a word is written, in a file, a folder, the files of a kind or all:

    grep -rowI --exclude-dir='.?*' --include='*.py' FIXME . | wc -l
"""

from __future__ import annotations

import re
from collections.abc import Callable

from actors.runs.agent.small import steps

# Asked how many of a thing a file has (or to count them): lines, words, or, in a Python
# file, functions or classes; each counted by the command of its kind.
_HOW_MANY = re.compile(r"\b(?:how\s+many|count\s+(?:the\s+|all\s+the\s+)?|number\s+of)\s*(?P<what>lines|words|"
                       r"functions|classes|methods)\b|\b(?P<one>line|word)\s+count\b", re.IGNORECASE)
# Asked how many different values a column of a CSV file holds, by the column's name in
# its header (a plural's `s` may go): the rows after the header, that column, each value once.
_DISTINCT = re.compile(r"\bhow\s+many\s+(?:different|distinct|unique)\s+(?P<what>[A-Za-z][\w-]*)", re.IGNORECASE)
# Asked for a file's first or last line(s): `head` or `tail` of that many.
_ENDS = re.compile(r"\b(?P<end>first|last|final|top|bottom)\s+(?:(?P<n>\d{1,3})\s+)?lines?\b", re.IGNORECASE)
_COUNTS = {"lines": "wc -l {}", "words": "wc -w {}", "functions": "grep -HcE '^ *(async )?def ' {}",
           "classes": "grep -Hc '^ *class ' {}"}
_APPEND = re.compile(r"\bappend\b|\badd\b.*\b(?:end|bottom)\b", re.IGNORECASE | re.DOTALL)
# The line to put at the end: quoted in the request, on one line, with no quote of the
# other kind inside (it is written between single quotes).
_QUOTED = re.compile(r"'([^'\n]+)'|\"([^\"'\n]+)\"")
# A request that changes a file's end lines rather than asking for them.
_CHANGES = re.compile(r"\b(?:remove|delete|drop|change|replace|edit|fix|set|add|insert|move|swap|comment)\b",
                      re.IGNORECASE)
# ("sort out" is to mend, not to order lines.)
_SORT = re.compile(r"^\s*(?:please\s+)?sort\b(?!\s+(?:\w+\s+)?out\b)", re.IGNORECASE)
# Source code, whose lines are never put in order (a file of code sorted is broken).
_CODE = (".py", ".pyi", ".js", ".ts", ".sh", ".rb", ".go", ".rs", ".c", ".h", ".java", ".php")
# Sorted otherwise than `sort` alone does: left to the model.
_SORTED_OTHERWISE = re.compile(r"\b(?:reverse|descending|backwards?|numeric(?:ally)?|by\s+(?:number|size|date|"
                               r"length|column|field))\b", re.IGNORECASE)
# Characters the line appended may not hold: what the shell would read inside single
# quotes (a quote itself), and what the command's grammar may not write.
_NOT_IN_LINE = frozenset("'\"\\\n\r")


def text_commands(asked: str, read: Callable[[str], str | None]) -> dict[str, list[str]]:
    """The whole command of a request about the one file it names that `read` finds
    (a text file's content, None where it is not one): `wc` or `grep -c` asked how many
    lines, words, functions or classes (`_COUNTS`), or different values of a CSV file's
    column; `head` or `tail` asked for its first or last lines;
    `echo … >>` asked to append a quoted line (the file ending in a line break), `sed -E`
    asked for its dates in a layout (`date_command`), `sort -o` asked to sort it, `perl -i`
    asked to number its lines; none otherwise."""
    names = [n for n in steps.file_names(asked) if " " not in n and not n.startswith("-")]
    texts = {n: read(n) for n in names}
    there = [n for n, text in texts.items() if text is not None]
    if len(there) != 1:
        return {}
    name, text = there[0], texts[there[0]] or ""
    if (d := _DISTINCT.search(asked)) is not None:
        column = _column(text, d.group("what")) if name.endswith(".csv") else None
        return {"tail": [f"tail -n +2 {name} | cut -d, -f{column} | sort -u | wc -l"]} if column else {}
    if (m := _HOW_MANY.search(asked)) is not None:
        what = (m.group("what") or m.group("one") + "s").lower()
        what = "functions" if what == "methods" else what
        if what in ("lines", "words") or name.endswith(".py"):
            command = _COUNTS[what].format(name)
            return {command.split(" ", 1)[0]: [command]}
        return {}
    if (e := _ENDS.search(asked)) is not None and not _APPEND.search(asked) and not _CHANGES.search(asked):
        program = "head" if e.group("end").lower() in ("first", "top") else "tail"
        return {program: [f"{program} -n {int(e.group('n') or 1)} {name}"]}
    if _APPEND.search(asked) and (text == "" or text.endswith("\n")):
        quoted = [a or b for a, b in _QUOTED.findall(asked)]
        if len(quoted) == 1 and not _NOT_IN_LINE & set(quoted[0]):
            return {"echo": [f"echo '{quoted[0]}' >> {name}"]}
    tidy = tidy_command(asked, name)
    if tidy is not None:
        return {tidy.split(" ", 1)[0]: [tidy]}
    if (layout := _date_layout(asked)) is not None:
        dates = date_command(name, text, layout)
        return {"sed": [dates]} if dates else {}
    if _SORT.search(asked) and not _SORTED_OTHERWISE.search(asked) and not name.lower().endswith(_CODE):
        return {"sort": [f"sort -o {name} {name}"]}
    if (number := _NUMBER_LINES.search(asked)) is not None and not name.endswith(".py"):
        after = {")": ")", ":": ":", "-": " -", "]": "]"}.get(number.group("after") or "", ".")
        return {"perl": [f"perl -i -pe 's/^/$.{after} /' {name}"]}
    return {}


# Asked to number a file's lines ("number the lines like 1. 2. 3.", "put line numbers in
# front", "add 1) 2) 3) before each line"): each line given its number and the mark after
# it the request writes (a full stop where it writes none).
_NUMBER_LINES = re.compile(r"\b(?:number\s+(?:the|each|every|all\s+the)\s+lines?|(?:add|put|prefix|give)\b.{0,30}?"
                           r"\bline\s+numbers?|numbered\s+lines?)\b(?:.*?\b1(?P<after>[.):\]-]))?",
                           re.IGNORECASE | re.DOTALL)


# Asked how many times a word is written: "how many FIXME comments", "how many times does
# 'x' appear", "how many TODOs are there". The word quoted, in capitals, or before a noun
# of its being written (so "how many tests are there" asks no such thing).
_OCCURS = re.compile(
    r"\b(?i:how\s+many\s+(?:times\s+(?:does|do|is|are)\s+(?:the\s+word\s+)?)?)(?:(?P<q>['\"`])(?P<quoted>[^'\"`\s]{1,40})(?P=q)"
    r"|(?P<word>[A-Za-z_][\w.-]{0,39}?)(?=\s+(?i:comments?|mentions?|occurrences?|appears?|occurs?|shows?\s+up|calls?|"
    r"uses?|usages?|markers?|tags?|notes?)\b)|(?P<caps>[A-Z][A-Z0-9_]{1,39})s?(?=\s+(?i:are|is)\b))", re.DOTALL)
# What such a word may be: no character the shell or grep's pattern reads.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")


def occurrence_commands(asked: str, is_file: Callable[[str], bool], is_dir: Callable[[str], bool],
                        kinds: list[str], folders: list[str], named: list[str]) -> dict[str, list[str]]:
    """The whole command of a request asking how many times a word is written (`_OCCURS`):
    `grep -ow` of it, as a word, counted by `wc -l`, in the one file it `named` (where it
    names more, none) that is there, else under the one folder it names (or the workspace), in the files of the
    one kind it names (or all text files), hidden folders not entered; none otherwise."""
    m = _OCCURS.search(asked)
    word = (m.group("quoted") or m.group("word") or m.group("caps")) if m is not None else None
    if word is None or not _PLAIN_WORD.fullmatch(word) or word.lower() in _NOT_A_WORD:
        return {}
    files = [n for n in named if is_file(n)]
    if len(named) > 1:  # (of files named, one counted would answer another question)
        return {}
    if len(files) == 1:
        return {"grep": [f"grep -ow {word} {files[0]} | wc -l"]}
    if files or len(kinds) > 1 or len(folders) > 1 or folders and not is_dir(folders[0]):
        return {}
    include = f" --include='*{kinds[0]}'" if kinds else ""
    under = folders[0] if folders else "."
    return {"grep": [f"grep -rowI --exclude-dir='.?*'{include} {word} {under} | wc -l"]}


# Words before a noun of being written that are no word to count ("how many lines", "how many different").
_NOT_A_WORD = frozenset({"lines", "words", "functions", "classes", "methods", "different", "distinct", "unique",
                         "files", "folders", "of", "the", "other", "more", "such"})


# Lines taken out or tidied, all alike: blank ones, what trails them, lines said twice, lines with a word.
_TAKE = r"\b(?:remove|delete|drop|strip|trim|get\s+rid\s+of|clean\s+up|clear|take\s+out|cut)\b.{0,20}?"
_BLANK = re.compile(_TAKE + r"\b(?:blank|empty)\s+lines\b", re.IGNORECASE | re.DOTALL)
_TRAILING = re.compile(_TAKE + r"\btrailing\s+(?:white\s*space|spaces|blanks|tabs)\b", re.IGNORECASE | re.DOTALL)
_TWICE = re.compile(r"\b(?:duplicate|duplicated|repeated|double)\s+lines\b|\bde-?dup(?:e|licate)\b", re.IGNORECASE)
_WITH_WORD = re.compile(_TAKE + r"\blines?\s+(?:that\s+)?(?:contain(?:s|ing)?|with|mentioning|(?:that\s+)?(?:says?|"
                        r"mentions?|has|have))\s+(?:the\s+word\s+)?(?P<q>['\"`]?)(?P<word>[A-Za-z0-9_][\w-]{0,39})(?P=q)"
                        r"(?=[\s.,;:!?'\"`)]|$)", re.IGNORECASE | re.DOTALL)


def tidy_command(asked: str, name: str) -> str | None:
    """The command that takes out or tidies lines of the file `name` all alike: its
    blank lines, the blanks that trail its lines, its lines said twice (the first kept;
    blank lines are no such line),
    its lines that hold a word (as a word); None for none of these."""
    if _BLANK.search(asked):
        return f"sed -i '/^[[:space:]]*$/d' {name}"
    if _TRAILING.search(asked):
        return f"sed -i 's/[[:space:]]*$//' {name}"
    if _TWICE.search(asked):
        return f"perl -i -ne 'print if /^\\s*$/ || !$seen{{$_}}++' {name}"  # (in place: no file moved over it)
    if (m := _WITH_WORD.search(asked)) is not None:
        return f"sed -i '/\\b{m.group('word')}\\b/d' {name}"
    return None


# A layout of dates the request asks for: written out (`YYYY-MM-DD`, `dd/mm/yyyy`) or ISO's.
_LAYOUT = re.compile(r"\b(?P<a>yyyy|dd|mm)(?P<sep>[-/.])(?P<b>yyyy|dd|mm)(?P=sep)(?P<c>yyyy|dd|mm)\b", re.IGNORECASE)
_ISO = re.compile(r"\biso(?:[\s-]*8601)?\b(?![.\w-])", re.IGNORECASE)
# A date of a file: two or four digits, a separator, two digits, the same separator, two or four.
_DATE = re.compile(r"(?<![\d./-])(\d{2}|\d{4})([-/.])(\d{2})\2(\d{2}|\d{4})(?![\d./-])")


def _date_layout(asked: str) -> tuple[tuple[str, str, str], str] | None:
    """The layout of dates asked for, its parts' order (`y`, `m`, `d`) and separator."""
    m = _LAYOUT.search(asked)
    if m is None:
        return (("y", "m", "d"), "-") if _ISO.search(asked) else None
    order = tuple(m.group(k)[0].lower() for k in "abc")
    return (order, m.group("sep")) if sorted(order) == ["d", "m", "y"] else None  # type: ignore[return-value]


def date_command(path: str, text: str, layout: tuple[tuple[str, str, str], str]) -> str | None:
    """`sed -E` that rewrites each date of the file `path` (its `text`) in `layout`: the
    dates all of one layout (year first, or last with the day or the month first, as the
    numbers over 12 tell); None where there is none, layouts are mixed, which is the day
    is not told, or they are in the layout asked for already."""
    found = _DATE.findall(text)
    shapes = {(len(a), sep, len(c)) for a, sep, _, c in found}
    if not found or len(shapes) != 1:
        return None
    (first, sep, last), = shapes
    if first == 4 and last == 2:
        have = ("y", "m", "d")
    elif first == 2 and last == 4:
        day_first = any(int(a) > 12 for a, _, _, _ in found)
        month_first = any(int(b) > 12 for _, _, b, _ in found)
        if day_first == month_first:  # neither, or both: which is the day is not known
            return None
        have = ("d", "m", "y") if day_first else ("m", "d", "y")
    else:
        return None
    order, to_sep = layout
    if (have, sep) == (order, to_sep):
        return None
    width = {"y": "[0-9]{4}", "m": "[0-9]{2}", "d": "[0-9]{2}"}
    pattern = re.escape(sep).join(f"({width[p]})" for p in have).replace("/", "\\/")
    groups = to_sep.replace("/", "\\/").join(f"\\{have.index(p) + 1}" for p in order)
    return f"sed -E -i 's/{pattern}/{groups}/g' {path}"


def _column(text: str, what: str) -> int | None:
    """The column (from 1) of a CSV file's header (`text`'s first line) named `what`, or
    its singular; None where no column, or more than one, is."""
    header = [c.strip().strip('"').lower() for c in text.split("\n", 1)[0].split(",")]
    names = {what.lower(), what.lower().removesuffix("s"), what.lower().removesuffix("es")}
    found = [n for n, c in enumerate(header, 1) if c in names]
    return found[0] if len(found) == 1 else None
