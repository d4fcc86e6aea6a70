"""Fault injection on the real Dagster job: SIGKILL a partition's materialisation mid-way, rerun it,
and get byte-identical outputs, readable files only, and a consistent registry and judge cache."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import CLI, DAY1, REPO, cli_env, leftovers, materialize, partition_hashes, sha256_file

pytestmark = pytest.mark.slow


def judge_cache_rows(data_dir: Path) -> list[tuple]:
    path = data_dir / "state" / "judge_cache.sqlite"
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return sorted(con.execute("SELECT trace_hash, config_hash, score, gate, explanation FROM judge_cache"))
    finally:
        con.close()


def assert_all_parquet_readable(data_dir: Path) -> int:
    n = 0
    for path in (data_dir / "warehouse").rglob("*.parquet"):
        pq.read_metadata(path)  # a torn file has no footer and raises
        n += 1
    return n


def _reached(folder: Path, sealed: bool) -> bool:
    """The partition's file under ``folder`` published, or (``sealed``) a hidden temporary there finished (its footer
    written) but not yet published: the fused pass past that step, its tables not published."""
    if not sealed:
        return (folder / f"{DAY1}.parquet").exists()
    for path in folder.glob(".*"):
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # published (renamed) meanwhile
            continue
        if len(data) > 12 and data.endswith(b"PAR1"):
            return True
    return False


# ingest's first file; mid-way through the fused pass: the split's table sealed, nothing after ingest published
@pytest.mark.parametrize("kill_when", ["normalized_traces", "split_traces sealed"])
def test_sigkill_then_rerun_is_byte_identical(kill_when, fresh_root, sim_firehose, reference):
    ref_root, ref_hashes = reference
    asset, _, sealed = kill_when.partition(" ")
    target = fresh_root / "warehouse" / asset
    proc = subprocess.Popen([*CLI, "materialize", "--job", "curation_job", "--partition", DAY1],
                            env=cli_env(fresh_root, sim_firehose), cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not _reached(target, bool(sealed)) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"the run ended before {kill_when} appeared"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    killed_state = partition_hashes(fresh_root, DAY1)
    assert killed_state != ref_hashes, "the kill came too late to test anything"
    # nothing torn is visible under a final name: every .parquet has its footer
    assert_all_parquet_readable(fresh_root)
    # temporaries of the killed run (if any) are hidden names that no reader globs
    for tmp in leftovers(fresh_root):
        assert not tmp.endswith(".parquet"), tmp

    rerun = materialize(fresh_root, sim_firehose, "curation_job", DAY1)
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    assert partition_hashes(fresh_root, DAY1) == ref_hashes
    registry = Path("state/leak_clusters/registry.parquet")
    assert sha256_file(fresh_root / registry) == sha256_file(ref_root / registry)
    assert judge_cache_rows(fresh_root) == judge_cache_rows(ref_root)
    assert assert_all_parquet_readable(fresh_root) > 12
