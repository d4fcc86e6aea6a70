"""Row <-> Parquet glue for the curation assets (stage functions work on row dicts).

Each daily asset reads its input partition a batch at a time (:func:`iter_row_batches`) and writes
its outputs a batch at a time (:class:`PartitionWriter`), so an asset's memory is one batch, not
the day. Every output has a declared schema: a stage that starts emitting a new column fails
loudly here until the column is declared, instead of the column's type drifting between batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Literal

import pyarrow as pa

from oro_assets.storage import Warehouse, atomic_path, conform, iter_parquet_batches, parquet_writer
from oro_assets.traces.schema import NORMALIZED_SCHEMA


def _extend(base: pa.Schema, *fields: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type) for f in base] + [pa.field(n, t) for n, t in fields])


REJECTIONS_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("partition", pa.string()),
        ("problem_id", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("reasoning_score", pa.float64()),
    ]
)
LABELS_SCHEMA = pa.schema([("trace_id", pa.string()), ("partition", pa.string()), ("label", pa.string()),
                           ("evidence", pa.string()), ("kept", pa.bool_())])
SUBTASK_SCHEMA = _extend(NORMALIZED_SCHEMA, ("structural_label", pa.string()))
#: normalised row + what the gates add (``curation.gates.gate_traces``)
GATED_SCHEMA = _extend(NORMALIZED_SCHEMA, ("recommended_ids", pa.string()), ("n_tokens", pa.int64()),
                       ("reasoning_score", pa.float64()), ("reasoning_source", pa.string()),
                       ("judge_id", pa.string()), ("judge_explanation", pa.string()))
#: + what dedup and ranking add (``curation.dedup.dedup_and_rank``)
CURATED_SCHEMA = _extend(GATED_SCHEMA, ("rank_score", pa.float64()), ("dedup_group", pa.string()))
#: + what the split adds (``curation.split.split_traces``)
SPLIT_SCHEMA = _extend(CURATED_SCHEMA, ("problem_key", pa.string()), ("problem_known", pa.bool_()),
                       ("cluster_id", pa.string()), ("pool", pa.string()))


class PartitionWriter:
    """One partition of an asset written batch by batch (one row group per batch) into a temporary
    Parquet file beside its final path. Leaving the ``with`` block normally renames it into place;
    an exception (a failed or refused run) removes it and leaves the previous file untouched."""

    def __init__(self, warehouse: Warehouse, asset: str, partition: str, schema: pa.Schema,
                 undeclared: Literal["error", "drop"] = "error"):
        self.path = warehouse.path(asset, partition)
        self.schema = schema
        self.undeclared = undeclared
        self.rows = 0
        self._stack = ExitStack()

    def __enter__(self) -> PartitionWriter:
        with ExitStack() as stack:
            tmp = stack.enter_context(atomic_path(self.path))
            self._writer = stack.enter_context(parquet_writer(tmp, self.schema))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc) -> bool | None:
        return self._stack.__exit__(*exc)

    def write(self, rows: list[dict] | pa.Table) -> None:
        table = conform(rows, self.schema, self.undeclared)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows


def rejections_writer(warehouse: Warehouse, stage: str, partition: str) -> PartitionWriter:
    """Each stage's rejected rows: ``rejections_<stage>/<date>.parquet`` (the ledger gathers them)."""
    return PartitionWriter(warehouse, f"rejections_{stage}", partition, REJECTIONS_SCHEMA, undeclared="drop")


BATCH_ROWS = 1000


def iter_row_batches(warehouse: Warehouse, asset: str, partition: str, batch_size: int = BATCH_ROWS,
                     columns: list[str] | None = None,
                     keep: Callable[[pa.RecordBatch], pa.Array] | None = None) -> Iterator[list[dict]]:
    """Rows of a partition, a batch at a time: stages never hold a day of records as Python dicts.
    ``keep``: a boolean mask of a batch; only those rows become dicts (filtered in Arrow)."""
    for batch in iter_parquet_batches(warehouse.path(asset, partition), batch_size, columns):
        yield (batch.filter(keep(batch)) if keep is not None else batch).to_pylist()
