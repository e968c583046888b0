"""The request bodies that are not one attrs class as it stands: read by hand
(routes/openai.py's chat completion), a table of optional fields (a conversation's
PATCH), or a class reshaped (a task's schedule, whole or in part)."""

from __future__ import annotations

from actors.model.providers.entries import MAX_PRICE
from actors.record import exchange
from actors.record.budget import MAX_BUDGET_COST, MAX_BUDGET_TOKENS
from actors.record.items import KINDS
from actors.record.modes import MODES
from actors.runs.agent.ledger import MAX_ROUNDS
from actors.scheduling.schedule import Schedule
from bmoe_daemon.bodies import MAX_ANSWER_SCHEMA_CHARS, PATCH_TYPES, NewConversation, SendMessage
from bmoe_daemon.openapi.schemas import Components, Schema, array, attrs_schema, schema_of
from bmoe_daemon.routes.openai import MAX_MESSAGES, MAX_TOOLS, ROLES
from bmoe_daemon.routes.providers import ProviderBody
from bmoe_daemon.routes.tasks import TaskBody


def chat_request(c: Components) -> Schema:
    """POST /v1/chat/completions, as routes/openai.py reads it by hand (llama.cpp's shape)."""
    part = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}
    message = {
        "type": "object", "required": ["role"],
        "properties": {
            "role": {"type": "string", "enum": list(ROLES)},
            "content": {"anyOf": [{"type": "string"}, {"type": "null"}, array(part)]},
            "tool_calls": {"type": ["array", "null"]},
            "tool_call_id": {},
        },
    }
    tool = {"type": "object", "required": ["function"], "properties": {
        "type": {"const": "function"},
        "function": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "minLength": 1}, "description": {},
            "parameters": {"type": ["object", "null"]},
        }},
    }}
    return {
        "type": "object", "required": ["messages"],
        "properties": {
            "messages": {"type": "array", "items": message, "minItems": 1, "maxItems": MAX_MESSAGES},
            "tools": {"type": ["array", "null"], "items": tool, "maxItems": MAX_TOOLS},
            "tool_choice": {"anyOf": [
                {"type": "null"}, {"type": "string", "enum": ["auto", "none", "required"]},
                {"type": "object", "required": ["function"], "properties": {"function": {"type": "object"}}},
            ]},
            "stream": {"type": ["boolean", "null"]},
            "stream_options": {"type": ["object", "null"]},
            "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1 << 20},
            "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1 << 20},
            "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
            "parallel_tool_calls": {"type": ["boolean", "null"]},
        },
    }


def budget(whose: str) -> Schema:
    """A budget as a body gives it (actors/record/budget.py's check_budget)."""
    return {"anyOf": [{"type": "object", "additionalProperties": False, "properties": {
        "tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_BUDGET_TOKENS,
                   "description": "prompt and completion tokens"},
        "cost": {"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": MAX_BUDGET_COST,
                 "description": "US dollars, at the provider's prices"}}}, {"type": "null"}],
        "description": f"What {whose} may spend before its run ends with end_reason `budget`; null: no limit."}


def new_conversation(c: Components) -> Schema:
    """POST /api/conversations: NewConversation, its budget's shape said."""
    ref = c.ref(NewConversation)
    c.schemas[NewConversation.__name__]["properties"]["budget"] = budget("the conversation's answers, all told,")
    return ref


def provider_body(c: Components) -> Schema:
    """POST /api/providers, PUT: ProviderBody, its prices' shape said."""
    ref = c.ref(ProviderBody)
    price = {"type": "number", "minimum": 0, "maximum": MAX_PRICE}
    c.schemas[ProviderBody.__name__]["properties"]["prices"] = {"anyOf": [{
        "type": "object", "additionalProperties": False, "required": ["input", "output"],
        "properties": {"input": price, "output": price, "cached": {"anyOf": [price, {"type": "null"}]}}},
        {"type": "null"}],
        "description": "US dollars per million tokens: input (prompt), output (completion), cached (prompt tokens "
                       "served from its cache; null: the input price). Null or absent: no prices, no cost."}
    return ref


def message_body(c: Components) -> Schema:
    """POST .../messages: SendMessage (a named schema), with the bounds the route checks by hand."""
    ref = c.ref(SendMessage)
    props = c.schemas[SendMessage.__name__]["properties"]
    props["budget"] = budget("this run")
    props["max_rounds"] = {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_ROUNDS,
                           "description": "end the run after this many rounds with the model (max_rounds)"}
    props["answer_schema"] = {
        "type": ["object", "null"],
        "description": "a JSON Schema the final answer is JSON of: the local model's grammar holds a round "
                       "without tools to it, a provider is asked for it; an answer that ends the run and "
                       f"does not match gets one more round without tools (at most {MAX_ANSWER_SCHEMA_CHARS} "
                       "characters as JSON; 400 when it is not a JSON Schema)",
    }
    return ref


def patch_body(c: Components) -> Schema:
    """PATCH /api/conversations/<id>: the fields bodies.PATCH_TYPES takes, each optional."""
    props = {k: schema_of(t, c) for k, t in PATCH_TYPES.items()}
    props["budget"] = budget("the conversation's answers, all told,")
    return {"type": "object", "properties": props}


def task_change(c: Components) -> Schema:
    """PUT /api/tasks/<id>: any of TaskBody's fields (the others are kept); no other."""
    full = attrs_schema(TaskBody, c, closed=True)
    full["properties"]["schedule"] = c.ref(Schedule)
    full["properties"]["budget"] = budget("each run of the task")
    return {key: value for key, value in full.items() if key != "required"}


def task_body(c: Components) -> Schema:
    full = attrs_schema(TaskBody, c)
    full["properties"]["schedule"] = c.ref(Schedule)
    full["properties"]["budget"] = budget("each run of the task")
    return full


def tool_result(c: Components) -> Schema:
    """POST .../tool_result, read by hand (bodies.tool_result): the item and exactly one
    of `result` (any JSON; text as it is, the rest as its JSON) and `error`."""
    return {
        "type": "object", "required": ["item"],
        "properties": {"item": {"type": "string", "minLength": 1}, "result": {},
                       "error": {"type": "string", "minLength": 1}},
        "oneOf": [{"required": ["result"], "not": {"required": ["error"]}},
                  {"required": ["error"], "not": {"required": ["result"]}}],
    }
def conversation_file(c: Components) -> Schema:
    """POST /api/conversations/import: a file GET .../export gave (actors/record/exchange.py)."""
    return {"type": "object", "required": ["format", "version", "conversation", "items"], "properties": {
        "format": {"const": exchange.FORMAT}, "version": {"const": exchange.VERSION},
        "exported": {"type": "number"},
        "conversation": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": exchange.MAX_TITLE_CHARS}, "mode": {"enum": list(MODES)},
            "created": {"type": "number"}, "updated": {"type": "number"}}},
        "items": {"type": "array", "maxItems": exchange.MAX_ITEMS, "items": {
            "type": "object", "required": ["id", "kind"],
            "properties": {"id": {"type": "string", "minLength": 1}, "kind": {"enum": list(KINDS)}}}}}}
