"""Helpers of the operations tests: the oro-assets CLI in a subprocess, free ports, optional system tools."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PARTITION = "2026-01-05"
TRACES_PER_DAY = 200
EVAL_PROBLEMS = 6  # hold-out problems in the fixture's evaluation report
EVAL_STAGE = "base"  # eval_report only reads the checkpoint stages' result folders

# Variables of the developer's shell that would point a test at other data or services.
_LEAKY_VARS = ("ORO_FIREHOSE_DIR", "ORO_PROBLEMS", "ORO_JUDGE", "ORO_JUDGE_BASE_URL", "ORO_JUDGE_MODEL",
               "ORO_TEACHER_BASE_URL", "ORO_TEACHER_MODEL", "MLFLOW_TRACKING_URI", "DAGSTER_HOME",
               "ORO_MODEL_PROFILE", "ORO_PARTITIONS_START")


def oro_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of an oro-assets subprocess working on ``data_dir`` (small simulated days, offline)."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_VARS and not k.startswith("DAGSTER_PG_")}
    env.update(ORO_DATA_DIR=str(data_dir), ORO_SIM_TRACES_PER_DAY=str(TRACES_PER_DAY),
               DAGSTER_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="1", TQDM_DISABLE="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def cli_command() -> list[str]:
    """The ``oro-assets`` console script of this interpreter's environment (module fallback)."""
    script = Path(sys.executable).parent / "oro-assets"
    return [str(script)] if script.exists() else [sys.executable, "-m", "oro_assets.cli"]


def run_cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``oro-assets <args>``; fail the test with the output's tail when it does not exit 0."""
    proc = subprocess.run([*cli_command(), *args], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-4000:]
        pytest.fail(f"oro-assets {' '.join(args)} exited {proc.returncode}:\n{tail}")
    return proc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def required_tool_missing(message: str) -> None:
    """Skip when an optional system tool is absent, but never under CI (there it must be installed)."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set: this test must not be skipped; install it as the README says)")
    pytest.skip(message)


@dataclass(frozen=True)
class MaterialisedRoot:
    data_dir: Path
    dagster_home: Path
    partition: str
    traces_per_day: int
    timings: dict[str, float] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        return oro_env(self.data_dir, DAGSTER_HOME=str(self.dagster_home), **extra)

    def copy_without_instance(self, target: Path) -> Path:
        """A copy of the data root without its Dagster home (for another instance to run against)."""
        shutil.copytree(self.data_dir, target, ignore=shutil.ignore_patterns("dagster_home"))
        return target
