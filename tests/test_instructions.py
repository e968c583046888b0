"""A project's instruction files (actors/runs/agent/instructions.py): the root's in the prompt, an
index of the nested ones, a folder's own given once with a result, caps, noload, links."""

from __future__ import annotations

import os
from pathlib import Path

from actors.runs.agent import instructions
from tests.waiting import wait_state


def tree(tmp_path: Path) -> Path:
    ws = tmp_path / "proj"
    (ws / "api" / "v2").mkdir(parents=True)
    (ws / "web").mkdir()
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / ".hidden").mkdir()
    (ws / "AGENTS.md").write_text("Use tabs.\n")
    (ws / "CLAUDE.md").write_text("Be brief.\n")
    (ws / "api" / "AGENTS.md").write_text("API rules: keep v1 working.\n")
    (ws / "api" / "v2" / "CLAUDE.md").write_text("v2 is async.\n")
    (ws / "web" / "AGENTS.md").write_text("<!-- bmoe:noload -->\nSecret web notes.\n")
    (ws / "node_modules" / "pkg" / "AGENTS.md").write_text("a package's own\n")
    (ws / ".hidden" / "AGENTS.md").write_text("hidden\n")
    (ws / "api" / "handler.py").write_text("def handle(): pass\n")
    return ws


def test_the_root_files_come_first_claude_then_agents_and_the_nested_are_indexed(tmp_path):
    ws = tree(tmp_path)
    files = instructions.root_files(ws)
    assert [f.path for f in files] == ["CLAUDE.md", "AGENTS.md"]
    assert instructions.nested_index(ws) == ["api/AGENTS.md", "api/v2/CLAUDE.md"]
    block = instructions.prompt_block(files, instructions.nested_index(ws))
    assert block.index("## CLAUDE.md\nBe brief.") < block.index("## AGENTS.md\nUse tabs.")
    assert "api/AGENTS.md, api/v2/CLAUDE.md" in block and "Secret" not in block


def test_noload_caps_and_links(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET")
    (ws / "AGENTS.md").symlink_to(secret)
    (ws / "CLAUDE.md").write_text("x" * 20_000)
    files = instructions.root_files(ws)
    assert [f.path for f in files] == ["CLAUDE.md"]
    assert len(files[0].text) == instructions.FILE_BYTES
    (ws / "deep").mkdir()
    (ws / "deep" / "AGENTS.md").symlink_to(secret)
    assert instructions.nested_index(ws) == []
    assert instructions.for_path(ws, "deep/x.py", set()) == []
    (ws / "sub").mkdir()
    os.mkfifo(ws / "sub" / "AGENTS.md")
    assert instructions.for_path(ws, "sub/x.py", set()) == []  # a FIFO is never waited on


def test_everything_together_stays_under_the_total_cap(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "CLAUDE.md").write_text("c" * 9000)
    (ws / "AGENTS.md").write_text("a" * 9000)
    total = sum(len(f.text) for f in instructions.root_files(ws))
    assert total <= instructions.TOTAL_BYTES


def test_the_index_goes_five_folders_deep_at_most(tmp_path):
    ws = tmp_path / "ws"
    deep = ws.joinpath(*[f"d{n}" for n in range(7)])
    deep.mkdir(parents=True)
    for n in range(1, 8):
        ws.joinpath(*[f"d{i}" for i in range(n)], "AGENTS.md").write_text(f"level {n}\n")
    index = instructions.nested_index(ws)
    assert len(index) == 5 and all(p.count("/") <= 5 for p in index)


async def test_a_folders_own_file_comes_once_with_the_first_result_there(real_tools, tmp_path):
    d = real_tools
    ws_path = tree(tmp_path)
    ws = await d.hub.add_workspace(str(ws_path))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    read = {"name": "read_file", "arguments": {"path": "api/handler.py"}}
    d.backend.push({"tool_calls": [read]}, {"tool_calls": [read]}, {"text": "ok"})
    await conv.send_message("look at the api")
    await wait_state(conv, "idle")
    system = d.backend.turns[0].messages[0]["content"]
    assert "Be brief." in system and "Use tabs." in system and "keep v1 working" not in system
    first, second = [i for i in conv.items if i.kind == "tool"]
    assert "[The instructions of api/AGENTS.md:]\nAPI rules: keep v1 working." in first.result
    assert "keep v1 working" not in second.result
    assert conv.to_json()["instructions"] == ["CLAUDE.md", "AGENTS.md", "api/AGENTS.md"]
    # Once per conversation, across messages too (the record keeps what was given).
    d.backend.push({"tool_calls": [read]}, {"text": "ok"})
    await conv.send_message("again")
    await wait_state(conv, "idle")
    assert "keep v1 working" not in [i for i in conv.items if i.kind == "tool"][-1].result


def repo_with_workspace(tmp_path: Path) -> tuple[Path, Path]:
    """A repository (a `.git` folder is what marks it) with the workspace two folders down."""
    repo = tmp_path / "repo"
    ws = repo / "services" / "api"
    (ws / ".claude").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "AGENTS.md").write_text("Repository rule: run make check.\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "CLAUDE.md").write_text("Repository claude notes.\n")
    (repo / "services" / "CLAUDE.md").write_text("Services share one database.\n")
    (ws / "AGENTS.md").write_text("The api's own rule.\n")
    (ws / ".claude" / "CLAUDE.md").write_text("The api's claude notes.\n")
    return repo, ws


def test_the_folders_up_to_the_git_root_come_after_the_workspaces_nearest_first(tmp_path):
    repo, ws = repo_with_workspace(tmp_path)
    files = instructions.root_files(ws)
    assert [f.path for f in files] == [
        ".claude/CLAUDE.md", "AGENTS.md", "../CLAUDE.md", "../../.claude/CLAUDE.md", "../../AGENTS.md",
    ]
    assert files[2].text == "Services share one database."
    block = instructions.prompt_block(files, [])
    assert block.index("The api's claude notes.") < block.index("Repository rule")
    # Nothing above the git root is read, and a workspace in no repository reads its own only.
    (tmp_path / "AGENTS.md").write_text("above the repository\n")
    assert "above the repository" not in instructions.prompt_block(instructions.root_files(ws), [])
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "CLAUDE.md").write_text("own\n")
    assert [f.path for f in instructions.root_files(plain)] == ["CLAUDE.md"]


def test_a_link_above_the_workspace_that_leads_out_of_the_repository_is_refused(tmp_path):
    repo, ws = repo_with_workspace(tmp_path)
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET")
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").symlink_to(secret)
    (repo / "services" / "AGENTS.md").symlink_to(repo / ".claude" / "CLAUDE.md")  # inside: followed
    (repo / "services" / ".claude").mkdir()
    os.mkfifo(repo / "services" / ".claude" / "CLAUDE.md")  # never waited on
    texts = [f.text for f in instructions.root_files(ws)]
    assert "TOP SECRET" not in texts
    assert texts.count("Repository claude notes.") == 2  # the link inside the repository, and the file


def test_the_files_above_share_the_total_cap(tmp_path):
    repo, ws = repo_with_workspace(tmp_path)
    (repo / "AGENTS.md").write_text("r" * 9000)
    (ws / "AGENTS.md").write_text("w" * 9000)
    total = sum(len(f.text.encode()) for f in instructions.root_files(ws))
    assert total <= instructions.TOTAL_BYTES
