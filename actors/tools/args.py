"""Reading a tool call's arguments: one set of checks, one wording, for every tool.

A model's arguments are untrusted JSON. Each helper takes the argument or its default,
and refuses anything else with a ToolError that says how to call again. Small models
often write numbers and booleans as strings ("5", "true"); those are accepted.
"""

from __future__ import annotations

import math
from typing import Any

from actors.errors import ToolError


def string(args: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A string argument. Not required: absent, null and "" are None."""
    value = args.get(name)
    if value is None or (value == "" and not required):
        if required:
            raise ToolError(f'The call needs "{name}" (a string). Call the tool again with it.')
        return None
    if not isinstance(value, str):
        raise ToolError(f'"{name}" must be a string. Call the tool again with a string.')
    return value


def whole(args: dict[str, Any], name: str, default: int, *, minimum: int | None = None) -> int:
    """A whole number, at least `minimum` when one is given."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
        raise ToolError(f'"{name}" must be a whole number.')
    if minimum is not None and value < minimum:
        raise ToolError(f'"{name}" must be {minimum} or more (got {int(value)}).')
    return int(value)


def optional_whole(args: dict[str, Any], name: str) -> int | None:
    """A whole number, or None when absent."""
    return None if args.get(name) is None else whole(args, name, 0)


def boolean(args: dict[str, Any], name: str, default: bool) -> bool:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ToolError(f'"{name}" must be true or false.')


def clamped(args: dict[str, Any], name: str, default: int, top: int) -> int:
    """A number held between 1 and `top` (a limit the model may lower, not raise)."""
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ToolError(f'"{name}" must be a number.') from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ToolError(f'"{name}" must be a number.')
    return max(1, min(int(value), top))
