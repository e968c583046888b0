"""Which run works a conversation's message: the built-in agent's, or another agent's
over ACP. A new kind of run (actors/runs/base.py) is chosen here."""

from __future__ import annotations

from actors.record.transcript import Transcript
from actors.runs.acp import AcpRun
from actors.runs.agent.run import AgentRun
from actors.runs.base import Run, RunRequest
from actors.runs.env import Env


def new_run(transcript: Transcript, env: Env, request: RunRequest) -> Run:
    """The run for the conversation's agent: the built-in one, or another agent's over ACP."""
    if transcript.info.agent == "builtin":
        return AgentRun(transcript, env, request)
    return AcpRun(transcript, env, request)
