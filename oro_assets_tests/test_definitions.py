"""The code location loads, every definition is documented, and `dg check defs` passes.

Which assets exist, and how they are wired, is pinned by test_asset_specs_snapshot.py."""

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    import os

    os.environ["ORO_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    from oro_assets.definitions import defs

    return defs().get_repository_def()


def test_every_asset_is_documented_and_owned(repo):
    graph = repo.asset_graph
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        name = key.to_user_string()
        assert node.description and len(node.description) > 20, f"{name} has no description"
        assert node.owners, f"{name} has no owner"
        assert node.group_name in {"arena", "curation", "training", "evaluation"}, name
        assert node.code_version, f"{name} has no code version"
        assert node.kinds, f"{name} has no kinds"


def test_checks_jobs_schedules_sensors_are_described(repo):
    checks = list(repo.asset_graph.asset_check_keys)
    assert len(checks) >= 10
    for key in checks:
        spec = repo.asset_graph.get_check_spec(key)
        assert spec.description, f"check {key} has no description"
    for job in repo.get_all_jobs():
        if not job.name.startswith("__"):
            assert job.description, f"job {job.name} has no description"
    assert {s.name for s in repo.schedule_defs} >= {"daily_curation_schedule"}
    assert {s.name for s in repo.sensor_defs} >= {"firehose_sensor", "retrain_sensor"}
    for sensor in repo.sensor_defs:
        assert sensor.description, sensor.name


def test_blocking_checks_guard_the_corpus(repo):
    blocking = {
        key.name
        for key in repo.asset_graph.asset_check_keys
        if repo.asset_graph.get_check_spec(key).blocking
    }
    assert {"conservation", "no_leak", "schema_valid"} <= blocking, blocking


def test_dg_check_defs_passes(tmp_path):
    env_bin = Path(sys.executable).parent
    proc = subprocess.run(
        [str(env_bin / "dg"), "check", "defs"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={"PATH": f"{env_bin}:/usr/bin:/bin", "ORO_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_curation_job_supports_partition_range_backfills(repo):
    job = repo.get_job("curation_job")
    assert job.partitions_def is not None
    for key in job.asset_layer.executable_asset_keys:
        node = repo.asset_graph.get(key)
        assert node.backfill_policy == dg.BackfillPolicy.single_run(), key


def test_training_steps_outrank_evaluations_in_the_main_job(repo):
    """With steps side by side, a free slot goes to the training chain (the critical path) first."""
    from dagster._core.storage.tags import PRIORITY_TAG

    job = repo.get_job("main_job")
    priority = {}
    for node in job.graph.node_dict.values():
        priority[node.name] = int(node.tags.get(PRIORITY_TAG, 0))
    training = {n: p for n, p in priority.items() if n == "base_model" or n.endswith("_checkpoint")}
    evals = {n: p for n, p in priority.items() if n.startswith("eval_") and n != "eval_problems"}
    assert len(training) == 6 and len(evals) >= 6, (training, evals)
    assert min(training.values()) > max(evals.values())
