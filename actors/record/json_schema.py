"""JSON Schemas a client gives (a message's answer_schema, a client tool's parameters):
whether one is a schema the daemon can check against, and what a value does not meet.

The daemon fetches no schema: a `$ref` must point inside the schema it is in. A
`$schema` naming no metaschema is read as the latest draft. jsonschema is imported
only by a request that brings a schema.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 64  # deeper than any JSON a route parses


def problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a JSON Schema the daemon can check against (None when it is)."""
    import jsonschema

    outside = _outside_ref(schema, 0)
    if outside is not None:
        return f"its $ref {outside!r} leads outside it; refer only to its own parts (#/...)"
    try:
        validator_of(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    except Exception as exc:  # a `$schema` that is no name at all (a list, an object)
        return f"its $schema cannot be read ({type(exc).__name__})"
    return None


def mismatch(schema: dict[str, Any], value: object) -> str | None:
    """What `value` does not meet in `schema`, in plain words (the most telling reason,
    and where); None when it meets it all."""
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(validator_of(schema)(schema).iter_errors(value))
    except Exception as exc:  # a $ref inside the schema that leads nowhere
        return f"the schema cannot be checked: {str(exc)[:200]}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"at {where or 'the top'}: {error.message}"


def validator_of(schema: dict[str, Any]) -> Any:
    """The jsonschema validator class for `schema` (its `$schema`'s, else the latest draft's)."""
    import jsonschema

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _outside_ref(schema: object, depth: int) -> str | None:
    """The first `$ref` (or `$dynamicRef`) of `schema` that does not point inside it."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str) and not value.startswith("#"):
                return value
            found = _outside_ref(value, depth + 1)
            if found is not None:
                return found
    elif isinstance(schema, list):
        for value in schema:
            found = _outside_ref(value, depth + 1)
            if found is not None:
                return found
    return None
