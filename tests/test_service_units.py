"""The service files as the service managers read them: the systemd user unit passes
`systemd-analyze --user verify`, the launchd plist parses as a plist with launchd's own
keys, and the daemon's command line comes back word for word through each format's quoting."""

from __future__ import annotations

import plistlib
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bmoe_daemon.service import units

PROGRAM = str(Path(__file__).resolve().parent.parent / ".venv" / "bin" / "bmoe-daemon")
HOSTILE = ["--model", "my models/50% off $HOME \"quoted\" 'single' back\\slash;.gguf", "--allow-origin",
           "http://localhost:5173", "--data-dir", "/tmp/a&b <c> ünï", ""]

# The keys launchd.plist(5) documents for an agent, and the type each takes.
LAUNCHD_KEYS = {
    "Label": str, "Disabled": bool, "UserName": str, "GroupName": str, "Program": str,
    "ProgramArguments": list, "EnableGlobbing": bool, "EnableTransactions": bool, "KeepAlive": (bool, dict),
    "RunAtLoad": bool, "RootDirectory": str, "WorkingDirectory": str, "EnvironmentVariables": dict,
    "Umask": int, "TimeOut": int, "ExitTimeOut": int, "ThrottleInterval": int, "InitGroups": bool,
    "WatchPaths": list, "QueueDirectories": list, "StartOnMount": bool, "StartInterval": int,
    "StartCalendarInterval": (dict, list), "StandardInPath": str, "StandardOutPath": str,
    "StandardErrorPath": str, "Debug": bool, "WaitForDebugger": bool, "SoftResourceLimits": dict,
    "HardResourceLimits": dict, "Nice": int, "ProcessType": str, "AbandonProcessGroup": bool,
    "LowPriorityIO": bool, "LowPriorityBackgroundIO": bool, "LaunchOnlyOnce": bool, "MachServices": dict,
    "Sockets": dict, "LimitLoadToSessionType": (str, list), "AssociatedBundleIdentifiers": (str, list),
}
PROCESS_TYPES = {"Background", "Standard", "Adaptive", "Interactive"}
KEEP_ALIVE_KEYS = {"SuccessfulExit", "NetworkState", "PathState", "OtherJobEnabled", "Crashed"}


def verify(unit: Path, runtime: Path) -> str:
    """What `systemd-analyze --user verify` says of `unit` (nothing when it is well-formed)."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: install Debian's systemd (apt-get install systemd)"
    runtime.mkdir(mode=0o700, exist_ok=True)
    done = subprocess.run([analyze, "--user", "verify", str(unit)], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(runtime), "HOME": str(unit.parent)})
    return f"exit {done.returncode}: {done.stdout}{done.stderr}" if done.returncode or done.stdout or done.stderr \
        else ""


def test_the_unit_is_filled_in_and_systemd_reads_it_without_a_word(tmp_path: Path) -> None:
    text = units.systemd_unit([PROGRAM, "serve", "--port", "9123", *HOSTILE], "/home/a b/work 100%",
                              "/tmp/data $x/logs/service-output.log")
    assert text == (
        "# bmoe-daemon as a systemd user service. Written by `bmoe-daemon service install`, which\n"
        "# fills in the @…@ fields; `bmoe-daemon service uninstall` stops and removes it.\n"
        "[Unit]\nDescription=bmoe-daemon: local coding agents\n\n[Service]\n"
        f"ExecStart={PROGRAM} serve --port 9123 --model "
        "\"my models/50%% off $$HOME \\\"quoted\\\" 'single' back\\\\slash;.gguf\" --allow-origin "
        "http://localhost:5173 --data-dir \"/tmp/a&b <c> ünï\" \"\"\n"
        "WorkingDirectory=/home/a b/work 100%%\n"
        "StandardOutput=append:/tmp/data $$x/logs/service-output.log\n"
        "StandardError=inherit\nRestart=on-failure\nRestartSec=3\n"
        "# Exit status 2 is a start-up refusal said in words (the data folder is held by another\n"
        "# daemon, the port is taken, an option is wrong): starting again would only repeat it.\n"
        "RestartPreventExitStatus=2\nKillSignal=SIGTERM\nTimeoutStopSec=40\n\n"
        "[Install]\nWantedBy=default.target\n"
    )
    unit = tmp_path / "bmoe-daemon.service"
    unit.write_text(text.replace("/home/a b/work 100%%", str(tmp_path)))
    assert verify(unit, tmp_path / "run") == ""
    # The check can fail: a setting systemd cannot read is reported.
    unit.write_text(text.replace("Restart=on-failure", "Restart=sometimes"))
    assert "sometimes" in verify(unit, tmp_path / "run")


@given(st.lists(st.text(st.characters(max_codepoint=0x2FF, exclude_categories=("Cs",)))))
def test_exec_start_gives_back_each_word(words: list[str]) -> None:
    argv = [PROGRAM, *words]
    assert units.exec_start_words(units.exec_start(argv)) == argv


def test_unit_settings_reads_the_service_section() -> None:
    text = units.systemd_unit([PROGRAM, "serve"], "/w", "/o")
    settings = units.unit_settings(text)
    assert settings["ExecStart"] == f"{PROGRAM} serve" and settings["WorkingDirectory"] == "/w"
    assert "Description" not in settings  # that one is [Unit]'s


def test_a_folder_systemd_cannot_carry_is_refused() -> None:
    with pytest.raises(units.UnitError, match="cannot be written into a systemd unit"):
        units.systemd_unit([PROGRAM, "serve"], "/w\nExecStartPre=/bin/rm", "/o")


def test_the_plist_is_launchds_and_gives_back_each_word() -> None:
    argv = [PROGRAM, "serve", "--port", "9123", *HOSTILE]
    text = units.launchd_plist("com.bmoe.daemon", argv, "/Users/a b/work", "/data/logs/service-output.log")
    plist = plistlib.loads(text.encode("utf-8"))
    for key, value in plist.items():
        assert key in LAUNCHD_KEYS, f"{key} is not a launchd key"
        assert isinstance(value, LAUNCHD_KEYS[key]), f"{key} is a {type(value).__name__}"
    assert plist == {
        "Label": "com.bmoe.daemon",
        "ProgramArguments": argv,
        "WorkingDirectory": "/Users/a b/work",
        "StandardOutPath": "/data/logs/service-output.log",
        "StandardErrorPath": "/data/logs/service-output.log",
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 3,
        "ExitTimeOut": 40,
        "ProcessType": "Background",
    }
    assert plist["ProcessType"] in PROCESS_TYPES and set(plist["KeepAlive"]) <= KEEP_ALIVE_KEYS
    assert "<string>/tmp/a&amp;b &lt;c&gt; ünï</string>" in text


@given(st.lists(st.text(st.characters(max_codepoint=0x2FF, exclude_categories=("Cs", "Cc")))))
def test_the_plist_gives_back_each_word(words: list[str]) -> None:
    argv = [PROGRAM, *words]
    plist = plistlib.loads(units.launchd_plist("com.bmoe.daemon", argv, "/w", "/o").encode("utf-8"))
    assert plist["ProgramArguments"] == argv


def test_a_control_character_is_refused_in_a_plist() -> None:
    with pytest.raises(units.UnitError, match="launchd plist cannot carry"):
        units.launchd_plist("com.bmoe.daemon", [PROGRAM, "serve", "--data-dir", "/a\x01b"], "/w", "/o")
