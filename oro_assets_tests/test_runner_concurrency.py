"""``runner.run_job(max_concurrent=N)``: the multiprocess executor the main command uses by default gives
the same records as the in-process one, and really runs steps in their own processes."""

from __future__ import annotations

import polars as pl
import pytest
from dagster import DagsterEventType

from oro_assets.ops import runner
from oro_assets.ops.instance import get_instance
from oro_assets.settings import load_settings

DAY = "2026-01-02"


def _run(root, monkeypatch, max_concurrent: int) -> tuple[pl.DataFrame, set[str]]:
    monkeypatch.setenv("ORO_DATA_DIR", str(root))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the previous run exported its own
    monkeypatch.setenv("ORO_SIM_TRACES_PER_DAY", "40")
    runner._load_definitions.cache_clear()  # the definitions read ORO_DATA_DIR
    settings = load_settings()
    lines: list[str] = []
    assert runner.run_job(settings, "curation_job", partition=DAY, max_concurrent=max_concurrent, log=lines.append), lines
    instance = get_instance(settings)
    (run,) = instance.get_runs()
    assert run.tags.get("dagster/partition") == DAY
    events = {e.dagster_event.event_type_value for e in instance.all_logs(run.run_id) if e.dagster_event}
    ledger = pl.read_parquet(settings.warehouse_dir / "trace_ledger" / f"{DAY}.parquet")
    assert ledger["source_file"].str.starts_with(str(root)).all()  # each run read its own firehose
    return ledger.drop("source_file").sort("trace_id"), events


@pytest.mark.timeout(600)
def test_multiprocess_run_writes_what_the_in_process_run_writes(tmp_path, monkeypatch, data_dir):
    serial, serial_events = _run(tmp_path / "serial", monkeypatch, 1)
    side_by_side, events = _run(tmp_path / "side_by_side", monkeypatch, 2)
    assert DagsterEventType.STEP_WORKER_STARTED.value in events  # a process per step
    assert DagsterEventType.STEP_WORKER_STARTED.value not in serial_events
    assert len(serial) > 0
    assert side_by_side.equals(serial)


def test_max_concurrent_below_one_is_refused(data_dir):
    with pytest.raises(runner.RunArgumentError, match="max_concurrent must be 1 or more, got 0"):
        runner.run_job(load_settings(), "curation_job", partition=DAY, max_concurrent=0)
