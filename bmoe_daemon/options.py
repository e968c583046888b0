"""The command line's options: the parser of every command, and `serve`'s options read into
a Config (bmoe_daemon/config.py)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from actors.record.modes import MODES
from actors.sandbox.setting import SETTINGS as SANDBOX_SETTINGS
from bmoe_daemon import __version__
from bmoe_daemon.access import normalize_origin

if TYPE_CHECKING:  # built by `serve` only: its attrs class is not for the other commands to load
    from bmoe_daemon.config import Config
from bmoe_daemon.defaults import (
    DEFAULT_CTX,
    DEFAULT_HELPERS,
    DEFAULT_HOST,
    DEFAULT_IDLE_ACTOR_MINUTES,
    DEFAULT_IDLE_UNLOAD_MINUTES,
    DEFAULT_LIVE_ITEMS,
    DEFAULT_PORT,
    DEFAULT_PROMPT_CACHE_MIB,
    LOG_MAX_BYTES,
    MAX_GPU_LAYERS,
    MAX_HELPER_ROUNDS,
    MAX_HELPERS,
    default_data_dir,
    env_seed,
    read_key_file,
)


def place_options(s: argparse.ArgumentParser) -> argparse._MutuallyExclusiveGroup:
    """--host, --port, --data-dir and the model's group (returned), for serve and doctor."""
    s.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default %(default)s)")
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help="port; 0 picks a free one (default %(default)s)")
    s.add_argument("--data-dir", type=Path, default=None,
                   help="data folder (default: $BMOE_DATA_DIR or the user data folder)")
    m = s.add_mutually_exclusive_group()
    m.add_argument("--model", type=Path, default=None, help="a GGUF file to load (default: the bundled SmolLM2-135M)")
    m.add_argument("--no-model", action="store_true", help="start without a model")
    return m


def serve_options(s: argparse.ArgumentParser) -> None:
    """`serve`'s options (`run` takes them too, for the daemon it may start)."""
    m = place_options(s)
    m.add_argument("--scripted", type=Path, default=None, help=argparse.SUPPRESS)
    # For tests: a catalog file in clients.json's format whose agents (rows with `acp`) are added.
    s.add_argument("--agents-file", type=Path, default=None, help=argparse.SUPPRESS)
    s.add_argument("--ctx-size", type=int, default=DEFAULT_CTX, help="context window in tokens (default %(default)s)")
    s.add_argument(
        "--threads", type=int, default=None,
        help="threads for the local model (default: one less than the cores while it writes, so the daemon "
             "keeps one, and every core while it reads a prompt)",
    )
    s.add_argument(
        "--n-gpu-layers", type=int, default=None, metavar="N",
        help="layers of the local model to put on the GPU: -1 every layer, 0 none (default: every layer when "
             "this llama.cpp build can offload to a GPU, else none)",
    )
    s.add_argument(
        "--prompt-cache-mib", type=int, default=DEFAULT_PROMPT_CACHE_MIB, metavar="MIB",
        help="RAM for the local model's saved prompt caches, one per conversation, so a conversation's next "
             "turn prefills only what is new after others' turns; the least recently used goes first; "
             "0 keeps none (default %(default)s)",
    )
    s.add_argument(
        "--idle-actor-minutes", type=float, default=DEFAULT_IDLE_ACTOR_MINUTES, metavar="M",
        help="a conversation nothing has needed for M minutes (no run, no card waiting) leaves memory until "
             "it is opened again; 0 keeps every one opened (default %(default)s)",
    )
    s.add_argument(
        "--live-items", type=int, default=DEFAULT_LIVE_ITEMS, metavar="N",
        help="items the open conversations may hold in memory together; past it the ones quiet longest leave "
             "memory before their idle minutes (a run or a card keeps one); 0: no bound (default %(default)s)",
    )
    s.add_argument(
        "--idle-unload", type=float, default=DEFAULT_IDLE_UNLOAD_MINUTES, metavar="MINUTES",
        help="let the local model go from memory after MINUTES with no turn, and load it again for the next "
             "(its first answer then waits for the load); 0 keeps it loaded (default %(default)s)",
    )
    s.add_argument(
        "--helpers", type=int, default=DEFAULT_HELPERS, metavar="N",
        help=f"helpers (subagents) that may run at once on the local model, 1 to {MAX_HELPERS}; more wait "
             "for a free place (default %(default)s)",
    )
    s.add_argument(
        "--helper-rounds", type=int, default=None, metavar="N",
        help=f"rounds a new helper may take before it must answer, 1 to {MAX_HELPER_ROUNDS} (default 20); "
             "fewer keep a small local model's helpers short",
    )
    s.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin (scheme://host:port) whose pages may use the API besides the daemon's own; repeatable",
    )
    s.add_argument("--api-key-file", type=Path, default=None,
                   help="a file whose first line is the key clients must send")
    s.add_argument("--mcp-servers-config", type=Path, default=None,
                   help="MCP servers config (default: <data>/mcp.json)")
    s.add_argument("--skills-dir", type=Path, default=None, help="the shipped skills folder to use instead")
    s.add_argument("--chat-only", action="store_true", help="plain chat: no tools, workspaces or tasks")
    s.add_argument(
        "--leading", choices=("auto", "off"), default="auto",
        help="auto: a small local model is led step by step (worked examples, its calls and answers checked, a "
             "run that goes round in circles ended); off: every model works on its own, to compare or for a small "
             "model that does better alone (default %(default)s)",
    )
    s.add_argument("--models-dir", type=Path, action="append", default=[], metavar="DIR",
                   help="a folder of GGUF models to list and offer beside <data>/models and other apps' "
                        "(LM Studio, the Hugging Face cache, Ollama); repeatable")
    s.add_argument(
        "--sandbox", default="auto", choices=list(SANDBOX_SETTINGS),
        help="run the model's commands in an OS sandbox (bubblewrap on Linux): required refuses to start "
             "without one, auto uses one where it can and warns where it cannot, off never does "
             "(default %(default)s)",
    )
    # For tests: the bubblewrap program (a missing one stands for a computer without it).
    s.add_argument("--bwrap", type=Path, default=None, help=argparse.SUPPRESS)
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.add_argument("--log-file", type=Path, default=None, metavar="PATH",
                   help="the log file, rotated at 10 MiB, 5 kept (default: <data>/logs/daemon.log)")
    # For tests: the size the log file rotates at.
    s.add_argument("--log-max-bytes", type=int, default=LOG_MAX_BYTES, help=argparse.SUPPRESS)
    # For tests: every completion of the local model samples from this seed, so a reply
    # does not depend on what the model wrote before it (BMOE_SEED, which tests/conftest.py sets).
    s.add_argument("--seed", type=int, default=env_seed(), help=argparse.SUPPRESS)


def run_options(r: argparse.ArgumentParser) -> None:
    """`run`'s own options, then serve's."""
    r.add_argument("prompt", help="what to ask")
    r.add_argument("--workspace", type=Path, default=None, metavar="DIR",
                   help="the folder the agent works in (added as a workspace when it is not one)")
    r.add_argument("--mode", choices=list(MODES), default=None,
                   help="ask (default: a change waits for your yes on the terminal, or is refused without one), "
                        "read_only or full")
    r.add_argument("--conversation", default=None, metavar="ID", help="go on in this conversation")
    r.add_argument("--json", action="store_true", help="one JSON object a line: the run's events, then the result")
    r.add_argument("--output-schema", type=Path, default=None, metavar="FILE",
                   help="a JSON Schema file the final answer must be JSON of (else exit 1)")
    r.add_argument("--max-rounds", type=int, default=None, metavar="N", help="end the run after N rounds")
    r.add_argument("--max-cost", type=float, default=None, metavar="USD",
                   help="end the run once its answers cost this many US dollars, at the provider's prices "
                        "(end_reason budget, exit 3)")
    r.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help="end the run once its answers used N prompt and completion tokens (end_reason budget, exit 3)")
    r.add_argument("--embedded", action="store_true",
                   help="start a daemon for this call (port 0, this data folder) and stop it after; the default "
                        "when none serves the data folder")
    serve_options(r)
    # `run --model` is a GGUF file for the daemon it starts, or else a route (`local`, `<provider>/<model>`).
    for action in r._actions:
        if action.dest == "model":
            action.help = ("a GGUF file for the daemon this call starts, or the route to use: local or "
                           "<provider>/<model> (default: the daemon's model)")
        if action.dest == "port":
            action.help = "ignored: a daemon this call starts listens on a free port"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bmoe-daemon", description="Runs coding agents for the person at this computer.")
    p.add_argument("--version", action="version", version=f"bmoe-daemon {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    serve_options(sub.add_parser("serve", help="run the daemon in the foreground"))
    run_options(sub.add_parser(
        "run", help="ask the agent something from a terminal or a script, and print the answer",
        description="Send PROMPT to the daemon serving the data folder (found through its lock file), or to "
                    "one started for this call with the serve options given (--embedded, the default when "
                    "none runs), and print the answer as it comes. Exit status: 0 answered, 1 failed, "
                    "2 usage error, 3 stopped or refused (a --max-cost or --max-tokens reached included). "
                    "--model names a route (local, <provider>/<model>) for a daemon that runs, or a GGUF "
                    "for the one this call starts."))
    v = sub.add_parser("service", help="run the daemon as a background service of this user (systemd, launchd)")
    actions = v.add_subparsers(dest="action", required=True)
    # install's own arguments are serve's options, passed through (main's parse_known_args).
    actions.add_parser("install", allow_abbrev=False, usage="bmoe-daemon service install [serve options]",
                       help="install and start it with the serve options given, e.g. --port 8765 --model FILE")
    actions.add_parser("uninstall", help="stop it and remove it")
    actions.add_parser("status", help="whether it runs, its address, version, model and log file")
    actions.add_parser("logs", help="follow its log")
    d = sub.add_parser("doctor", help="check what serve needs (given serve's options), each failure with what to do")
    place_options(d)
    d.add_argument("--ctx-size", type=int, default=DEFAULT_CTX, help="context window in tokens (default %(default)s)")
    d.add_argument("--mcp-servers-config", type=Path, default=None,
                   help="MCP servers config (default: <data>/mcp.json)")
    d.add_argument("--sandbox", default="auto", choices=list(SANDBOX_SETTINGS),
                   help="the sandbox setting serve will have (default %(default)s)")
    d.add_argument("--bwrap", type=Path, default=None, help=argparse.SUPPRESS)
    return p


class OptionError(ValueError):
    """A serve option that cannot be used; the message says which and what to pass."""


def serve_config(args: argparse.Namespace) -> Config:
    """The daemon's Config from `serve`'s parsed options (reading the key file).
    Raises OptionError, in plain words, for a value that cannot be used."""
    from bmoe_daemon.config import Config

    if not 0 <= args.port <= 65535:
        raise OptionError("--port must be between 0 and 65535")
    if args.ctx_size < 512:
        raise OptionError("--ctx-size must be at least 512")
    if args.threads is not None and not 1 <= args.threads <= 256:
        raise OptionError("--threads must be between 1 and 256")
    if args.n_gpu_layers is not None and not -1 <= args.n_gpu_layers <= MAX_GPU_LAYERS:
        raise OptionError("--n-gpu-layers must be -1 (every layer), 0 (none) or a number of layers")
    if args.prompt_cache_mib < 0:
        raise OptionError("--prompt-cache-mib must be 0 or more")
    if args.log_max_bytes < 1:
        raise OptionError("--log-max-bytes must be 1 or more")
    if not 0 <= args.idle_actor_minutes < math.inf:
        raise OptionError("--idle-actor-minutes must be 0 or more minutes")
    if args.live_items < 0:
        raise OptionError("--live-items must be 0 (no bound) or more items")
    if not 0 <= args.idle_unload < math.inf:
        raise OptionError("--idle-unload must be 0 (keep the model loaded) or more minutes")
    if not 1 <= args.helpers <= MAX_HELPERS:
        raise OptionError(f"--helpers must be between 1 and {MAX_HELPERS}")
    if args.helper_rounds is not None and not 1 <= args.helper_rounds <= MAX_HELPER_ROUNDS:
        raise OptionError(f"--helper-rounds must be between 1 and {MAX_HELPER_ROUNDS}")
    origins: list[str] = []
    for raw in args.allow_origin:
        origin = normalize_origin(raw)
        if origin is None:
            raise OptionError(f"--allow-origin takes an origin like http://localhost:5173, not {raw!r}")
        origins.append(origin)
    key = None
    if args.api_key_file is not None:
        try:
            key = read_key_file(args.api_key_file)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise OptionError(f"cannot read the key file {args.api_key_file}: {why}; "
                              "pass --api-key-file a file whose first line is the key") from exc
    return Config(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir or default_data_dir(),
        model=args.model,
        no_model=args.no_model,
        ctx_size=args.ctx_size,
        threads=args.threads,
        n_gpu_layers=args.n_gpu_layers,
        prompt_cache_mib=args.prompt_cache_mib,
        helpers=args.helpers,
        helper_rounds=args.helper_rounds,
        idle_actor_minutes=args.idle_actor_minutes,
        idle_unload_minutes=args.idle_unload,
        live_items=args.live_items,
        allowed_origins=tuple(origins),
        api_key=key,
        api_key_file=args.api_key_file,
        mcp_servers_config=args.mcp_servers_config,
        skills_dir=args.skills_dir,
        chat_only=args.chat_only,
        leading=args.leading,
        log_level=args.log_level,
        scripted=args.scripted,
        agents_file=args.agents_file,
        models_dirs=tuple(args.models_dir),
        log_file=args.log_file,
        log_max_bytes=args.log_max_bytes,
        seed=args.seed,
        sandbox=args.sandbox,
        bwrap=args.bwrap,
    )


