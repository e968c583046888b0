"""The bubblewrap (`bwrap`) command line around a command: pure, no I/O.

`bwrap_argv(program, confinement, argv)` is the whole confinement of one command on
Linux. Mounts are applied in order and a later one over a path wins, so the order is
the policy:

1. the whole file system read-only (`--ro-bind / /`), a fresh `/dev` and `/proc`;
2. private folders (`/tmp`, `$HOME/.cache`): an empty tmpfs each, gone with the command;
3. hidden folders (tmpfs) and files (`/dev/null` bound over them): the daemon's data
   folder, the key file, the person's credentials;
4. the workspace, writable or read-only as the mode says (so a workspace under `/tmp`
   is still the real folder);
5. the hidden paths inside the workspace once more, so a key inside it stays hidden.

A workspace inside a hidden folder is the person's explicit choice: it is bound anyway
(step 4 after step 3). Every capability is dropped (a daemon run as root would otherwise
hand the command CAP_SYS_ADMIN, enough to remount `/` writable); the command gets its own
pid namespace (it sees no other process, not the daemon's environment in `/proc`), and
no network namespace of the host's unless the workspace allows the network. No new
session: the command stays in the process group the daemon kills (actors/tools/shell.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

import attrs

# Namespaces every sandboxed command gets; `--unshare-net` is added unless the network is allowed.
# Not uts or cgroup: with every capability dropped the hostname cannot change anyway, and each
# namespace costs about a millisecond of start.
UNSHARE = ("--unshare-pid", "--unshare-ipc")
NULL = "/dev/null"


@attrs.frozen
class Confinement:
    """What one command may see and touch; every path absolute and already resolved
    (the caller resolves links: bwrap mounts over the path it is given)."""

    workspace: PurePosixPath
    writable: bool  # the workspace (ask, full); False in read_only
    network: bool  # the host's network (loopback included); False: a namespace of its own
    private_dirs: tuple[PurePosixPath, ...] = ()  # an empty tmpfs each (/tmp, ~/.cache)
    hidden_dirs: tuple[PurePosixPath, ...] = ()  # an empty tmpfs each: not visible at all
    hidden_files: tuple[PurePosixPath, ...] = ()  # /dev/null over each
    env: tuple[tuple[str, str], ...] = (("TMPDIR", "/tmp"),)


def is_within(path: PurePosixPath, folder: PurePosixPath) -> bool:
    """Whether `path` is `folder` or below it."""
    return path == folder or folder in path.parents


def _depth(path: PurePosixPath) -> int:
    return len(path.parts)


def bwrap_argv(program: str, c: Confinement, argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` under bubblewrap `program` with confinement `c`
    (see the module docstring for the order of the mounts and why)."""
    out = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    out += ["--die-with-parent", "--cap-drop", "ALL", *UNSHARE]
    if not c.network:
        out.append("--unshare-net")
    for folder in sorted(set(c.private_dirs), key=_depth):
        out += ["--tmpfs", str(folder)]
    hidden = [(p, True) for p in set(c.hidden_dirs)] + [(p, False) for p in set(c.hidden_files)]
    hidden.sort(key=lambda h: _depth(h[0]))
    for path, is_dir in hidden:
        out += _hide(path, is_dir)
    ws = str(c.workspace)
    out += ["--bind" if c.writable else "--ro-bind", ws, ws]
    for path, is_dir in hidden:
        if is_within(path, c.workspace) and path != c.workspace:
            out += _hide(path, is_dir)
    for name, value in c.env:
        out += ["--setenv", name, value]
    out += ["--chdir", ws, "--", *argv]
    return out


def _hide(path: PurePosixPath, is_dir: bool) -> list[str]:
    return ["--tmpfs", str(path)] if is_dir else ["--ro-bind", NULL, str(path)]


def seen_as(argv: Sequence[str], path: PurePosixPath) -> str:
    """What a bwrap command line makes of `path` (a reading of the argv for tests and the
    doctor): `tmpfs` (an empty private folder: hidden or private), `hidden` (a file under
    /dev/null), `ro` or `rw`, by the last mount that covers it."""
    state = "ro"
    i = 0
    args = list(argv[: argv.index("--")]) if "--" in argv else list(argv)
    while i < len(args):
        op = args[i]
        if op in ("--bind", "--ro-bind") and i + 2 < len(args):
            src, dest = args[i + 1], PurePosixPath(args[i + 2])
            if is_within(path, dest):
                state = "hidden" if src == NULL else ("rw" if op == "--bind" else "ro")
            i += 3
        elif op == "--tmpfs" and i + 1 < len(args):
            if is_within(path, PurePosixPath(args[i + 1])):
                state = "tmpfs"
            i += 2
        elif op in ("--dev", "--proc", "--chdir", "--cap-drop") and i + 1 < len(args):
            i += 2
        elif op == "--setenv":
            i += 3
        else:
            i += 1
    return state
