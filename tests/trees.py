"""Workspaces for tests, written from a mapping of paths to their text or bytes; and the
one whole command a small model's request gets in one (`one_command`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from actors.runs.agent.small.commands import for_request


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Each of `files` (a path under `root`: its text, or its bytes) written, its folders made."""
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def one_command(root: Path, asked: Sequence[str], program: str) -> str:
    """The one whole command of `program` that every wording in `asked` gets in the
    workspace `root` (the same for each)."""
    commands = {ask: for_request(ask, root).whole.get(program) for ask in asked}
    (command,) = commands[asked[0]] or [None, None]
    assert all(c == [command] for c in commands.values()), commands
    return command
