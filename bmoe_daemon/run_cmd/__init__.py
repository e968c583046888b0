"""`bmoe-daemon run "PROMPT"`: ask the agent from a terminal or a script (issue 33).

locate.py finds the daemon serving the data folder or starts one for the call,
session.py runs the message over HTTP and SSE (client.py), render.py prints it. Imported
only by that command (cli.py), so `serve` never pays for it; it imports nothing beyond
the standard library, attrs and the command line's own modules (client.py says why), and
jsonschema with --output-schema.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from bmoe_daemon.run_cmd.locate import RunError

USAGE = 2


def run_command(args: argparse.Namespace) -> int:
    """The command's exit status: 0 answered, 1 failed, 2 usage error, 3 stopped or refused."""
    from bmoe_daemon.defaults import default_data_dir
    from bmoe_daemon.run_cmd.locate import is_gguf
    from bmoe_daemon.run_cmd.render import Output
    from bmoe_daemon.run_cmd.session import Ask

    out = Output(json_lines=args.json)
    try:
        schema = _schema(args)
        if args.max_rounds is not None and args.max_rounds < 1:
            raise RunError("--max-rounds takes 1 or more", USAGE)
        budget = _budget(args)
        if not args.prompt.strip():
            raise RunError("the prompt is empty", USAGE)
        route = str(args.model) if args.model is not None and not is_gguf(args.model) else None
        workspace = args.workspace.resolve() if args.workspace is not None else None
        ask = Ask(args.prompt, conversation=args.conversation, workspace=workspace, mode=args.mode,
                  route=route, answer_schema=schema, max_rounds=args.max_rounds, budget=budget,
                  interactive=os.isatty(sys.stdin.fileno()) if sys.stdin is not None else False)
        final = _main(args, ask, out, args.data_dir or default_data_dir())
    except RunError as exc:
        if args.json:
            out.result({"result": None, "end_reason": None, "usage": None, "conversation": None,
                        "error": str(exc)})
        print(f"bmoe-daemon run: {exc}", file=sys.stderr)
        return exc.code
    code = int(final.pop("_code", 0))
    out.result(final)
    return code


def _budget(args: argparse.Namespace) -> dict[str, Any] | None:
    """The message's budget from --max-cost and --max-tokens (actors/record/budget.py), or None."""
    if args.max_cost is None and args.max_tokens is None:
        return None  # the common call: the record's classes are not loaded for it
    from actors.errors import Invalid
    from actors.record.budget import check_budget

    given = {"cost": args.max_cost, "tokens": args.max_tokens}
    try:
        budget = check_budget(given, "the run's budget")
    except Invalid as exc:
        raise RunError(f"--max-cost/--max-tokens: {exc}", USAGE) from None
    return budget.to_json() if budget is not None else None


def _schema(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.output_schema is None:
        return None
    try:
        schema = json.loads(args.output_schema.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read the schema {args.output_schema}: {exc}", USAGE) from None
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except (jsonschema.SchemaError, TypeError, AttributeError) as exc:
        raise RunError(f"{args.output_schema} is not a JSON Schema: {getattr(exc, 'message', exc)}", USAGE) from None
    if not isinstance(schema, dict):
        raise RunError(f"{args.output_schema} is not a JSON Schema object", USAGE)
    return schema


def _main(args: argparse.Namespace, ask: Any, out: Any, data_dir: Any) -> dict[str, Any]:
    from bmoe_daemon.run_cmd import locate
    from bmoe_daemon.run_cmd.client import Client
    from bmoe_daemon.run_cmd.session import Session, exit_code

    found = locate.wait_address(data_dir)
    embedded = None
    if found is not None and args.embedded:
        raise RunError(f"--embedded: the data folder {data_dir} is in use by {found.describe()}; "
                       "leave --embedded out to use it, or pass --data-dir another folder", USAGE)
    if found is not None and locate.is_gguf(args.model):
        raise RunError(f"--model {args.model}: the daemon at {found.address} serves its own model; leave --model "
                       "out, or name a route (local, <provider>/<model>)", USAGE)
    try:
        if found is not None:
            assert found.address is not None
            url = found.address
            key = locate.key_of(args.api_key_file or found.key_file)
        else:
            embedded = locate.Embedded(locate.serve_argv(args))
            url = embedded.start()
            key = locate.key_of(args.api_key_file)
        final = Session(Client(url, key), ask, out).run()
    finally:
        if embedded is not None:
            embedded.stop()
    code = exit_code(final["end_reason"])
    if code == 0 and ask.answer_schema is not None:
        why = _mismatch(final["result"], ask.answer_schema)
        if why is not None:
            final["error"] = f"the answer does not match --output-schema: {why}"
            code = 1
    final["_code"] = code
    return final


def _mismatch(text: str | None, schema: dict[str, Any]) -> str | None:
    from actors.runs.agent.answer_schema import problem

    return problem(text or "", schema)
