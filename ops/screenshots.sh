#!/usr/bin/env bash
# Refreshes docs/screenshots/ (desktop and phone, light and dark): runs the browser tests
# with BMOE_SCREENSHOTS=1, under which each screenshot they take lands there instead of in
# a scratch folder. An ordinary test run leaves the work tree as it was.
#
# The tests run are every tests/test_*.py that calls tests/browser.py's `screenshot(`
# (found here by grep, so a new browser test file is included without editing this),
# but tests/test_plan_e2e.py: it plans with the bundled model (SmolLM2-135M, which
# chooses at random), trying up to 20 conversations for up to 10 minutes, for one
# screenshot (desktop-plan-bundled-model.png). `--with-model` runs it too.
# Other arguments go to pytest. At the end, the PNGs in docs/screenshots/ that this run
# did not write are listed: a test that no longer takes them, or one not run.
#
# Needs what the browser tests need: bash ops/install.sh test, and Debian's chromium.
#   bash ops/screenshots.sh [--with-model] [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
MODEL_TEST=tests/test_plan_e2e.py
with_model=0
if [[ "${1:-}" == "--with-model" ]]; then
  with_model=1
  shift
fi
files=()
while IFS= read -r f; do
  if [[ "$f" == "$MODEL_TEST" && "$with_model" == 0 ]]; then
    continue
  fi
  files+=("$f")
done < <(grep -lE '(^|[^.A-Za-z0-9_])screenshot\(' tests/test_*.py | sort)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "ops/screenshots.sh: no test file under tests/ calls screenshot(): nothing to run" >&2
  exit 1
fi
echo "ops/screenshots.sh: ${files[*]}"
mkdir -p docs/screenshots
stamp="$(mktemp)"
trap 'rm -f "$stamp"' EXIT
status=0
BMOE_SCREENSHOTS=1 "$PYTHON" -m pytest -q -p no:cacheprovider "${files[@]}" "$@" || status=$?
stale="$(find docs/screenshots -maxdepth 1 -name '*.png' ! -newer "$stamp" -printf '%f\n' | sort)"
if [[ -n "$stale" ]]; then
  echo "ops/screenshots.sh: not written by this run (a test that no longer takes it, or one not run):"
  echo "$stale" | sed 's/^/  /'
fi
exit "$status"
