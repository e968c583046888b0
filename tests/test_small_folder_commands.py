"""Whole commands about what a folder holds (actors/runs/agent/small/folder_commands.py):
its files' names made lower or upper case, all it holds put into another folder; read
from the request and the folder, held in the first round and run by the real shell. The
run-level tests use the scripted backend made to say it is small."""

from __future__ import annotations

import re
import subprocess

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.folder_commands import case_command, folder_commands, merge_command
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

HELD = {"pics": ["Cat.PNG", "dog.png", "Eel_2.Jpg"], "inbox": ["a.txt", "b.md"], "done": ["c.txt"]}


def test_a_folders_names_made_lower_or_upper_case_are_each_moved_to_the_new_name():
    asked = lambda text: folder_commands(text, HELD.get)  # noqa: E731
    lower = "mv pics/Cat.PNG pics/cat.png && mv pics/Eel_2.Jpg pics/eel_2.jpg"
    assert asked("can the file names in pics/ all be lowercase") == {"mv": [lower]}
    assert asked("rename the files in the pics folder to lower case please") == {"mv": [lower]}
    assert asked("make the names of the files in pics/ upper-case") == \
        {"mv": ["mv pics/Cat.PNG pics/CAT.PNG && mv pics/dog.png pics/DOG.png && mv pics/Eel_2.Jpg pics/EEL_2.Jpg"]}
    for no in ("lowercase the text in pics/", "make the file names lowercase",  # no names, no folder
               "can the file names in pics/ and inbox/ be lowercase", "lowercase the file names in nowhere/"):
        assert asked(no) == {}, no
    assert case_command("f", ["a.txt", "b.txt"], upper=False) is None  # nothing changes
    assert case_command("f", ["Notes.md", "notes.md"], upper=False) is None  # one lands on another
    assert case_command("f", ["My File.txt"], upper=False) is None  # not written plain


def test_all_a_folder_holds_is_put_into_another_and_the_first_goes_where_asked():
    asked = lambda text: folder_commands(text, HELD.get)  # noqa: E731
    assert asked("put everything from inbox/ into done/ and get rid of inbox") == \
        {"mv": ["mv inbox/a.txt inbox/b.md done && rmdir inbox"]}
    assert asked("move all the files in inbox/ to done/") == {"mv": ["mv inbox/a.txt inbox/b.md done"]}
    assert asked("copy all the files from inbox/ to the archive folder") == \
        {"cp": ["mkdir archive && cp -r inbox/a.txt inbox/b.md archive"]}
    for no in ("move inbox/a.txt to done/", "put everything from nowhere/ into done/",
               "put everything from inbox/ into done/ and pics/"):
        assert asked(no) == {}, no
    assert merge_command("inbox", ["c.txt"], "done", ["c.txt"], copy=False, remove=True) is None  # would land on it
    assert merge_command("inbox", [], "done", [], copy=False, remove=True) is None


async def test_asked_to_make_names_lower_case_the_first_round_runs_the_whole_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"pics/Cat.PNG": "c\n", "pics/dog.png": "d\n", "notes.md": "n\n"})
    command = "mv pics/Cat.PNG pics/cat.png"
    d.backend.push(call("exec_shell_command", command=command), {"text": "Renamed Cat.PNG to cat.png."})
    await conv.send_message("can the file names in pics/ all be lowercase")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, command) and not re.fullmatch(pattern, "mv pics/dog.png pics/x.png")
    assert sorted(p.name for p in (folder / "pics").iterdir()) == ["cat.png", "dog.png"]
    assert (folder / "pics/cat.png").read_text() == "c\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
    # The answer names the files without their folder, the old name gone since: both known
    # (RunRecord.known_in), so it is not sent back as naming files that are not there.
    assert second.tool_choice == "none" and conv.info.end_reason == "answered"


async def test_asked_to_put_all_of_a_folder_into_another_the_first_round_moves_it_and_removes_it(real_tools,
                                                                                                 tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"inbox/a.txt": "a\n", "inbox/b.md": "b\n", "done/c.txt": "c\n"})
    command = "mv inbox/a.txt inbox/b.md done && rmdir inbox"
    d.backend.push(call("exec_shell_command", command=command), {"text": "Moved both into done/."})
    await conv.send_message("put everything from inbox/ into done/ and get rid of inbox")
    await wait_state(conv, "idle", "error")
    assert d.backend.turns[0].tool_choice == "required"
    assert not (folder / "inbox").exists()
    assert sorted(p.name for p in (folder / "done").iterdir()) == ["a.txt", "b.md", "c.txt"]
    assert conv.info.end_reason == "answered"


def test_a_folder_packed_is_zipped_or_tarred_whole_into_the_archive_named(tmp_path):
    import subprocess
    import tarfile
    import zipfile

    (tmp_path / "pics/deep").mkdir(parents=True)
    (tmp_path / "pics/a.jpg").write_text("a\n")
    (tmp_path / "pics/deep/b.jpg").write_text("b\n")
    children = lambda rel: sorted(p.name for p in (tmp_path / rel).iterdir()) if (tmp_path / rel).is_dir() else None  # noqa: E731
    zipped = folder_commands("zip up the pics folder", children)
    assert zipped == {"zip": ["zip -r pics.zip pics"]}
    tarred = folder_commands("compress pics/ into old.tar.gz", children)
    assert tarred == {"tar": ["tar -czf old.tar.gz pics"]}
    for command in (zipped["zip"][0], tarred["tar"][0]):
        subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert sorted(zipfile.ZipFile(tmp_path / "pics.zip").namelist()) == ["pics/", "pics/a.jpg", "pics/deep/",
                                                                        "pics/deep/b.jpg"]
    with tarfile.open(tmp_path / "old.tar.gz") as tar:
        assert sorted(tar.getnames()) == ["pics", "pics/a.jpg", "pics/deep", "pics/deep/b.jpg"]
    for no in ("unzip pics.zip into pics/", "zip pics/ and gone/ together", "zip pics/ into a.zip and b.zip"):
        assert folder_commands(no, children) == {}, no
    # The kind asked for where no archive is named whole (SmolLM2 zipped a folder asked
    # for a .tar.gz of it)
    for kind, asks in ((".tar.gz", ("tar up the pics folder so there's a .tar.gz backup of it",
                                    "make a tarball of pics/", "gzip the pics folder",
                                    "archive pics/ as a tgz please")),
                       (".tar", ("tar the pics folder", "pack pics/ into a tar")),
                       (".zip", ("zip up the pics folder", "compress the pics folder"))):
        for ask in asks:
            (command,), = folder_commands(ask, children).values()
            assert command.split()[-2:] == [f"pics{kind}", "pics"], (ask, command)
    subprocess.run(["bash", "-c", folder_commands("make a tarball of pics/", children)["tar"][0]], cwd=tmp_path,
                   check=True, capture_output=True)
    with tarfile.open(tmp_path / "pics.tar.gz", "r:gz") as tar:
        assert "pics/deep/b.jpg" in tar.getnames()


def test_files_named_by_date_are_put_in_a_folder_of_their_year_or_month(tmp_path):
    write_tree(tmp_path, {"logs/2023-04-30 hike.md": "a\n", "logs/2023_11_02-ride.md": "b\n",
                          "logs/20240105-swim.md": "c\n", "logs/index.md": "i\n", "logs/2023/older.md": "o\n"})
    for asked in ("put the logs in logs/ into a folder per year (logs/2023/ and so on)",
                  "sort logs/ by year, the date starts every name", "organise logs/ into folders by year"):
        assert for_request(asked, tmp_path).whole == {"mv": [
            "mkdir -p logs/2023 logs/2024 && mv 'logs/2023-04-30 hike.md' logs/2023_11_02-ride.md logs/2023/"
            " && mv logs/20240105-swim.md logs/2024/ && echo 'Moved 3 files into logs/2023/, logs/2024/.'"]}, asked
    monthly = for_request("sort the files in logs/ into folders by month", tmp_path).whole["mv"][0]
    assert monthly.startswith("mkdir -p logs/2023-04 logs/2023-11 logs/2024-01 && ")
    subprocess.run(["bash", "-c", for_request("organise logs/ into folders by year", tmp_path).whole["mv"][0]],
                   cwd=tmp_path, check=True)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["logs/2023/2023-04-30 hike.md", "logs/2023/2023_11_02-ride.md", "logs/2023/older.md",
                    "logs/2024/20240105-swim.md", "logs/index.md"]
    assert "mv" not in for_request("sort logs/ by year", tmp_path).whole  # none dated left
    assert folder_commands("move logs/ by year", lambda _: ["notes.md"]) == {}  # none dated
