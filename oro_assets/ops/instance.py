"""The local Dagster instance under ``<data>/dagster_home`` (runs show up in the web UI)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from oro_assets.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[2]


def ensure_dagster_home(settings: Settings) -> Path:
    """Create DAGSTER_HOME and export it for this process and children.

    The default home (``<data>/dagster_home``) always carries the repo's ``dagster.yaml``; a
    DAGSTER_HOME set by the user keeps its own ``dagster.yaml`` (e.g. the PostgreSQL one in deploy/).
    """
    user_home = os.environ.get("DAGSTER_HOME")
    home = Path(user_home or settings.dagster_home).resolve()
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    source = REPO_ROOT / "dagster.yaml"
    stale = not target.exists() or (not user_home and target.read_bytes() != source.read_bytes())
    if source.exists() and stale:
        shutil.copyfile(source, target)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def get_instance(settings: Settings):
    import dagster as dg

    ensure_dagster_home(settings)
    return dg.DagsterInstance.get()
