"""What the daemon takes and checks before it serves, each failure a StartupError whose
one line says what is wrong and what to do: the data folder (made, a folder, writable,
and held by one daemon at a time), the log file, and the listening socket.

The data folder is held with an OS file lock (`fcntl.flock`) on `<data>/daemon.lock`.
The kernel lets go of it when the process ends, however it ends, so a lock file left by a
kill -9 holds nothing and the next start takes it over. The file says who holds the
folder, as JSON `{"pid", "address", "key_file"}` (the address once the socket is bound, null
before; the path of `--api-key-file`, never the key, so `bmoe-daemon run` can send it);
a start that finds the folder held opens the file only to read it, so it writes nothing
in the folder. The file stays when the daemon stops: removing it would race a start
that has opened it but not yet locked it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import logging.handlers
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bmoe_daemon.lockfile import LOCK_FILE, read_holder

if TYPE_CHECKING:  # serve's only: `bmoe-daemon run` reads the lock file here without hypercorn
    import hypercorn.config

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

log = logging.getLogger("bmoe")


class StartupError(Exception):
    """The daemon cannot start; the text says why and what to do."""


def default_log_file(data_dir: Path) -> Path:
    return data_dir / "logs" / "daemon.log"


def as_startup_error(exc: BaseException) -> StartupError | None:
    """`exc` when it is a StartupError, or a group holding only StartupErrors (the first); else None."""
    if isinstance(exc, StartupError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = exc.split(StartupError)
        if matched is not None and rest is None:
            return as_startup_error(matched.exceptions[0])
    return None


# ---- the data folder ----


def make_data_dir(data_dir: Path) -> None:
    """Create the data folder (and its parents) if missing; StartupError when it cannot be one."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise StartupError(f"the data folder {data_dir} is a file, not a folder; "
                           "move the file away or pass --data-dir another folder") from None
    except NotADirectoryError:
        raise StartupError(f"cannot create the data folder {data_dir}: a folder on its path is a file; "
                           "pass --data-dir another folder") from None
    except OSError as exc:
        raise StartupError(f"cannot create the data folder {data_dir}: {exc.strerror}; "
                           "pass --data-dir a folder you can write to") from None


def cannot_write(data_dir: Path, exc: OSError) -> StartupError:
    return StartupError(f"cannot write in the data folder {data_dir}: {exc.strerror}; "
                        "fix its permissions or pass --data-dir a folder you can write to")


class DataDirLock:
    """This process's hold on a data folder; `record` writes the address once bound."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    @classmethod
    def acquire(cls, data_dir: Path) -> DataDirLock:
        """Make the data folder and lock it; StartupError naming the holder when another
        daemon holds it (nothing written then), or when the folder cannot be written."""
        make_data_dir(data_dir)
        path = data_dir / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise cannot_write(data_dir, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(fd)
            os.close(fd)
            raise StartupError(f"the data folder {data_dir} is in use by {holder.describe()}; "
                               "stop that daemon, or pass --data-dir another folder") from None
        except OSError as exc:
            os.close(fd)
            raise cannot_write(data_dir, exc) from None
        lock = cls(fd, path)
        lock.record(None)
        return lock

    def record(self, address: str | None, key_file: Path | None = None) -> None:
        """Write this process's pid, `address` and the key file's path in the lock file."""
        key = str(key_file.resolve()) if key_file is not None else None
        data = json.dumps({"pid": os.getpid(), "address": address, "key_file": key}).encode() + b"\n"
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, data, 0)
        except OSError as exc:
            raise cannot_write(self.path.parent, exc) from None

    def release(self) -> None:
        """Let go of the folder (closing the file drops the lock)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


@contextlib.contextmanager
def hold_data_dir(data_dir: Path) -> Iterator[DataDirLock]:
    lock = DataDirLock.acquire(data_dir)
    try:
        yield lock
    finally:
        lock.release()


# ---- the log file ----


class _PrivateRotatingHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose files only their owner may read (they name workspaces and files)."""

    def _open(self):  # type: ignore[no-untyped-def]
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)  # noqa: SIM115 - the handler owns it


@contextlib.contextmanager
def log_to_file(path: Path, *, max_bytes: int, backups: int) -> Iterator[logging.Handler]:
    """Everything logged goes to `path` too (rotated at `max_bytes`, `backups` old files
    kept), as long as the block runs; StartupError when the file cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = _PrivateRotatingHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    except (FileExistsError, NotADirectoryError):
        raise StartupError(f"cannot write the log file {path}: a folder on its path is a file; "
                           "pass --log-file a file you can write to") from None
    except OSError as exc:
        raise StartupError(f"cannot write the log file {path}: {exc.strerror}; "
                           "pass --log-file a file you can write to") from None
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        handler.close()


# ---- the listening socket ----


def bind_sockets(hconfig: hypercorn.config.Config, host: str, port: int) -> hypercorn.config.Sockets:
    """Bind (not yet listen on) hypercorn's sockets; StartupError saying who has the port
    or what is wrong with the address."""
    try:
        return hconfig.create_sockets()
    except socket.gaierror:
        raise StartupError(f"--host {host} is not an address or a name this computer can resolve; "
                           "pass --host 127.0.0.1 (this computer only) or one of its addresses") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(f"port {port} on {host} is in use by {port_holder(port)}; "
                               "stop it, or pass --port another port (0 picks a free one)") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise StartupError(f"--host {host} is not an address of this computer; "
                               "pass --host 127.0.0.1 (this computer only) or one of its addresses") from None
        if exc.errno == errno.EACCES:
            raise StartupError(f"port {port} needs privileges this user does not have; "
                               "pass --port 1024 or above") from None
        raise StartupError(f"cannot listen on {host} port {port}: {exc.strerror}; "
                           "check --host and --port") from None


def bound_address(sockets: hypercorn.config.Sockets) -> str:
    from hypercorn.utils import repr_socket_addr

    sock = sockets.insecure_sockets[0]
    return f"http://{repr_socket_addr(sock.family, sock.getsockname())}"


def close_sockets(sockets: hypercorn.config.Sockets) -> None:
    for sock in (*sockets.secure_sockets, *sockets.insecure_sockets, *sockets.quic_sockets):
        sock.close()


def port_holder(port: int) -> str:
    """Who listens on TCP `port`, as far as this user can see: a bmoe-daemon (its pid and
    data folder) where /proc tells, else "another program"."""
    pid = _listening_pid(port)
    if pid is None:
        return "another program"
    fds = Path(f"/proc/{pid}/fd")
    try:
        targets = [os.readlink(fds / name) for name in os.listdir(fds)]
    except OSError:
        return f"another program (pid {pid})"
    for target in targets:
        if target.endswith(os.sep + LOCK_FILE):
            return f"bmoe-daemon pid {pid} serving the data folder {Path(target).parent}"
    return f"another program (pid {pid})"


def _listening_pid(port: int) -> int | None:
    """The process with a socket listening on TCP `port` (Linux's /proc); None when unknown."""
    if not sys.platform.startswith("linux"):
        return None
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # local_address is HEXIP:HEXPORT; state 0A is LISTEN; the inode is the tenth field.
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            names = os.listdir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"/proc/{entry.name}/fd/{name}") in inodes:
                    return int(entry.name)
            except OSError:
                continue
    return None
