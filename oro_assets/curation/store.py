"""Where the curation steps read and write their tables: the warehouse's Parquet partitions, or memory.

One interface, two stores. :class:`WarehouseStore` is what the assets use: each output is written
batch by batch (one row group per batch) into a temporary Parquet file renamed into place when the
run succeeds (:class:`PartitionWriter`). :class:`MemoryStore` keeps the same conformed Arrow tables in
memory (tests, benchmarks, :func:`oro_assets.curation.pipeline.curate_partition`). Every write goes
through the output's declared schema in both, so the two hold the same rows with the same types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Literal, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets import jsonio
from oro_assets.layout import StateLayout
from oro_assets.storage import Warehouse, atomic_path, conform, iter_parquet_batches, parquet_writer

Undeclared = Literal["error", "drop"]


class Store(Protocol):
    """What a step needs of the tables it reads and writes (one partition at a time)."""

    def exists(self, asset: str, partition: str) -> bool: ...

    def num_rows(self, asset: str, partition: str) -> int: ...

    def batches(self, asset: str, partition: str, batch_rows: int,
                columns: list[str] | None = None) -> Iterator[pa.RecordBatch]: ...

    def table(self, asset: str, partition: str, columns: list[str] | None = None) -> pa.Table: ...

    def source(self, asset: str, partition: str) -> Path | pa.Table: ...

    def writer(self, asset: str, partition: str, schema: pa.Schema, undeclared: Undeclared = "error"): ...


class PartitionWriter:
    """One partition of an asset written batch by batch (one row group per batch) into a temporary
    Parquet file beside its final path. Leaving the ``with`` block normally renames it into place;
    an exception (a failed or refused run) removes it and leaves the previous file untouched.
    :meth:`seal` finishes the file before that, so later steps of the same run can read it (``sealed``:
    the store's map of such files, which it reads before the published ones)."""

    def __init__(self, warehouse: Warehouse, asset: str, partition: str, schema: pa.Schema,
                 undeclared: Undeclared = "error", sealed: dict[tuple[str, str], Path] | None = None):
        self.path = warehouse.path(asset, partition)
        self.key = (asset, partition)
        self.schema = schema
        self.undeclared = undeclared
        self.rows = 0
        self._sealed = sealed if sealed is not None else {}
        self._stack = ExitStack()

    def __enter__(self) -> PartitionWriter:
        with ExitStack() as stack:
            self._tmp = stack.enter_context(atomic_path(self.path))
            self._writer = stack.enter_context(parquet_writer(self._tmp, self.schema))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc) -> bool | None:
        try:
            return self._stack.__exit__(*exc)
        finally:
            self._sealed.pop(self.key, None)

    def write(self, rows: list[dict] | pa.Table) -> None:
        table = conform(rows, self.schema, self.undeclared)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows

    def seal(self) -> None:
        """No more rows: the file is finished (readable) but not yet published."""
        self._writer.close()
        self._sealed[self.key] = self._tmp


class WarehouseStore:
    """The warehouse's daily partitions (``<data>/warehouse/<asset>/<date>.parquet``)."""

    def __init__(self, warehouse: Warehouse, state_dir: Path | None = None):
        self.warehouse = warehouse
        self.state_dir = Path(state_dir) if state_dir is not None else warehouse.layout.state
        # tables a running run has finished but not yet published: later steps of the run read these
        self._sealed: dict[tuple[str, str], Path] = {}

    def path(self, asset: str, partition: str) -> Path:
        """The published file's path (where a writer publishes)."""
        return self.warehouse.path(asset, partition)

    def _readable(self, asset: str, partition: str) -> Path:
        return self._sealed.get((asset, partition)) or self.path(asset, partition)

    def exists(self, asset: str, partition: str) -> bool:
        return (asset, partition) in self._sealed or self.warehouse.exists(asset, partition)

    def num_rows(self, asset: str, partition: str) -> int:
        return pq.ParquetFile(self._readable(asset, partition)).metadata.num_rows

    def batches(self, asset: str, partition: str, batch_rows: int,
                columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        yield from iter_parquet_batches(self._readable(asset, partition), batch_rows, columns)

    def table(self, asset: str, partition: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(self._readable(asset, partition), columns=columns)

    def source(self, asset: str, partition: str) -> Path:
        return self._readable(asset, partition)

    def writer(self, asset: str, partition: str, schema: pa.Schema, undeclared: Undeclared = "error") -> PartitionWriter:
        return PartitionWriter(self.warehouse, asset, partition, schema, undeclared, self._sealed)

    @property
    def spill_dir(self) -> Path:
        """Where DuckDB spills day-scale joins and sorts (removed by DuckDB when the session ends)."""
        return StateLayout(self.state_dir).duckdb_spill

    def staging(self, name: str) -> Path:
        path = StateLayout(self.state_dir).staging(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


class _MemoryWriter:
    def __init__(self, store: MemoryStore, key: tuple[str, str], schema: pa.Schema, undeclared: Undeclared):
        self.store, self.key, self.schema, self.undeclared = store, key, schema, undeclared
        self.rows = 0
        self.columns = store.columns.get(key[0])

    def __enter__(self) -> _MemoryWriter:
        self.store._pending[self.key] = [self._project(conform([], self.schema))]
        return self

    def _project(self, table: pa.Table) -> pa.Table:
        return table.select([c for c in self.columns if c in table.column_names]) if self.columns is not None else table

    def __exit__(self, exc_type, *exc) -> None:
        tables = self.store._pending.pop(self.key)
        if exc_type is None:
            self.store._tables[self.key] = tables

    def write(self, rows: list[dict] | pa.Table) -> None:
        table = conform(rows, self.schema, self.undeclared)
        self.rows += table.num_rows
        if table.num_rows and self.key[0] not in self.store.discard:
            self.store._pending[self.key].append(self._project(table))

    def seal(self) -> None:
        """No more rows (the table is readable by later steps already)."""


class MemoryStore:
    """Tables in memory, as Arrow. ``columns``: keep only these columns of an asset (a benchmark's
    day need not hold every normalised dialogue); ``discard``: assets counted but not kept. A table
    being written is readable at once (a later step of the same run reads it); it replaces the
    previous one when its writer closes without an error, and is dropped otherwise."""

    def __init__(self, columns: dict[str, list[str]] | None = None, discard: set[str] | frozenset = frozenset(),
                 state_dir: Path | None = None, spill_dir: Path | None = None):
        self.columns = columns or {}
        self.discard = set(discard)
        self.state_dir = state_dir
        self.spill_dir = spill_dir
        self._tables: dict[tuple[str, str], list[pa.Table]] = {}
        self._pending: dict[tuple[str, str], list[pa.Table]] = {}

    def put(self, asset: str, partition: str, table: pa.Table) -> None:
        self._tables[(asset, partition)] = [table]

    def _parts(self, asset: str, partition: str) -> list[pa.Table]:
        key = (asset, partition)
        parts = self._pending.get(key, self._tables.get(key))
        if parts is None:
            raise FileNotFoundError(f"{asset}[{partition}] is not in memory")
        return parts

    def exists(self, asset: str, partition: str) -> bool:
        return (asset, partition) in self._pending or (asset, partition) in self._tables

    def num_rows(self, asset: str, partition: str) -> int:
        return sum(t.num_rows for t in self._parts(asset, partition))

    def table(self, asset: str, partition: str, columns: list[str] | None = None) -> pa.Table:
        table = pa.concat_tables(self._parts(asset, partition))
        return table.select(columns) if columns is not None else table

    def batches(self, asset: str, partition: str, batch_rows: int,
                columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        for part in self._parts(asset, partition):
            yield from (part.select(columns) if columns is not None else part).to_batches(max_chunksize=batch_rows)

    def source(self, asset: str, partition: str) -> pa.Table:
        return self.table(asset, partition)

    def writer(self, asset: str, partition: str, schema: pa.Schema, undeclared: Undeclared = "error") -> _MemoryWriter:
        return _MemoryWriter(self, (asset, partition), schema, undeclared)

    def rows(self, asset: str, partition: str) -> list[dict]:
        return self.table(asset, partition).to_pylist() if self.exists(asset, partition) else []


BATCH_ROWS = 1000


def iter_row_batches(warehouse: Warehouse, asset: str, partition: str, batch_size: int = BATCH_ROWS,
                     columns: list[str] | None = None,
                     keep: Callable[[pa.RecordBatch], pa.Array] | None = None) -> Iterator[list[dict]]:
    """Rows of a partition, a batch at a time: never a day of records as Python dicts.
    ``keep``: a boolean mask of a batch; only those rows become dicts (filtered in Arrow)."""
    for batch in iter_parquet_batches(warehouse.path(asset, partition), batch_size, columns):
        yield (batch.filter(keep(batch)) if keep is not None else batch).to_pylist()


def pool_problems(warehouse: Warehouse) -> list[dict]:
    """The problem_pool asset's rows as problem dicts (reward decoded)."""
    if not warehouse.exists("problem_pool"):
        return []
    out = []
    for row in warehouse.read("problem_pool").to_pylist():
        out.append({**row, "reward": jsonio.loads(row["reward"]) if row.get("reward") else None,
                    "voucher": jsonio.loads(row["voucher"]) if row.get("voucher") else None})
    return out
