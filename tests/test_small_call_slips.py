"""Commands a small model writes that cannot be what it means
(actors/runs/agent/small/call_slips.py): a placeholder path, the last command's error
pasted into the next. Refused before they run, with what to write instead; the
person's card says why."""

from __future__ import annotations

from actors import notices
from actors.runs.agent.small import call_slips
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state


def test_a_placeholder_path_is_refused_naming_the_workspaces_files_of_its_name():
    named = {"act2.txt": ["play/act2.txt"]}.get
    told = call_slips.placeholder_refused("find /path/to/act2.txt", lambda n: named(n) or [])
    assert told == notices.PLACEHOLDER_REFUSED.format(path="/path/to/act2.txt",
                                                      files=" The workspace has play/act2.txt.")
    for command in ("cat path/to/your/file.md", "ls /your/path/here", "cp a.txt /full/path/b.txt"):
        assert call_slips.placeholder_refused(command, lambda n: []) is not None, command
    for command in ("find . -name act2.txt", "cat docs/path_to_go.md", "ls mypath/to/x", "echo 'the way to x'"):
        assert call_slips.placeholder_refused(command, lambda n: ["x"]) is None, command
    assert call_slips.placeholder_refused(None, lambda n: []) is None


def test_the_last_commands_error_pasted_into_the_next_is_refused():
    failed = ("find /tmp/a.txt", "find: \u2018/tmp/a.txt\u2019: No such file or directory\n\n[exit code: 1]")
    told = call_slips.pasted_error_refused("find /tmp/a.txt: No such file or directory", failed, "find a.txt")
    assert told == notices.PASTED_ERROR_REFUSED.format(words="No such file or directory")
    # The command alone; words the request or the command before it holds; a command that did not fail.
    assert call_slips.pasted_error_refused("find . -name a.txt", failed, "find a.txt") is None
    assert call_slips.pasted_error_refused("grep -r 'No such file or directory' logs", failed,
                                           "which log says No such file or directory?") is None
    said = ("ls 'No such file or directory'", "ls: cannot access 'No such file or directory': No such file or "
            "directory\n\n[exit code: 2]")
    assert call_slips.pasted_error_refused("ls 'No such file or directory' -l", said, "list it") is None
    ran = ("find /tmp/a.txt", "found: No such file or directory here\n\n[exit code: 0]")
    assert call_slips.pasted_error_refused("find /tmp/a.txt: No such file or directory", ran, "x") is None
    assert call_slips.pasted_error_refused("ls", None, "x") is None
    # A short message is no error's words.
    short = ("cat b", "cat: b: gone\n\n[exit code: 1]")
    assert call_slips.pasted_error_refused("cat b: gone", short, "x") is None


async def test_a_run_that_writes_placeholders_and_pastes_errors_is_told_each_and_the_files_stay(real_tools,
                                                                                                  tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"play/act2.txt": "Act 2\n", "play/act10.txt": "Act 10\n"})
    d.backend.push(
        call("exec_shell_command", command="find /path/to/act2.txt"),
        call("exec_shell_command", command="ls act2.txt"),
        call("exec_shell_command", command="ls act2.txt: No such file or directory"),
        call("exec_shell_command", command="ls play"),
        {"text": "The acts are act10.txt and act2.txt, in play/."},
    )
    await conv.send_message("list the acts in play")
    await wait_state(conv, "idle", "error")
    cards = [i for i in conv.items if i.kind == "tool"]
    assert [c.state for c in cards] == ["error", "done", "error", "done"]
    assert cards[0].result.startswith("Not run: /path/to/act2.txt is a placeholder") \
        and "The workspace has play/act2.txt." in cards[0].result
    assert cards[0].person_text.startswith("Not run: the command held /path/to/act2.txt, a placeholder")
    assert cards[2].result == notices.PASTED_ERROR_REFUSED.format(words="No such file or directory")
    assert sorted(p.name for p in (folder / "play").iterdir()) == ["act10.txt", "act2.txt"]
