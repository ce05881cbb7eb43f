#!/usr/bin/env bash
# Start Banana Space on http://127.0.0.1:7860 (no key and no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh requirements.txt
# Offline machines: seed pyiqa's weight cache from ../shared/weights when it is there.
if [ -z "${BANANA_WEIGHTS_DIR:-}" ] && [ -d ../shared/weights ]; then
  export BANANA_WEIGHTS_DIR=../shared/weights
fi
exec .venv/bin/python app.py
