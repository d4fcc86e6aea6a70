"""Row <-> Parquet glue for the curation assets (stage functions work on row dicts).

Each daily asset reads its input partition a batch at a time (:func:`iter_row_batches`) and writes
its outputs a batch at a time (:class:`PartitionWriter`), so an asset's memory is one batch, not
the day. Every output has a declared schema: a stage that starts emitting a new column fails
loudly here until the column is declared, instead of the column's type drifting between batches.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from oro_assets.storage import Warehouse, atomic_path, iter_parquet_batches, parquet_writer
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


def conform(rows: list[dict] | pa.Table, schema: pa.Schema, undeclared: Literal["error", "drop"] = "error") -> pa.Table:
    """Rows as a table of exactly ``schema`` (absent columns are nulls). A column the schema does not
    declare raises ValueError, or is dropped with ``undeclared="drop"`` (rejections keep only the
    ledger's columns)."""
    names = set(schema.names)
    if isinstance(rows, pa.Table):
        present = set(rows.column_names)
    else:
        present = set().union(*(r.keys() for r in rows)) if rows else set()
    extra = present - names
    if extra and undeclared == "error":
        raise ValueError(f"column(s) {sorted(extra)} are not declared in the output schema "
                         f"(add them to oro_assets/defs/curation/tables.py)")
    if not isinstance(rows, pa.Table):
        return pa.Table.from_pylist(rows, schema=schema)
    cols = [rows.column(f.name).cast(f.type) if f.name in present else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


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
                     columns: list[str] | None = None, trace_ids: pa.Array | None = None):
    """Rows of a partition, a batch at a time: stages never hold a day of records as Python dicts.
    ``trace_ids``: only rows with these ids (filtered in Arrow, before any dict is built)."""
    for batch in iter_parquet_batches(warehouse.path(asset, partition), batch_size, columns):
        if trace_ids is not None:
            batch = batch.filter(pc.is_in(batch.column("trace_id"), value_set=trace_ids))
        yield batch.to_pylist()
