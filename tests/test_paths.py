"""Confinement (actors/fs/paths.py): no generated path resolves outside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.fs.paths import PathRefused, relative, resolve


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("conf")
    ws = base / "ws"
    outside = base / "outside"
    (ws / "src" / "deep").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (ws / "src" / "a.py").write_text("a")
    os.symlink(outside, ws / "link_out")
    os.symlink(outside / "secret.txt", ws / "src" / "secret_link")
    os.symlink(ws / "src", ws / "link_in")
    os.symlink(ws / "nowhere", ws / "dangling")
    os.symlink("../../outside/missing", ws / "src" / "dangling_out")
    os.symlink("/etc", ws / "src" / "etc")
    return ws.resolve(), outside.resolve()


def _inside(ws: Path, p: Path) -> bool:
    return p == ws or str(p).startswith(str(ws) + os.sep)


@pytest.mark.parametrize(
    "raw",
    ["../outside/secret.txt", "/etc/passwd", "~/x", "~", "link_out/secret.txt", "src/secret_link", "link_out",
     "src/../../outside", "dangling", "dangling/x", "src/dangling_out", "src/etc/passwd", "a\x00b", "x" * 5000],
)
def test_refused(tree, raw):
    ws, _ = tree
    with pytest.raises(PathRefused) as info:
        resolve(ws, raw)
    assert "secret" not in str(info.value).replace(raw, "")


@pytest.mark.parametrize(
    ("raw", "rel"),
    [("src/a.py", "src/a.py"), ("./src/../src/a.py", "src/a.py"), ("link_in/a.py", "src/a.py"), ("", "."),
     ("new/file.txt", "new/file.txt"), (None, "."), ("src/deep/../a.py", "src/a.py")],
)
def test_allowed(tree, raw, rel):
    ws, _ = tree
    assert relative(ws, resolve(ws, raw)) == rel


def test_absolute_path_inside_is_allowed(tree):
    ws, _ = tree
    assert resolve(ws, str(ws / "src" / "a.py")) == ws / "src" / "a.py"


PARTS = st.sampled_from(["..", ".", "src", "deep", "link_out", "link_in", "dangling", "secret_link", "etc",
                         "a.py", "é", "名前", "x" * 200, "~", "", "outside", "secret.txt", "dangling_out"])


@settings(max_examples=600, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(parts=st.lists(PARTS, min_size=1, max_size=8), absolute=st.booleans(), text=st.text(max_size=30))
def test_never_outside(tree, parts, absolute, text):
    ws, outside = tree
    raw = "/".join(parts + ([text] if text else []))
    if absolute:
        raw = "/" + raw
    try:
        got = resolve(ws, raw)
    except PathRefused as exc:
        assert "secret" not in str(exc).replace(raw, "")
        return
    assert _inside(ws, got)
    assert not str(got).startswith(str(outside))
    # Whatever exists along the way is real and inside.
    assert _inside(ws, Path(os.path.realpath(got)))


def test_open_regular_reads_regular_files_only_and_no_link_swapped_in(tmp_path):
    from actors.fs.paths import NotRegularFile, open_regular, read_regular
    from tests.special_files import fifo, zero_link

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha")
    (tmp_path / "secret.txt").write_text("secret")
    real = resolve(ws, "a.txt")
    assert read_regular(real, 3) == b"alp"
    (ws / "a.txt").unlink()
    (ws / "a.txt").symlink_to(tmp_path / "secret.txt")  # swapped for a link after resolve()
    with pytest.raises(OSError) as info:
        open_regular(real)
    assert not isinstance(info.value, NotRegularFile)
    with pytest.raises(NotRegularFile) as kind:
        open_regular(fifo(ws / "pipe"))  # not waited on
    assert "FIFO" in kind.value.kind
    with pytest.raises(NotRegularFile) as kind:
        open_regular(zero_link(ws / "zero"), follow=True)
    assert kind.value.kind == "a device"
    with pytest.raises(NotRegularFile) as kind:
        open_regular(ws)
    assert kind.value.is_folder
