"""Request bodies, checked strictly with one cattrs converter.

Strict means a string field takes only a JSON string (cattrs would otherwise turn
5 into "5"), and an unknown enum value, a wrong type or a missing field is a
`BadRequest` whose text names the field.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs

from actors.errors import Invalid
from actors.record import client_tools, json_schema
from actors.record.client_tools import ClientTool
from actors.record.modes import Mode
from bmoe_daemon.errors import BadRequest

T = TypeVar("T")

MAX_IMAGES = 8
MAX_TEXT_CHARS = 1_000_000
MAX_ANSWER_SCHEMA_CHARS = 64 * 1024

_conv = cattrs.Converter(forbid_extra_keys=False)


def _strict(kind: type) -> Any:
    def hook(value: Any, _: Any) -> Any:
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


for _kind in (str, int, float, bool):
    _conv.register_structure_hook(_kind, _strict(_kind))


def _list_hook(value: Any, kind: Any) -> list[Any]:
    # cattrs would build a list from any iterable: "abc" -> ["a", "b", "c"], {} -> [].
    if not isinstance(value, list):
        raise TypeError(f"expected an array, got {type(value).__name__}")
    (inner,) = get_args(kind) or (Any,)
    return [_conv.structure(v, inner) for v in value]


def _is_list(kind: object) -> bool:
    origin: object = get_origin(kind)
    return origin is list


_conv.register_structure_hook_func(_is_list, _list_hook)


def parse_json(raw: str | bytes) -> dict[str, Any]:
    """The body as a JSON object, or BadRequest."""
    if not raw.strip():
        raise BadRequest("The request needs a JSON object body.")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"The body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise BadRequest("The body nests too deeply to read; send plain JSON objects.") from None
    if not isinstance(data, dict):
        raise BadRequest("The body must be a JSON object.")
    return data


def structure(data: dict[str, Any], cls: type[T]) -> T:
    try:
        return _conv.structure(data, cls)
    except Exception as exc:  # cattrs raises ClassValidationError groups
        if isinstance(exc, cattrs.BaseValidationError):
            reasons = cattrs.transform_error(exc, path="body")
            raise BadRequest("Invalid request: " + "; ".join(reasons) + ".") from None
        raise BadRequest(f"Invalid request: {exc}.") from None


@attrs.frozen
class NewWorkspace:
    path: str
    name: str | None = None
    network: bool | None = None  # commands in the sandbox may use the network


@attrs.frozen
class WorkspaceChange:
    name: str | None = None
    network: bool | None = None
    memory_in_read_only: bool | None = None


@attrs.frozen
class MemoryChange:
    text: str | None = None
    tags: list[str] | None = None


@attrs.frozen
class SeedItem:
    kind: Literal["user", "assistant"]
    text: str


MAX_SEED_ITEMS = 2000  # messages a new conversation may start with


@attrs.frozen
class ClientToolBody:
    """A tool the client brings: the model calls it, the client carries the call out."""

    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema of an object: the call's arguments
    timeout_s: float | None = None  # how long a call waits for the client's result (default 120 s, at most 1800)


@attrs.frozen
class NewConversation:
    workspace: str | None = None
    mode: Mode = "ask"
    route: str = "local"
    agent: str = "builtin"
    title: str | None = None
    items: list[SeedItem] | None = None
    # {tokens, cost}: what its answers may spend in all (actors/record/budget.py); null: no limit
    budget: dict[str, Any] | None = None
    tools: list[ClientToolBody] | None = None  # the client's tools (at most 32)
    workspace_tools: bool = True  # false: none of the daemon's own tools, only the client's
    mcp_tools: bool = False  # with workspace_tools false: the MCP tools too


@attrs.frozen
class ToolsBody:
    tools: list[ClientToolBody]


def client_tool_set(tools: list[ClientToolBody] | None) -> tuple[ClientTool, ...]:
    """The client's tools, each checked (actors/record/client_tools.py); BadRequest
    naming what is wrong (too many, a name twice, a schema that is not an object's)."""
    try:
        return client_tools.unique([client_tools.checked(t.name, t.description, t.parameters, t.timeout_s)
                                    for t in tools or ()])
    except Invalid as exc:
        raise BadRequest(str(exc)) from None


def tool_result(data: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """POST .../tool_result: (item, result as text, error), exactly one of the last two
    given; BadRequest otherwise. A result that is not text is kept as its JSON."""
    item = data.get("item")
    if not isinstance(item, str) or not item:
        raise BadRequest("Invalid request: body.item must be the id of the call's card (a string).")
    has_result, has_error = "result" in data, "error" in data
    if has_result == has_error:
        raise BadRequest("Give exactly one of `result` (what the tool gave) and `error` (why it could not run).")
    if has_error:
        error = data["error"]
        if not isinstance(error, str) or not error.strip():
            raise BadRequest("Invalid request: body.error must be a non-empty string saying why the tool failed.")
        return item, None, error
    result = data["result"]
    return item, result if isinstance(result, str) else json.dumps(result, ensure_ascii=False), None


@attrs.frozen
class SendMessage:
    text: str
    think: bool | None = None
    images: list[str] | None = None
    plan: bool = False
    goal: str | None = None
    verify: bool = True
    # The final answer is JSON of this schema (JSON Schema; the local model's grammar
    # holds it, a provider's response_format asks for it): bodies.check_answer_schema.
    answer_schema: dict[str, Any] | None = None
    max_rounds: int | None = None  # fewer rounds than a message's MAX_ROUNDS
    unattended: bool = False  # nobody is at the screen: every approval is answered no at once (a task's rule)
    budget: dict[str, Any] | None = None  # {tokens, cost}: what this run may spend (actors/record/budget.py)


@attrs.frozen
class EditMessage:
    item: str
    text: str
    think: bool | None = None


@attrs.frozen
class Rewind:
    item: str
    files: bool = False
    conversation: bool = False
    force: bool = False


@attrs.frozen
class Fork:
    item: str


def _text_or_texts(value: Any, _: Any) -> str | list[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise TypeError(f"expected a string or an array of strings, got {type(value).__name__}")


_conv.register_structure_hook(str | list[str], _text_or_texts)


@attrs.frozen
class Answer:
    item: str
    answer: str | list[str]


@attrs.frozen
class NewRule:
    kind: Literal["command", "path"]
    text: str
    exact: bool = False  # this one file / this one command (else a folder / leading words)


@attrs.frozen
class PickedRule:
    """One of a card's offered `rules`, as the person picked it."""

    kind: Literal["command", "path"]
    text: str
    exact: bool = False


@attrs.frozen
class Approval:
    item: str
    decision: Literal["approve", "approve_always", "deny"]
    # with a deny (a plan's or a call's): what the model reads; actors/record/cards.py bounds it
    feedback: str | None = None
    # with approve_always: which of the card's `rules` to keep (else its narrowest, `rule`)
    rule: PickedRule | None = None


PATCH_TYPES: dict[str, Any] = {
    "title": str,
    "mode": Mode,
    "route": str,
    "workspace": str | None,
    "agent": str,
    "plan_mode": bool,
    "goal": str | None,
    "verify": bool,
    "budget": dict[str, Any] | None,  # checked by actors/record/budget.check_budget; null removes it
}


def patch_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The fields a PATCH sets (absent means unchanged; `workspace: null` removes it)."""
    out: dict[str, Any] = {}
    for key, kind in PATCH_TYPES.items():
        if key not in data:
            continue
        try:
            out[key] = _conv.structure(data[key], kind)
        except Exception:
            raise BadRequest(f"Invalid request: body.{key} has the wrong type or value.") from None
    return out


def check_route(route: str) -> None:
    if route == "local":
        return
    provider, _, model = route.partition("/")
    if not provider or not model:
        raise BadRequest("route is 'local' or '<provider>/<model>'.")


def check_answer_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A message's `answer_schema` as it is, or BadRequest when it is too long or not a
    JSON Schema (checked against its own metaschema)."""
    if schema is None:
        return None
    if len(json.dumps(schema)) > MAX_ANSWER_SCHEMA_CHARS:
        raise BadRequest(f"answer_schema is longer than {MAX_ANSWER_SCHEMA_CHARS} characters as JSON.")
    problem = json_schema.problem(schema)
    if problem is not None:
        raise BadRequest(f"answer_schema is not a JSON Schema: {problem}")
    return schema


def check_images(images: list[str] | None) -> tuple[str, ...] | None:
    if not images:
        return None
    if len(images) > MAX_IMAGES:
        raise BadRequest(f"At most {MAX_IMAGES} images go with one message.")
    for img in images:
        if not img.startswith("data:image/") or ";base64," not in img:
            raise BadRequest("Each image is a data URL: data:image/...;base64,...")
    return tuple(images)
