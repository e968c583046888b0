"""`bmoe-daemon service install|uninstall|status|logs`: the daemon as a background
service of this user, a systemd user unit on Linux or a launchd agent on macOS.

install checks the serve options as `serve` would, asks the service manager whether it
can take a service at all, and only then writes anything: the unit (or plist), the
logs folder; when the manager then refuses to start it, everything written is taken
back. No key is ever written into the service file: `--api-key-file` passes a path.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import NoReturn

from bmoe_daemon.defaults import DEFAULT_HOST, DEFAULT_PORT, default_data_dir
from bmoe_daemon.service import units

UNIT_NAME = "bmoe-daemon"
LABEL = "com.bmoe.daemon"
LOG_FILE = Path("logs") / "daemon.log"  # under the data folder, unless --log-file says otherwise
OUTPUT_FILE = Path("logs") / "service-output.log"  # the service's stdout and stderr
LOG_LINES = 100  # `service logs` shows this many earlier lines, then follows
MANAGER_TIMEOUT_S = 60
HEALTH_TIMEOUT_S = 3
EXIT_REFUSED = 1  # the service manager is missing or refused
EXIT_NOT_RUNNING = 3  # status: installed but not running, or not installed (as LSB's status)

_RUN_BY_HAND = "run the daemon by hand instead: bmoe-daemon serve {options}"


class ServiceError(Exception):
    """What went wrong, in plain words that say what to do instead."""


def _program() -> list[str]:
    """How the service starts this daemon: the `bmoe-daemon` installed beside this
    interpreter, else this interpreter with `-m bmoe_daemon`."""
    python = Path(os.path.abspath(sys.executable))
    script = python.parent / "bmoe-daemon"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "bmoe_daemon"]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Runs a service manager's command; a missing program is exit 127, as in a shell."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=MANAGER_TIMEOUT_S, check=False)
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} did not answer in {MANAGER_TIMEOUT_S} s")


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").splitlines()[0]


class Manager:
    """A service manager: where its file goes, how it is written, and its commands."""

    name = ""
    program = ""
    advice = ""

    def path(self, home: Path) -> Path:
        raise NotImplementedError

    def render(self, argv: list[str], working_directory: str, output: str) -> str:
        raise NotImplementedError

    def read(self, text: str) -> tuple[list[str], str]:
        """The command line and working folder a file of this manager's holds."""
        raise NotImplementedError

    def probe(self) -> list[str]:
        """A command that succeeds when the manager can take a service, changing nothing."""
        raise NotImplementedError

    def start(self, path: Path, replacing: bool) -> list[list[str]]:
        raise NotImplementedError

    def stop(self) -> list[list[str]]:
        raise NotImplementedError

    def forget(self) -> list[list[str]]:
        """Commands after its file is gone, so the manager forgets it."""
        return []

    def state(self) -> tuple[bool, str]:
        """Whether it runs, and the manager's word for its state."""
        raise NotImplementedError

    def refused(self, what: str, said: str, options: str) -> ServiceError:
        if said.endswith("command not found"):
            why = f"there is no {self.program} here, so no {self.name} to run a service"
        else:
            why = f"{self.name} refused to {what}: {said}"
        return ServiceError(f"{why}. {self.advice} Or {_RUN_BY_HAND.format(options=options)}".rstrip())


class Systemd(Manager):
    name = "systemd"
    program = "systemctl"
    advice = ("A systemd user service needs a user session (log in, or `loginctl enable-linger $USER` "
              "to keep one without logging in); inside a container there is usually none.")

    def path(self, home: Path) -> Path:
        return home / ".config" / "systemd" / "user" / f"{UNIT_NAME}.service"

    def render(self, argv: list[str], working_directory: str, output: str) -> str:
        return units.systemd_unit(argv, working_directory, output)

    def read(self, text: str) -> tuple[list[str], str]:
        settings = units.unit_settings(text)
        folder = settings.get("WorkingDirectory", "/").replace("%%", "%").replace("$$", "$")
        return units.exec_start_words(settings.get("ExecStart", "")), folder

    def probe(self) -> list[str]:
        return ["systemctl", "--user", "show-environment"]

    def start(self, path: Path, replacing: bool) -> list[list[str]]:
        steps = [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]]
        if replacing:  # enable --now leaves a running one on its old options
            steps.append(["systemctl", "--user", "restart", UNIT_NAME])
        return steps

    def stop(self) -> list[list[str]]:
        return [["systemctl", "--user", "disable", "--now", UNIT_NAME]]

    def forget(self) -> list[list[str]]:
        return [["systemctl", "--user", "daemon-reload"]]

    def state(self) -> tuple[bool, str]:
        done = _run(["systemctl", "--user", "is-active", UNIT_NAME])
        word = done.stdout.strip() or _said(done)
        return done.returncode == 0 and word == "active", word


class Launchd(Manager):
    name = "launchd"
    program = "launchctl"
    advice = "A launchd agent needs the person's own login session (gui/UID), not an ssh or root shell."

    def __init__(self) -> None:
        self.domain = f"gui/{os.getuid()}"

    def path(self, home: Path) -> Path:
        return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"

    def render(self, argv: list[str], working_directory: str, output: str) -> str:
        return units.launchd_plist(LABEL, argv, working_directory, output)

    def read(self, text: str) -> tuple[list[str], str]:
        import plistlib

        plist = plistlib.loads(text.encode("utf-8"))
        return [str(w) for w in plist.get("ProgramArguments", [])], str(plist.get("WorkingDirectory", "/"))

    def probe(self) -> list[str]:
        return ["launchctl", "print", self.domain]

    def start(self, path: Path, replacing: bool) -> list[list[str]]:
        steps = [["launchctl", "enable", f"{self.domain}/{LABEL}"],
                 ["launchctl", "bootstrap", self.domain, str(path)]]
        if replacing:
            steps.insert(0, ["launchctl", "bootout", f"{self.domain}/{LABEL}"])
        return steps

    def stop(self) -> list[list[str]]:
        return [["launchctl", "bootout", f"{self.domain}/{LABEL}"]]

    def state(self) -> tuple[bool, str]:
        done = _run(["launchctl", "print", f"{self.domain}/{LABEL}"])
        if done.returncode != 0:
            return False, "not loaded"
        for line in done.stdout.splitlines():
            key, _, value = line.strip().partition(" = ")
            if key == "state":
                return value == "running", value
        return False, "loaded"


def manager_for(platform: str = sys.platform) -> Manager:
    if platform == "darwin":
        return Launchd()
    if platform.startswith("linux"):
        return Systemd()
    raise ServiceError(f"bmoe-daemon can be installed as a service on Linux (systemd) and macOS (launchd), "
                       f"not on {platform}. {_RUN_BY_HAND.format(options='[options]')}")


def _serve_args(options: list[str]) -> argparse.Namespace:
    """`serve`'s parsed options; a bad one ends the program as `serve` would (exit 2)."""
    from bmoe_daemon.options import OptionError, parser, serve_config

    args = parser().parse_args(["serve", *options])
    try:
        serve_config(args)
    except OptionError as exc:
        print(f"bmoe-daemon: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    return args


def _described(argv: list[str], folder: str) -> tuple[argparse.Namespace, Path]:
    """The serve options in a service's command line, and its data folder."""
    from bmoe_daemon.options import parser

    options = argv[argv.index("serve") + 1:] if "serve" in argv else []
    args = parser().parse_args(["serve", *options])
    return args, Path(folder) / (args.data_dir or default_data_dir())


def _log_file(args: argparse.Namespace, folder: str, data: Path) -> Path:
    given = getattr(args, "log_file", None)  # --log-file, where this daemon has it
    return Path(folder) / given if given else data / LOG_FILE


def install(options: list[str], manager: Manager, home: Path) -> str:
    """Installs and starts the service with `options`; returns what to tell the person.
    Raises ServiceError, having changed nothing, when the manager is missing or refuses."""
    args = _serve_args(options)
    shown = " ".join(options)
    if args.data_dir is None:  # the folder this install would use, whatever the service's environment
        options = [*options, "--data-dir", str(default_data_dir())]
    cwd = os.getcwd()
    data = Path(cwd) / (args.data_dir or default_data_dir())
    argv = [*_program(), "serve", *options]
    try:
        text = manager.render(argv, cwd, str(data / OUTPUT_FILE))
    except units.UnitError as exc:
        raise ServiceError(f"{exc}. {_RUN_BY_HAND.format(options=shown)}") from exc
    probe = _run(manager.probe())
    if probe.returncode != 0:
        raise manager.refused("take a service for this user", _said(probe), shown)
    path = manager.path(home)
    old = path.read_text(encoding="utf-8") if path.exists() else None
    made = [d for d in (*reversed(path.parents), *reversed((data / OUTPUT_FILE).parents)) if not d.exists()]
    try:
        for folder in (path.parent, (data / OUTPUT_FILE).parent):
            folder.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        for step in manager.start(path, replacing=old is not None):
            done = _run(step)
            if done.returncode != 0:
                raise manager.refused(f"start it ({' '.join(step)})", _said(done), shown)
    except BaseException:
        _take_back(manager, path, old, made)
        raise
    return (f"bmoe-daemon is installed as a {manager.name} service and started: {path}\n"
            f"`bmoe-daemon service status` says whether it runs; `bmoe-daemon service uninstall` removes it.")


def _take_back(manager: Manager, path: Path, old: str | None, made: list[Path]) -> None:
    """Puts back what a failed install changed: the old file (or none), and the folders it made."""
    if old is None:
        for step in manager.stop():
            _run(step)
        path.unlink(missing_ok=True)
    else:
        path.write_text(old, encoding="utf-8")
    for step in manager.forget():
        _run(step)
    for folder in sorted(made, key=lambda d: len(d.parts), reverse=True):
        try:
            folder.rmdir()
        except OSError:
            pass  # something else is in it now


def uninstall(manager: Manager, home: Path) -> str:
    """Stops, disables and removes the service. Raises ServiceError, leaving it in
    place, when the manager refuses to stop it."""
    path = manager.path(home)
    if not path.exists():
        return f"bmoe-daemon is not installed as a service ({path} does not exist): nothing to remove."
    for step in manager.stop():
        done = _run(step)
        # Stopping one that is not loaded is no failure: launchctl says "No such process".
        if done.returncode != 0 and "No such process" not in done.stderr and "not loaded" not in done.stderr:
            raise ServiceError(f"{manager.name} refused to stop it ({' '.join(step)}): {_said(done)}. "
                               f"{manager.advice} The file is left in place: {path}")
    path.unlink()
    for step in manager.forget():
        _run(step)
    return f"bmoe-daemon's service is stopped and removed ({path}). Its data folder is left as it was."


def _health(host: str, port: int, key_file: Path | None) -> dict[str, object] | str:
    """The running daemon's /health answer, or why there is none."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    url = f"http://[{host}]:{port}/health" if ":" in host else f"http://{host}:{port}/health"
    request = urllib.request.Request(url)
    if key_file is not None:
        try:
            request.add_header("Authorization", "Bearer " + key_file.read_text().splitlines()[0].strip())
        except (OSError, IndexError):
            pass  # /health answers without a key
    try:
        with urllib.request.urlopen(request, timeout=HEALTH_TIMEOUT_S) as answer:  # noqa: S310 (http only)
            body = json.loads(answer.read())
            return body if isinstance(body, dict) else f"{url} answered {body!r}"
    except (OSError, ValueError) as exc:
        return f"{url} does not answer ({getattr(exc, 'reason', exc)})"


def status(manager: Manager, home: Path) -> tuple[int, str]:
    """Whether the service runs, its address, version, model and log file."""
    path = manager.path(home)
    if not path.exists():
        return EXIT_NOT_RUNNING, (f"bmoe-daemon is not installed as a service ({path} does not exist). "
                                  f"`bmoe-daemon service install [serve options]` installs it.")
    argv, folder = manager.read(path.read_text(encoding="utf-8"))
    args, data = _described(argv, folder)
    running, word = manager.state()
    lines = [f"service: {'running' if running else 'not running'} ({manager.name} says {word!r}); file {path}"]
    host, port = args.host or DEFAULT_HOST, args.port if args.port is not None else DEFAULT_PORT
    if port == 0:
        lines.append("address: a free port chosen at each start (--port 0): see the log file")
    else:
        lines.append(f"address: http://{f'[{host}]' if ':' in host else host}:{port}")
    if running and port != 0:
        key_file = Path(folder) / args.api_key_file if args.api_key_file else None
        health = _health(host, port, key_file)
        if isinstance(health, dict):
            lines.append(f"version: {health.get('version', 'not said (an older bmoe-daemon)')}")
            lines.append(f"model: {health.get('model') or 'none loaded'}")
        else:
            lines.append(f"the daemon: {health}; it may still be starting: `bmoe-daemon service logs` shows why")
    lines.append(f"log file: {_log_file(args, folder, data)}")
    lines.append(f"the service's own output: {data / OUTPUT_FILE}")
    return (0 if running else EXIT_NOT_RUNNING), "\n".join(lines)


def logs(manager: Manager, home: Path) -> NoReturn:
    """Follows the daemon's log file (its service output while there is none) with tail -F."""
    path = manager.path(home)
    if not path.exists():
        raise ServiceError(f"bmoe-daemon is not installed as a service ({path} does not exist), so it has no "
                           f"log to follow. `bmoe-daemon serve` prints its log where it runs.")
    argv, folder = manager.read(path.read_text(encoding="utf-8"))
    args, data = _described(argv, folder)
    log, output = _log_file(args, folder, data), data / OUTPUT_FILE
    follow = log if log.exists() or not output.exists() else output
    print(f"following {follow} (Ctrl-C stops); the service's own output is in {output}", file=sys.stderr, flush=True)
    try:
        os.execvp("tail", ["tail", "-n", str(LOG_LINES), "-F", str(follow)])
    except OSError as exc:
        raise ServiceError(f"cannot run tail to follow the log ({exc}): read {follow} instead") from exc


def service(args: argparse.Namespace, rest: list[str]) -> int:
    """`bmoe-daemon service ACTION`: its exit status; a plain message on failure."""
    if rest and args.action != "install":
        print(f"bmoe-daemon service {args.action} takes no options (not {' '.join(rest)})", file=sys.stderr)
        return 2
    home = Path.home()
    try:
        manager = manager_for()
        if args.action == "install":
            print(install(rest, manager, home))
            return 0
        if args.action == "uninstall":
            print(uninstall(manager, home))
            return 0
        if args.action == "status":
            code, text = status(manager, home)
            print(text)
            return code
        logs(manager, home)
    except ServiceError as exc:
        print(f"bmoe-daemon: {exc}", file=sys.stderr)
        return EXIT_REFUSED
