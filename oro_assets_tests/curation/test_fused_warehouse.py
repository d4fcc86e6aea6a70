"""The steps fused over the warehouse (as the ``curation`` asset runs a whole day): a later step reads the tables
an earlier step of the same run finished (sealed, not yet published), the tables equal the in-memory chain's, and
a refused run publishes nothing and leaves no sealed file behind."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from oro_assets.arena.firehose import simulate_day
from oro_assets.curation.clusters import Registry
from oro_assets.curation.pipeline import STEPS, curate_files, curation_params
from oro_assets.curation.step import RunRefused, run_steps
from oro_assets.curation.store import WarehouseStore
from oro_assets.judge.rule import RuleJudge
from oro_assets.storage import Warehouse

DAY = "2026-01-02"
TABLES = ("raw_traces", "structural_labels", "subtask_traces", "gated_traces", "rejections_gates", "curated_traces",
          "split_traces", "trace_ledger")


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    root = tmp_path_factory.mktemp("fused")
    simulate_day(DAY, 60, root / "firehose", seed=15, workers=1)
    return sorted(str(p) for p in (root / "firehose" / DAY).glob("part-*"))


def _params(files: list[str]):
    params = curation_params(judge=RuleJudge(), registry=Registry())
    params.files = {DAY: files}
    return params


def test_the_steps_fused_over_the_warehouse_write_the_chains_tables(day, tmp_path):
    wh = Warehouse(tmp_path / "data")
    store = WarehouseStore(wh, tmp_path / "state")
    reports = run_steps(list(STEPS), store, [DAY], _params(day))
    memory, _ = curate_files(day, DAY, judge=RuleJudge(), registry=Registry())
    assert reports["gates"].stats[DAY]["seen"] > 0
    for table in TABLES:
        written = pq.read_table(wh.path(table, DAY))
        assert written.num_rows == memory.table(table, DAY).num_rows, table
        assert written.to_pylist() == memory.table(table, DAY).to_pylist(), table
    assert not store._sealed
    assert not [p for p in (tmp_path / "data").rglob("*.tmp")]


def test_a_refused_fused_run_publishes_nothing_it_sealed(day, tmp_path, monkeypatch):
    wh = Warehouse(tmp_path / "data")
    store = WarehouseStore(wh, tmp_path / "state")
    seen = {}

    def refuse(self, run, report, params):
        seen["sealed"] = sorted(a for a, _ in store._sealed)
        raise RunRefused("refused")

    monkeypatch.setattr(type(STEPS[2]), "before_publish", refuse)
    with pytest.raises(RunRefused):
        run_steps(list(STEPS[:3]), store, [DAY], _params(day))
    assert "structural_labels" in seen["sealed"] and "gated_traces" in seen["sealed"]
    assert not wh.exists("structural_labels", DAY) and not wh.exists("gated_traces", DAY)
    assert not store._sealed
    assert not [p for p in (tmp_path / "data").rglob("*.tmp")]
