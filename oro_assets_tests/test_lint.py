"""The repository stays ruff-clean (the brief's rule), enforced by the CI test command itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")  # the dev extra installs it into the venv
    found = str(beside) if beside.exists() else shutil.which("ruff")
    assert found, "ruff is a dev dependency (pyproject [dev]); install with pip install -e '.[dev]'"
    return [found]


def test_repository_is_ruff_clean():
    proc = subprocess.run([*_ruff(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
