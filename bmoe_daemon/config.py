"""The daemon's settings, from the command line and the environment (their defaults:
bmoe_daemon/defaults.py)."""

from __future__ import annotations

from pathlib import Path

import attrs

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
    default_data_dir,
)


@attrs.frozen
class Config:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    data_dir: Path = attrs.field(factory=lambda: default_data_dir())
    model: Path | None = None
    no_model: bool = False
    ctx_size: int = DEFAULT_CTX
    threads: int | None = None  # None: default_threads()
    n_gpu_layers: int | None = None  # None: every layer when llama.cpp can offload, else none
    prompt_cache_mib: int = DEFAULT_PROMPT_CACHE_MIB  # 0: no conversation keeps its cache
    helpers: int = DEFAULT_HELPERS  # 1..MAX_HELPERS
    helper_rounds: int | None = None  # 1..MAX_HELPER_ROUNDS; None: helpers.HELPER_ROUNDS
    idle_actor_minutes: float = DEFAULT_IDLE_ACTOR_MINUTES  # 0: a conversation's actor stays live for good
    live_items: int = DEFAULT_LIVE_ITEMS  # 0: no bound but the idle minutes
    idle_unload_minutes: float = DEFAULT_IDLE_UNLOAD_MINUTES  # 0: the model stays loaded for good
    allowed_origins: tuple[str, ...] = ()  # normalised by access.normalize_origin
    api_key: str | None = attrs.field(default=None, repr=False)
    api_key_file: Path | None = None  # where the key was read: hidden from the model's commands
    mcp_servers_config: Path | None = None
    skills_dir: Path | None = None
    chat_only: bool = False
    leading: str = "auto"  # auto: a small local model is led (actors/runs/agent/small/leader.py); off: none is
    log_level: str = "info"
    scripted: Path | None = None
    agents_file: Path | None = None  # tests: more ACP agents, in clients.json's format
    log_file: Path | None = None  # None: <data>/logs/daemon.log
    log_max_bytes: int = LOG_MAX_BYTES  # tests lower it (the hidden --log-max-bytes)
    models_dirs: tuple[Path, ...] = ()  # more folders GET /api/models looks in
    # The model's commands in an OS sandbox (actors/sandbox/): required, auto (where one can be had), off.
    sandbox: str = "auto"
    bwrap: Path | None = None  # tests: the bubblewrap program to use (None: bwrap on PATH)
    seed: int | None = None  # tests: the local model's sampling seed, each completion (the hidden --seed)
