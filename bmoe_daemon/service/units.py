"""The service files, filled in from the templates beside this module: a systemd user
unit and a launchd agent's plist. Pure text in, text out: nothing here touches the disk
or a service manager, so each quoting rule is tested on its own (tests/test_service_units.py).

Each format quotes the daemon's command line its own way: systemd's ExecStart= splits
words on spaces, reads C escapes inside double quotes and expands `%` specifiers and `$`
variables; a plist is XML. `exec_start_words` reads back what `exec_start` wrote, so
`service status` finds the address and data folder in the installed unit itself.
"""

from __future__ import annotations

import re
from importlib import resources
from xml.sax.saxutils import escape

SYSTEMD_TEMPLATE = "bmoe-daemon.service"
LAUNCHD_TEMPLATE = "com.bmoe.daemon.plist"

# A word written bare in ExecStart=; anything else goes in double quotes.
_BARE = re.compile(r"[A-Za-z0-9_+=:,./@-]+")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r", "'": "'"}
# XML 1.0 allows no other control characters, so a plist cannot carry them.
_XML_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class UnitError(ValueError):
    """A value that the service file's format cannot carry; the message says which."""


def _template(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _fill(template: str, fields: dict[str, str]) -> str:
    for name, value in fields.items():
        template = template.replace(f"@{name}@", value)
    return template


def _systemd_literal(text: str) -> str:
    """`text` where systemd would otherwise expand it: `%` specifiers and `$` variables."""
    return text.replace("%", "%%").replace("$", "$$")


def systemd_word(word: str) -> str:
    """One word of ExecStart=, quoted so that systemd passes exactly `word` to the program."""
    if _BARE.fullmatch(word):
        return _systemd_literal(word)
    quoted = "".join(_ESCAPES.get(c, c if c.isprintable() else f"\\x{ord(c):02x}") for c in word)
    if any(ord(c) > 0xFF for c in word if not c.isprintable()):
        raise UnitError(f"{word!r} holds a character a systemd unit cannot carry")
    return '"' + _systemd_literal(quoted) + '"'


def exec_start(argv: list[str]) -> str:
    """The value of ExecStart= that runs `argv` (argv[0] an absolute path)."""
    return " ".join(systemd_word(w) for w in argv)


def exec_start_words(value: str) -> list[str]:
    """The words that `exec_start` wrote into `value`. Raises UnitError for text it
    did not write (an unclosed quote, an unknown escape)."""
    words: list[str] = []
    i, n = 0, len(value)
    while i < n:
        if value[i] == " ":
            i += 1
            continue
        word: list[str] = []
        if value[i] == '"':
            i += 1
            while i < n and value[i] != '"':
                c = value[i]
                if c == "\\" and i + 1 < n:
                    e = value[i + 1]
                    if e == "x" and i + 3 < n:
                        word.append(chr(int(value[i + 2 : i + 4], 16)))
                        i += 4
                        continue
                    if e not in _UNESCAPES:
                        raise UnitError(f"unknown escape \\{e} in ExecStart=")
                    word.append(_UNESCAPES[e])
                    i += 2
                    continue
                if c in "%$" and i + 1 < n and value[i + 1] == c:
                    i += 1
                word.append(c)
                i += 1
            if i >= n:
                raise UnitError("an unclosed quote in ExecStart=")
            i += 1
        else:
            while i < n and value[i] != " ":
                c = value[i]
                if c in "%$" and i + 1 < n and value[i + 1] == c:
                    i += 1
                word.append(c)
                i += 1
        words.append("".join(word))
    return words


def _systemd_path(path: str, what: str) -> str:
    if any(not c.isprintable() for c in path) or path != path.strip():
        raise UnitError(f"the {what} {path!r} cannot be written into a systemd unit: choose another folder")
    return _systemd_literal(path)


def systemd_unit(argv: list[str], working_directory: str, output: str) -> str:
    """The user unit that runs `argv` in `working_directory`, its stdout and stderr
    appended to `output`, restarted when it fails."""
    return _fill(_template(SYSTEMD_TEMPLATE), {
        "EXEC_START": exec_start(argv),
        "WORKING_DIRECTORY": _systemd_path(working_directory, "working folder"),
        "OUTPUT": _systemd_path(output, "output file"),
    })


def unit_settings(text: str) -> dict[str, str]:
    """The `Key=value` lines of a unit's [Service] section (the last one of a key wins)."""
    settings: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith(("#", ";")):
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings


def _plist_string(value: str) -> str:
    if _XML_FORBIDDEN.search(value):
        raise UnitError(f"{value!r} holds a control character a launchd plist cannot carry")
    return escape(value)


def launchd_plist(label: str, argv: list[str], working_directory: str, output: str) -> str:
    """The launchd agent `label` that runs `argv` in `working_directory`, its stdout and
    stderr appended to `output`, started again when it exits with a failure."""
    return _fill(_template(LAUNCHD_TEMPLATE), {
        "LABEL": _plist_string(label),
        "PROGRAM_ARGUMENTS": "\n".join(f"    <string>{_plist_string(w)}</string>" for w in argv),
        "WORKING_DIRECTORY": _plist_string(working_directory),
        "OUTPUT": _plist_string(output),
    })
