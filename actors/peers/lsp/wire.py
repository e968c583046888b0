"""The Language Server Protocol's wire without I/O, and what the daemon reads of it.

LSP is JSON-RPC 2.0 (the messages of actors/peers/jsonrpc.py: `parse` reads one, its
`encode_*` write ours) framed by headers instead of lines: `Content-Length: N\\r\\n`,
maybe other headers, an empty line, then N bytes of JSON. `FrameBuffer` cuts a byte
stream into message bodies; `frame` wraps one of ours.

Besides: which language a file is and which servers speak it (`LANGUAGES`), what we
tell a server at `initialize`, how it wants a document kept in step
(`sync_of`), what a `textDocument/publishDiagnostics` says (`published`), and the
lines the model reads (`diagnostic_lines`). Nothing here raises on what a server sends
except `WireError`, which says what was wrong with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

import attrs

from actors.peers.jsonrpc import CLIENT_INFO, WireError

MAX_FRAME_BYTES = 32 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024
HEADER_END = b"\r\n\r\n"
# What the model reads after an edit: at most this many diagnostics, each message cut.
MAX_LINES = 20
MAX_MESSAGE_CHARS = 400
# A publication of more than this many is read only this far (the rest cannot be shown).
MAX_READ_DIAGNOSTICS = 1000

SEVERITIES = {1: "error", 2: "warning", 3: "information", 4: "hint"}
# Reported to the model: errors and warnings (information and hints are left out).
REPORTED = (1, 2)
# LSP's TextDocumentSyncKind.
SYNC_NONE, SYNC_FULL, SYNC_INCREMENTAL = 0, 1, 2

_CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*([0-9]{1,12})[ \t]*$", re.IGNORECASE)


class FrameBuffer:
    """Bytes in, whole message bodies out. A header block longer than
    MAX_HEADER_BYTES, one without a Content-Length, or a body announced longer than
    `limit` raises WireError: a server that breaks the framing cannot be read on."""

    def __init__(self, limit: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._limit = limit
        self._length: int | None = None  # the body being waited for, once its headers are read

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        self._buf += data
        bodies: list[bytes] = []
        start = 0
        while True:
            if self._length is None:
                end = self._buf.find(HEADER_END, start)
                if end < 0:
                    if len(self._buf) - start > MAX_HEADER_BYTES:
                        raise WireError(f"the server wrote a header block longer than {MAX_HEADER_BYTES} bytes")
                    break
                self._length = _content_length(bytes(self._buf[start:end]), self._limit)
                start = end + len(HEADER_END)
            if len(self._buf) - start < self._length:
                break
            bodies.append(bytes(self._buf[start:start + self._length]))
            start += self._length
            self._length = None
        del self._buf[:start]
        return bodies


def _content_length(headers: bytes, limit: int) -> int:
    length: int | None = None
    for line in headers.split(b"\r\n"):
        found = _CONTENT_LENGTH.match(line.strip())
        if found:
            length = int(found.group(1))
    if length is None:
        raise WireError("the server wrote a message without a Content-Length header")
    if length > limit:
        raise WireError(f"the server announced a message of {length} bytes (more than {limit})")
    return length


def frame(message: bytes) -> bytes:
    """One of our messages (an `encode_*` of actors/peers/jsonrpc.py, its newline dropped)
    as LSP frames it."""
    body = message[:-1] if message.endswith(b"\n") else message
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# ---- languages and their servers ----


@attrs.frozen
class Language:
    name: str  # the key: python, typescript, go, rust
    title: str  # as a person reads it
    ids: Mapping[str, str]  # a file's suffix -> its LSP languageId
    servers: tuple[tuple[str, ...], ...]  # the commands that serve it, the first found wins


LANGUAGES = (
    Language("python", "Python", {".py": "python", ".pyi": "python"},
             (("pylsp",), ("pyright-langserver", "--stdio"))),
    Language("typescript", "TypeScript/JavaScript",
             {".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
              ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact"},
             (("typescript-language-server", "--stdio"),)),
    Language("go", "Go", {".go": "go"}, (("gopls",),)),
    Language("rust", "Rust", {".rs": "rust"}, (("rust-analyzer",),)),
)
_BY_SUFFIX = {suffix: (lang, lid) for lang in LANGUAGES for suffix, lid in lang.ids.items()}


def language_of(path: str) -> tuple[Language, str] | None:
    """The language of a file by its name, and its languageId; None when no server here
    is for it."""
    return _BY_SUFFIX.get(os.path.splitext(path)[1].lower())


# ---- what we say ----


def file_uri(path: Path) -> str:
    return path.as_uri()


def uri_key(uri: str) -> str | None:
    """The path a `file:` URI names, as the key its diagnostics are kept under (servers
    spell the same path with different escapes); None for another scheme."""
    parts = urlsplit(uri)
    if parts.scheme != "file":
        return None
    return os.path.normpath(unquote(parts.path))


def initialize_params(root: Path, pid: int) -> dict[str, object]:
    """`initialize` for a server of the workspace `root` (its canonical path); `pid` is
    the daemon's, so a server whose client died can end itself."""
    uri = file_uri(root)
    return {
        "processId": pid,
        "clientInfo": dict(CLIENT_INFO),
        "rootUri": uri,
        "rootPath": str(root),
        "workspaceFolders": [{"uri": uri, "name": root.name or str(root)}],
        "capabilities": {
            "textDocument": {
                "synchronization": {"dynamicRegistration": False, "didSave": True},
                "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
            },
            "workspace": {"workspaceFolders": True, "configuration": False},
            "window": {"workDoneProgress": False},
        },
    }


@attrs.frozen
class Sync:
    """How the server wants a document kept in step (its `textDocumentSync`)."""

    change: int = SYNC_FULL
    save: bool = False  # it wants textDocument/didSave
    save_text: bool = False  # with the text


def sync_of(result: object) -> Sync:
    """What an `initialize` answer says of document sync; WireError when it is not an
    initialize result."""
    if not isinstance(result, dict) or not isinstance(result.get("capabilities", {}), dict):
        raise WireError("its answer to initialize has no capabilities object")
    sync = result.get("capabilities", {}).get("textDocumentSync")
    if isinstance(sync, int) and not isinstance(sync, bool):
        return Sync(change=sync)
    if not isinstance(sync, dict):
        return Sync()
    change = sync.get("change")
    save = sync.get("save")
    return Sync(
        change=change if isinstance(change, int) and not isinstance(change, bool) else SYNC_NONE,
        save=save is True or isinstance(save, dict),
        save_text=isinstance(save, dict) and save.get("includeText") is True,
    )


def did_open(uri: str, language_id: str, version: int, text: str) -> dict[str, object]:
    return {"textDocument": {"uri": uri, "languageId": language_id, "version": version, "text": text}}


def did_change(uri: str, version: int, text: str) -> dict[str, object]:
    # A change without a range replaces the whole text, whatever sync kind the server has.
    return {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}


def did_save(uri: str, text: str | None) -> dict[str, object]:
    params: dict[str, object] = {"textDocument": {"uri": uri}}
    if text is not None:
        params["text"] = text
    return params


def answer_to(method: str, params: object) -> tuple[bool, object]:
    """What we answer a request the server sends us: (whether we know it, the result).
    Those a server may wait on get a neutral answer; any other is 'method not found'."""
    if method == "workspace/configuration":
        items = params.get("items") if isinstance(params, dict) else None
        return True, [None] * (len(items) if isinstance(items, list) else 0)
    if method == "workspace/applyEdit":
        return True, {"applied": False, "failureReason": "this client does not apply edits"}
    if method in ("client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create",
                  "window/showMessageRequest", "window/showDocument", "workspace/workspaceFolders"):
        return True, None
    return False, None


# ---- what it says ----


@attrs.frozen
class Diagnostic:
    line: int  # 0-based, as LSP counts
    col: int
    severity: int
    message: str


@attrs.frozen
class Published:
    key: str  # uri_key of its document
    version: int | None
    diagnostics: tuple[Diagnostic, ...]


def published(params: object) -> Published | None:
    """A `textDocument/publishDiagnostics`'s content; None when it names no file or is
    not one (a diagnostic it cannot read is left out)."""
    if not isinstance(params, dict) or not isinstance(params.get("uri"), str):
        return None
    key = uri_key(params["uri"])
    raw = params.get("diagnostics")
    if key is None or not isinstance(raw, list):
        return None
    version = params.get("version")
    out: list[Diagnostic] = []
    for item in raw[:MAX_READ_DIAGNOSTICS]:
        diag = _diagnostic(item)
        if diag is not None:
            out.append(diag)
    return Published(key, version if isinstance(version, int) and not isinstance(version, bool) else None, tuple(out))


def _diagnostic(item: object) -> Diagnostic | None:
    if not isinstance(item, dict) or not isinstance(item.get("message"), str):
        return None
    rng = item.get("range")
    start = rng.get("start") if isinstance(rng, dict) else None
    line = start.get("line") if isinstance(start, dict) else None
    col = start.get("character") if isinstance(start, dict) else None
    severity = item.get("severity", 1)  # none given: an error, as editors read it
    return Diagnostic(
        line=line if isinstance(line, int) and line >= 0 else 0,
        col=col if isinstance(col, int) and col >= 0 else 0,
        severity=severity if severity in SEVERITIES else 1,
        message=item["message"],
    )


def diagnostic_lines(rel: str, diagnostics: tuple[Diagnostic, ...], server: str) -> str | None:
    """What the model reads after an edit of `rel`: a line naming the server and the
    counts, then at most MAX_LINES lines `path:line:col: severity: message` (1-based),
    errors first, each kind in the file's order. None when there is no error or warning."""
    shown = sorted((d for d in diagnostics if d.severity in REPORTED), key=lambda d: (d.severity, d.line, d.col))
    if not shown:
        return None
    errors = sum(1 for d in shown if d.severity == 1)
    counts = [_count(errors, "error"), _count(len(shown) - errors, "warning")]
    said = " and ".join(c for c in counts if c)
    cut = f" (the first {MAX_LINES})" if len(shown) > MAX_LINES else ""
    lines = [f"{server} reports {said} in {rel}{cut}:"]
    for d in shown[:MAX_LINES]:
        message = " ".join(d.message.split())
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS - 1] + "…"
        lines.append(f"{rel}:{d.line + 1}:{d.col + 1}: {SEVERITIES[d.severity]}: {message}")
    return "\n".join(lines)


def _count(n: int, word: str) -> str:
    return "" if n == 0 else f"{n} {word}" + ("s" if n > 1 else "")
