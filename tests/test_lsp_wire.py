"""actors/peers/lsp/wire.py: LSP's framing, the language table, what a server publishes and
the lines the model reads. No I/O (tests/test_lsp.py runs a real server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.peers.jsonrpc import Notification, Response, WireError, encode_notification, encode_request, parse
from actors.peers.lsp.wire import (
    MAX_HEADER_BYTES,
    MAX_LINES,
    Diagnostic,
    FrameBuffer,
    Sync,
    answer_to,
    diagnostic_lines,
    frame,
    language_of,
    published,
    sync_of,
    uri_key,
)

bodies = st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=40), max_size=4).map(
    lambda d: json.dumps(d, ensure_ascii=False).encode()), max_size=6)


@given(bodies, st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20),
       st.booleans())
def test_frames_come_out_whole_however_the_bytes_are_cut(messages, cuts, content_type):
    extra = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" if content_type else b""
    stream = b"".join(b"Content-Length: %d\r\n%s\r\n%s" % (len(m), extra, m) for m in messages)
    buf, out, at, i = FrameBuffer(), [], 0, 0
    while at < len(stream):
        step = cuts[i % len(cuts)]
        out += buf.feed(stream[at:at + step])
        at += step
        i += 1
    assert out == messages


def test_our_messages_are_framed_and_read_back():
    data = frame(encode_request(7, "initialize", {"a": "é\nb"})) + frame(encode_notification("exit"))
    assert data.startswith(b"Content-Length: ")
    first, second = FrameBuffer().feed(data)
    assert parse(first) == parse(encode_request(7, "initialize", {"a": "é\nb"}))
    assert parse(second) == Notification("exit")
    answer = b'{"jsonrpc":"2.0","id":7,\n"result":null}'
    assert FrameBuffer().feed(b"content-length: %d\r\n\r\n%s" % (len(answer), answer)) == [answer]
    assert parse(answer) == Response(7, None)


def test_broken_framing_is_a_wire_error():
    with pytest.raises(WireError, match="Content-Length"):
        FrameBuffer().feed(b"Content-Type: x\r\n\r\n{}")
    with pytest.raises(WireError, match="announced"):
        FrameBuffer(limit=10).feed(b"Content-Length: 11\r\n\r\n")
    buf = FrameBuffer()
    with pytest.raises(WireError, match="header block"):
        buf.feed(b"X" * (MAX_HEADER_BYTES + 1))


def test_languages_by_name():
    assert language_of("src/a.py")[0].name == "python"
    assert language_of("A.PYI")[1] == "python"
    assert language_of("web/x.tsx") == (language_of("y.ts")[0], "typescriptreact")
    assert language_of("x.mjs")[1] == "javascript"
    assert language_of("main.go")[0].name == "go"
    assert language_of("lib.rs")[0].name == "rust"
    for name in ("notes.txt", "Makefile", "py", ".py.bak", "a.pyc"):
        assert language_of(name) is None


def test_uri_keys_match_however_escaped(tmp_path: Path):
    real = tmp_path / "a b" / "é.py"
    assert uri_key(real.as_uri()) == str(real)
    assert uri_key("file://" + str(real).replace(" ", "%20")) == str(real)
    assert uri_key("untitled:Untitled-1") is None


def test_sync_kinds():
    assert sync_of({"capabilities": {"textDocumentSync": 2}}) == Sync(change=2)
    assert sync_of({"capabilities": {}}) == Sync()
    got = sync_of({"capabilities": {"textDocumentSync": {"change": 1, "save": {"includeText": True}}}})
    assert got == Sync(change=1, save=True, save_text=True)
    assert sync_of({"capabilities": {"textDocumentSync": {"change": 2, "save": True}}}).save_text is False
    with pytest.raises(WireError):
        sync_of(None)


def test_requests_a_server_may_wait_on_get_an_answer():
    assert answer_to("workspace/configuration", {"items": [{}, {}]}) == (True, [None, None])
    assert answer_to("client/registerCapability", {}) == (True, None)
    assert answer_to("workspace/applyEdit", {})[1]["applied"] is False
    assert answer_to("something/else", {}) == (False, None)


def _diag(line, col, severity, message):
    return {"range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col}},
            "severity": severity, "message": message}


def test_a_publication_is_read_leniently(tmp_path: Path):
    uri = (tmp_path / "a.py").as_uri()
    got = published({"uri": uri, "version": 3, "diagnostics": [_diag(0, 4, 1, "bad"), "junk", {"message": "m"}]})
    assert got is not None and got.key == str(tmp_path / "a.py") and got.version == 3
    assert got.diagnostics == (Diagnostic(0, 4, 1, "bad"), Diagnostic(0, 0, 1, "m"))
    assert published({"uri": uri, "diagnostics": []}).version is None
    assert published({"diagnostics": []}) is None
    assert published("x") is None


def test_the_lines_the_model_reads():
    diags = (
        Diagnostic(9, 0, 2, "unused\nimport"),
        Diagnostic(2, 3, 1, "undefined name 'x'"),
        Diagnostic(0, 0, 3, "information is left out"),
        Diagnostic(0, 1, 4, "a hint too"),
        Diagnostic(1, 0, 1, "invalid syntax"),
    )
    text = diagnostic_lines("src/a.py", diags, "pylsp")
    assert text.splitlines() == [
        "pylsp reports 2 errors and 1 warning in src/a.py:",
        "src/a.py:2:1: error: invalid syntax",
        "src/a.py:3:4: error: undefined name 'x'",
        "src/a.py:10:1: warning: unused import",
    ]
    assert diagnostic_lines("a.py", (Diagnostic(0, 0, 3, "info"),), "pylsp") is None
    assert diagnostic_lines("a.py", (), "pylsp") is None


def test_at_most_twenty_lines_errors_first():
    diags = tuple(Diagnostic(i, 0, 2, f"w{i}") for i in range(30)) + (Diagnostic(50, 0, 1, "e" * 1000),)
    lines = diagnostic_lines("a.py", diags, "s").splitlines()
    assert lines[0] == "s reports 1 error and 30 warnings in a.py (the first 20):"
    assert len(lines) == 1 + MAX_LINES
    assert lines[1].startswith("a.py:51:1: error: eee") and len(lines[1]) < 450
    assert lines[2] == "a.py:1:1: warning: w0" and lines[-1] == "a.py:19:1: warning: w18"
