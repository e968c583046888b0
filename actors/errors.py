"""Errors raised by the actors.

Every exception class of actors/, with the module that defines it (this one unless
named). Each ActorError is mapped to an HTTP error in one place (bmoe_daemon/errors.py,
`from_actor`); the others are translated where they are caught, as each line says.

    Exception
    ├── ActorError                  base of everything an actor refuses
    │   ├── ActorGone               the actor stopped; a request could not be served
    │   ├── NotFound                an id that does not exist (conversation, item, workspace)
    │   ├── Busy                    the conversation is running; the request needs it idle
    │   │   └── NothingToResume     a resume with nothing to go on with (the last run answered)
    │   ├── DiskFull                nothing can be saved: the disk of the data folder is full
    │   ├── Invalid                 a request that makes no sense in the current state
    │   │   └── NotAFolder          a workspace path that is not a readable folder
    │   ├── SkillExists             skills.py: a new skill repeats a listed one's name (routes/skills.py: 409)
    │   └── EngineError             the engine could not run a turn
    │       ├── NoModel             nothing is loaded
    │       ├── ContextFull         the request does not fit the context window
    │       └── TurnFailed          the backend failed while generating
    ├── Aborted                     engine.py: a turn's abort flag is up; raised in a backend, fails the turn
    ├── SideTurnFailed              side_turns.py: a verifier's or a summary's turn could not run (the goal is
    │                               not checked / the items are dropped instead)
    ├── StreamError                 chatstream.py: a provider's stream is not a chat completion (providers.py:
    │                               TurnFailed)
    ├── ToolError                   tools/registry.py: a call that could not be carried out; the model reads it
    │   ├── PathRefused             tools/paths.py: a path that leaves the workspace or is not safe to use
    │   └── McpUnavailable          mcp.py: an MCP server that cannot take calls (it failed, the daemon stops)
    ├── AcpFailed                   acp.py: another agent could not do what was asked (acp_run.py: the run fails
    │                               with the text)
    ├── RequestRefused              acp.py: an agent's request refused (acp_run.py's handlers raise it too); acp.py
    │                               answers it as a JSON-RPC error
    ├── StartFailed                 program.py: a program (MCP server, agent) could not be started
    ├── ProgramEnded                program.py: the program ended while a request waited for its answer
    ├── RpcError                    program.py: the program answered a request with a JSON-RPC error
    ├── WireError                   mcp_wire.py: what a program sent breaks the protocol
    │                               (these four stop in mcp.py and acp.py: a failed server or start, a ToolError,
    │                               or AcpFailed)
    ├── _Broken                     toolcalls/partial_json.py: the JSON cannot go on (inside the module only)
    ├── _OutOfTime                  tools/glob_search.py: the walk ran past its budget (inside the module only)
    └── ValueError
        ├── ConfigError             mcp_config.py: an MCP config entry that cannot be used (it is left out)
        ├── InvalidSchedule         schedule.py: a schedule that cannot run (routes/tasks.py: 400; scheduler.py
        │                           skips a stored one)
        ├── SkillFormatError        skills.py: a SKILL.md that cannot be read (the skill is skipped)
        ├── NotPlain                tools/classify.py: not a plain pipeline (so the command asks for consent)
        └── BadRule                 policy/rules.py: a rule that cannot be kept (routes/workspaces.py: 400; a
                                    card's approve_always: Invalid, the card still waiting)
"""

from __future__ import annotations


class ActorError(Exception):
    """Base of every error an actor reports to its caller."""


class ActorGone(ActorError):
    """The actor has stopped; the request was not (fully) served."""


class NotFound(ActorError):
    """An id that does not exist."""


class Busy(ActorError):
    """The target is running and cannot take this request now."""


class NothingToResume(Busy):
    """A resume with nothing to go on with: the last run answered (or none ran)."""


class DiskFull(ActorError):
    """Nothing can be saved: the disk of the data folder is full."""


class Invalid(ActorError):
    """A request that the current state does not allow."""


class NotAFolder(Invalid):
    """A workspace path that is not a folder this user can read."""


class EngineError(ActorError):
    """The engine could not run a turn."""


class NoModel(EngineError):
    """No model is loaded."""


class ContextFull(EngineError):
    """The request does not fit the context window."""

    def __init__(self, message: str, *, needed: int = 0, available: int = 0) -> None:
        super().__init__(message)
        self.needed = needed
        self.available = available


class TurnFailed(EngineError):
    """The backend failed while generating."""


class ToolError(Exception):
    """A call that could not be carried out; the text says why and what to do next."""
