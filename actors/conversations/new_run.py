"""Which run works a conversation's message: the built-in agent's, or another agent's
over ACP. A new kind of run (actors/runs/base.py) is chosen here."""

from __future__ import annotations

from actors.record.transcript import Transcript
from actors.runs.acp import AcpRun
from actors.runs.agent.run import AgentRun
from actors.runs.agent.run_tools.background import Background
from actors.runs.base import Run, RunRequest
from actors.runs.env import Env


def new_run(transcript: Transcript, env: Env, request: RunRequest, background: Background | None = None) -> Run:
    """The run for the conversation's agent: the built-in one (with the conversation's
    background helpers), or another agent's over ACP."""
    if transcript.info.agent == "builtin":
        return AgentRun(transcript, env, request, background=background)
    return AcpRun(transcript, env, request)
