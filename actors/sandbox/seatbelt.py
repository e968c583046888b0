"""The macOS confinement: `sandbox-exec -p PROFILE` with a Seatbelt profile. Pure, no I/O.

Written beside the Linux one (actors/sandbox/bwrap.py) and kept to the same policy, but
NOT TESTED: no Mac is at hand where this project is built, and the daemon does not use it
unless it runs on macOS (the README says so). Seatbelt cannot mount, so where bubblewrap
gives an empty `/tmp` and `~/.cache`, this profile lets the command write only in the
workspace and in a scratch folder the caller makes for the one command (its TMPDIR and
XDG_CACHE_HOME) and removes afterwards; hidden paths are denied reads and writes outright
(later rules win in a Seatbelt profile, so the denials come last).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from actors.sandbox.bwrap import Confinement

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

_BASE = """(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow file-read*)
(allow file-write-data (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty"))
(allow file-ioctl (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty"))
(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo")
                   (global-name "com.apple.system.logger"))
(allow ipc-posix-shm-read* ipc-posix-shm-write-data)
"""


def _quote(path: PurePosixPath | str) -> str:
    """A Seatbelt string literal."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def seatbelt_profile(c: Confinement, scratch: PurePosixPath) -> str:
    """The profile for one command: see the module docstring. `scratch` is the
    command's own writable folder (its TMPDIR)."""
    lines = [_BASE]
    writable = [scratch] + ([c.workspace] if c.writable else [])
    lines.append("(allow file-write* " + " ".join(f"(subpath {_quote(p)})" for p in writable) + ")")
    if c.network:
        lines.append("(allow network-outbound)\n(allow network-inbound (local ip))\n(allow system-socket)")
        lines.append('(allow mach-lookup (global-name "com.apple.dnssd.service")'
                     ' (global-name "com.apple.SystemConfiguration.configd"))')
    hidden = [f"(subpath {_quote(p)})" for p in c.hidden_dirs] + [f"(literal {_quote(p)})" for p in c.hidden_files]
    if hidden:
        lines.append("(deny file-read* file-write* " + " ".join(hidden) + ")")
    return "\n".join(lines) + "\n"


def seatbelt_argv(c: Confinement, scratch: PurePosixPath, argv: Sequence[str]) -> list[str]:
    """`sandbox-exec -p PROFILE -- argv` for one command."""
    return [SANDBOX_EXEC, "-p", seatbelt_profile(c, scratch), "--", *argv]
