"""Errors at the HTTP edge, and how every actor error maps onto one.

    ApiError(status, code)          what a route answers: {"error": text, "code": code}
    ├── BadRequest                  400 bad_request: not JSON, wrong types, unknown value, missing field
    ├── NotAFolderError             400 not_a_folder
    ├── NoVision                    400 no_vision
    ├── Unauthorized                401 unauthorized
    ├── LocalOnly                   403 local_only
    ├── ForbiddenOrigin             403 forbidden_origin
    ├── NotFoundError               404 not_found
    ├── BusyError                   409 busy
    ├── Exists                      409 exists
    ├── NoModelError                409 no_model
    └── SettingsConflict            409 exists: another app's settings file is there in a form the daemon will not change
"""

from __future__ import annotations

from actors import errors as actor_errors


class ApiError(Exception):
    status = 500
    code = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def body(self) -> dict[str, str]:
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


class BusyError(ApiError):
    status, code = 409, "busy"


class Exists(ApiError):
    status, code = 409, "exists"


class NoModelError(ApiError):
    status, code = 409, "no_model"


class SettingsConflict(ApiError):
    """An app's settings file that does not parse (or would clash): left untouched."""

    # The spec's fixed list of codes has none for this; `exists` says what is in the way.
    status, code = 409, "exists"


def from_actor(exc: actor_errors.ActorError) -> ApiError:
    """The HTTP error for an actor's refusal."""
    text = str(exc) or "The request could not be served."
    if isinstance(exc, actor_errors.NotFound):
        return NotFoundError(text)
    if isinstance(exc, actor_errors.Busy):
        return BusyError(text)
    if isinstance(exc, actor_errors.NotAFolder):
        return NotAFolderError(text)
    if isinstance(exc, actor_errors.Invalid):
        return BadRequest(text)
    if isinstance(exc, actor_errors.NoModel):
        return NoModelError(text)
    if isinstance(exc, actor_errors.ActorGone):
        return BusyError("The daemon is shutting down; try again once it is back.")
    err = ApiError(text)
    return err
