"""The sandbox the model's commands run in: whether this computer has one, what it hides,
and the command line around one command.

`Sandbox.probe(setting, ...)` looks once, at the daemon's start: on Linux it runs
`bwrap` with the namespaces a command gets (`PROBE_ARGS`) and keeps the answer (a
missing binary, or user namespaces the kernel refuses, is "not available" with why and
how to fix it); on macOS it looks for `sandbox-exec`. The setting is the person's:
`required` (the daemon refuses to start without one: bmoe_daemon/startup.py), `auto`
(confined where possible, else unconfined with a warning everywhere the person looks),
`off` (unconfined, their explicit choice).

`wrap()` gives the argv for one command (actors/tools/shell.py runs it in the same
process group, time limit and output cap as an unconfined one). `explain()` reads a
confined command's output for a failure that the confinement caused and says so in words
the model can act on.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import attrs

from actors.sandbox.bwrap import Confinement, bwrap_argv
from actors.sandbox.seatbelt import SANDBOX_EXEC, seatbelt_argv
from actors.sandbox.setting import Setting

Kind = Literal["bwrap", "seatbelt", "none"]
PROBE_TIMEOUT_S = 10.0
PROBE_ARGS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--unshare-net",
              "--cap-drop", "ALL", "--", "true")
WHY_CHARS = 300

# The person's credentials, relative to their home: other programs' keys and tokens. Not
# visible to a command at all (a folder is an empty tmpfs, a file reads empty).
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc", ".git-credentials",
    ".pgpass", ".my.cnf", ".npmrc", ".pypirc", ".gem/credentials", ".cargo/credentials",
    ".cargo/credentials.toml", ".config/gh", ".config/hub", ".config/git/credentials", ".password-store",
    ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium",
    ".terraform.d/credentials.tfrc.json", ".vault-token",
    # other coding agents: their own provider keys and sessions
    ".codex", ".claude", ".claude.json", ".config/claude", ".config/opencode", ".local/share/opencode",
    ".gemini", ".config/github-copilot", ".aider", ".continue", ".cursor", ".pi",
    ".config/bmoe", ".local/share/bmoe",
)
# Sockets that would let a command act outside the sandbox (start a program through the
# user's service manager or a container engine) though the file system is read-only:
# connecting to a socket is not a write.
SYSTEM_SECRETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd")
PRIVATE_HOME = (".cache",)

SANDBOX_NOTE = ("This command ran in the sandbox: writing outside the workspace and the network are "
                "not allowed here.")
NOTE_READ_ONLY = ("This command ran in the sandbox of a read-only conversation: nothing may be written, "
                  "the workspace included, and the network is not allowed here.")
NOTE_OUTSIDE = (" If the command must reach outside, call exec_shell_command again with "
                '"outside_sandbox": true and a "reason": the person is asked first.')
# What a command prints when the confinement stopped it (and not much else does).
DENIED_OUTPUT = re.compile(
    r"Read-only file system|Network is unreachable|Could not resolve host|Temporary failure in name resolution"
    r"|Name or service not known|Failed to resolve|getaddrinfo|No address associated with hostname"
    r"|Connection refused|Operation not permitted|EROFS|ENETUNREACH|EAI_AGAIN",
    re.IGNORECASE,
)


@attrs.frozen
class SandboxStatus:
    """What the daemon found at its start; /health and doctor show it."""

    kind: Kind
    available: bool
    why: str | None = None  # why not available (with how to fix it), or that the person turned it off
    setting: Setting = "auto"

    @property
    def confines(self) -> bool:
        return self.available and self.setting != "off"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "available": self.available, "why": self.why, "setting": self.setting,
                "confined": self.confines}


def probe(setting: Setting = "auto", bwrap: str | None = None, platform: str = sys.platform) -> SandboxStatus:
    """Whether this computer can confine commands (blocking: a process runs, bounded).
    `bwrap`: the program to use (None: `bwrap` on PATH)."""
    if platform == "darwin":
        if os.access(SANDBOX_EXEC, os.X_OK):
            return SandboxStatus("seatbelt", True, None, setting)
        return SandboxStatus("seatbelt", False, f"{SANDBOX_EXEC} is missing", setting)
    if not platform.startswith("linux"):
        return SandboxStatus("none", False, f"no sandbox is known on {platform}", setting)
    program = bwrap or shutil.which("bwrap")
    if program is None or not os.access(program, os.X_OK):
        where = f"{bwrap} is not a program" if bwrap else "bwrap is not installed"
        return SandboxStatus("bwrap", False,
                             f"{where}: install bubblewrap (Debian, Ubuntu: apt install bubblewrap; "
                             "Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap)", setting)
    try:
        done = subprocess.run([program, *PROBE_ARGS], capture_output=True, timeout=PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus("bwrap", False, f"bwrap could not run: {exc}", setting)
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip()[:WHY_CHARS] or f"exit code {done.returncode}"
        return SandboxStatus("bwrap", False,
                             f"bwrap cannot make a sandbox here ({said}): user namespaces are probably off; "
                             "allow them (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu 24.04+ "
                             "kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for bwrap)",
                             setting)
    return SandboxStatus("bwrap", True, None, setting)


def _existing(paths: Iterable[Path]) -> tuple[list[PurePosixPath], list[PurePosixPath]]:
    """(folders, files) among `paths` that exist, each as given and resolved (a link
    and what it leads to both)."""
    dirs: list[PurePosixPath] = []
    files: list[PurePosixPath] = []
    for path in paths:
        for form in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
            try:
                is_dir = form.is_dir()
                exists = is_dir or form.exists()
            except OSError:
                continue
            if exists:
                (dirs if is_dir else files).append(PurePosixPath(form))
    return dirs, files


@attrs.define
class Sandbox:
    """The daemon's sandbox: its status (fixed at start), the paths it hides, and how the
    network setting of a workspace is looked up (set once the workspaces are known)."""

    status: SandboxStatus
    bwrap: str = "bwrap"
    hidden: tuple[Path, ...] = ()  # the data folder, the key file: besides the person's credentials
    home: Path | None = None
    network_of: Callable[[Path], bool] = lambda _: False

    @classmethod
    def start(cls, setting: Setting, *, bwrap: str | None, hidden: Sequence[Path]) -> Sandbox:
        """Probe (blocking) and keep the answer."""
        status = probe(setting, bwrap)
        program = bwrap or shutil.which("bwrap") or "bwrap"
        home = os.environ.get("HOME")
        return cls(status, program, tuple(hidden), Path(home) if home else None)

    def hidden_paths(self) -> list[Path]:
        out = list(self.hidden)
        if self.home is not None:
            out += [self.home / name for name in HOME_SECRETS]
            out.append(Path(f"/run/user/{os.getuid()}"))
        out += [Path(p) for p in SYSTEM_SECRETS]
        return out

    def confinement(self, workspace: Path, mode: str) -> Confinement:
        """What one command in `workspace` under `mode` gets (blocking: looks at the disk)."""
        dirs, files = _existing(self.hidden_paths())
        private = [PurePosixPath("/tmp")]
        if self.home is not None:
            cache_dirs, _ = _existing(self.home / name for name in PRIVATE_HOME)
            private += cache_dirs
        ws = PurePosixPath(os.path.realpath(workspace))
        return Confinement(workspace=ws, writable=mode != "read_only", network=self.network_of(workspace),
                           private_dirs=tuple(private), hidden_dirs=tuple(dirs), hidden_files=tuple(files))

    def wrap(self, argv: Sequence[str], workspace: Path, mode: str, scratch: Path | None = None) -> list[str]:
        """The argv that runs `argv` confined (blocking, briefly: see `confinement`).
        `scratch`: on macOS, the command's own writable folder."""
        c = self.confinement(workspace, mode)
        if self.status.kind == "seatbelt":
            assert scratch is not None
            return seatbelt_argv(c, PurePosixPath(scratch), argv)
        return bwrap_argv(self.bwrap, c, argv)


def explain(output: str, mode: str) -> str | None:
    """The line to add to a confined command's result when its output shows the sandbox
    stopped it (a read-only file system, no network), else None."""
    if DENIED_OUTPUT.search(output) is None:
        return None
    return NOTE_READ_ONLY if mode == "read_only" else SANDBOX_NOTE + NOTE_OUTSIDE
