#!/usr/bin/env bash
# Create/update .venv in the repo root and install oro-assets (editable) with the given extras.
# torch is pinned to 2.13.* in pyproject.toml so pip takes the CPU wheel already on this machine;
# requirements.lock (a constraints file) pins every package to the version the README was measured with.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
[ -x .venv/bin/python ] || python3.11 -m venv .venv 2>/dev/null || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install -q -c requirements.lock -e ".[${extras}]"
else
  .venv/bin/python -m pip install -q -c requirements.lock -e .
fi
