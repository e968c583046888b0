"""The daemon's settings, from the command line and the environment."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import platformdirs

from actors.fs.atomic import read_own_file

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_CTX = 8192
MAX_GPU_LAYERS = 100_000  # --n-gpu-layers: -1 is every layer, as llama.cpp takes it
# RAM for the local model's saved prompt caches, one per conversation (the backend's
# own default, actors/model/backends/prompt_cache.py, is the same 1 GiB).
DEFAULT_PROMPT_CACHE_MIB = 1024
# Helpers (subagents, actors/runs/agent/run_tools/helpers.py) running at once on the local model; more wait.
DEFAULT_HELPERS = 2
MAX_HELPERS = 16
# The rounds a new helper may take before it must answer (--helper-rounds; None: the run's own
# HELPER_ROUNDS, actors/runs/agent/run_tools/helpers.py).
MAX_HELPER_ROUNDS = 100
# The log file (<data>/logs/daemon.log unless --log-file) rotates at this size, keeping this many old files.
LOG_MAX_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 5

DEFAULT_IDLE_ACTOR_MINUTES = 10.0
# Items the live conversations may hold in memory together (about 2-3 KB each in Python)
# before the quietest go to sleep sooner than their idle minutes.
DEFAULT_LIVE_ITEMS = 20_000
# The local model is let go after this many minutes with no turn, and loaded again for the next.
DEFAULT_IDLE_UNLOAD_MINUTES = 10.0


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


def default_data_dir() -> Path:
    env = os.environ.get("BMOE_DATA_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("bmoe", appauthor=False))


def env_seed() -> int | None:
    """BMOE_SEED, the local model's sampling seed for tests (tests/conftest.py sets it), or None."""
    value = os.environ.get("BMOE_SEED", "").strip()
    return int(value) if value else None


MAX_KEY_FILE_BYTES = 64 * 1024


def read_key_file(path: Path) -> str:
    """The key: the file's first line, stripped. Raises ValueError when empty."""
    key = read_own_file(path, MAX_KEY_FILE_BYTES).decode("utf-8").strip().splitlines()
    if not key or not key[0].strip():
        raise ValueError(f"{path} holds no key")
    return key[0].strip()
