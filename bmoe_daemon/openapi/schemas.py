"""JSON Schema 2020-12 from Python types: the attrs classes the routes structure, and the
plain types, Literals, unions and containers of their fields (`schema_of`); the named
schemas a document refers to (`Components`); and the two helpers the answers are
written with (`shape`, `array`)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

Schema = dict[str, Any]

_PRIMITIVES: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                                  type(None): "null"}


class Components:
    """The named schemas a document refers to: one per attrs class met on the way."""

    def __init__(self) -> None:
        self.schemas: dict[str, Schema] = {}

    def ref(self, cls: type, *, answer: bool = False) -> Schema:
        """A `$ref` to `cls`'s schema, added on first use. `answer`: the class as the
        daemon writes it (every field present), not as a client may send it."""
        name = cls.__name__ + ("Answer" if answer else "")
        if name not in self.schemas:
            self.schemas[name] = {}  # taken first, so a class that holds itself ends
            self.schemas[name] = attrs_schema(cls, self, answer=answer)
        return {"$ref": f"#/components/schemas/{name}"}


def _json_value(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def attrs_schema(cls: type, components: Components, *, answer: bool = False, closed: bool = False) -> Schema:
    """The JSON Schema of an attrs class: a property per field, required where the field
    has no default (for an `answer`, every field), the default where it is a plain
    value. Other properties are allowed unless `closed` (the bodies' converter ignores
    the keys it does not know)."""
    hints = field_types(cls)
    props: dict[str, Schema] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        prop = schema_of(hints[field.name], components, answer=answer)
        if field.default is attrs.NOTHING or answer:
            required.append(field.name)
        elif _json_value(field.default):
            prop = {**prop, "default": field.default}
        props[field.name] = prop
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


def field_types(cls: type) -> dict[str, Any]:
    """The class's field types, resolved (its module writes them as strings)."""
    return get_type_hints(cls, vars(sys.modules[cls.__module__]))


def schema_of(kind: Any, components: Components, *, answer: bool = False) -> Schema:
    """JSON Schema 2020-12 for a type as the routes' converter reads it: str, int, float
    (which takes an integer too), bool, None, Any, Literal, list/tuple, dict, unions and
    attrs classes (by reference). Raises TypeError for a type it does not know, so a
    body field of a new kind cannot be described wrongly in silence."""
    if kind is Any:
        return {}
    if kind in _PRIMITIVES:
        return {"type": _PRIMITIVES[kind]}
    origin = get_origin(kind)
    args = get_args(kind)
    if origin is Literal:
        values = list(args)
        kinds = sorted({_PRIMITIVES[type(v)] for v in values})
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    if origin in (Union, types.UnionType):
        parts = [schema_of(a, components, answer=answer) for a in args]
        return _merge_union(parts)
    if origin in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "prefixItems": [schema_of(a, components, answer=answer) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        inner = args[0] if args else Any
        items = schema_of(inner, components, answer=answer)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict:
        value = schema_of(args[1], components, answer=answer) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
    if isinstance(kind, type) and attrs.has(kind):
        return components.ref(kind, answer=answer)
    raise TypeError(f"no JSON Schema for {kind!r}")


def _merge_union(parts: list[Schema]) -> Schema:
    """`X | None` and unions of plain types as one `type` list (enums merged, null
    added to them); anything else as anyOf."""
    plain = all(set(p) <= {"type", "enum"} and "type" in p for p in parts)
    if not plain:
        return {"anyOf": parts}
    kinds: list[str] = []
    for p in parts:
        for k in p["type"] if isinstance(p["type"], list) else [p["type"]]:
            if k not in kinds:
                kinds.append(k)
    enums = [p for p in parts if "enum" in p]
    if enums and len(enums) != len([p for p in parts if p["type"] != "null"]):
        return {"anyOf": parts}  # an enum beside an open type of the same kind
    out: Schema = {"type": kinds[0] if len(kinds) == 1 else kinds}
    if enums:
        out["enum"] = [v for p in enums for v in p["enum"]] + ([None] if "null" in kinds else [])
    return out


def shape(components: Components, fields: Mapping[str, Any], *, optional: Iterable[str] = ()) -> Schema:
    """An answer's object from field names and Python types (each through schema_of):
    every field present but those named `optional`; other keys allowed."""
    opt = set(optional)
    props = {name: (kind if isinstance(kind, dict) else schema_of(kind, components)) for name, kind in fields.items()}
    return {"type": "object", "properties": props, "required": [n for n in fields if n not in opt]}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


