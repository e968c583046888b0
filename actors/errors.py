"""Errors raised by the actors.

    ActorError                      base of everything an actor refuses
    ├── ActorGone                   the actor stopped; a request could not be served
    ├── NotFound                    an id that does not exist (conversation, item, workspace)
    ├── Busy                        the conversation is running; the request needs it idle
    ├── DiskFull                    nothing can be saved: the disk of the data folder is full
    ├── Invalid                     a request that makes no sense in the current state
    │   └── NotAFolder              a workspace path that is not a readable folder
    └── EngineError                 the engine could not run a turn
        ├── NoModel                 nothing is loaded
        ├── ContextFull             the request does not fit the context window
        └── TurnFailed              the backend failed while generating
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
