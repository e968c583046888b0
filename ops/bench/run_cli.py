"""`bmoe-daemon run --json "say hi"` against a running daemon, process start to its final
line, beside curl doing the same by hand (a bash script: create the conversation, open
/api/events, send the message, read the stream to the run's end, read the conversation
back).

The daemon is `serve --scripted` (a fixed answer, no model: what is timed is the client
and the HTTP way, not a model). Per repetition the two ways run one after the other,
alternating which goes first; medians. The target allows the CLI 1.3x curl's time plus
the Python start-up (`python -c pass`, timed here too), the price of a Python client.
Beside the wall clocks, the CPU each way's processes used (the CLI; bash and its curls),
which a busy machine disturbs less.

    .venv/bin/python ops/bench/run_cli.py [--reps 10] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, CpuWatch, DaemonProcess, Report, exit_on_sigterm, median, missing_peer, parse_args  # noqa: E402
from startup import compiled  # noqa: E402

RATIO = 1.3
ANSWER = "Hi!"

CURL = r"""
set -e
U=$1
J='content-type: application/json'
cid=$(curl -sf -XPOST "$U/api/conversations" -H "$J" -d '{}' | grep -o '"id": *"[^"]*"' | head -1 \
  | sed 's/.*"\([^"]*\)"$/\1/')
exec 3< <(curl -sN "$U/api/events")
events=$!
read -r line <&3
curl -sf -XPOST "$U/api/conversations/$cid/messages" -H "$J" -d '{"text":"say hi","unattended":true}' >/dev/null
while read -r line <&3; do
  case "$line" in *"\"id\": \"$cid\""*'"state": "idle"'*|*"\"id\":\"$cid\""*'"state":"idle"'*) break;; esac
done
curl -sf "$U/api/conversations/$cid"
kill $events
"""


def children_cpu() -> float:
    """CPU seconds of the children (and theirs) waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_cli(data: Path, env: dict[str, str]) -> tuple[float, dict[str, object], float]:
    c0 = children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bmoe_daemon", "run", "--json", "--data-dir", str(data), "say hi"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    final: dict[str, object] = {}
    for line in proc.stdout:
        if '"type": "result"' in line:
            final = json.loads(line)
            break
    took = time.perf_counter() - t0
    proc.stdout.read()
    proc.wait()
    return took, final, children_cpu() - c0


def one_curl(url: str, script: Path) -> tuple[float, str, float]:
    c0 = children_cpu()
    t0 = time.perf_counter()
    out = subprocess.run(["bash", str(script), url], capture_output=True, text=True, timeout=60)
    took = time.perf_counter() - t0
    return took, out.stdout, children_cpu() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=10)
    args = parse_args(ap, quick={"reps": 3})
    exit_on_sigterm()
    if shutil.which("curl") is None or shutil.which("bash") is None:
        missing_peer("curl (and bash)", "apt-get install curl")
    rep = Report("run_cli", 'bmoe-daemon run --json "say hi" against a running daemon, beside curl by hand')
    # The install compiles the daemon's modules (ops/install.sh); a checkout that was not
    # installed, where PYTHONDONTWRITEBYTECODE is set, would compile them at every start
    # of the client (a fresh clone read 1.09 against 0.81 so). So as the install does:
    before = compiled(REPO)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", str(REPO / "bmoe_daemon"),
                    str(REPO / "actors")], check=True, stdout=subprocess.DEVNULL)
    rep.figure("modules with bytecode before / after compileall (as the install does)",
               f"{before[0]} / {compiled(REPO)[0]} of {before[1]}")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        script = root / "script.json"
        script.write_text(json.dumps({"rounds": [], "default": {"text": ANSWER}}))
        curl = root / "by_hand.sh"
        curl.write_text(CURL)
        data = root / "data"
        daemon = DaemonProcess(["serve", "--port", "0", "--data-dir", str(data), "--scripted", str(script)],
                               log_path=root / "daemon.log")
        try:
            url = daemon.start(timeout=60)
            watch = CpuWatch([daemon.pid]).start()
            cli_s: list[float] = []
            curl_s: list[float] = []
            py_s: list[float] = []
            cpu: dict[str, list[float]] = {"cli": [], "curl": [], "py": []}
            finals: list[dict[str, object]] = []
            bodies: list[str] = []
            one_cli(data, env)  # warm: bytecode, the page cache
            one_curl(url, curl)
            for i in range(args.reps):
                order = ("cli", "curl") if i % 2 == 0 else ("curl", "cli")
                for way in order:
                    if way == "cli":
                        took, final, used = one_cli(data, env)
                        cli_s.append(took)
                        finals.append(final)
                    else:
                        took, body, used = one_curl(url, curl)
                        curl_s.append(took)
                        bodies.append(body)
                    cpu[way].append(used)
                c0 = children_cpu()
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                py_s.append(time.perf_counter() - t0)
                cpu["py"].append(children_cpu() - c0)
            foreign = watch.foreign_cores()
        finally:
            daemon.stop()
    rep.check("every run --json ended with the result line, answered",
              all(f.get("result") == ANSWER and f.get("end_reason") == "answered" for f in finals),
              json.dumps(finals[:2]))
    rep.check("every curl run read the answer back", all(f'"text": "{ANSWER}"' in b or f'"text":"{ANSWER}"' in b
                                                         for b in bodies), bodies[0][:300] if bodies else "")
    cli_m, curl_m, py_m = median(cli_s), median(curl_s), median(py_s)
    rep.figure("bmoe-daemon run --json, process start to final line (median)", cli_m * 1000, "ms")
    rep.figure("curl by hand (bash script), start to conversation read back (median)", curl_m * 1000, "ms")
    rep.figure("python -c pass (median)", py_m * 1000, "ms")
    rep.figure("CPU: bmoe-daemon run (median)", median(cpu["cli"]) * 1000, "ms")
    rep.figure("CPU: bash and its curls (median)", median(cpu["curl"]) * 1000, "ms")
    rep.figure("CPU: python -c pass (median)", median(cpu["py"]) * 1000, "ms")
    rep.figure("load average (1 min) at the end", os.getloadavg()[0], "", "{:.2f}")
    rep.figure("other processes' CPU during the run", foreign, "cores", "{:.2f}")
    rep.target("run --json over 1.3x curl + Python start-up", cli_m / (RATIO * curl_m + py_m), "<=", 1.0, "",
               "{:.2f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
