"""The daemon's defaults and what every command reads before it knows which it is: the
options' bounds and defaults, the data folder, the key file. Nothing heavy is imported
here: `bmoe-daemon run` (a client) reads its options through this, and the daemon's
Config (bmoe_daemon/config.py) is built from it."""

from __future__ import annotations

import os
from pathlib import Path

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


def default_data_dir() -> Path:
    env = os.environ.get("BMOE_DATA_DIR")
    if env:
        return Path(env)
    import platformdirs  # its module tree is a few ms; only when no folder is given

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
