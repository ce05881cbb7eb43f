#!/usr/bin/env bash
# Make .venv and install the pinned requirements; a no-op when nothing changed.
# Usage: bash scripts/setup.sh [requirements file]   (default: requirements.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
requirements=${1:-requirements.txt}
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(cat "$requirements" requirements.txt constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "Installing $requirements into .venv (first time: a few minutes; torch is large)…"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r "$requirements" -c constraints.txt
  touch "$stamp"
fi
