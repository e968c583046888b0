"""Errors at the HTTP edge, and how every actor error maps onto one.

Every exception class of bmoe_daemon/, drawn under the class it derives from, with the
module that defines it (a path under bmoe_daemon/; this module when none is named) and
what becomes of it. The HTTP layer (app.py) turns each ApiError, and each actor error
through `from_actor`, into {"error": text, "code": code}. The actors' own tree is drawn
in actors/errors.py; tests/test_error_trees.py holds both drawings to the code.

    Exception
    ├── ApiError(status, code)          what a route answers; itself 500 internal
    │   ├── BadRequest                  400 bad_request: not JSON, wrong types, unknown value, missing field
    │   ├── NotAFolderError             400 not_a_folder
    │   ├── NoVision                    400 no_vision: images for a loaded model that cannot see them
    │   ├── Unauthorized                401 unauthorized
    │   ├── LocalOnly                   403 local_only
    │   ├── ForbiddenOrigin             403 forbidden_origin
    │   ├── NotFoundError               404 not_found
    │   ├── MethodNotAllowed            405 method_not_allowed: the route takes other methods (named)
    │   ├── BusyError                   409 busy
    │   ├── NotWaitingError             409 not_waiting: a client's result for a call that waits no more
    │   ├── ChangedSinceError           409 changed_since: a rewind refused, with the files changed since (`paths`)
    │   ├── NoCheckpointsError          409 no_checkpoints: git could not take or read the checkpoints
    │   ├── Exists                      409 exists
    │   ├── NoModelError                409 no_model
    │   ├── SettingsConflict            409 exists: another app's settings file the daemon will not change
    │   ├── TooLarge                    413 too_large: a body over the limit (named, in MiB)
    │   ├── DiskFullError               507 disk_full: nothing could be saved (actors' DiskFull)
    │   └── ContextFullError            routes/openai.py: 400 bad_request, a /v1 request longer than the context
    ├── SettingsError                   connect.py: an app's settings file it cannot merge (answered SettingsConflict)
    ├── StartupError                    startup.py: the daemon cannot start; the command line prints it and exits 2
    ├── RunError                        run_cmd/locate.py: `bmoe-daemon run` cannot go on (printed; exits with its
    │                                   code)
    ├── ServiceError                    service/commands.py: a service command that cannot be carried out (printed,
    │                                   exit 1; doctor reports no service manager)
    └── ValueError
        ├── BadQuery                    fulltext.py: a search's words that cannot be one (answered BadRequest)
        ├── OptionError                 options.py: a serve option that cannot be used (printed, exit 2)
        └── UnitError                   service/units.py: a value a service file cannot carry (a ServiceError)
"""

from __future__ import annotations

from actors import errors as actor_errors


class ApiError(Exception):
    status = 500
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error": self.message, "code": self.code}


class BadRequest(ApiError):
    status, code = 400, "bad_request"


class NotAFolderError(ApiError):
    status, code = 400, "not_a_folder"


class NoVision(ApiError):
    status, code = 400, "no_vision"


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class LocalOnly(ApiError):
    status, code = 403, "local_only"


class ForbiddenOrigin(ApiError):
    status, code = 403, "forbidden_origin"


class NotFoundError(ApiError):
    status, code = 404, "not_found"


class MethodNotAllowed(ApiError):
    status, code = 405, "method_not_allowed"


class BusyError(ApiError):
    status, code = 409, "busy"


class NotWaitingError(ApiError):
    status, code = 409, "not_waiting"


class Exists(ApiError):
    status, code = 409, "exists"


class NoModelError(ApiError):
    status, code = 409, "no_model"


class SettingsConflict(ApiError):
    """An app's settings file that does not parse (or would clash): left untouched."""

    # The spec's fixed list of codes has none for this; `exists` says what is in the way.
    status, code = 409, "exists"


class ChangedSinceError(ApiError):
    status, code = 409, "changed_since"

    def __init__(self, message: str, paths: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.paths = paths

    def body(self) -> dict[str, object]:
        return {"error": self.message, "code": self.code, "paths": list(self.paths)}


class NoCheckpointsError(ApiError):
    status, code = 409, "no_checkpoints"


class TooLarge(ApiError):
    status, code = 413, "too_large"


class DiskFullError(ApiError):
    status, code = 507, "disk_full"


DISK_FULL_TEXT = "The daemon could not save: the disk is full. Free some space, then send again."


def from_actor(exc: actor_errors.ActorError) -> ApiError:
    """The HTTP error for an actor's refusal."""
    text = str(exc) or "The request could not be served."
    if isinstance(exc, actor_errors.NotFound):
        return NotFoundError(text)
    if isinstance(exc, actor_errors.ChangedSince):
        return ChangedSinceError(text, exc.paths)
    if isinstance(exc, actor_errors.NoCheckpoints):
        return NoCheckpointsError(text)
    if isinstance(exc, actor_errors.Busy):
        return BusyError(text)
    if isinstance(exc, actor_errors.NotWaiting):
        return NotWaitingError(text)
    if isinstance(exc, actor_errors.NotAFolder):
        return NotAFolderError(text)
    if isinstance(exc, actor_errors.Invalid):
        return BadRequest(text)
    if isinstance(exc, actor_errors.NoModel):
        return NoModelError(text)
    if isinstance(exc, actor_errors.DiskFull):
        return DiskFullError(DISK_FULL_TEXT)
    if isinstance(exc, actor_errors.ActorGone):
        return BusyError("The daemon is shutting down; try again once it is back.")
    return ApiError(text)
