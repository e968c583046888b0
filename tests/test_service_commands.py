"""`bmoe-daemon service install|uninstall|status|logs` against a temporary HOME: the
files it writes are real and checked byte for byte; only the service manager
(systemctl, launchctl) is stood in by tests/service_standin.py on PATH, which records
each command, since CI has no user session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from bmoe_daemon import __version__
from bmoe_daemon.service import commands
from tests.daemon_proc import run_daemon

REPO = Path(__file__).resolve().parent.parent
PROGRAM = str(Path(sys.executable).parent / "bmoe-daemon")
STANDIN = REPO / "tests" / "service_standin.py"
BUS_REFUSAL = "Failed to connect to bus: No medium found\n"
UNIT = Path(".config/systemd/user/bmoe-daemon.service")


class Machine:
    """A temporary HOME, data folder and working folder, and stand-ins on PATH."""

    def __init__(self, root: Path, programs: tuple[str, ...] = ("systemctl", "launchctl", "tail")) -> None:
        self.home, self.data, self.work, self.bin = (root / n for n in ("home", "data", "work", "bin"))
        for d in (self.home, self.work, self.bin):
            d.mkdir()
        self.record, self.answers = root / "record.jsonl", root / "answers.json"
        for name in programs:
            script = self.bin / name
            script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" {name} "$@"\n')
            script.chmod(0o755)

    def answer(self, answers: dict[str, list[object]]) -> None:
        self.answers.write_text(json.dumps(answers))

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": f"{self.bin}:/usr/bin:/bin", "BMOE_DATA_DIR": str(self.data),
                "STANDIN_RECORD": str(self.record), "STANDIN_ANSWERS": str(self.answers)}

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PROGRAM, *args], cwd=self.work, env=self.env(), capture_output=True, text=True,
                              timeout=120, check=False)

    def commands(self) -> list[list[str]]:
        """The manager's commands since the last call."""
        if not self.record.exists():
            return []
        lines = self.record.read_text().splitlines()
        self.record.unlink()
        return [json.loads(line) for line in lines]

    def files(self) -> list[str]:
        """Everything under HOME, and whether the data folder exists."""
        found = sorted(str(p.relative_to(self.home)) for p in self.home.rglob("*"))
        return found + (["<data>"] if self.data.exists() else [])


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    m = Machine(tmp_path)
    m.answer({"--user is-active bmoe-daemon": [0, "active\n", ""]})
    return m


def expected_unit(m: Machine, *options: str) -> str:
    return (
        "# bmoe-daemon as a systemd user service. Written by `bmoe-daemon service install`, which\n"
        "# fills in the @…@ fields; `bmoe-daemon service uninstall` stops and removes it.\n"
        "[Unit]\nDescription=bmoe-daemon: local coding agents\n\n[Service]\n"
        f"ExecStart={PROGRAM} serve {' '.join(options)} --data-dir {m.data}\n"
        f"WorkingDirectory={m.work}\n"
        f"StandardOutput=append:{m.data}/logs/service-output.log\n"
        "StandardError=inherit\nRestart=on-failure\nRestartSec=3\n"
        "# Exit status 2 is a start-up refusal said in words (the data folder is held by another\n"
        "# daemon, the port is taken, an option is wrong): starting again would only repeat it.\n"
        "RestartPreventExitStatus=2\nKillSignal=SIGTERM\nTimeoutStopSec=40\n\n"
        "[Install]\nWantedBy=default.target\n"
    )


def test_install_writes_the_unit_and_starts_it_and_uninstall_removes_it(machine: Machine) -> None:
    key = machine.work / "key.txt"
    key.write_text("sk-secret-key-1234\n")
    done = machine.run("service", "install", "--port", "9123", "--model", "m.gguf", "--api-key-file", "key.txt")
    assert done.returncode == 0, done.stderr
    assert "installed as a systemd service and started" in done.stdout
    unit = (machine.home / UNIT).read_text()
    assert unit == expected_unit(machine, "--port 9123 --model m.gguf --api-key-file key.txt")
    assert "sk-secret" not in unit
    assert machine.commands() == [
        ["systemctl", "--user", "show-environment"],
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "bmoe-daemon"],
    ]
    assert (machine.data / "logs").is_dir()

    again = machine.run("service", "install", "--port", "9124")
    assert again.returncode == 0, again.stderr
    assert (machine.home / UNIT).read_text() == expected_unit(machine, "--port 9124")
    assert machine.commands()[-1] == ["systemctl", "--user", "restart", "bmoe-daemon"]  # on the new options

    gone = machine.run("service", "uninstall")
    assert gone.returncode == 0 and "stopped and removed" in gone.stdout
    assert not (machine.home / UNIT).exists()
    assert machine.commands() == [["systemctl", "--user", "disable", "--now", "bmoe-daemon"],
                                  ["systemctl", "--user", "daemon-reload"]]
    status = machine.run("service", "status")
    assert status.returncode == commands.EXIT_NOT_RUNNING and "not installed as a service" in status.stdout
    again_gone = machine.run("service", "uninstall")
    assert again_gone.returncode == 0 and "nothing to remove" in again_gone.stdout


async def test_status_says_it_runs_its_address_version_model_and_log(machine: Machine, tmp_path: Path) -> None:
    async with run_daemon(tmp_path / "running", "--no-model") as daemon:
        port = daemon.url.rsplit(":", 1)[1]
        done = machine.run("service", "install", "--port", port, "--no-model")
        assert done.returncode == 0, done.stderr
        status = await trio.run_process([PROGRAM, "service", "status"], cwd=machine.work, env=machine.env(),
                                        capture_stdout=True, capture_stderr=True, check=False)
    assert status.returncode == 0, status.stderr
    assert status.stdout.decode().splitlines() == [
        f"service: running (systemd says 'active'); file {machine.home / UNIT}",
        f"address: http://127.0.0.1:{port}",
        f"version: {__version__}",
        "model: none loaded",
        f"log file: {machine.data}/logs/daemon.log",
        f"the service's own output: {machine.data}/logs/service-output.log",
    ]
    machine.answer({"--user is-active bmoe-daemon": [3, "failed\n", ""]})
    stopped = machine.run("service", "status")
    assert stopped.returncode == commands.EXIT_NOT_RUNNING
    assert stopped.stdout.splitlines()[0].startswith("service: not running (systemd says 'failed')")


def test_a_refusing_systemd_leaves_nothing_behind(machine: Machine) -> None:
    machine.answer({"*": [1, "", BUS_REFUSAL]})
    done = machine.run("service", "install", "--port", "9123")
    assert done.returncode == commands.EXIT_REFUSED
    assert "Failed to connect to bus" in done.stderr and "loginctl enable-linger" in done.stderr
    assert "bmoe-daemon serve --port 9123" in done.stderr and "Traceback" not in done.stderr
    assert machine.files() == []
    assert machine.commands() == [["systemctl", "--user", "show-environment"]]


def test_a_refusal_at_start_takes_back_what_install_wrote(machine: Machine) -> None:
    machine.answer({"--user enable --now bmoe-daemon": [1, "", BUS_REFUSAL]})
    done = machine.run("service", "install", "--port", "9123")
    assert done.returncode == commands.EXIT_REFUSED and "refused to start it" in done.stderr
    assert machine.files() == []
    assert machine.commands()[-2:] == [["systemctl", "--user", "disable", "--now", "bmoe-daemon"],
                                       ["systemctl", "--user", "daemon-reload"]]


def test_no_systemctl_is_said_plainly(tmp_path: Path) -> None:
    m = Machine(tmp_path, programs=())
    env = {**m.env(), "PATH": str(m.bin)}
    done = subprocess.run([PROGRAM, "service", "install"], cwd=m.work, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == commands.EXIT_REFUSED
    assert "there is no systemctl here" in done.stderr and "bmoe-daemon serve" in done.stderr
    assert m.files() == []


@pytest.mark.parametrize("option", [["--port", "99999"], ["--helpers", "0"], ["--no-such-option"],
                                    ["--api-key-file", "missing.txt"]])
def test_a_bad_option_is_refused_as_serve_refuses_it(machine: Machine, option: list[str]) -> None:
    served = machine.run("serve", *option)
    done = machine.run("service", "install", *option)
    assert (done.returncode, done.stderr) == (2, served.stderr) and done.stderr
    assert machine.files() == [] and machine.commands() == []


def test_logs_follow_the_daemon_log_or_else_the_service_output(machine: Machine) -> None:
    assert machine.run("service", "install").returncode == 0
    done = machine.run("service", "logs")
    assert done.returncode == 0, done.stderr
    output = machine.data / "logs" / "service-output.log"
    assert machine.commands()[-1] == ["tail", "-n", "100", "-F", str(machine.data / "logs" / "daemon.log")]
    output.write_text("Traceback ...\n")
    assert machine.run("service", "logs").returncode == 0
    assert machine.commands()[-1] == ["tail", "-n", "100", "-F", str(output)]


def test_launchd_install_status_uninstall(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in machine.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(machine.work)
    launchd = commands.Launchd()
    domain = f"gui/{os.getuid()}"
    said = commands.install(["--port", "9125", "--model", "a&b.gguf"], launchd, machine.home)
    assert "installed as a launchd service" in said
    plist = machine.home / "Library" / "LaunchAgents" / "com.bmoe.daemon.plist"
    output = f"{machine.data}/logs/service-output.log"
    program = "\n".join(f"    <string>{w}</string>" for w in commands._program())
    assert plist.read_text() == (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
        "<!-- bmoe-daemon as a launchd agent. Written by `bmoe-daemon service install`, which fills\n"
        "     in the @…@ fields; `bmoe-daemon service uninstall` stops and removes it. -->\n"
        '<plist version="1.0">\n<dict>\n'
        "  <key>Label</key><string>com.bmoe.daemon</string>\n"
        "  <key>ProgramArguments</key>\n  <array>\n"
        f"{program}\n    <string>serve</string>\n    <string>--port</string>\n    <string>9125</string>\n"
        f"    <string>--model</string>\n    <string>a&amp;b.gguf</string>\n"
        f"    <string>--data-dir</string>\n    <string>{machine.data}</string>\n"
        "  </array>\n"
        f"  <key>WorkingDirectory</key><string>{machine.work}</string>\n"
        f"  <key>StandardOutPath</key><string>{output}</string>\n"
        f"  <key>StandardErrorPath</key><string>{output}</string>\n"
        "  <key>RunAtLoad</key><true/>\n"
        "  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n"
        "  <key>ThrottleInterval</key><integer>3</integer>\n"
        "  <key>ExitTimeOut</key><integer>40</integer>\n"
        "  <key>ProcessType</key><string>Background</string>\n"
        "</dict>\n</plist>\n"
    )
    assert machine.commands() == [
        ["launchctl", "print", domain],
        ["launchctl", "enable", f"{domain}/com.bmoe.daemon"],
        ["launchctl", "bootstrap", domain, str(plist)],
    ]
    machine.answer({f"print {domain}/com.bmoe.daemon": [0, "\tstate = running\n\tpid = 4242\n", ""]})
    code, text = commands.status(launchd, machine.home)
    assert code == 0 and text.splitlines()[:2] == [
        f"service: running (launchd says 'running'); file {plist}", "address: http://127.0.0.1:9125"]
    assert commands.uninstall(launchd, machine.home).startswith("bmoe-daemon's service is stopped and removed")
    assert not plist.exists()
    bootouts = [c for c in machine.commands() if c[1] == "bootout"]
    assert bootouts == [["launchctl", "bootout", f"{domain}/com.bmoe.daemon"]]


def test_a_launchd_without_a_session_leaves_nothing_behind(machine: Machine, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in machine.env().items():
        monkeypatch.setenv(name, value)
    machine.answer({"*": [113, "", "Could not find domain for port identifier\n"]})
    with pytest.raises(commands.ServiceError, match="launchd refused.*login session.*bmoe-daemon serve"):
        commands.install(["--port", "9125"], commands.Launchd(), machine.home)
    assert machine.files() == []
