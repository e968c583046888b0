"""A Markdown file given a table of contents, linked to its sections
(actors/runs/agent/small/markdown_commands.py): the command run by the real shell on a
real file, the file after it, and the requests it leaves alone."""

from __future__ import annotations

import subprocess

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.markdown_commands import anchor, contents_command

GUIDE = ("# Field guide\n\nWhat to pack.\n\n## Maps & routes\n\nRead them.\n\n```\n## not a heading\n```\n\n"
         "## Water\n\n### Filters\n\nBoil it.\n\n## First aid\n\nPlasters.\n")


def test_a_table_of_contents_goes_above_the_first_section_with_each_sections_anchor(tmp_path):
    (tmp_path / "guide.md").write_text(GUIDE)
    asks = ("add a table of contents to guide.md", "give guide.md a TOC at the top linking each section",
            "put a contents list in guide.md")
    (command,) = for_request(asks[0], tmp_path).whole["sed"]
    assert all(for_request(a, tmp_path).whole.get("sed") == [command] for a in asks)
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "guide.md").read_text() == GUIDE.replace(
        "## Maps & routes\n", "## Contents\n\n- [Maps & routes](#maps--routes)\n- [Water](#water)\n"
        "- [First aid](#first-aid)\n\n## Maps & routes\n", 1)
    assert "sed" not in for_request(asks[0], tmp_path).whole  # it has one now
    assert "sed" not in for_request("remove the table of contents from guide.md", tmp_path).whole
    assert "sed" not in for_request("what is in guide.md?", tmp_path).whole


def test_files_without_a_title_list_their_top_headings_and_one_section_gets_none():
    assert anchor("Step 2: Install (Linux)") == "step-2-install-linux"
    assert contents_command("a.md", "## One\n\ntext\n") is None
    assert contents_command("b.md", "# A\n\n# B\n") == "sed -i '1i\\# Contents\\n\\n- [A](#a)\\n- [B](#b)\\n' b.md"
    assert contents_command("c.md", "# T\n\n## It's here\n\n## There\n") is None  # (a quote the command cannot hold)
