#!/usr/bin/env bash
# Run every test offline: installs what the tests need, then pytest. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
# Browser tests: Debian's Chromium (not Playwright's download), and an emoji font for the page.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji
fi
# The browser tests' accessibility check: the current axe-core from npm (into node_modules/).
if [ ! -f node_modules/axe-core/axe.min.js ] || ! head -c 20 node_modules/axe-core/axe.min.js \
    | grep -q "axe v4.14.1" && command -v npm >/dev/null; then
  npm install --no-save --no-package-lock --no-audit --no-fund axe-core@4.14.1
fi
exec .venv/bin/python -m pytest "$@"
