"""actors/runs/agent/real_names.py: the real names a local model's grammar offers, and the prompt's index."""

from __future__ import annotations

import os
from pathlib import Path

from actors.model.backends.generic_grammar import with_names
from actors.runs.agent.real_names import INDEX_FILES, call_names, prompt_index, workspace_files
from actors.skills.tool import UseSkill
from actors.tools.files import EditFile, ReadFile, WriteFile


def _files(root: Path, *rels: str) -> None:
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")


def test_the_workspace_files_shallow_first_without_dependencies_links_or_folders(tmp_path: Path) -> None:
    _files(tmp_path, "b.py", "a.py", "src/z.py", "src/deep/y.py", "node_modules/pkg/index.js", ".git/HEAD")
    (tmp_path / "empty").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    os.symlink(outside, tmp_path / "link.txt")
    assert workspace_files(tmp_path) == ("a.py", "b.py", "src/z.py", "src/deep/y.py")


def test_too_many_files_or_no_folder_means_no_names(tmp_path: Path) -> None:
    _files(tmp_path, *(f"f{i:03}.txt" for i in range(12)))
    assert workspace_files(tmp_path, limit=12) is not None
    assert workspace_files(tmp_path, limit=11) is None
    assert workspace_files(tmp_path / "missing") is None


def test_the_prompts_index_is_short_and_says_how_many_more() -> None:
    assert prompt_index(()) is None
    assert prompt_index(("a.py", "b.py")) == "Files in the workspace: a.py, b.py."
    many = tuple(f"src/module_{i:03}.py" for i in range(200))
    line = prompt_index(many)
    assert line is not None and line.endswith(f"(and {200 - INDEX_FILES} more).")
    assert line.count(".py") == INDEX_FILES
    long_names = tuple("d/" + "x" * 300 + f"{i}.py" for i in range(10))
    assert len(prompt_index(long_names) or "") < 1600  # capped by characters too


def test_only_arguments_that_name_what_exists_are_held_to_names() -> None:
    tools = [ReadFile(), EditFile(), WriteFile(), UseSkill(catalog=None)]  # type: ignore[arg-type]
    files = ("a.py", "b.py")
    assert call_names(tools, files, ["review", "debug"]) == (
        ("read_file", "path", files), ("edit_file", "path", files), ("use_skill", "name", ("debug", "review")))
    assert call_names(tools, None) == ()  # too many files, or none known: free text
    assert call_names(tools, ()) == ()  # an empty workspace: nothing could be named


def test_with_names_adds_an_enum_and_changes_nothing_else() -> None:
    schema = ReadFile().parameters
    before = repr(schema)
    held = with_names(schema, {"path": ("a.py", "b.py"), "nope": ("x",)})
    assert held["properties"]["path"]["enum"] == ["a.py", "b.py"]
    assert held["properties"]["path"]["type"] == "string" and "nope" not in held["properties"]
    assert repr(schema) == before
    assert with_names(schema, {}) is schema
