"""Every selection works: ``*trace_ledger`` materialises the whole upstream graph of the ledger in one
run (the multi-assets are subsettable), and one asset of a multi-asset can be materialised alone once
its upstream exists, without rewriting its siblings."""

from __future__ import annotations

import dagster as dg
import pyarrow.parquet as pq
import pytest

DAY = "2026-01-15"
TRACES = 40


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("selection")
    mp = pytest.MonkeyPatch()
    for name in ("ORO_FIREHOSE_DIR", "ORO_PROBLEMS", "ORO_JUDGE", "ORO_MODEL_PROFILE", "MLFLOW_TRACKING_URI"):
        mp.delenv(name, raising=False)
    mp.setenv("ORO_DATA_DIR", str(root / "data"))
    mp.setenv("ORO_SIM_TRACES_PER_DAY", str(TRACES))
    mp.setenv("ORO_PARTITIONS_START", "2026-01-01")
    from oro_assets.definitions import defs

    d = defs()
    (root / "dagster_home").mkdir()
    with dg.instance_for_test(temp_dir=str(root / "dagster_home")) as instance:
        yield d, instance, root / "data" / "warehouse"
    mp.undo()


def _run(d, instance, selection: str) -> tuple[dg.ExecuteInProcessResult, set[str]]:
    keys = dg.AssetSelection.from_string(selection).resolve(d.resolve_asset_graph())
    job = d.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(partition_key=DAY, asset_selection=list(keys), instance=instance,
                                    raise_on_error=False)
    done = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()
            for e in [e.event_specific_data.materialization]}
    return result, done


def test_upstream_of_the_ledger_materialises_in_one_run(graph):
    d, instance, wh = graph
    result, done = _run(d, instance, "*trace_ledger")
    assert result.success
    assert {"arena_world", "problem_pool", "leak_clusters", "raw_traces", "normalized_traces", "structural_labels",
            "gated_traces", "curated_traces", "split_traces", "trace_ledger"} <= done
    # the ledger does not read the sub-task traces: the structural step ran, its other table was not written
    assert "subtask_traces" not in done and not (wh / "subtask_traces").exists()
    raw = pq.read_table(wh / "raw_traces" / f"{DAY}.parquet")
    ledger = pq.read_table(wh / "trace_ledger" / f"{DAY}.parquet")
    assert raw.num_rows == ledger.num_rows >= TRACES  # one ledger row per raw record
    checks = {(c.asset_key.to_user_string(), c.check_name): c.passed for c in
              (e.event_specific_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION")}
    assert checks[("trace_ledger", "conservation")] and checks[("normalized_traces", "schema_valid")]


def test_one_asset_of_a_multi_asset_alone_leaves_its_siblings_alone(graph):
    d, instance, wh = graph
    siblings = [wh / "structural_labels" / f"{DAY}.parquet", wh / "rejections_structural" / f"{DAY}.parquet",
                wh / "raw_traces" / f"{DAY}.parquet"]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in siblings}
    result, done = _run(d, instance, "subtask_traces")
    assert result.success and done == {"subtask_traces"}
    subtasks = pq.read_table(wh / "subtask_traces" / f"{DAY}.parquet")
    labels = pq.read_table(siblings[0])
    assert subtasks.column("trace_id").to_pylist() == \
        [t for t, label in zip(labels.column("trace_id").to_pylist(), labels.column("label").to_pylist(), strict=True)
         if label == "subtask"]
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in siblings} == before

    result, done = _run(d, instance, "normalized_traces")  # ingest without rewriting the raw index
    assert result.success and done == {"normalized_traces"}
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in siblings} == before
    assert not list((wh.parent / "state" / "staging").glob("*"))  # nothing left behind


def test_a_single_downstream_asset_reruns_from_its_upstream(graph):
    d, instance, wh = graph
    gated = wh / "gated_traces" / f"{DAY}.parquet"
    old = gated.read_bytes()
    result, done = _run(d, instance, "gated_traces")
    assert result.success and done == {"gated_traces"}
    assert gated.read_bytes() == old  # byte-identical rerun
