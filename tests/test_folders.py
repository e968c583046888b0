"""GET /api/folders (bmoe_daemon/routes/folders.py): the folders under home that start
with what was typed, bounded, never outside home after `..` and links."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.routes.folders import MAX_FOLDERS, folder_completions


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for name in ("projects", "Photos", "prose", ".config", "notes.txt"):
        (home / name).mkdir(parents=True) if "." not in name[1:] else (home / name).write_text("x")
    (home / "projects" / "bmoe").mkdir()
    (home / "projects" / "pebble").mkdir()
    outside = tmp_path / "secret-place"
    (outside / "inner").mkdir(parents=True)
    (home / "pro-link-out").symlink_to(outside)  # a link that leaves home
    (home / "pro-link-in").symlink_to(home / "projects")  # one that stays
    return home


def test_the_folders_that_start_so_sorted_without_hidden_or_files(home):
    assert folder_completions(home, "~/pro") == (["~/pro-link-in", "~/projects", "~/prose"], False)
    assert folder_completions(home, "~/")[0] == ["~/Photos", "~/pro-link-in", "~/projects", "~/prose"]
    assert folder_completions(home, "")[0] == folder_completions(home, "~")[0] == folder_completions(home, "~/")[0]
    assert folder_completions(home, "~/projects/")[0] == ["~/projects/bmoe", "~/projects/pebble"]
    assert folder_completions(home, "projects/p")[0] == ["~/projects/pebble"]  # relative to home
    assert folder_completions(home, str(home) + "/projects/b")[0] == ["~/projects/bmoe"]  # absolute
    assert folder_completions(home, "~/notes")[0] == []  # a file is no folder


def test_hidden_folders_only_when_asked(home):
    assert "~/.config" not in folder_completions(home, "~/")[0]
    assert "~/.config" in folder_completions(home, "~/", hidden=True)[0]
    assert folder_completions(home, "~/.c")[0] == ["~/.config"]  # typed with its dot: asked for


@pytest.mark.parametrize("prefix", ["~/..", "~/../", "~/../secret", "~/projects/../../", "/", "/etc/",
                                    "~/pro-link-out/", "~/pro-link-out/in", "../secret-place/", "~/nothing/"])
def test_a_path_that_tries_to_leave_home_answers_nothing(home, prefix):
    assert folder_completions(home, prefix) == ([], False)


def test_a_link_inside_home_is_followed_and_one_out_of_it_left_out(home):
    assert folder_completions(home, "~/pro-link-in/")[0] == ["~/pro-link-in/bmoe", "~/pro-link-in/pebble"]
    assert "~/pro-link-out" not in folder_completions(home, "~/pro")[0]


def test_at_most_fifty(tmp_path):
    home = tmp_path / "many"
    for n in range(MAX_FOLDERS + 7):
        (home / f"f{n:03d}").mkdir(parents=True)
    folders, more = folder_completions(home, "~/f")
    assert len(folders) == MAX_FOLDERS and more and folders[0] == "~/f000"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["..", ".", "projects", "pro-link-out", "pro-link-in", "", "~", "secret-place",
                                 "bmoe", "/"]), max_size=6), st.booleans())
def test_no_prefix_reaches_outside_home(home, parts, hidden):
    prefix = "/".join(parts)
    for folder in folder_completions(home, prefix, hidden=hidden)[0]:
        assert folder.startswith("~/")
        real = (home / folder[2:]).resolve()
        assert real.is_relative_to(home.resolve()) and real.is_dir()


LOCAL = {"client": ("127.0.0.1", 40000)}
NET = {"client": ("192.0.2.7", 40000)}


@pytest.fixture
def make_app(daemon, tmp_path: Path):
    return lambda: create_app(DaemonContext(config=Config(data_dir=tmp_path / "data"), hub=daemon.hub,
                                            engine=daemon.engine, bus=daemon.bus))


async def test_the_route_answers_a_local_client_only_and_never_outside_home(make_app, home, monkeypatch):
    monkeypatch.setenv("HOME", str(home))
    client = make_app().test_client()
    resp = await client.get("/api/folders", query_string={"prefix": "~/pro"}, scope_base=LOCAL)
    assert resp.status_code == 200
    assert await resp.get_json() == {"home": str(home.resolve()), "truncated": False,
                                     "folders": ["~/pro-link-in", "~/projects", "~/prose"]}
    resp = await client.get("/api/folders", query_string={"prefix": "~/../secret"}, scope_base=LOCAL)
    assert (await resp.get_json())["folders"] == []
    resp = await client.get("/api/folders", query_string={"prefix": "~/", "hidden": "1"}, scope_base=LOCAL)
    assert "~/.config" in (await resp.get_json())["folders"]
    resp = await client.get("/api/folders", query_string={"prefix": "~/", "hidden": "maybe"}, scope_base=LOCAL)
    assert resp.status_code == 400
    resp = await client.get("/api/folders", query_string={"prefix": "~/"}, scope_base=NET)
    assert resp.status_code == 403 and (await resp.get_json())["code"] == "local_only"
