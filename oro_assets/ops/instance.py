"""The local Dagster instance under ``<data>/dagster_home`` (runs show up in the web UI)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from oro_assets.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]


def ensure_dagster_home(settings: Settings) -> Path:
    """Create DAGSTER_HOME with the project's dagster.yaml and export it for this process and children."""
    home = Path(os.environ.get("DAGSTER_HOME") or settings.dagster_home).resolve()
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    source = REPO_ROOT / "dagster.yaml"
    if source.exists() and (not target.exists() or target.read_bytes() != source.read_bytes()):
        shutil.copyfile(source, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def get_instance(settings: Settings):
    import dagster as dg

    ensure_dagster_home(settings)
    return dg.DagsterInstance.get()
