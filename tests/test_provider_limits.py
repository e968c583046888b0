"""What a provider (or a settings file) can make the daemon do is bounded: a stream
line that never ends, a whole answer larger than any chat chunk, a providers.json that
is a FIFO or a huge file, a credentials.json that is a link (actors/model/providers/,
actors/model/http_read.py, actors/model/chatstream.py's SseLines)."""

from __future__ import annotations

import itertools
import json
import os
import stat
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.errors import TurnFailed
from actors.model.chatstream import MAX_EVENT_BYTES, SseLines, StreamError
from actors.model.providers.backend import ProviderBackend
from actors.model.providers.directory import MAX_SETTINGS_BYTES, ProviderDirectory
from actors.model.turns import Aborted, Piece, TurnInput
from bmoe_daemon.store import write_atomic
from tests.openai_stub import OpenAIStub, answer, chunk

TURN = TurnInput(messages=({"role": "user", "content": "Hi"},))
MIB = 1024 * 1024

# ---- SseLines, without I/O ----


@given(
    st.lists(st.text(alphabet="ab:{}\u2028\x85 ", max_size=12), max_size=12),
    st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=12, max_size=12),
    st.data(),
)
def test_sse_lines_are_the_same_however_the_bytes_arrive(lines: list[str], ends: list[str], data) -> None:
    body = "".join(line + end for line, end in zip(lines, ends, strict=False)).encode()
    bounds = [0, *sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=8))), len(body)]
    reader = SseLines()
    got = [line for a, b in itertools.pairwise(bounds) for line in reader.feed(body[a:b])] + reader.flush()
    # Only CR, LF and CRLF end a line (bytes.splitlines' rule): U+2028 and U+0085 inside
    # JSON text stay put, whatever the cuts.
    assert got == [line.decode() for line in body.splitlines()]
    assert "\u2028" not in "".join(lines) or "\u2028" in "".join(got)


def test_a_crlf_cut_between_its_two_bytes_is_one_line_end() -> None:
    reader = SseLines()
    assert reader.feed(b"a\r") == ["a"]
    assert reader.feed(b"\n") == []
    assert reader.feed(b"\n") == [""]  # this LF ends an empty line of its own
    assert reader.feed(b"b\r") == ["b"] and reader.feed(b"") == [] and reader.feed(b"\nc") == []
    assert reader.flush() == ["c"]


def test_sse_lines_refuse_a_line_that_never_ends() -> None:
    reader = SseLines(limit=1000)
    assert reader.feed(b"data: " + b"x" * 900) == []
    with pytest.raises(StreamError, match="longer than"):
        reader.feed(b"x" * 200)


# ---- the backend against servers that misbehave ----


@asynccontextmanager
async def raw_server(send_body: Callable[[trio.SocketStream], Awaitable[None]]) -> AsyncIterator[str]:
    """An HTTP server that reads one request, then lets `send_body` write the answer."""

    async def handler(stream: trio.SocketStream) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += await stream.receive_some(65536)
        header, _, body = head.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")),
            0,
        )
        while len(body) < length:
            body += await stream.receive_some(65536)
        try:
            await send_body(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the daemon hung up: what the tests want
        finally:
            await stream.aclose()

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, handler, listeners)
        yield f"http://127.0.0.1:{port}/v1"
        nursery.cancel_scope.cancel()


async def generate(base_url: str) -> tuple[object, list[Piece]]:
    pieces: list[Piece] = []

    async def emit(piece: Piece) -> None:
        pieces.append(piece)

    backend = ProviderBackend(base_url=base_url, model="m", label="Stub")
    return await backend.generate(TURN, emit, threading.Event()), pieces


async def test_a_stream_line_that_never_ends_is_refused_once_past_the_limit() -> None:
    # Before, httpx's line reader kept the whole line in memory until the server
    # stopped: a server that never stopped grew the daemon without bound.
    sent = 0

    async def endless(stream: trio.SocketStream) -> None:
        nonlocal sent
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        await stream.send_all(b"data: ")
        piece = b"x" * MIB
        while sent < 256 * MIB:
            await stream.send_all(piece)
            sent += len(piece)

    async with raw_server(endless) as url:
        with trio.fail_after(30), pytest.raises(TurnFailed, match="longer than 8 MiB"):
            await generate(url)
    assert sent < MAX_EVENT_BYTES + 16 * MIB  # it stopped reading soon after the limit


async def test_a_whole_answer_larger_than_the_limit_is_refused() -> None:
    async def huge(stream: trio.SocketStream) -> None:
        await stream.send_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        await stream.send_all(b'{"choices": [{"message": {"content": "')
        for _ in range(MAX_EVENT_BYTES // MIB + 2):
            await stream.send_all(b"x" * MIB)
        await stream.send_all(b'"}}]}')

    async with raw_server(huge) as url:
        with trio.fail_after(30), pytest.raises(TurnFailed, match="larger than 8 MiB"):
            await generate(url)


async def test_line_separators_inside_json_text_are_not_line_ends() -> None:
    # httpx's aiter_lines split lines at U+2028 and U+0085 too, which cut a JSON chunk
    # whose text holds one as it is (JSON allows it) and failed the answer.
    stub = OpenAIStub()
    text = "one\u2028two\x85three"
    raw = json.dumps(chunk({"content": text}), ensure_ascii=False)
    stub.replies.append({"chunks": [raw, *answer()["chunks"]]})
    async with trio.open_nursery() as nursery:
        await nursery.start(stub.run)
        result, _ = await generate(stub.base_url)
        nursery.cancel_scope.cancel()
    assert result.text == text  # type: ignore[attr-defined]


async def test_a_stop_still_ends_a_stream() -> None:
    stub = OpenAIStub()
    stub.replies.append({"chunks": answer("x" * 300)["chunks"], "delay": 0.01})
    abort = threading.Event()
    pieces: list[Piece] = []

    async def emit(piece: Piece) -> None:
        pieces.append(piece)
        if len(pieces) == 3:
            abort.set()

    async with trio.open_nursery() as nursery:
        await nursery.start(stub.run)
        with pytest.raises(Aborted):
            await ProviderBackend(base_url=stub.base_url, model="m").generate(TURN, emit, abort)
        nursery.cancel_scope.cancel()
    assert len(pieces) == 3


# ---- the settings files ----


async def test_a_fifo_or_a_huge_providers_file_is_skipped_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    fifos = [tmp_path / "agent" / "providers.json", tmp_path / "credentials.json"]
    for fifo in fifos:
        os.mkfifo(fifo)  # before, opening one waited for a writer for ever
    try:
        with trio.fail_after(5):
            directory = await trio.to_thread.run_sync(
                lambda: ProviderDirectory(tmp_path, write_file=write_atomic), abandon_on_cancel=True
            )
    finally:
        for fifo in fifos:  # let a reader that did wait go (the old code), then clear up
            fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
            os.close(fd)
            os.unlink(fifo)
    assert directory.listing() == []
    row = {"id": "p", "name": "P", "base_url": "http://127.0.0.1:1/v1", "models": ["m"]}
    (tmp_path / "agent" / "providers.json").write_text(json.dumps([row]) + " " * MAX_SETTINGS_BYTES)
    assert ProviderDirectory(tmp_path, write_file=write_atomic).listing() == []
    (tmp_path / "agent" / "providers.json").write_text(json.dumps([row]))
    assert [p["id"] for p in ProviderDirectory(tmp_path, write_file=write_atomic).listing()] == ["p"]


def test_credentials_through_a_link_are_not_read_and_the_target_keeps_its_mode(tmp_path: Path) -> None:
    other = tmp_path / "someone-elses.json"
    other.write_text(json.dumps({"p": "sk-not-for-us"}))
    os.chmod(other, 0o644)
    (tmp_path / "credentials.json").symlink_to(other)
    directory = ProviderDirectory(tmp_path, write_file=write_atomic)
    assert stat.S_IMODE(os.stat(other).st_mode) == 0o644  # before, chmod followed the link
    assert directory._keys == {}
