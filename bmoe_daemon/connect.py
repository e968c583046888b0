"""Connect: other apps' settings for this daemon, from catalog/clients.json.

Pure functions but the last two (`write_settings`, `apply`), which touch one file:

- `render` fills a row's snippet template with the daemon's address, the loaded
  model, its context and the row's key text (a reference to BMOE_API_KEY when the
  daemon needs a key; the key itself is never an input here, so it cannot leak).
- `with_block` gives a TOML file a block of its own between two marker lines: the
  block is replaced on the next write and every byte outside it stays as it was.
- `merged_json` merges a snippet into a JSON file key by key (objects recursively,
  anything else replaced); a file that does not parse is refused, never rewritten.
- `write_settings` copies the file it replaces to `<file>.bmoe-backup-<unix time>`,
  then writes the new bytes whole (temporary file, fsync, rename) to the file the
  path names, through a symbolic link if it is one, keeping its permission bits.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import stat
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from actors.fs.paths import NotRegularFile, open_regular, read_fd

CATALOG = Path(__file__).resolve().parent.parent / "catalog" / "clients.json"
MARK_BEGIN = "# >>> bmoe-daemon >>> (written by bmoe-daemon: this block is replaced on its next write)"
MARK_END = "# <<< bmoe-daemon <<<"
FILE_FORMATS = ("json", "toml")
MAX_SETTINGS_BYTES = 4 * 1024 * 1024
NO_MODEL_ID = "no-model-loaded"


class SettingsError(Exception):
    """A settings file the daemon will not change; the text says why and what to do."""


@attrs.frozen
class Client:
    id: str
    name: str
    how: str
    snippet: Any  # an object (format json) or a list of lines
    snippet_format: str
    file: str | None = None  # relative to the home folder
    file_format: str | None = None
    key: dict[str, str] | None = None  # {"needed": ..., "none": ...}: the text {{key}} stands for
    acp: dict[str, Any] | None = None


def load_catalog(path: Path = CATALOG) -> list[Client]:
    """The rows of clients.json; raises ValueError naming a row that is not well formed."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[Client] = []
    for row in data["clients"]:
        file = row.get("file")
        if file is not None and file.get("format") not in FILE_FORMATS:
            raise ValueError(f"client {row.get('id')!r}: a settings file is json or toml")
        client = Client(
            id=str(row["id"]), name=str(row["name"]), how=str(row["how"]), snippet=row["snippet"],
            snippet_format=str(row["snippet_format"]), file=file["path"] if file else None,
            file_format=file["format"] if file else None, key=row.get("key"), acp=row.get("acp"),
        )
        if client.file_format == "json" and not isinstance(client.snippet, dict):
            raise ValueError(f"client {client.id!r}: a JSON file's snippet is an object")
        if client.file_format == "toml" and not isinstance(client.snippet, list):
            raise ValueError(f"client {client.id!r}: a TOML block's snippet is a list of lines")
        out.append(client)
    return out


@attrs.frozen
class Values:
    """What a snippet is filled with."""

    base_url: str
    model: str
    context: int
    key_needed: bool

    @property
    def output(self) -> int:
        return max(256, self.context // 4)


def _escape(value: str, fmt: str) -> str:
    if fmt in ("toml", "yaml", "python", "json"):
        # The templates put these inside double quotes; JSON's escapes are TOML's,
        # YAML's and Python's too.
        return json.dumps(value, ensure_ascii=False)[1:-1]
    if fmt == "shell":
        return shlex.quote(value)
    return value


def _fill_text(text: str, client: Client, values: Values, escape: Callable[[str], str]) -> str:
    key = ""
    if client.key is not None:
        key = client.key["needed" if values.key_needed else "none"]
    for name, value in (("base_url", escape(values.base_url)), ("model", escape(values.model)),
                        ("context", str(values.context)), ("output", str(values.output)), ("key", key)):
        text = text.replace("{{" + name + "}}", value)
    return text


def _fill_value(value: Any, client: Client, values: Values) -> Any:
    if isinstance(value, dict):
        return {_fill_value(k, client, values): _fill_value(v, client, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_value(v, client, values) for v in value]
    if isinstance(value, str):
        if value == "{{context}}":
            return values.context
        if value == "{{output}}":
            return values.output
        return _fill_text(value, client, values, lambda s: s)
    return value


def snippet_value(client: Client, values: Values) -> Any:
    """The filled snippet: an object for a JSON row, else the text."""
    if isinstance(client.snippet, dict):
        return _fill_value(client.snippet, client, values)
    return "\n".join(_fill_text(line, client, values, lambda s: _escape(s, client.snippet_format))
                     for line in client.snippet) + "\n"


def render(client: Client, values: Values) -> str:
    """The snippet as the person reads it."""
    value = snippet_value(client, values)
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


# ---- TOML: a block of its own ----


def _find_block(text: str) -> tuple[int, int] | None:
    """Where the marker block is, [start, end) including the end marker's line break."""
    if text.startswith(MARK_BEGIN):
        start = 0
    else:
        line = text.find("\n" + MARK_BEGIN)  # only a marker that starts its line is ours
        if line < 0:
            return None
        start = line + 1
    end = text.find(MARK_END, start)
    if end < 0:
        raise SettingsError(
            f"The file has the line {MARK_BEGIN!r} but not the closing {MARK_END!r}; "
            "remove the start marker (or add the end one) and write again."
        )
    end += len(MARK_END)
    if text.startswith("\r\n", end):
        end += 2
    elif text.startswith("\n", end):
        end += 1
    return start, end


def block(body: str) -> str:
    return f"{MARK_BEGIN}\n{body.rstrip(chr(10))}\n{MARK_END}\n"


def with_block(original: str, body: str) -> str:
    """`original` with the marker block holding `body`: replaced where there is one,
    else appended at the end; nothing outside the block changes. Raises SettingsError
    when the file does not parse as TOML, or would not once the block is in."""
    where = _find_block(original)
    outside = original if where is None else original[: where[0]] + original[where[1]:]
    try:
        tomllib.loads(outside)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(
            f"The file is not valid TOML ({exc}), so it was left untouched. Fix it, then write again."
        ) from None
    new_block = block(body)
    if where is not None:
        result = original[: where[0]] + new_block + original[where[1]:]
    else:
        sep = "" if not original or original.endswith("\n\n") else ("\n" if original.endswith("\n") else "\n\n")
        result = original + sep + new_block
    try:
        tomllib.loads(result)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(
            f"The settings would clash with what the file already has ({exc}), so it was left untouched. "
            "Remove the tables the snippet defines from it, or paste the snippet by hand."
        ) from None
    return result


# ---- JSON: merged key by key ----


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` merged in: objects key by key, anything else replaced."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def merged_json(original: str, snippet: dict[str, Any]) -> str:
    """The file's JSON with the snippet merged in; raises SettingsError when the file
    is not a JSON object (comments included: some apps accept them, JSON does not)."""
    if original.strip():
        try:
            data = json.loads(original)
        except ValueError as exc:
            raise SettingsError(
                f"The file is not plain JSON ({exc}; comments and trailing commas count), so it was left "
                "untouched. Paste the snippet into it by hand."
            ) from None
        if not isinstance(data, dict):
            raise SettingsError("The file does not hold a JSON object, so it was left untouched.")
    else:
        data = {}
    return json.dumps(merge(data, snippet), indent=2, ensure_ascii=False) + "\n"


# ---- the file ----


def backup_path(path: Path, when: float) -> Path:
    """`<file>.bmoe-backup-<unix time>`, with `-2`, `-3` ... when that is taken."""
    base = path.with_name(f"{path.name}.bmoe-backup-{int(when)}")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def read_settings(path: Path) -> str | None:
    """The file's text, None when it does not exist; SettingsError when it cannot be read.

    A link is followed (settings files are often links into a dotfiles repository), but
    only a regular file is read, opened without waiting (a FIFO, or /dev/zero behind a
    link, is refused), and at most MAX_SETTINGS_BYTES of it."""
    try:
        fd = open_regular(path, follow=True)
    except FileNotFoundError:
        return None
    except NotRegularFile:
        raise SettingsError(f"{path} is not a regular file, so it was left untouched.") from None
    except OSError as exc:
        raise SettingsError(f"{path} cannot be read: {exc.strerror}.") from None
    try:
        if os.fstat(fd).st_size > MAX_SETTINGS_BYTES:
            raise SettingsError(f"{path} is larger than a settings file should be, so it was left untouched.")
        raw = read_fd(fd, MAX_SETTINGS_BYTES + 1)
    except OSError as exc:
        raise SettingsError(f"{path} cannot be read: {exc.strerror}.") from None
    finally:
        os.close(fd)
    if len(raw) > MAX_SETTINGS_BYTES:
        raise SettingsError(f"{path} is larger than a settings file should be, so it was left untouched.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{path} is not UTF-8 text, so it was left untouched.") from None


def write_settings(path: Path, text: str, *, write_file: Callable[[Path, bytes], None],
                   when: float | None = None) -> Path | None:
    """Replace the file whole, after copying the old one to its backup; the backup's
    path, or None when there was no file."""
    target = Path(os.path.realpath(path))  # a symbolic link keeps pointing where it did
    backup: Path | None = None
    mode: int | None = None
    if target.exists():
        mode = stat.S_IMODE(target.stat().st_mode)
        backup = backup_path(path, time.time() if when is None else when)
        shutil.copy2(target, backup)
    write_file(target, text.encode("utf-8"))
    if mode is not None:
        os.chmod(target, mode)
    return backup


def planned(client: Client, home: Path, values: Values) -> tuple[Path, str | None, str]:
    """What a write would do: (the file, its text now or None when there is none, the
    text it would get). SettingsError when it cannot be written."""
    if client.file is None or client.file_format is None:
        raise SettingsError(f"{client.name} has no settings file the daemon writes; copy the snippet instead.")
    path = home / client.file
    original = read_settings(path)
    value = snippet_value(client, values)
    if client.file_format == "toml":
        assert isinstance(value, str)
        text = with_block(original or "", value)
    else:
        assert isinstance(value, dict)
        text = merged_json(original or "", value)
    return path, original, text


def apply(client: Client, home: Path, values: Values, *, write_file: Callable[[Path, bytes], None],
          when: float | None = None) -> tuple[Path, Path | None]:
    """Write the client's settings into its file under `home`: (file, backup)."""
    path, _, text = planned(client, home, values)
    backup = write_settings(path, text, write_file=write_file, when=when)
    return path, backup


# A settings line whose name says it holds a secret (another app's own key, say): its
# value is not shown in a preview.
_SECRET_LINE = re.compile(
    r"""^(?P<name>\s*["']?[\w.-]*(?:key|token|secret|passw(?:or)?d|auth)[\w.-]*["']?\s*[:=]\s*)\S.*$""",
    re.IGNORECASE)
HIDDEN = "(hidden)"
DIFF_CONTEXT = 2


def hide_secrets(line: str) -> str:
    m = _SECRET_LINE.match(line)
    return line if m is None else m.group("name") + HIDDEN


def preview(client: Client, home: Path, values: Values) -> dict[str, Any]:
    """What a write would change, for the person to see first: the file, whether it
    exists, whether anything changes, and the unified diff. Lines of the file as it
    is that look like they hold a secret show their name only."""
    path, original, text = planned(client, home, values)
    before = [hide_secrets(line) for line in (original or "").splitlines()]
    after = text.splitlines()
    if original is not None:
        # The lines the write keeps are the file's own: hidden alike on both sides.
        kept = set((original or "").splitlines())
        after = [hide_secrets(line) if line in kept else line for line in after]
    diff = "\n".join(difflib.unified_diff(before, after, fromfile=str(path) if original is not None else "/dev/null",
                                          tofile=str(path), n=DIFF_CONTEXT, lineterm=""))
    return {"file": str(path), "exists": original is not None, "changed": original != text, "diff": diff}


def home_folder() -> Path | None:
    """The home folder from the environment (HOME, or USERPROFILE on Windows); None
    where there is none (a phone's app sandbox, a service with no home)."""
    raw = os.environ.get("HOME") or (os.environ.get("USERPROFILE") if os.name == "nt" else None)
    if not raw:
        return None
    home = Path(raw)
    return home if home.is_dir() else None


def local_base_url(address: str) -> str:
    """The daemon's address as a client on this computer reaches it: a wildcard bind
    (0.0.0.0, ::) is reached on loopback."""
    for wildcard, loopback in (("//0.0.0.0:", "//127.0.0.1:"), ("//[::]:", "//[::1]:")):
        address = address.replace(wildcard, loopback)
    return address.rstrip("/")
