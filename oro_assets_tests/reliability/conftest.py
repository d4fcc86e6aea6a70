"""Shared fixtures of the reliability suite: a simulated firehose, a prepared data root (arena_job
already run) and helpers that run the real ``oro-assets`` CLI in a subprocess."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "oro_assets.cli"]
DAY1, DAY2 = "2026-01-02", "2026-01-03"
SIM_TRACES = 150
# dialogue-only records carry no validator score, so they reach the project's judge
SIM_FORMATS = {"oro_envelope": 0.5, "dialogue_only": 0.3, "shoppingbench_rollout": 0.1, "openai_messages": 0.1}
_CLEARED = ("ORO_FIREHOSE_DIR", "ORO_PROBLEMS", "ORO_JUDGE", "ORO_JUDGE_BASE_URL", "ORO_JUDGE_MODEL",
            "MLFLOW_TRACKING_URI", "DAGSTER_HOME", "ORO_MODEL_PROFILE", "OPENAI_API_KEY", "ORO_DATA_DIR")


def cli_env(data_dir: Path, firehose: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update({"ORO_DATA_DIR": str(data_dir), "ORO_PARTITIONS_START": "2026-01-01", "DAGSTER_DISABLE_TELEMETRY": "1",
                "PYTHONUNBUFFERED": "1"})
    if firehose is not None:
        env["ORO_FIREHOSE_DIR"] = str(firehose)
    env.update(extra)
    return env


def run_cli(args: list[str], env: dict[str, str], timeout: float = 180, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, **kw)


def materialize(data_dir: Path, firehose: Path, job: str, partition: str | None = None, **extra: str):
    args = ["materialize", "--job", job] + (["--partition", partition] if partition else [])
    return run_cli(args, cli_env(data_dir, firehose, **extra))


def trajectory_of(body: dict) -> str:
    """The fenced trajectory of a judge request, without the fence lines (they carry a per-request nonce)."""
    return body["messages"][1]["content"].split("\n", 2)[2].rsplit("\n<<<END TRAJECTORY", 1)[0]


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def partition_hashes(data_dir: Path, partition: str) -> dict[str, str]:
    """sha256 of every warehouse file of one partition, by path relative to the warehouse."""
    root = data_dir / "warehouse"
    return {str(p.relative_to(root)): sha256_file(p) for p in sorted(root.rglob(f"{partition}.parquet"))}


def leftovers(data_dir: Path) -> list[str]:
    """Temporary files an interrupted write could leave in the warehouse or state folders."""
    out = []
    for sub in ("warehouse", "state"):
        base = data_dir / sub
        if base.exists():
            out += [str(p) for p in base.rglob("*") if p.is_file() and (".tmp" in p.name or p.name.startswith("."))]
    return sorted(out)


@pytest.fixture(scope="session")
def sim_firehose(tmp_path_factory) -> Path:
    """Two simulated days (all four formats) with ``problems.jsonl`` and ``catalogue.jsonl`` beside them."""
    from oro_assets.arena.firehose import simulate_day

    root = tmp_path_factory.mktemp("firehose")
    for day in (DAY1, DAY2):
        simulate_day(day, SIM_TRACES, root, seed=15, format_shares=SIM_FORMATS, workers=1)
    shutil.rmtree(root / "_truth")
    return root


@pytest.fixture(scope="session")
def prepared_root(tmp_path_factory, sim_firehose) -> Path:
    """A data root where ``arena_job`` ran (problem pool + leak-cluster registry); copy it, never write to it."""
    root = tmp_path_factory.mktemp("prepared") / "data"
    proc = materialize(root, sim_firehose, "arena_job")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root


@pytest.fixture
def fresh_root(tmp_path, prepared_root) -> Path:
    dest = tmp_path / "data"
    shutil.copytree(prepared_root, dest)
    return dest


@pytest.fixture(scope="session")
def reference(tmp_path_factory, prepared_root, sim_firehose) -> tuple[Path, dict[str, str]]:
    """An uninterrupted curation run of DAY1 in its own data root (copy it before writing)."""
    root = tmp_path_factory.mktemp("reference") / "data"
    shutil.copytree(prepared_root, root)
    proc = materialize(root, sim_firehose, "curation_job", DAY1)
    assert proc.returncode == 0, proc.stdout[-3000:]
    hashes = partition_hashes(root, DAY1)
    assert len(hashes) >= 12, hashes  # every daily asset + the rejections of each stage
    return root, hashes


def data_versions(data_dir: Path, partition: str) -> dict[str, list[str]]:
    """Dagster data versions recorded for each asset's materialisations of ``partition`` (newest first)."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(data_dir / "dagster_home"))
    try:
        out: dict[str, list[str]] = {}
        for key in instance.get_asset_keys():
            records = instance.fetch_materializations(key, limit=50).records
            versions = [r.asset_materialization.tags.get("dagster/data_version") for r in records
                        if r.asset_materialization.partition == partition]
            if versions:
                out[key.to_user_string()] = versions
        return out
    finally:
        instance.dispose()
