"""Shared output of the benchmarks: the report as indented JSON on stdout and, when asked, in a file."""

from __future__ import annotations

import json
from pathlib import Path


def emit(report: dict, json_path: str | None = None) -> None:
    """Print ``report`` as JSON and also write it to ``json_path`` when one is given."""
    text = json.dumps(report, indent=2)
    print(text)
    if json_path:
        Path(json_path).write_text(text + "\n")
