"""One small materialised data root for the operations tests (browser, notebook, PostgreSQL).

The data root is built once per session through the real CLIs in subprocesses, as a user would:
``oro-assets materialize`` for arena_job, curation_job (one day) and datasets_job, then a cheap
evaluation report: ``oro-assets eval`` rolls out the arena's scripted teacher on a few hold-out problems
(filed as the ``base`` stage, since no checkpoint is trained here) and ``dagster asset materialize``
builds the real ``eval_report`` asset from it. It gets its own Dagster home (``<data>/dagster_home``,
SQLite) so the web UI has runs, materialisations, check results and report metadata to show.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from ops_support import (
    EVAL_PROBLEMS,
    EVAL_STAGE,
    PARTITION,
    REPO_ROOT,
    TRACES_PER_DAY,
    MaterialisedRoot,
    oro_env,
    run_cli,
)


@pytest.fixture(scope="session")
def materialised_root(tmp_path_factory) -> MaterialisedRoot:
    data_dir = tmp_path_factory.mktemp("ops") / "data"
    env = oro_env(data_dir)  # no DAGSTER_HOME: the CLI creates <data>/dagster_home with the repo's dagster.yaml
    timings: dict[str, float] = {}
    for job, partition in (("arena_job", None), ("curation_job", PARTITION), ("datasets_job", None)):
        started = time.monotonic()
        run_cli(["materialize", "--job", job, *(["--partition", partition] if partition else [])], env)
        timings[job] = time.monotonic() - started

    started = time.monotonic()
    run_cli(["eval", "--scripted", "teacher", "--problems", str(data_dir / "warehouse" / "eval_problems.jsonl"),
             "--catalogue", str(data_dir / "arena" / "catalogue.jsonl"), "--n", "2", "--limit", str(EVAL_PROBLEMS),
             "--stage", EVAL_STAGE, "--out", str(data_dir / "reports" / "eval" / EVAL_STAGE)], env)
    report = subprocess.run(
        [sys.executable, "-m", "dagster", "asset", "materialize", "-m", "oro_assets.definitions",
         "--select", "eval_report", "--config-json", '{"execution": {"config": {"in_process": {}}}}'],
        env=oro_env(data_dir, DAGSTER_HOME=str(data_dir / "dagster_home")), cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=300)
    if report.returncode != 0:
        pytest.fail(f"dagster asset materialize --select eval_report exited {report.returncode}:\n"
                    f"{(report.stdout + report.stderr)[-4000:]}")
    timings["eval_report"] = time.monotonic() - started
    return MaterialisedRoot(data_dir=data_dir, dagster_home=data_dir / "dagster_home", partition=PARTITION,
                            traces_per_day=TRACES_PER_DAY, timings=timings)


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """``test-artifacts/`` at the repo root (git-ignored): screenshots and logs CI uploads."""
    path = REPO_ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
