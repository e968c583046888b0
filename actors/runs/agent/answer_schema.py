"""A message's `answer_schema`: the run's final answer is JSON of that schema.

A round that offers no tools is held to it as it is written (the local model's grammar,
a provider's `response_format`). A round that offers tools cannot be (its answer may be
a call), so an answer that ends the run is checked here; one that is not JSON of the
schema gets one more round, without tools and held to the schema, with the error told
to the model. That one round is also the retry of a provider that strayed.
"""

from __future__ import annotations

import json
from typing import Any

# How much of the schema the model is shown in the retry's notice.
SHOWN_SCHEMA_CHARS = 4000

RETRY = ("Your answer must be JSON that matches this JSON schema, and nothing else: {schema}\n"
         "It did not: {why}\nWrite the final answer again as that JSON only.")


def problem(text: str, schema: dict[str, Any]) -> str | None:
    """Why `text` is not JSON of `schema`, in plain words; None when it is."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"the answer is not JSON ({exc.msg} at character {exc.pos})"
    import jsonschema  # a run with a schema pays for it, not the daemon's start

    error = jsonschema.exceptions.best_match(jsonschema.validators.validator_for(schema)(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"at {where or 'the top'}: {error.message}"


def retry_text(schema: dict[str, Any], why: str) -> str:
    """The notice the model reads before the held round."""
    shown = json.dumps(schema, ensure_ascii=False)
    if len(shown) > SHOWN_SCHEMA_CHARS:
        shown = shown[:SHOWN_SCHEMA_CHARS] + "…"
    return RETRY.format(schema=shown, why=why)
