"""Errors raised by the actors.

Every exception class of actors/, drawn under the class it derives from, with the module
that defines it (a path under actors/; this module when none is named) and what becomes
of it. Each ActorError is mapped to an HTTP error in one place (bmoe_daemon/errors.py,
`from_actor`); the others are translated where they are caught, as each line says.
tests/test_error_trees.py holds the drawing to the code: every class is in it, under
its base and with its module, and every name in it is a class that exists.

    Exception
    ├── ActorError                  base of everything an actor refuses
    │   ├── ActorGone               the actor stopped; a request could not be served
    │   ├── NotFound                an id that does not exist (conversation, item, workspace)
    │   ├── NotWaiting              a client's result for a call that waits no more (HTTP 409 not_waiting)
    │   ├── Busy                    the conversation is running; the request needs it idle
    │   │   └── NothingToResume     a resume with nothing to go on with (the last run answered)
    │   ├── ChangedSince            a rewind that would overwrite files changed since the run (HTTP 409
    │   │                           changed_since, with their paths)
    │   ├── NoCheckpoints           git could not take, read or restore a checkpoint (HTTP 409 no_checkpoints)
    │   ├── DiskFull                nothing can be saved: the disk of the data folder is full
    │   ├── Invalid                 a request that makes no sense in the current state
    │   │   └── NotAFolder          a workspace path that is not a readable folder
    │   ├── EngineError             the engine could not run a turn
    │   │   ├── NoModel             nothing is loaded
    │   │   ├── ContextFull         the request does not fit the context window
    │   │   └── TurnFailed          the backend failed while generating (or could not load the model)
    │   │       ├── LlamaChanged    model/backends/llama_internals.py: llama-cpp-python lacks a member the local
    │   │       │                   backend uses inside it (the model does not load; the daemon does not start)
    │   │       └── TemplateRefused model/backends/chat_template.py: no shape of a history renders in the local
    │   │                           model's chat template (the run ends with the model's name and its words)
    │   ├── SkillExists             skills/catalog.py: a new skill repeats a listed one's name (HTTP 409 exists)
    │   └── ServerExists            peers/mcp/edit.py: an MCP server added under a name the config has (HTTP 409
    │                               exists)
    ├── ToolError                   a call that could not be carried out; the model reads it
    │   ├── PathRefused             fs/paths.py: a path that leaves the workspace or is not safe to use
    │   └── McpUnavailable          peers/mcp/servers.py: an MCP server that cannot take calls (it failed, or
    │                               the daemon stops)
    ├── Aborted                     model/turns.py: a turn's abort flag is up; raised in a backend, fails the turn
    ├── StreamError                 model/chatstream.py: a provider's stream is not a chat completion
    │                               (model/providers/backend.py: TurnFailed)
    ├── SideTurnFailed              runs/agent/side_turn.py: a verifier's or a summary's turn could not run (the
    │                               goal is not checked / the items are dropped instead)
    ├── AcpFailed                   peers/acp/agents.py: another agent could not do what was asked (runs/acp.py:
    │                               the run fails with the text)
    ├── RequestRefused              peers/acp/agents.py: an agent's request refused (runs/acp.py's handlers raise
    │                               it too); answered as a JSON-RPC error
    ├── StartFailed                 process.py: a program (MCP server, agent, language server) could not start
    ├── ProgramEnded                peers/program.py: the program ended while a request waited for its answer
    ├── RpcError                    peers/program.py: the program answered a request with a JSON-RPC error
    ├── WireError                   peers/jsonrpc.py: what a program sent breaks the protocol
    │   │                           (these four stop in peers/mcp, peers/acp and peers/lsp: a failed server or
    │   │                           start, a ToolError, or AcpFailed)
    │   └── HttpRefused             peers/mcp/remote.py: a remote MCP server answered with an HTTP error status
    │                               (peers/mcp/servers.py: failed, tried again, or a ToolError)
    ├── OutOfTime                   tools/search_common.py: a search ran past its time budget (glob and grep
    │                               answer what they found, and say so)
    ├── _OverBudget                 tools/links.py: the walk for links ran past its budget (the command asks)
    ├── _Refused                    tools/grep_regex.py: a pattern RE2 cannot run (a ToolError says what instead)
    ├── BrokenJson                  model/toolcalls/partial_json.py: the JSON cannot go on (envelope.py: the call
    │                               ends with an error, or the JSON is shown as text)
    ├── _Looped                     model/backends/scripted.py: a script repeats one unit without end (the turn
    │                               ends there, as the local backend's loop cut ends one)
    ├── GitFailed                   checkpoints/git.py: git could not take or read a checkpoint (a run goes on
    │                               with a notice; conversations/undo.py: NoCheckpoints)
    ├── OSError
    │   ├── NotRegularFile          fs/paths.py: a folder, FIFO, device or socket where a file was wanted
    │   └── RestoreFailed           checkpoints/restore.py: a file a rewind could not put back (conversations/undo.py:
    │                               NoCheckpoints; the rewind's own checkpoint is kept)
    └── ValueError
        ├── NotGguf                 model/discovery/gguf_header.py: not a GGUF this reads (the scan lists the
        │                           file with the reason; HTTP 400 on a switch)
        ├── ConfigError             peers/mcp/config.py: an MCP config entry that cannot be used (it is left out)
        ├── MissingSecret           peers/mcp/config.py: an MCP server's header or variable names a secret the
        │                           key store lacks (peers/mcp/servers.py: the server fails, saying which)
        ├── BadRule                 policy/rules.py: a rule that cannot be kept (HTTP 400)
        ├── BadPage                 record/listing.py: a page asked for wrongly (HTTP 400)
        ├── BadDocument             record/exchange.py: a file that is not a conversation to import (HTTP 400)
        ├── InvalidSchedule         scheduling/schedule.py: a schedule that cannot run (HTTP 400; the scheduler
        │                           skips a stored one)
        ├── SkillFormatError        skills/catalog.py: a SKILL.md that cannot be read (the skill is skipped)
        └── NotPlain                tools/shell_words.py: not a plain pipeline (so the command asks for consent)
"""

from __future__ import annotations


class ActorError(Exception):
    """Base of every error an actor reports to its caller."""


class ActorGone(ActorError):
    """The actor has stopped; the request was not (fully) served."""


class NotFound(ActorError):
    """An id that does not exist."""


class NotWaiting(ActorError):
    """A client's result for a call of its tool that is not waiting for one (answered, timed out, stopped)."""


class Busy(ActorError):
    """The target is running and cannot take this request now."""


class NothingToResume(Busy):
    """A resume with nothing to go on with: the last run answered (or none ran)."""


class ChangedSince(ActorError):
    """A rewind would overwrite files someone changed after the run: nothing was changed."""

    def __init__(self, message: str, paths: tuple[str, ...]) -> None:
        super().__init__(message)
        self.paths = paths


class NoCheckpoints(ActorError):
    """Git could not take, read or restore a checkpoint; the text says why."""


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
