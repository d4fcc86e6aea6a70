"""Shared parts of the benchmarks: the report as indented JSON on stdout and, when asked, in a file; the
environment of a child that must run this tree's code."""

from __future__ import annotations

import json
import os
from pathlib import Path


def emit(report: dict, json_path: str | None = None) -> None:
    """Print ``report`` as JSON and also write it to ``json_path`` when one is given."""
    text = json.dumps(report, indent=2)
    print(text)
    if json_path:
        Path(json_path).write_text(text + "\n")


def tree_env(root: Path) -> dict[str, str]:
    """The environment with ``root``'s package first on ``PYTHONPATH``: a console script (``oro-assets``) would
    otherwise import the checkout the venv's editable install points at, so a clone run beside the main checkout
    would measure the main checkout's code."""
    path = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}
