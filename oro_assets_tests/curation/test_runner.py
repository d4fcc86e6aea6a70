"""The one runner (``curation.step.run_steps``): a step run alone over the store writes what it writes
when fused with the next one, an already-conformed table is written as it is, and steps run with
the collector's young generation paced (thresholds restored after)."""

from __future__ import annotations

import gc
import time

import pyarrow as pa
import pytest

from oro_assets.curation.step import YOUNG_COLLECTION_EVERY, Output, Step, StepResult, run_steps
from oro_assets.curation.store import MemoryStore
from oro_assets.storage import conform

SCHEMA = pa.schema([("trace_id", pa.string()), ("x", pa.int64())])
DAY = "2026-03-01"


class Even(Step):
    name, input, batch_rows = "even", "source", 3
    kept = Output("even_rows", SCHEMA, "rows with an even x")

    def process(self, rows, state):
        return StepResult([r for r in rows if r["x"] % 2 == 0],
                          [{**r, "reason": "odd"} for r in rows if r["x"] % 2])


class Large(Step):
    name, input, batch_rows = "large", "even_rows", 2
    kept = Output("large_rows", SCHEMA, "even rows with x over 4")

    def process(self, rows, state):
        assert all(isinstance(r, dict) and set(r) == {"trace_id", "x"} for r in rows)  # what a reader gets
        return StepResult([r for r in rows if r["x"] > 4], [{**r, "reason": "small"} for r in rows if r["x"] <= 4])


def _store() -> MemoryStore:
    store = MemoryStore()
    store.put("source", DAY, conform([{"trace_id": f"t{i}", "x": i} for i in range(11)], SCHEMA))
    return store


def test_a_step_run_alone_writes_what_it_writes_fused():
    fused = _store()
    reports = run_steps([Even(), Large()], fused, [DAY])
    alone = _store()
    run_steps([Even()], alone, [DAY])
    run_steps([Large()], alone, [DAY])
    for asset in ("even_rows", "large_rows"):
        assert alone.rows(asset, DAY) == fused.rows(asset, DAY)
    assert [r["x"] for r in fused.rows("large_rows", DAY)] == [6, 8, 10]
    assert reports["even"].stats[DAY]["kept"] == 6 and reports["large"].stats[DAY]["kept"] == 3


def test_conform_returns_an_already_conformed_table_as_is():
    table = conform([{"trace_id": "a", "x": 1}], SCHEMA)
    assert conform(table, SCHEMA) is table
    recast = conform(pa.table({"trace_id": ["a"], "x": pa.array([1], pa.int32())}), SCHEMA)
    assert recast.schema == SCHEMA and recast.to_pylist() == [{"trace_id": "a", "x": 1}]


class Thresholds(Step):
    """Records the collector's thresholds its ``process`` ran under (and fails when told to)."""
    name, input, batch_rows = "thresholds", "source", 100
    seen: list[tuple[int, int, int]] = []
    fail = False

    def process(self, rows, state):
        type(self).seen.append(gc.get_threshold())
        if self.fail:
            raise RuntimeError("step failed")
        return StepResult(rows, [])


def test_steps_run_with_young_collections_paced_and_the_thresholds_come_back():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        Thresholds.seen = []
        run_steps([Thresholds()], _store(), [DAY])
        assert Thresholds.seen == [(YOUNG_COLLECTION_EVERY, 10, 10)]
        assert gc.get_threshold() == (700, 10, 10)
        Thresholds.fail = True
        with pytest.raises(RuntimeError):
            run_steps([Thresholds()], _store(), [DAY])
        assert gc.get_threshold() == (700, 10, 10)  # restored after a failed run too
        gc.set_threshold(0)  # collection off: left off
        Thresholds.fail, Thresholds.seen = False, []
        run_steps([Thresholds()], _store(), [DAY])
        assert Thresholds.seen[0][0] == 0 and gc.get_threshold()[0] == 0
    finally:
        Thresholds.fail = False
        gc.set_threshold(*before)


class SlowRead(Step):
    """Reads its two batches slowly and processes them slowly, each for its own known time."""
    name, input, batch_rows = "slow_read", "source", 6
    read_pause, process_pause = 0.1, 0.02

    def read(self, ctx, state):
        for batch in super().read(ctx, state):
            time.sleep(self.read_pause)
            yield batch

    def process(self, rows, state):
        time.sleep(self.process_pause)
        return StepResult(rows, [])


def test_the_first_steps_read_is_timed_apart_from_its_process_and_the_next_steps():
    reports = run_steps([SlowRead(), Large()], _store(), [DAY])
    first = reports["slow_read"]
    # 11 rows in batches of 6: two reads and two processes
    assert 2 * SlowRead.read_pause <= first.read_seconds < 2 * SlowRead.read_pause + 0.5
    assert 2 * SlowRead.process_pause <= first.seconds < 2 * SlowRead.read_pause  # no read time in it
    assert reports["large"].read_seconds == 0.0  # fed by the step before: it reads nothing itself
    # sleeping costs no CPU: the thread's CPU seconds stay far below the wall seconds
    assert 0.0 <= first.read_cpu_seconds < SlowRead.read_pause and 0.0 <= first.cpu_seconds < SlowRead.process_pause



def test_a_step_that_reads_no_rows_is_not_fed_and_the_step_before_still_writes():
    """A step declaring ``reads_rows = False`` (the ledger) is not handed the kept rows of the step
    before, which then writes its table without converting it back into rows (``ctx.fused`` off)."""
    fed: list[int] = []
    fused: list[bool] = []

    class Sink(Step):
        name, input, batch_rows, reads_rows = "sink", "even_rows", 2, False

        def process(self, rows, state):
            fed.append(len(rows))
            return StepResult(rows, [])

    class EvenSeen(Even):
        def begin(self, ctx):
            fused.append(ctx.fused)

    store = _store()
    reports = run_steps([EvenSeen(), Sink()], store, [DAY])
    assert fed == [] and fused == [False]
    assert store.table("even_rows", DAY).column("x").to_pylist() == [0, 2, 4, 6, 8, 10]
    assert reports["even"].stats[DAY]["kept"] == 6
    # fed as before when it reads them
    Sink.reads_rows = True
    run_steps([EvenSeen(), Sink()], _store(), [DAY])
    assert sum(fed) == 6 and fused == [False, True]


class CountingStore(MemoryStore):
    """Records the batch size each read asked for."""

    def __init__(self):
        super().__init__()
        self.asked: list[int] = []

    def batches(self, asset, partition, batch_rows, columns=None):
        self.asked.append(batch_rows)
        yield from super().batches(asset, partition, batch_rows, columns)


def test_a_step_with_large_batches_reads_its_input_in_small_ones_and_processes_the_same_batches():
    from oro_assets.curation import step as step_module

    seen: list[list[int]] = []

    class Wide(Step):
        name, input, batch_rows = "wide", "source", 2500
        kept = Output("wide_rows", SCHEMA, "every row")

        def process(self, rows, state):
            seen.append([r["x"] for r in rows])
            return StepResult(rows, [])

    store = CountingStore()
    store.put("source", DAY, conform([{"trace_id": f"t{i}", "x": i} for i in range(6000)], SCHEMA))
    run_steps([Wide()], store, [DAY])
    assert store.asked == [step_module.READ_ROWS] and step_module.READ_ROWS <= 1000
    # the step still sees batches of its own size, in order: 2,500, 2,500 and the last 1,000
    assert [len(b) for b in seen] == [2500, 2500, 1000]
    assert [x for b in seen for x in b] == list(range(6000))
    assert [r["x"] for r in store.rows("wide_rows", DAY)] == list(range(6000))
