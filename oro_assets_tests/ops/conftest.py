"""One small materialised data root for the operations tests (browser, notebook, PostgreSQL).

The data root is built once per session through the real ``oro-assets`` CLI in subprocesses, exactly
as a user would: arena_job, curation_job for one day, datasets_job. It gets its own Dagster home
(``<data>/dagster_home``, SQLite) so the web UI has runs, materialisations and check results to show.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from ops_support import PARTITION, REPO_ROOT, TRACES_PER_DAY, MaterialisedRoot, oro_env, run_cli


@pytest.fixture(scope="session")
def materialised_root(tmp_path_factory) -> MaterialisedRoot:
    data_dir = tmp_path_factory.mktemp("ops") / "data"
    env = oro_env(data_dir)  # no DAGSTER_HOME: the CLI creates <data>/dagster_home with the repo's dagster.yaml
    timings: dict[str, float] = {}
    for job, partition in (("arena_job", None), ("curation_job", PARTITION), ("datasets_job", None)):
        started = time.monotonic()
        run_cli(["materialize", "--job", job, *(["--partition", partition] if partition else [])], env)
        timings[job] = time.monotonic() - started
    return MaterialisedRoot(data_dir=data_dir, dagster_home=data_dir / "dagster_home", partition=PARTITION,
                            traces_per_day=TRACES_PER_DAY, timings=timings)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``test-artifacts/`` at the repo root (git-ignored): screenshots and logs CI uploads."""
    path = REPO_ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
