#!/usr/bin/env bash
# Run every test offline: installs what the tests need, then pytest. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
# Browser tests: Debian's Chromium (not Playwright's download), and an emoji font for the page.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium fonts-noto-color-emoji
fi
exec .venv/bin/python -m pytest "$@"
