#!/usr/bin/env bash
# Make .venv, install the pinned requirements and then this checkout itself, editable, so that
# .venv/bin/banana-space runs the code as it stands here; a no-op when nothing changed.
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
# The project with --no-deps (the requirements above are its dependencies, pinned) and no index
# (setuptools is among them): offline, and nothing else moves.
project=".venv/.editable-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$project" ] || [ ! -x .venv/bin/banana-space ]; then
  .venv/bin/python -m pip install --quiet --no-deps --no-build-isolation --no-index --editable .
  touch "$project"
fi
