#!/usr/bin/env bash
# Refreshes docs/screenshots/ (desktop and phone, light and dark): runs the browser tests
# with BMOE_SCREENSHOTS=1, under which each screenshot they take lands there instead of in
# a scratch folder. An ordinary test run leaves the work tree as it was.
# Needs what the browser tests need: bash ops/install.sh test, and Debian's chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
export BMOE_SCREENSHOTS=1
exec .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_web_ui.py tests/test_plan_e2e.py "$@"
