"""Idempotency and determinism: reruns give identical bytes and Dagster data versions; backfilling
days out of order gives the same pools as in order."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import DAY1, DAY2, data_versions, materialize, partition_hashes, sha256_file

from oro_assets.arena.firehose import simulate_day
from oro_assets.arena.problems import load_problems
from oro_assets.curation.clusters import Registry
from oro_assets.curation.pipeline import curate_partition
from oro_assets.judge.rule import RuleJudge
from oro_assets.traces.ingest import normalize_partition
from oro_assets.traces.reader import iter_partition_files

DAYS = ("2026-02-01", "2026-02-02", "2026-02-03")


@pytest.fixture(scope="module")
def rerun_root(tmp_path_factory, reference, sim_firehose):
    ref_root, _ = reference
    root = tmp_path_factory.mktemp("rerun") / "data"
    shutil.copytree(ref_root, root)
    for job, partition in (("arena_job", None), ("curation_job", DAY1)):  # the whole graph of the day again
        proc = materialize(root, sim_firehose, job, partition)
        assert proc.returncode == 0, proc.stdout[-3000:]
    return root


def unpartitioned_hashes(data_dir: Path) -> dict[str, str]:
    files = sorted((data_dir / "warehouse").glob("*.parquet")) + [data_dir / "state/leak_clusters/registry.parquet"]
    return {p.name: sha256_file(p) for p in files}


@pytest.mark.slow
def test_rematerialising_a_partition_gives_identical_bytes_and_data_versions(reference, rerun_root):
    ref_root, ref_hashes = reference
    assert partition_hashes(rerun_root, DAY1) == ref_hashes
    assert unpartitioned_hashes(rerun_root) == unpartitioned_hashes(ref_root)
    assert {"problem_pool.parquet", "leak_clusters.parquet", "registry.parquet"} <= set(unpartitioned_hashes(ref_root))
    versions = data_versions(rerun_root, DAY1)
    assert {"raw_traces", "normalized_traces", "gated_traces", "split_traces", "trace_ledger"} <= set(versions)
    for asset, history in versions.items():
        assert len(history) == 2, (asset, history)
        assert history[0] == history[1], f"{asset}: data version changed on an identical rerun"


@pytest.mark.slow
def test_data_version_follows_content(tmp_path, rerun_root, sim_firehose):
    """The same code over a changed day (20 lines dropped) must record a different data version."""
    firehose = tmp_path / "firehose"
    shutil.copytree(sim_firehose, firehose, ignore=shutil.ignore_patterns("catalogue.jsonl"))
    part = sorted((firehose / DAY1).glob("*.jsonl.gz"))[0]
    lines = gzip.decompress(part.read_bytes()).splitlines(keepends=True)
    part.write_bytes(gzip.compress(b"".join(lines[:-20]), mtime=0))
    root = tmp_path / "data"
    shutil.copytree(rerun_root, root)
    proc = materialize(root, firehose, "curation_job", DAY1)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert partition_hashes(root, DAY1)["normalized_traces/2026-01-02.parquet"] != \
        partition_hashes(rerun_root, DAY1)["normalized_traces/2026-01-02.parquet"]
    history = data_versions(root, DAY1)["normalized_traces"]
    assert history[0] != history[1], "normalized_traces kept its data version although its content changed"


# ------------------------------------------------------------------------- out-of-order backfill


@pytest.fixture(scope="module")
def three_days(tmp_path_factory):
    """Three simulated days drawing on overlapping problems (60 per day out of the shared pool)."""
    root = tmp_path_factory.mktemp("days")
    days = {}
    for day in DAYS:
        simulate_day(day, 150, root, seed=15, workers=1, problems_per_day=60)
        normalize_partition(iter_partition_files(str(root), day), day, root / f"n-{day}.parquet",
                            root / f"q-{day}.parquet")
        days[day] = (pq.read_table(root / f"n-{day}.parquet").to_pylist(),
                     pq.read_table(root / f"q-{day}.parquet").to_pylist())
    return days, load_problems([root / "problems.jsonl"])


def backfill(order, days, problems, state: Path, with_pool: bool) -> tuple[dict, dict]:
    """Curate ``order`` day by day through the pipeline's steps; the split step loads the persistent
    registry under ``state``, assigns and saves it (under its lock), as the split asset does."""
    if with_pool:  # what arena_job's leak_clusters asset does before any day is curated
        registry = Registry()
        registry.assign(problems, first_seen="problem_pool")
        registry.save(state)
    pools: dict[str, tuple] = {}
    for day in order:
        out = curate_partition(*days[day], judge=RuleJudge(), pool_problems=problems if with_pool else (),
                               partition=day, state_dir=state)
        pools.update({r["trace_id"]: (r["pool"], r["cluster_id"]) for r in out.curated_traces})
        pools.update({r["trace_id"]: ("rejected", r["reason"]) for r in out.rejections if r["reason"] == "leak_conflict"})
    members = Registry.load(state).members
    return pools, {k: (m["cluster_id"], m["pool"], m["status"]) for k, m in members.items()}


@pytest.mark.slow
def test_out_of_order_backfill_gives_the_same_pools_with_a_problem_pool(three_days, tmp_path):
    days, problems = three_days
    in_order = backfill(DAYS, days, problems, tmp_path / "a", with_pool=True)
    assert len(in_order[0]) > 50
    for n, order in enumerate([DAYS[::-1], (DAYS[1], DAYS[0], DAYS[2])]):
        assert backfill(order, days, problems, tmp_path / f"b{n}", with_pool=True) == in_order


@pytest.mark.slow
def test_out_of_order_backfill_gives_the_same_pools_without_a_problem_pool(three_days, tmp_path):
    days, problems = three_days
    in_order, _ = backfill(DAYS, days, problems, tmp_path / "a", with_pool=False)
    reversed_order, _ = backfill(DAYS[::-1], days, problems, tmp_path / "b", with_pool=False)
    assert {t: p[0] for t, p in reversed_order.items()} == {t: p[0] for t, p in in_order.items()}


def test_day_two_exists_for_the_shared_fixture(sim_firehose):
    assert sorted(p.name for p in sim_firehose.iterdir() if p.is_dir()) == [DAY1, DAY2]


def test_parallel_ingest_writes_the_same_bytes_as_one_process(tmp_path, prepared_root, sim_firehose):
    """ORO_INGEST_WORKERS only changes how fast a day is read: every curation file is byte-identical."""
    firehose = tmp_path / "firehose"
    shutil.copytree(sim_firehose, firehose)
    day = firehose / DAY1
    parts = sorted(day.glob("*.jsonl.gz"))
    lines = b"".join(gzip.decompress(p.read_bytes()) for p in parts).splitlines(keepends=True)
    for p in parts:
        p.unlink()
    third = len(lines) // 3
    for i, chunk in enumerate((lines[:third], lines[third:2 * third], lines[2 * third:])):  # parallel needs > 1 part
        with gzip.open(day / f"part-{i:05d}.jsonl.gz", "wb") as f:
            f.write(b"".join(chunk))
    hashes = {}
    for workers in ("1", "2"):
        root = tmp_path / f"data-{workers}"
        shutil.copytree(prepared_root, root)
        proc = materialize(root, firehose, "curation_job", DAY1, ORO_INGEST_WORKERS=workers)
        assert proc.returncode == 0, proc.stdout[-3000:]
        hashes[workers] = partition_hashes(root, DAY1)
    assert len(hashes["1"]) >= 12
    assert hashes["2"] == hashes["1"]
