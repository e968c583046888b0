"""The system prompt: short, and the same for every round of a message.

Every token of it is prefilled for every new conversation, so it stays under
PROMPT_CAP_CHARS. A workspace's AGENTS.md (its first AGENTS_MD_BYTES) is appended.
"""

from __future__ import annotations

import datetime
import platform
from pathlib import Path
from typing import Any

from actors.fs.paths import read_workspace_text
from actors.record.modes import Mode

PROMPT_CAP_CHARS = 4000
AGENTS_MD = "AGENTS.md"
AGENTS_MD_BYTES = 8 * 1024

_MODES = {
    "ask": (
        "You may read freely; a change (writing a file, running a command) is shown to the person, "
        "who approves or denies it."
    ),
    "read_only": "You may only read. Changes are refused, so do not attempt them; say what you would change instead.",
    "full": "You may read, change files and run commands without asking.",
}


def platform_name() -> str:
    return f"{platform.system() or 'unknown'} {platform.machine()}".strip()


def read_agents_md(workspace: Path) -> str | None:
    """The first AGENTS_MD_BYTES of the workspace's AGENTS.md, if it has one, read like
    any file the daemon reads from a workspace on its own account
    (actors/fs/paths.py `read_workspace_text`): an AGENTS.md that links out of the
    workspace is not read (it could be ~/.ssh/config, sent to a provider with the
    prompt), nor one that is a FIFO or a device; at most AGENTS_MD_BYTES are read."""
    text = read_workspace_text(workspace, AGENTS_MD, AGENTS_MD_BYTES)
    return (text.strip() or None) if text is not None else None


def system_prompt(
    *,
    workspace: Path | None,
    mode: Mode,
    today: datetime.date,
    tools: bool,
    skills: list[tuple[str, str]] | None = None,
    instructions: str | None = None,
    planning: list[str] | None = None,
    goal: str | None = None,
    helper: str | None = None,
    files: str | None = None,
    git: str | None = None,
    host: bool = True,
) -> str:
    """The base prompt (capped) plus the project's instruction files (actors/runs/agent/instructions.py).
    `planning`: the lines that say the conversation plans (actors/runs/agent/run_tools/plans.py). `files`:
    the line that lists the workspace's files (actors/runs/agent/real_names.py `prompt_index`). `git`: the
    workspace's branch and status (actors/runs/agent/git_status.py), last: it changes most often. `host`:
    False for a conversation without the daemon's own tools (its client's tools run in the app)."""
    lines = [
        "You are a coding agent working for the person at this computer.",
        f"Platform: {platform_name()}. Date: {today.isoformat()}.",
    ]
    if workspace is not None:
        lines.append(f"Workspace (your working directory): {workspace}")
        lines.append("Every path you use is inside the workspace; paths outside it are refused.")
        lines.append(f"Mode: {mode}. {_MODES.get(mode, '')}")
        if files:
            lines.append(files)
        if tools:
            lines.append(
                "Use the tools to look before you answer: read files rather than guess their content. "
                "Keep answers short and say what you changed."
            )
    elif not host:
        lines.append(
            "You have no file or command tools on this computer"
            + ("; the tools you are given run in the app the person uses." if tools else ".")
        )
    else:
        lines.append(
            "No folder is open in this conversation, so you have no file or command tools. "
            "If the person asks about files or code on this computer, ask them to open a workspace "
            "folder for this conversation; do not try to reach files any other way."
        )
    if helper:
        lines.append(helper)
    if planning:
        lines.extend(planning)
    if goal:
        lines.append(
            f"Your goal: {goal}. Work until it is reached, then call update_goal with completed; "
            "if you cannot reach it, call update_goal with blocked_reason."
        )
    if skills:
        lines.append("Skills you can read with use_skill when they fit the task:")
        lines.extend(f"- {name}: {desc}" for name, desc in skills)
    base = cap_lines(lines, PROMPT_CAP_CHARS)
    if instructions:
        base += "\n\n" + instructions
    if git:
        base += "\n\n" + git
    return base


def cap_lines(lines: list[str], cap: int) -> str:
    """The lines joined, as many whole ones as fit in `cap` characters (a line longer
    than the cap on its own is cut at a word)."""
    out: list[str] = []
    size = 0
    for line in lines:
        extra = len(line) + (1 if out else 0)
        if size + extra > cap:
            if not out:
                out.append(line[:cap].rsplit(" ", 1)[0])
            break
        out.append(line)
        size += extra
    return "\n".join(out)


def user_content(text: str, images: tuple[str, ...] | None) -> str | list[dict[str, Any]]:
    """A user message's `content`: its text, or with images the OpenAI content parts,
    the text first and then each image (a data URL) as an `image_url` part."""
    if not images:
        return text
    return [{"type": "text", "text": text}, *({"type": "image_url", "image_url": {"url": url}} for url in images)]
