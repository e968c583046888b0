"""The store: conversations as journals (a save appended whole or not at all, a torn
one left out), workspaces as JSON files written whole."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import attrs
import pytest
import trio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from actors.conversations.hub import Workspace
from actors.fs import atomic as atomic_module
from actors.record import journal
from actors.record.items import ConversationInfo, ConversationRecord, Goal, Item, PlanInfo, Todo, ToolCall
from bmoe_daemon import store as store_module
from bmoe_daemon.store import Store, write_atomic

REPO = Path(__file__).resolve().parents[1]


def make_record(conv_id: str = "c1", extra: int = 0) -> ConversationRecord:
    info = ConversationInfo(
        id=conv_id,
        title="Fix the build ✓",
        workspace="w1",
        mode="full",
        route="openai/gpt-4o",
        agent="builtin",
        state="idle",
        created=1700000000.125,
        updated=1700000100.5,
        task=None,
        acp_session="sess-1",
    )
    items = (
        Item(id="i1", kind="user", created=1.5, text="Why does it fail?\n", images=("data:image/png;base64,AA==",)),
        Item(
            id="i2",
            kind="assistant",
            created=2.25,
            text="Let me look.",
            reasoning="The log first.",
            streaming=False,
            tool_calls=(ToolCall("call1", "read", '{"path": "build.log"}'),),
        ),
        Item(
            id="i3",
            kind="tool",
            created=3.0,
            tool="read",
            title="Read build.log",
            args={"path": "build.log", "nested": {"n": [1, 2.5, None, True]}},
            raw_args='{"path": "build.log"}',
            state="done",
            bytes=1234,
            result="error: missing ;",
            diff="--- a\n+++ b\n",
            file="build.log",
            call_id="call1",
            shortened=True,
            mcp="server",
            mcp_host="mcp.example.com:8443",
        ),
        Item(id="i4", kind="notice", created=4.0, text="The run was stopped.", level="warn"),
    ) + tuple(Item(id=f"x{n}", kind="user", created=5.0 + n, text=f"more {n}") for n in range(extra))
    return ConversationRecord(info, items)


# ---- round trips ----


async def test_conversation_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path)
    record = make_record()
    await store.save_conversation(record)
    path = store.conversation_path("c1")
    assert path == tmp_path / "agent" / "conversations" / "c1.json"
    on_disk = journal.read(path.read_bytes()).document
    assert [i["kind"] for i in on_disk["items"]] == ["user", "assistant", "tool", "notice"]
    # Only the fields of each item's kind are written.
    assert "tool" not in on_disk["items"][0] and "level" not in on_disk["items"][0]

    loaded = Store(tmp_path).load_conversations()
    assert loaded == [record]
    assert loaded[0].info.acp_session == "sess-1"
    assert loaded[0].items[1].tool_calls == (ToolCall("call1", "read", '{"path": "build.log"}'),)


async def test_saving_again_replaces_the_file(tmp_path: Path) -> None:
    store = Store(tmp_path)
    await store.save_conversation(make_record())
    await store.save_conversation(make_record(extra=3))
    assert store.load_conversations() == [make_record(extra=3)]
    assert sorted(p.name for p in store.conv_dir.iterdir()) == ["c1.json"]


async def test_several_conversations_load_in_id_order(tmp_path: Path) -> None:
    store = Store(tmp_path)
    for conv_id in ("b", "a-1", "c_2"):
        await store.save_conversation(make_record(conv_id))
    assert [r.info.id for r in Store(tmp_path).load_conversations()] == ["a-1", "b", "c_2"]


async def test_delete_conversation(tmp_path: Path) -> None:
    store = Store(tmp_path)
    await store.save_conversation(make_record("a"))
    await store.save_conversation(make_record("b"))
    await store.delete_conversation("a")
    await store.delete_conversation("never-was")
    assert [r.info.id for r in store.load_conversations()] == ["b"]


async def test_concurrent_saves_leave_one_whole_version(tmp_path: Path) -> None:
    store = Store(tmp_path)
    versions = [make_record(extra=n) for n in range(12)]
    async with trio.open_nursery() as nursery:
        for record in versions:
            nursery.start_soon(store.save_conversation, record)
    loaded = store.load_conversations()
    assert len(loaded) == 1 and loaded[0] in versions
    assert list(store.conv_dir.glob(".*.tmp")) == []


async def test_workspaces_round_trip(tmp_path: Path) -> None:
    store = Store(tmp_path)
    assert store.load_workspaces() == []
    spaces = [Workspace("w1", "Project", "/home/me/project"), Workspace("w2", "Ünïcode", "/tmp/ü")]
    await store.save_workspaces(spaces)
    assert Store(tmp_path).load_workspaces() == spaces
    await store.save_workspaces([])
    assert Store(tmp_path).load_workspaces() == []


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"a": 1}', b"\xff\xfe", b"[1, 2"])
def test_unreadable_workspaces_file_reads_as_none(tmp_path: Path, content: bytes) -> None:
    store = Store(tmp_path)
    (store.agent_dir / "workspaces.json").write_bytes(content)
    assert store.load_workspaces() == []


def test_bad_workspace_rows_are_skipped(tmp_path: Path) -> None:
    store = Store(tmp_path)
    rows = [
        {"id": "w1", "name": "A", "path": "/a"},
        {"id": "w2"},
        5,
        None,
        ["x"],
        {"id": "w3", "name": "C", "path": "/c"},
    ]
    (store.agent_dir / "workspaces.json").write_text(json.dumps(rows))
    assert store.load_workspaces() == [Workspace("w1", "A", "/a"), Workspace("w3", "C", "/c")]


# ---- corrupt files ----

CORRUPT = [
    b"",
    b"{",
    b'{"id": "broken", "items": [',
    b"\x00\x01\x02garbage",
    b"\xff\xfe\xfa",
    b"[]",
    b"42",
    b'"a string"',
    b"null",
    b'{"title": "no id"}',
    b'{"id": "x", "created": "yesterday"}',
    b'{"id": "x", "created": [1]}',
    b'{"id": "x", "items": 5}',
    b'{"id": "x", "items": [5]}',
    b'{"id": "x", "items": "abc"}',
    b'{"id": "x", "items": [{"kind": "user"}]}',
    b'{"id": "x", "items": [{"id": "i", "kind": "user", "created": "now"}]}',
    b'{"id": "x", "items": [{"id": "i", "kind": "assistant", "tool_calls": [{"id": "c"}]}]}',
    b'{"id": "x", "items": [{"id": "i", "kind": "assistant", "tool_calls": 7}]}',
]


async def test_corrupt_conversation_files_are_skipped(tmp_path: Path) -> None:
    store = Store(tmp_path)
    await store.save_conversation(make_record("good-a"))
    await store.save_conversation(make_record("zz-good"))
    for n, content in enumerate(CORRUPT):
        (store.conv_dir / f"m{n:02d}.json").write_bytes(content)
    (store.conv_dir / "dir.json").mkdir()
    loaded = Store(tmp_path).load_conversations()
    assert [r.info.id for r in loaded] == ["good-a", "zz-good"]


_keys = st.sampled_from(["id", "kind", "items", "created", "tool_calls", "images", "title", "x"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_json)
def test_load_conversations_never_raises_on_any_json(tmp_path: Path, value: object) -> None:
    conv_dir = tmp_path / "agent" / "conversations"
    conv_dir.mkdir(parents=True, exist_ok=True)
    (conv_dir / "any.json").write_text(json.dumps(value))
    loaded = Store(tmp_path).load_conversations()
    assert len(loaded) <= 1
    for record in loaded:
        assert isinstance(record, ConversationRecord)


def test_deeply_nested_conversation_file_is_skipped(tmp_path: Path) -> None:
    store = Store(tmp_path)
    (store.conv_dir / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert store.load_conversations() == []


# ---- ids ----


@pytest.mark.parametrize("conv_id", ["c1", "A-b_9", "x" * 64])
def test_safe_ids(tmp_path: Path, conv_id: str) -> None:
    assert Store(tmp_path).conversation_path(conv_id).name == f"{conv_id}.json"


@pytest.mark.parametrize(
    "conv_id", ["", ".", "..", "../x", "a/b", "a\\b", "a.b", "x y", "é", "a\x00b", "/etc/passwd", "~", "c1\n"]
)
async def test_unsafe_ids_are_refused(tmp_path: Path, conv_id: str) -> None:
    store = Store(tmp_path)
    with pytest.raises(ValueError):
        store.conversation_path(conv_id)
    with pytest.raises(ValueError):
        await store.save_conversation(make_record(conv_id))
    with pytest.raises(ValueError):
        await store.delete_conversation(conv_id)
    assert list(tmp_path.rglob("*.json")) == []


@settings(max_examples=200, deadline=None)
@given(conv_id=st.text(max_size=12))
def test_conversation_path_stays_in_the_folder(conv_id: str) -> None:
    store = Store.__new__(Store)
    store.conv_dir = Path("/data/agent/conversations")
    try:
        path = store.conversation_path(conv_id)
    except ValueError:
        return
    assert path.parent == store.conv_dir
    assert path.name == f"{conv_id}.json" and conv_id.isascii() and "/" not in conv_id and "." not in conv_id


# ---- write_atomic and temporaries ----


def test_write_atomic_writes_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.json"
    write_atomic(path, b"one")
    write_atomic(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]


def test_write_atomic_failure_keeps_the_old_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.json"
    write_atomic(path, b"old")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(atomic_module.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        write_atomic(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


def test_append_whole_appends_only_to_the_file_it_expects(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    write_atomic(path, b"one\n")
    st = atomic_module.append_whole(path, b"two\n", expect=lambda st: st.st_size == 4)
    assert st is not None and st.st_size == 8 and path.read_bytes() == b"one\ntwo\n"
    # Not the file expected, no file, a link in its place: nothing written, None.
    assert atomic_module.append_whole(path, b"x", expect=lambda st: st.st_size == 4) is None
    assert atomic_module.append_whole(tmp_path / "none.json", b"x", expect=lambda st: True) is None
    (tmp_path / "link.json").symlink_to(path)
    assert atomic_module.append_whole(tmp_path / "link.json", b"x", expect=lambda st: True) is None
    assert path.read_bytes() == b"one\ntwo\n" and not (tmp_path / "none.json").exists()
    # Nothing to append: only synced.
    again = atomic_module.append_whole(path, b"", expect=lambda st: True, sync_folder=True)
    assert again is not None and again.st_size == 8


async def test_store_removes_stray_temporaries_only(tmp_path: Path) -> None:
    store = Store(tmp_path)
    await store.save_conversation(make_record())
    await store.save_workspaces([Workspace("w1", "A", "/a")])
    strays = [store.conv_dir / ".c1.json.abc123.tmp", store.agent_dir / ".workspaces.json.xyz.tmp"]
    for stray in strays:
        stray.write_bytes(b'{"torn')
    keep = [store.conv_dir / "notes.tmp", store.conv_dir / ".hidden"]
    for k in keep:
        k.write_bytes(b"x")
    again = Store(tmp_path)
    assert not any(s.exists() for s in strays)
    assert all(k.exists() for k in keep)
    assert again.load_conversations() == [make_record()]
    assert again.load_workspaces() == [Workspace("w1", "A", "/a")]


# ---- crashes: random upserts, SIGKILL at a random moment ----

CHILD = textwrap.dedent(
    """
    import hashlib, json, sys
    from pathlib import Path
    import trio
    from actors.record import journal
    from actors.record.items import ConversationInfo, ConversationRecord, Item
    from bmoe_daemon.store import Store, write_atomic, _dumps

    journal.COMPACT_MIN_BYTES = 0  # a journal written whole again as soon as it doubles

    data_dir, ops = Path(sys.argv[1]), json.loads(sys.argv[2])
    info = ConversationInfo(id="crash", title="t", workspace=None, mode="ask", route="local",
                            agent="builtin", state="running", created=1.0, updated=1.0)
    items = []

    async def main():
        global items
        store = Store(data_dir)
        for n, (op, at, size, via_store) in enumerate(ops):
            body = (str(n) + "-") * size
            if op == "add" or not items:
                items.append(Item(id=f"i{len(items)}", kind=("user", "assistant", "tool", "notice")[n % 4],
                                  created=float(n), text=body, streaming=True))
            else:
                old = items[at % len(items)]
                items[at % len(items)] = Item(id=old.id, kind=old.kind, created=old.created,
                                              text=body, reasoning=str(n), streaming=False)
            record = ConversationRecord(info, tuple(items))
            data = _dumps(record.to_json())
            # Announce the version before writing it: any record read later must be one of these.
            sys.stdout.write(hashlib.sha256(data).hexdigest() + "\\n")
            sys.stdout.flush()
            if via_store:
                await store.save_conversation(record, durable=size % 3 != 0)
                if size % 2:  # the index is written now and then, as the hub does
                    await store.save_index()
            else:  # written whole by another hand, in the form from before the journal
                write_atomic(store.conversation_path("crash"), data)

    trio.run(main)
    """
)

_ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "update"]),
        st.integers(0, 50),
        st.integers(1, 40_000),  # the size of the text: up to a few hundred KB per version
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops, data=st.data())
def test_random_upserts_and_crashes_never_leave_an_unreadable_file(ops: list, data: st.DataObject) -> None:
    """Saves appended, written whole (a new file, a compaction, a file another hand
    replaced) and interim, SIGKILLed at a random moment: the file always reads as the
    last version announced or the one before (whose save the kill cut short)."""
    kill_after = data.draw(st.integers(1, len(ops)), label="kill after this many announced versions")
    delay = data.draw(st.floats(0, 0.02), label="then wait this long (s) before SIGKILL")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with subprocess.Popen(
            [sys.executable, "-c", CHILD, str(data_dir), json.dumps(ops)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        ) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            announced: list[str] = []
            while len(announced) < kill_after:
                line = proc.stdout.readline()
                if not line:
                    break
                announced.append(line)
            # A random moment: the child is somewhere inside (or after) the next write.
            time.sleep(delay)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            # Read on through the same buffered file: a line readline() already took in
            # would be lost to communicate(), which reads the pipe underneath it.
            rest = proc.stdout.read()
            err = proc.stderr.read()
            proc.wait()
        announced.extend(rest.splitlines(keepends=True))
        versions = [line.strip() for line in announced if line.endswith("\n")]
        killed = proc.returncode == -signal.SIGKILL
        assert killed or proc.returncode == 0, err
        if not killed:
            assert len(versions) == len(ops)

        conv_dir = data_dir / "agent" / "conversations"
        path = conv_dir / "crash.json"
        if path.exists():
            raw = path.read_bytes()
            record = ConversationRecord.from_json(journal.read(raw).document)
            digest = hashlib.sha256(store_module._dumps(record.to_json())).hexdigest()
            # The record is the last announced version (written) or the one before it
            # (the last was announced but its save was not whole yet).
            assert digest in versions[-2:], "the file does not hold a version the child saved whole"
            if not killed:
                assert digest == versions[-1]
            expected = [record]
        else:
            # Only a crash before the first write finished leaves no file.
            assert killed and len(versions) <= 1
            expected = []
        event("killed" if killed else "finished")
        if path.exists():
            event(f"file = version {versions.index(digest) + 1} of {len(versions)} announced")
        else:
            event("no file")
        event(f"stray temporaries before Store(): {len(list(conv_dir.glob('.*.tmp')))}")
        store = Store(data_dir)
        assert list(conv_dir.glob(".*.tmp")) == []
        assert list(store.agent_dir.glob(".*.tmp")) == []
        assert store.load_conversations() == expected
        # The index, whatever point of a save the kill came at, gives what the files hold.
        assert store.load_index() == [r.info for r in expected]
        assert Store(data_dir).load_index() == [r.info for r in expected]


@settings(max_examples=60)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "replace", "remove", "save"]), st.integers(0, 30), st.text(max_size=30)),
        max_size=60,
    )
)
def test_cached_encoding_always_equals_a_fresh_one(tmp_path_factory, ops) -> None:
    """Whatever the items do between saves (added, replaced by a new version, removed),
    the store's per-item cache gives exactly the bytes a whole encoding gives."""
    store = Store(tmp_path_factory.mktemp("enc"))
    info = make_record().info
    items: list[Item] = []
    serial = 0
    for op, pos, text in ops:
        if op == "add":
            serial += 1
            items.append(Item(id=f"i{serial}", kind="user", created=float(serial), text=text))
        elif op == "replace" and items:
            old = items[pos % len(items)]
            items[pos % len(items)] = Item(id=old.id, kind="assistant", created=old.created, text=text)
        elif op == "remove" and items:
            del items[pos % len(items)]
        record = ConversationRecord(info, tuple(items))
        got = store.encode_record(record)
        assert got == journal.base_line(journal.head_bytes(record), [store_module._dumps(i.to_json()) for i in items])
        assert ConversationRecord.from_json(journal.read(got).document) == record
        assert len(store._encoded[info.id]) == len(items)


async def test_what_only_the_daemon_keeps_survives_a_save(tmp_path: Path) -> None:
    """The head of a conversation's file is ConversationRecord.head_json, whatever it
    holds (the nested instruction files already given, the ACP session)."""
    import attrs

    from actors.record.items import ConversationInfo

    store = Store(tmp_path)
    info = ConversationInfo("c1", "t", None, "ask", "local", "builtin", "idle", 1.0, 2.0, acp_session="s1",
                            instructions_delivered=("api/AGENTS.md",))
    await store.save_conversation(ConversationRecord(info, ()))
    (loaded,) = store.load_conversations()
    assert loaded.info == attrs.evolve(info)


def test_a_fifo_in_place_of_a_data_file_is_refused_at_once(tmp_path: Path) -> None:
    """The files the daemon reads from its own folder (conversations, workspaces, tasks,
    rules, a key file) are never waited on, however a FIFO got there."""
    import os

    from actors.policy.rules import RuleBook
    from bmoe_daemon.defaults import read_key_file

    store = Store(tmp_path)
    os.mkfifo(store.conv_dir / "c1.json")
    os.mkfifo(store.agent_dir / "workspaces.json")
    os.mkfifo(store.agent_dir / "permission-rules.json")
    os.mkfifo(tmp_path / "key")
    assert store.load_conversations() == [] and store.load_workspaces() == []
    assert RuleBook(store.agent_dir / "permission-rules.json").listing("w") == []
    with pytest.raises(OSError):
        read_key_file(tmp_path / "key")


# ---- the index ----


def _index_entries(raw: bytes) -> list[dict]:
    """The entries of an index file in the line form (a header line, an entry a line)."""
    header, *lines = raw.decode().splitlines()
    assert json.loads(header) == {"version": store_module.INDEX_VERSION}
    return [json.loads(line) for line in lines]


async def _three(store: Store) -> list[ConversationRecord]:
    records = [make_record(cid) for cid in ("a", "b", "c")]
    for record in records:
        await store.save_conversation(record)
    await store.save_index()
    return records


async def test_the_index_gives_every_head_without_the_items(tmp_path: Path) -> None:
    records = await _three(Store(tmp_path))
    store = Store(tmp_path)
    assert store.load_index() == [r.info for r in records]
    assert store.load_conversation("b") == records[1]
    with pytest.raises(KeyError):
        store.load_conversation("zz")


_A = b'{"file":"a.json","stamp":[1,2,3],"head":{"id":"a"}}'


@pytest.mark.parametrize("damage", [
    "missing", b"", b"{not json", b'{"version":1,"entries":[{"file":"a.json"}]}',
    b'{"version":99,"entries":[]}', b"[]", b'{"version":1,"entries":5}',
    # The line form: cut in the middle of an entry, two entries on a line, a line that is
    # no entry, a stamp that is not one, a bare header with a broken next line.
    b'{"version":2}\n' + _A[:30], b'{"version":2}\n' + _A + b"," + _A + b"\n", b'{"version":2}\n5\n',
    b'{"version":2}\n{"file":"a.json","stamp":"x","head":{}}\n', b'{"version":2}\n]\n[\n',
])
async def test_a_damaged_or_missing_index_is_rebuilt_from_the_files(tmp_path: Path, damage: object) -> None:
    records = await _three(Store(tmp_path))
    index = tmp_path / "agent" / store_module.INDEX_FILE
    if damage == "missing":
        index.unlink()
    else:
        assert isinstance(damage, bytes)
        index.write_bytes(damage)
    assert Store(tmp_path).load_index() == [r.info for r in records]
    # ...and written again whole: the next start takes it as it is.
    assert [e["file"] for e in _index_entries(index.read_bytes())] == ["a.json", "b.json", "c.json"]
    assert Store(tmp_path).load_index() == [r.info for r in records]


async def test_an_index_that_matches_is_kept_as_read_and_a_version_1_one_is_written_anew(tmp_path: Path) -> None:
    records = await _three(Store(tmp_path))
    index = tmp_path / "agent" / store_module.INDEX_FILE
    before = index.stat()
    assert Store(tmp_path).load_index() == [r.info for r in records]
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # nothing written
    # The one-document form written before the line form: read, then written as lines.
    entries = _index_entries(index.read_bytes())
    index.write_bytes(json.dumps({"version": 1, "entries": entries}).encode())
    assert Store(tmp_path).load_index() == [r.info for r in records]
    assert _index_entries(index.read_bytes()) == entries


async def test_the_index_follows_files_changed_added_or_removed_behind_it(tmp_path: Path, caplog) -> None:
    import attrs

    store = Store(tmp_path)
    records = await _three(store)
    changed = attrs.evolve(records[0], info=attrs.evolve(records[0].info, title="Renamed elsewhere"))
    write_atomic(store.conversation_path("a"), store_module._dumps(changed.to_json()))  # not through the store
    store.conversation_path("c").unlink()
    (store.conv_dir / "d.json").write_bytes(store_module._dumps(make_record("d").to_json()))
    (store.conv_dir / "broken.json").write_bytes(b'{"id": "broken", "items": [')
    infos = Store(tmp_path).load_index()
    assert infos == [changed.info, records[1].info, make_record("d").info]
    assert "broken.json" in caplog.text and (store.conv_dir / "broken.json").exists()
    caplog.clear()
    Store(tmp_path).load_index()
    assert "broken.json" in caplog.text  # named at every start, never dropped


async def test_a_delete_leaves_the_index(tmp_path: Path) -> None:
    store = Store(tmp_path)
    records = await _three(store)
    await store.delete_conversation("b")
    await store.save_index()
    entries = _index_entries((tmp_path / "agent" / store_module.INDEX_FILE).read_bytes())
    assert [e["file"] for e in entries] == ["a.json", "c.json"]
    assert Store(tmp_path).load_index() == [records[0].info, records[2].info]


texts = st.one_of(st.just(""), st.text(max_size=12))
conversation_heads = st.builds(
    ConversationInfo,
    id=st.text("abc123", min_size=1, max_size=8), title=texts, workspace=st.one_of(st.none(), texts),
    mode=st.sampled_from(["ask", "read_only", "full"]), route=st.sampled_from(["local", "p1/m"]),
    agent=st.sampled_from(["builtin", "opencode"]), state=st.sampled_from(["idle", "running", "waiting", "error"]),
    created=st.floats(0, 2e9), updated=st.floats(0, 2e9), task=st.one_of(st.none(), texts),
    acp_session=st.one_of(st.none(), texts),
    todos=st.lists(st.builds(Todo, content=st.text(min_size=1, max_size=6),
                             status=st.sampled_from(["pending", "in_progress", "completed"])), max_size=2).map(tuple),
    end_reason=st.one_of(st.none(), st.sampled_from(["answered", "stopped", "cut_off"])), plan_mode=st.booleans(),
    plan=st.one_of(st.none(), st.builds(PlanInfo, revision=st.integers(0, 5),
                                        state=st.sampled_from(["drafting", "proposed", "approved"]))),
    goal=st.one_of(st.none(), st.builds(Goal, text=st.text(min_size=1, max_size=6))),
    instructions=st.lists(st.text(max_size=6), max_size=2).map(tuple),
    instructions_delivered=st.lists(st.text(max_size=6), max_size=2).map(tuple),
    context=st.one_of(st.none(), st.tuples(st.integers(0, 10_000), st.integers(0, 10_000))),
    waiting_cards=st.integers(0, 3),
)


@given(conversation_heads)
def test_an_index_line_reads_back_as_the_conversation_it_was_made_from(info):
    """The index's lines leave out the fields that say nothing; read back, each is the
    conversation whole (ConversationInfo.from_json's defaults are those fields' values)."""
    line = store_module._entry_bytes(f"{info.id}.json", (1, 2, 3), ConversationRecord(info, ()))
    [(name, (stamp, read, kept))] = store_module._read_index(store_module.INDEX_HEADER + b"\n" + line + b"\n").items()
    assert (name, stamp, kept) == (f"{info.id}.json", (1, 2, 3), line)
    assert read == info


# ---- the journal: saves appended, written whole again, torn ones left out ----


def _item(n: int, text: str = "x", **kw: object) -> Item:
    return Item(id=f"j{n}", kind="assistant", created=float(n), text=text, **kw)  # type: ignore[arg-type]


async def test_a_save_appends_what_changed_and_an_undo_writes_the_file_whole(tmp_path: Path) -> None:
    store = Store(tmp_path)
    record = make_record(extra=50)
    await store.save_conversation(record)
    path = store.conversation_path("c1")
    first = path.stat()
    streaming = _item(1, "half", streaming=True)
    await store.save_conversation(ConversationRecord(record.info, (*record.items, streaming)), durable=False)
    done = attrs.evolve(streaming, text="half, then the rest", streaming=False)
    grown = ConversationRecord(attrs.evolve(record.info, state="idle"), (*record.items, done))
    await store.save_conversation(grown)
    after = path.stat()
    # The same file, longer by the two versions of the one item (and the head once).
    assert after.st_ino == first.st_ino
    assert after.st_size - first.st_size < 2 * len(store_module._dumps(record.head_json())) + 200
    assert path.read_bytes().count(b"\n") == 3
    assert Store(tmp_path).load_conversations() == [grown]
    # An item gone (an undo, an edit): the file is written whole, the base alone.
    shorter = ConversationRecord(grown.info, grown.items[:3])
    await store.save_conversation(shorter)
    assert path.stat().st_ino != first.st_ino and path.read_bytes().count(b"\n") == 1
    assert Store(tmp_path).load_conversations() == [shorter]


# A conversation saved by the daemon before the journal: one JSON document.
OLD_FORMAT = (
    '{"id":"c-old","title":"Before the journal ✓","workspace":null,"mode":"ask","route":"local",'
    '"agent":"builtin","state":"idle","created":1700000000.5,"updated":1700000100.25,"task":null,"todos":[],'
    '"end_reason":"answered","plan_mode":false,"plan":null,"goal":null,"instructions":[],"context":null,'
    '"waiting_cards":0,"acp_session":null,"instructions_delivered":[],"items":[{"id":"i1","kind":"user",'
    '"created":1700000000.5,"text":"Hello\\nthere"},{"id":"i2","kind":"assistant","created":1700000001.0,'
    '"text":"Hi.","streaming":false}]}'
).encode()


async def test_a_conversation_saved_before_the_journal_loads_and_becomes_one_at_its_next_save(tmp_path: Path) -> None:
    store = Store(tmp_path)
    path = store.conversation_path("c-old")
    path.write_bytes(OLD_FORMAT)
    (info,) = store.load_index()
    assert (info.id, info.title, info.end_reason) == ("c-old", "Before the journal ✓", "answered")
    record = store.load_conversation("c-old")
    assert [(i.id, i.text) for i in record.items] == [("i1", "Hello\nthere"), ("i2", "Hi.")]
    assert path.read_bytes() == OLD_FORMAT  # reading writes nothing
    more = ConversationRecord(record.info, (*record.items, _item(3, "more")))
    await store.save_conversation(more)
    assert path.read_bytes().startswith(journal.BASE_PREFIX) and path.read_bytes().count(b"\n") == 1
    assert Store(tmp_path).load_conversations() == [more]


async def test_a_conversation_read_is_appended_to_from_its_first_save(tmp_path: Path) -> None:
    record = make_record()
    await Store(tmp_path).save_conversation(record)
    store = Store(tmp_path)
    store.load_index()
    loaded = store.load_conversation("c1")
    path = store.conversation_path("c1")
    ino = path.stat().st_ino
    more = ConversationRecord(loaded.info, (*loaded.items, _item(1)))
    await store.save_conversation(more)
    assert path.stat().st_ino == ino and path.read_bytes().count(b"\n") == 2
    assert Store(tmp_path).load_conversations() == [more]


async def test_a_file_another_hand_changed_is_written_whole_not_appended_to(tmp_path: Path) -> None:
    store = Store(tmp_path)
    record = make_record()
    await store.save_conversation(record)
    path = store.conversation_path("c1")
    stranger = make_record(extra=2)
    path.write_bytes(store_module._dumps(stranger.to_json()))  # in place: the same file, other bytes
    more = ConversationRecord(record.info, (*record.items, _item(1)))
    await store.save_conversation(more)
    assert path.read_bytes().count(b"\n") == 1
    assert Store(tmp_path).load_conversations() == [more]


async def test_a_torn_last_save_is_left_out_named_in_the_log_and_gone_at_the_next_save(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    store = Store(tmp_path)
    record = make_record()
    await store.save_conversation(record)
    path = store.conversation_path("c1")
    with path.open("ab") as fh:  # what a crash in the middle of an append leaves
        fh.write(journal.save_line(None, [store_module._dumps(_item(1).to_json())])[:-7])
    again = Store(tmp_path)
    assert again.load_index() == [record.info]
    assert again.load_conversation("c1") == record
    assert "cut short" in caplog.text and path.name in caplog.text
    more = ConversationRecord(record.info, (*record.items, _item(2)))
    await again.save_conversation(more)
    assert path.read_bytes().count(b"\n") == 1 and path.read_bytes().endswith(b"\n")  # written whole
    assert Store(tmp_path).load_conversations() == [more]


_journal_ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 400)),
        st.tuples(st.just("update"), st.integers(0, 50)),
        st.tuples(st.just("remove"), st.integers(0, 50)),
        st.tuples(st.just("head"), st.integers(0, 50)),
        st.tuples(st.just("interim"), st.integers(0, 400)),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_journal_ops, cuts=st.lists(st.integers(0, 10**7), min_size=1, max_size=5))
def test_any_saves_and_compactions_cut_at_any_byte_load_as_a_save_that_was_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ops: list, cuts: list[int],
) -> None:
    """Appends, new versions of items, items removed (the file written whole), the
    journal compacted once it doubles; then the file cut at any byte (each save's end
    and the bytes either side of it too): it loads as the record of the last save whose
    line is whole, never a mix, and its next save goes on from there."""
    monkeypatch.setattr(journal, "COMPACT_MIN_BYTES", 0)  # compacted as soon as it doubles
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        data_dir = Path(tmp)
        saves: list[tuple[int, ConversationRecord]] = []  # since the file was last written whole

        async def run() -> None:
            store = Store(data_dir)
            path = store.conversation_path("c1")
            items: list[Item] = [_item(0, "first")]
            info = make_record().info
            serial = 0
            for op, n in [("add", 1), *ops]:
                if op in ("add", "interim"):
                    serial += 1
                    items.append(_item(serial, "t" * n, streaming=op == "interim"))
                elif op == "update" and items:
                    old = items[n % len(items)]
                    items[n % len(items)] = attrs.evolve(old, text=(old.text or "") + "+", streaming=False)
                elif op == "remove" and items:
                    del items[n % len(items)]
                elif op == "head":
                    info = attrs.evolve(info, title=f"title {n}", updated=info.updated + 1)
                record = ConversationRecord(info, tuple(items))
                ino = path.stat().st_ino if path.exists() else None
                await store.save_conversation(record, durable=op != "interim")
                st_now = path.stat()
                if st_now.st_ino != ino:
                    saves.clear()  # written whole: what came before is gone
                saves.append((st_now.st_size, record))

        trio.run(run)
        store = Store(data_dir)
        path = store.conversation_path("c1")
        raw = path.read_bytes()
        assert store.load_conversations() == [saves[-1][1]]
        base = saves[0][0]
        assert raw.index(b"\n") + 1 == base  # the base line is the first save since written whole
        edges = {e + d for e, _ in saves for d in (-1, 0, 1)}
        for cut in sorted(edges | {c % (len(raw) + 1) for c in cuts}):
            if not base <= cut <= len(raw):
                continue  # inside the base: written whole and renamed, never cut by a crash
            path.write_bytes(raw[:cut])
            expected = [r for size, r in saves if size <= cut][-1]
            again = Store(data_dir)
            assert again.load_conversations() == [expected], cut
        # From a cut file, the next save goes on from the record read.
        path.write_bytes(raw[: base + (len(raw) - base) // 2])
        again = Store(data_dir)
        again.load_index()
        went_on = ConversationRecord(again.load_conversation("c1").info, (*saves[-1][1].items, _item(10**6)))
        trio.run(again.save_conversation, went_on)
        assert Store(data_dir).load_conversations() == [went_on]


CUT_BACK_CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    import trio
    from actors.record.items import ConversationInfo, ConversationRecord, Item
    from bmoe_daemon.store import Store

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    info = ConversationInfo(id="c1", title="t", workspace=None, mode="ask", route="local",
                            agent="builtin", state="idle", created=1.0, updated=1.0)
    first = ConversationRecord(info, (Item(id="i1", kind="user", text="hi"),))
    big = ConversationRecord(info, (*first.items, Item(id="i2", kind="assistant", text="x" * 100_000)))

    async def main():
        store = Store(Path(sys.argv[1]))
        await store.save_conversation(first)
        path = store.conversation_path("c1")
        size = path.stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 5000, resource.RLIM_INFINITY))
        try:
            await store.save_conversation(big)
        except OSError as exc:
            print("failed", exc.errno, path.stat().st_size == size, flush=True)
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        await store.save_conversation(big)
        print("saved", Store(Path(sys.argv[1])).load_conversations() == [big], flush=True)

    trio.run(main)
    """
)


def test_an_append_that_fails_part_way_is_cut_back_and_the_next_save_writes_it(tmp_path: Path) -> None:
    """A write that stops part way (here a file size limit, as a full disk does): the
    file is cut back to its last whole save, the error is the save's, and a later save
    writes the record."""
    import errno

    done = subprocess.run([sys.executable, "-c", CUT_BACK_CHILD, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == [f"failed {errno.EFBIG} True", "saved True"], done.stdout + done.stderr
