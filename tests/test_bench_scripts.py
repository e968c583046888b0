"""Every benchmark script in ops/bench/ still imports and has its entry point.

CI runs the test suite, not the benchmarks (on a two-core machine their quick run took
three of CI's twenty minutes); `ops/bench/run_all.py --all --quick` runs them all. This
catches the rot a change to the daemon's modules would cause in a script nobody ran:
an import that moved, a name that went.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "ops" / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*.py") if not p.name.startswith("_"))


def test_the_folder_has_the_benchmarks() -> None:
    assert len(SCRIPTS) >= 25 and (BENCH / "run_all.py") in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_a_benchmark_script_imports_and_has_its_main(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))  # the scripts import _common as their neighbour
    spec = importlib.util.spec_from_file_location(f"bench_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
