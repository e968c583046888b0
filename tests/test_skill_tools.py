"""A skill's `allowed-tools` narrows the run's tools once `use_skill` loaded it."""

from __future__ import annotations

import pytest

from actors.skills.catalog import SkillFormatError, parse_skill, tool_list
from tests.waiting import wait_state


@pytest.mark.parametrize("written, names", [
    ("[read_file, grep_search]", ("read_file", "grep_search")),
    ("read_file, grep_search", ("read_file", "grep_search")),
    ("read_file grep_search", ("read_file", "grep_search")),
    ("- read_file - grep_search", ("read_file", "grep_search")),
    ("[]", ()),
])
def test_allowed_tools_as_people_write_them(written, names):
    assert tool_list(written) == names


def test_a_block_list_and_a_bad_name():
    text = "---\nname: narrow\ndescription: d\nallowed-tools:\n  - read_file\n  - echo\n---\nbody\n"
    assert parse_skill(text).allowed_tools == ("read_file", "echo")
    assert parse_skill("---\nname: n\ndescription: d\n---\nb\n").allowed_tools is None
    with pytest.raises(SkillFormatError, match="not a tool"):
        tool_list("[read_file, $(rm)]")


async def test_loading_the_skill_narrows_the_rest_of_the_run(real_tools, tmp_path):
    from actors.skills.catalog import SkillCatalog
    from actors.skills.tool import UseSkill

    d = real_tools
    shipped = tmp_path / "shipped"
    (shipped / "careful").mkdir(parents=True)
    (shipped / "careful" / "SKILL.md").write_text(
        "---\nname: careful\ndescription: Read only.\nallowed-tools: [read_file, grep_search]\n---\nOnly read.\n")
    catalog = SkillCatalog(shipped=shipped, data_dir=tmp_path / "skills-data", write_file=lambda *a, **k: None)
    d.hub.env.registry.add(UseSkill(catalog))
    object.__setattr__(d.hub.env, "skills", catalog)  # the fixture's Env has no skills: this test's do
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id, mode="full")
    load = {"name": "use_skill", "arguments": {"name": "careful"}}
    write = {"name": "write_file", "arguments": {"path": "x.txt", "content": "no"}}
    d.backend.push({"tool_calls": [load]}, {"tool_calls": [write]}, {"text": "ok"})
    await conv.send_message("be careful")
    await wait_state(conv, "idle")
    before = {t.name for t in d.backend.turns[0].tools}
    after = {t.name for t in d.backend.turns[1].tools}
    assert {"write_file", "use_skill"} <= before
    assert after == {"read_file", "grep_search"}
    cards = [i for i in conv.items if i.kind == "tool"]
    assert "you may use only: read_file, grep_search" in cards[0].result
    assert cards[1].state == "error" and not (folder / "x.txt").exists()
