"""Tools a client brings to a conversation: the model calls them like any tool, and the
client (an app, the web page) carries the call out and sends back its result.

Here: what the record keeps of them (their name, description, parameters as a JSON
Schema of an object, and how long a call may wait for its answer) and the checks a
new set passes before it is kept. Which names a set may not take (the daemon's own
tools') is the run's to say (actors/runs/agent/client_calls.py); the wait for a
result is the transcript's (actors/record/transcript.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from actors.errors import Invalid

MAX_CLIENT_TOOLS = 32  # a conversation's
DEFAULT_TIMEOUT_S = 120.0  # a call's wait for the client's answer, unless the tool says
MAX_TIMEOUT_S = 1800.0
MAX_DESCRIPTION_CHARS = 4000
MAX_PARAMETERS_CHARS = 32 * 1024  # one tool's schema, as JSON
# As OpenAI's function names: what every route and template can carry.
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@attrs.frozen
class ClientTool:
    name: str
    description: str
    parameters: dict[str, Any] = attrs.field(eq=False)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "timeout_s": self.timeout_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientTool:
        """As the record holds it (checked when it was kept)."""
        return cls(str(data["name"]), str(data.get("description") or ""), dict(data["parameters"]),
                   float(data.get("timeout_s") or DEFAULT_TIMEOUT_S))


def checked(name: str, description: str, parameters: dict[str, Any], timeout_s: float | None) -> ClientTool:
    """One tool as a client gave it, or Invalid saying what is wrong with it (a name a
    model cannot call, a schema that is not a JSON Schema of an object, a timeout out of
    bounds)."""
    if not NAME.match(name):
        raise Invalid(f"The tool name {name!r} cannot be called: use 1 to 64 letters, digits, _ or -, "
                      "starting with a letter or _.")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise Invalid(f"The description of {name!r} is {len(description)} characters; keep it under "
                      f"{MAX_DESCRIPTION_CHARS}.")
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else float(timeout_s)
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise Invalid(f"The timeout_s of {name!r} is {timeout_s}; give between 0 and {MAX_TIMEOUT_S:g} seconds.")
    problem = schema_problem(parameters)
    if problem is not None:
        raise Invalid(f"The parameters of {name!r} are not usable: {problem}.")
    return ClientTool(name, description, parameters, timeout)


def schema_problem(parameters: dict[str, Any]) -> str | None:
    """Why `parameters` cannot describe a tool's arguments (None when it can): not a
    JSON Schema, or not one of an object."""
    try:
        size = len(json.dumps(parameters))
    except (TypeError, ValueError, RecursionError):
        return "they are not plain JSON"
    if size > MAX_PARAMETERS_CHARS:
        return f"the schema is {size} characters as JSON; keep it under {MAX_PARAMETERS_CHARS}"
    if parameters.get("type") != "object":
        return 'the schema must be of an object: {"type": "object", "properties": {...}}'
    problem = json_schema_problem(parameters)
    return f"not a JSON Schema ({problem})" if problem is not None else None


def json_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a JSON Schema, checked against its metaschema (None when it
    is). A `$schema` naming no metaschema is read as the latest draft."""
    import jsonschema  # only a request that brings a schema pays for it

    outside = _outside_ref(schema)
    if outside is not None:
        return f"its $ref {outside!r} leads outside it; refer only to its own parts (#/...)"
    try:
        validator_of(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    except Exception as exc:  # a `$schema` that is no name at all (a list, an object)
        return f"its $schema cannot be read ({type(exc).__name__})"
    return None


def _outside_ref(schema: object, depth: int = 0) -> str | None:
    """The first `$ref` (or `$dynamicRef`) of `schema` that does not point inside it: the
    daemon fetches no schema, so it could not check a call against it."""
    if depth > 64:
        return None  # json.dumps refused deeper ones before
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and not (isinstance(value, str) and value.startswith("#")):
                return str(value)
            found = _outside_ref(value, depth + 1)
            if found is not None:
                return found
    elif isinstance(schema, list):
        for value in schema:
            found = _outside_ref(value, depth + 1)
            if found is not None:
                return found
    return None


def validator_of(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class for `schema` (its `$schema`'s, else the latest draft's)."""
    import jsonschema

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def arguments_problem(tool: ClientTool, args: dict[str, Any]) -> str | None:
    """Why a call's arguments do not meet the tool's schema (the first reason), None when
    they do. A provider's model is not held to the schema as the local grammar holds it."""
    import jsonschema

    validator = validator_of(tool.parameters)(tool.parameters)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    except Exception as exc:  # a $ref inside it that leads nowhere
        return f"its schema cannot be checked: {str(exc)[:200]}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def unique(tools: list[ClientTool]) -> tuple[ClientTool, ...]:
    """The set, or Invalid when it has too many tools or one name twice."""
    if len(tools) > MAX_CLIENT_TOOLS:
        raise Invalid(f"{len(tools)} tools were given; a conversation takes at most {MAX_CLIENT_TOOLS}.")
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise Invalid(f"The tool name {tool.name!r} is given twice; give each tool its own name.")
        seen.add(tool.name)
    return tuple(tools)
