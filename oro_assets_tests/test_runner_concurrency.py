"""``runner.run_job(max_concurrent=N)``: the multiprocess executor the main command uses by default gives
the same records as the in-process one, and really runs steps in their own processes."""

from __future__ import annotations

import os
import time

import dagster as dg
import polars as pl
import pytest
from dagster import DagsterEventType

from oro_assets.defs.ops.executor import oro_executor
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


@pytest.mark.timeout(600)
def test_each_multiprocess_run_in_one_process_writes_its_own_data_root(tmp_path, monkeypatch, data_dir):
    """Step processes fork from a server the first multiprocess run starts; a later run with another data root must
    not have its steps write into the first one's (they did: the second root got no ledger)."""
    first, _ = _run(tmp_path / "first", monkeypatch, 2)
    second, events = _run(tmp_path / "second", monkeypatch, 2)  # _run reads the ledger from the second root
    assert DagsterEventType.STEP_WORKER_STARTED.value in events
    assert len(first) > 0 and second.equals(first)


def test_the_step_server_is_kept_while_the_environment_is_and_restarted_when_it_changes(monkeypatch):
    import multiprocessing

    def forked_once() -> int:  # a process from the forkserver; returns the server's pid
        process = multiprocessing.get_context("forkserver").Process(target=os.getpid)
        process.start()
        process.join()
        return multiprocessing.forkserver._forkserver._forkserver_pid

    forked_once()
    assert runner.step_server_for_this_environment()  # a server run_job did not start: its environment is unknown
    server = forked_once()
    assert not runner.step_server_for_this_environment()  # a backfill's next day: same environment, same server
    assert forked_once() == server
    monkeypatch.setenv("ORO_DATA_DIR", "/another/root")
    assert runner.step_server_for_this_environment()
    assert forked_once() != server


def test_max_concurrent_below_one_is_refused(data_dir):
    with pytest.raises(runner.RunArgumentError, match="max_concurrent must be 1 or more, got 0"):
        runner.run_job(load_settings(), "curation_job", partition=DAY, max_concurrent=0)


# -------------------------------------------------------------------------- one training step at a time
def _timed(name: str, **kw):
    @dg.asset(name=name, **kw)
    def _asset(context) -> None:  # unannotated: Dagster does not resolve a string annotation here
        started = time.time()
        time.sleep(2.0)
        # the instance's folder, not an environment variable: step processes fork from a server that an earlier
        # test may have started with another environment
        with open(os.path.join(context.instance.root_directory, name), "w") as fh:
            fh.write(f"{started} {time.time()}")

    return _asset


def three_independent_steps_job() -> dg.JobDefinition:
    """Two training steps (the tag every training asset carries) and an evaluation-like step, none depending on
    another: the executor could start all three at once."""
    tag = {"oro/kind": "training"}
    defs = dg.Definitions(assets=[_timed("train_a", op_tags=tag), _timed("train_b", op_tags=tag), _timed("other")],
                          jobs=[dg.define_asset_job("three", selection="*")], executor=oro_executor)
    return defs.resolve_job_def("three")


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.timeout(600)
def test_the_code_locations_executor_runs_one_training_step_at_a_time(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    with dg.DagsterInstance.local_temp(str(home)) as instance:
        result = dg.execute_job(dg.reconstructable(three_independent_steps_job), instance,
                                run_config=runner.multiprocess_execution_config(3))
        assert result.success
    times = {n: tuple(map(float, (home / n).read_text().split())) for n in ("train_a", "train_b", "other")}
    assert not _overlap(times["train_a"], times["train_b"]), times
    # the executor did run steps side by side: the evaluation-like step beside a training one
    assert _overlap(times["other"], times["train_a"]) or _overlap(times["other"], times["train_b"]), times


def test_every_job_and_the_uis_asset_materialisation_use_that_executor():
    from oro_assets.definitions import defs

    definitions = defs()
    jobs = [definitions.resolve_job_def(name) for name in ("main_job", "final_report_job", "training_job", "arms_job")]
    jobs.append(definitions.resolve_implicit_global_asset_job_def())  # what the UI's "Materialize" runs
    assert all(job.executor_def is oro_executor for job in jobs)
