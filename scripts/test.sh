#!/usr/bin/env bash
# Run every test offline: installs what the tests need, then pytest. Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements-test.txt
exec .venv/bin/python -m pytest "$@"
