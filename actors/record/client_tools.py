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
from actors.record import json_schema

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
    problem = json_schema.problem(parameters)
    return f"not a JSON Schema ({problem})" if problem is not None else None


def arguments_problem(tool: ClientTool, args: dict[str, Any]) -> str | None:
    """Why a call's arguments do not meet the tool's schema, None when they do. A
    provider's model is not held to the schema as the local grammar holds it."""
    return json_schema.mismatch(tool.parameters, args)


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
