"""Warehouse storage: atomic Parquet/JSON writes, asset paths and DuckDB views.

Layout under ``<data>/warehouse``: ``<asset>/<YYYY-MM-DD>.parquet`` for daily-partitioned
assets and ``<asset>.parquet`` for unpartitioned ones. Every write goes to a temporary file in
the same directory and is renamed into place, so a reader never sees a partial file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from oro_assets import jsonio
from oro_assets.layout import DataLayout
from oro_assets.native import kernels as _kernels
from oro_assets.settings import SettingsError, arrow_memory_pool


def use_memory_pool() -> str:
    """Make ``ORO_ARROW_MEMORY_POOL``'s allocator (``settings.arrow_memory_pool``; default ``system``) Arrow's default
    for this process and return the name of the one in use. pyarrow's own default here, mimalloc, takes its memory
    in 2 MB pages (``MADV_HUGEPAGE``) that the kernel zeroes at each first touch: on malloc the a6b1cf3-era curation
    chain took 4% less CPU and 15% less memory (``benchmarks/arrow_pool.py``). A bad value, or an allocator this
    pyarrow was built without, leaves Arrow's default (the CLI's settings check reports a bad value in one line)."""
    try:
        name = arrow_memory_pool()
    except SettingsError:
        name = None
    if name is not None:
        with contextlib.suppress(NotImplementedError):
            pa.set_memory_pool(getattr(pa, f"{name}_memory_pool")())
    return pa.default_memory_pool().backend_name


#: The Arrow allocator of this process, set once, when this module is imported (every Arrow table of the package is
#: built or read through it)
MEMORY_POOL = use_memory_pool()

_PARTITION_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ASSET_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


class StorageError(RuntimeError):
    """The data directory cannot be written (read-only, full, or a path escapes it)."""


def validate_partition(partition: str) -> str:
    """A partition key must be a real YYYY-MM-DD date: it becomes part of file paths."""
    if not isinstance(partition, str) or not _PARTITION_RE.match(partition):
        raise StorageError(f"invalid partition key {partition!r}; expected YYYY-MM-DD")
    try:
        dt.date.fromisoformat(partition)
    except ValueError:
        raise StorageError(f"invalid partition key {partition!r}; not a calendar date") from None
    return partition


def safe_join(root: Path, *parts: str) -> Path:
    """Join and refuse anything that resolves outside ``root`` (path traversal)."""
    root = root.resolve()
    target = root.joinpath(*parts).resolve()
    if target != root and root not in target.parents:
        raise StorageError(f"path {'/'.join(parts)!r} escapes {root}")
    return target


@contextlib.contextmanager
def atomic_path(final: Path, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``final``; rename it into place only if the block succeeds."""
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=suffix + ".tmp", dir=final.parent)
    except OSError as exc:  # read-only or full data dir: the same clear error as a failed write
        raise StorageError(f"could not write {final}: {exc.strerror or exc}") from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; published files follow the umask
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"could not write {final}: {exc.strerror or exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# Dictionary-encode only low-cardinality columns and keep min/max statistics off the large JSON
# columns: both are wasted work on 10-30 KB unique strings (~10% of the write time).
DICT_COLUMNS = ("partition", "source_file", "format", "status", "problem_id", "tools", "stage", "reason", "label",
                "pool", "reasoning_source")
STATS_COLUMNS = ("trace_id", "partition", "source_file", "line_no", "raw_sha256", "format", "problem_id", "status",
                 "n_steps", "n_tool_calls", "stage", "reason")


def parquet_writer(path: Path, schema: pa.Schema, compression: str = "zstd") -> pq.ParquetWriter:
    """A Parquet writer for batch-by-batch output (one row group per written batch)."""
    names = set(schema.names)
    return pq.ParquetWriter(path, schema, compression=compression,
                            use_dictionary=[c for c in DICT_COLUMNS if c in names],
                            write_statistics=[c for c in STATS_COLUMNS if c in names])


class RowGroups:
    """Cuts a stream of tables into row groups by the rows themselves: every ``max_rows`` rows, or
    sooner once the rows' ``size_columns`` reach ``max_bytes``. The file's bytes then do not depend on
    how the rows arrived (one reader's batches or several worker processes' parts). Holds at most
    one row group; :meth:`close` writes the rest."""

    def __init__(self, writer: pq.ParquetWriter, max_rows: int = 1000, max_bytes: int = 16 << 20,
                 size_columns: tuple[str, ...] = ()) -> None:
        self.writer, self.max_rows, self.max_bytes, self.size_columns = writer, max_rows, max_bytes, size_columns
        self._pending: list[pa.Table] = []
        self._rows = self._bytes = 0

    def write(self, data: pa.Table | pa.RecordBatch) -> None:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        sizes = [0] * table.num_rows
        for name in self.size_columns:
            if name in table.column_names:
                lengths = pc.fill_null(pc.binary_length(table.column(name)), 0).to_pylist()
                sizes = [a + b for a, b in zip(sizes, lengths, strict=True)]
        start = 0
        for i, size in enumerate(sizes):
            self._rows += 1
            self._bytes += size
            if self._rows >= self.max_rows or self._bytes >= self.max_bytes:
                self._pending.append(table.slice(start, i + 1 - start))
                start = i + 1
                self._flush()
        if start < table.num_rows:
            self._pending.append(table.slice(start))

    def _flush(self) -> None:
        if self._rows:
            self.writer.write_table(pa.concat_tables(self._pending), row_group_size=self._rows)
        self._pending, self._rows, self._bytes = [], 0, 0

    def close(self) -> None:
        self._flush()


_STRING = pa.string()


def _kernel_string_array(values: list) -> pa.Array | None:
    """The string column of ``values`` built by the native kernel, or None where it is not built or hands the values
    to pyarrow (anything but a list of str and None)."""
    if _kernels is None:
        return None
    built = _kernels.utf8_column(values, pa.allocate_buffer)
    if built is None:
        return None
    nulls, validity, offsets, data = built
    return pa.Array.from_buffers(_STRING, len(values), [validity, offsets, data], null_count=nulls)


def string_array(values: list) -> pa.Array:
    """``pa.array(values, type=pa.string())`` (:func:`string_array_py`): the column's buffers built by the native
    kernel (``utf8_column``: one copy of each value's UTF-8 bytes into buffers of their exact size, from Arrow's memory
    pool) where it is built and the values are a list of str and None; pyarrow converts (or refuses) anything else
    itself."""
    built = _kernel_string_array(values)
    return built if built is not None else pa.array(values, type=_STRING)


def string_array_py(values: list) -> pa.Array:
    """:func:`string_array` by pyarrow alone (the reference)."""
    return pa.array(values, type=_STRING)


def column_array(values: list, dtype: pa.DataType) -> pa.Array:
    """``pa.array(values, type=dtype)``, a string column by :func:`string_array`."""
    return string_array(values) if dtype == _STRING else pa.array(values, type=dtype)


def table_from_rows(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema=schema)`` (:func:`table_from_rows_py`): the same columns, read from the rows
    as pyarrow reads them (``row[name] if name in row else None``, every column before any is converted), each string
    column the kernel can build built by it (:func:`string_array`), every other column converted by pyarrow in the
    schema's order, so a refused value raises pyarrow's error of the first column that has one."""
    if _kernels is None or type(rows) is not list or not isinstance(schema, pa.Schema):
        return pa.Table.from_pylist(rows, schema=schema)
    # pyarrow's own expression (not row.get: a row of another mapping type is read as pyarrow reads it, errors included)
    columns = [[row[n] if n in row else None for row in rows] for n in schema.names]  # noqa: SIM401
    arrays = []
    for f, values in zip(schema, columns, strict=True):
        built = _kernel_string_array(values) if f.type == _STRING else None
        arrays.append(values if built is None else built)
    return pa.Table.from_arrays(arrays, schema=schema)


def table_from_rows_py(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """:func:`table_from_rows` by pyarrow alone (the reference)."""
    return pa.Table.from_pylist(rows, schema=schema)


#: the column types whose values ``to_pylist()`` reads back as one Python type: the ``table_rows`` kernel's kinds
_READ_BACK_KINDS = {pa.string(): 0, pa.int64(): 1, pa.float64(): 2, pa.bool_(): 3}


def table_rows(rows: list[dict], table: pa.Table) -> list[dict]:
    """``table.to_pylist()`` (:func:`table_rows_py`) of a table just built from ``rows`` (``conform(rows, schema)``).
    Where every row already is what the reader gives back (a dict of exactly the schema's names, in its order, each
    value None or exactly the type its column reads back as: str, int64 int, float, bool), the rows' copies, by the
    native kernel (``table_rows``), without decoding the columns again; anything else is read back from the table."""
    if _kernels is not None and type(rows) is list:
        schema = table.schema
        copied = _kernels.table_rows(rows, tuple(schema.names),
                                     tuple(_READ_BACK_KINDS.get(f.type, -1) for f in schema))
        if copied is not None and len(copied) == table.num_rows:
            return copied
    return table.to_pylist()


def table_rows_py(rows: list[dict], table: pa.Table) -> list[dict]:
    """:func:`table_rows` by pyarrow alone (the reference)."""
    return table.to_pylist()


def conform(rows: list[dict] | pa.Table, schema: pa.Schema,
            undeclared: Literal["error", "drop"] = "error") -> pa.Table:
    """Rows (dicts or a table) as a table of exactly ``schema``; absent columns are nulls. A column
    the schema does not declare raises ValueError, or is dropped with ``undeclared="drop"``."""
    names = set(schema.names)
    if isinstance(rows, pa.Table):
        present = set(rows.column_names)
    else:
        present = set().union(*(r.keys() for r in rows)) if rows else set()
    extra = present - names
    if extra and undeclared == "error":
        raise ValueError(f"column(s) {sorted(extra)} are not declared in the output schema "
                         f"(declare them in the schema the table is written under)")
    if not isinstance(rows, pa.Table):
        return table_from_rows(rows, schema)
    if rows.schema.equals(schema, check_metadata=True):  # already conformed (a step's kept table, written as it is)
        return rows
    cols = [rows.column(f.name).cast(f.type) if f.name in present else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def write_sorted(con: duckdb.DuckDBPyConnection, rows_sql: str, order_by: str, out: Path, schema: pa.Schema,
                 batch_rows: int = 65536) -> None:
    """Rows of a DuckDB query written to ``out`` in ``order_by`` order under ``schema``: into a
    temporary table first, then sorted and streamed to Parquet in Arrow batches. As one statement
    (the query feeding the sort) DuckDB ran out of memory at 512 MB on a 1M-record ledger; in two,
    each spills on its own and 128 MB suffices. pyarrow writes the file so its schema is ``schema``
    every day (DuckDB's own COPY marks columns REQUIRED when a day happens to have no nulls)."""
    with parquet_writer(out, schema) as writer:
        for batch in sorted_batches(con, rows_sql, order_by, schema, batch_rows):
            writer.write_batch(batch)


def sorted_batches(con: duckdb.DuckDBPyConnection, rows_sql: str, order_by: str, schema: pa.Schema,
                   batch_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """:func:`write_sorted`'s batches, for a caller that writes them itself."""
    con.execute(f"CREATE TEMP TABLE sorted_rows AS {rows_sql}")
    try:
        for batch in con.sql(f"SELECT * FROM sorted_rows ORDER BY {order_by}").to_arrow_reader(batch_rows):
            yield batch.cast(schema)
    finally:
        con.execute("DROP TABLE sorted_rows")


def iter_parquet_batches(path: Path | str, batch_size: int, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    """A Parquet file's record batches, with memory bounded by a batch.

    ``pre_buffer=False`` matters: with pyarrow's default the reader keeps every pre-buffered column
    chunk alive until it is closed, so streaming a day of normalised traces grew Arrow memory by
    ~1.3 MB per 1,000-row batch (~1.3 GB over a 1M-trace day; see benchmarks/asset_memory.py)."""
    yield from pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=batch_size, columns=columns)


@contextlib.contextmanager
def duckdb_session(temp_dir: Path | None = None, memory_limit: str = "256MB",
                   threads: int = 2) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection for day-scale joins and sorts: past ``memory_limit`` they
    spill to ``temp_dir`` instead of growing the process."""
    con = duckdb.connect()
    try:
        con.execute(f"SET memory_limit = '{memory_limit}'")
        con.execute(f"SET threads = {int(threads)}")
        if temp_dir is not None:
            Path(temp_dir).mkdir(parents=True, exist_ok=True)
            con.execute(f"SET temp_directory = '{sql_path(temp_dir)}'")
        yield con
    finally:
        con.close()


def sql_path(path: Path | str) -> str:
    """A path as a single-quoted SQL string body (quotes doubled)."""
    return Path(path).as_posix().replace("'", "''")


def write_parquet(table: pa.Table, final: Path) -> Path:
    with atomic_path(final) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return final


def write_bytes(data: bytes, final: Path) -> Path:
    with atomic_path(final) as tmp:
        tmp.write_bytes(data)
    return final


def write_json(obj: object, final: Path) -> Path:
    return write_bytes(jsonio.dumps_bytes(obj) + b"\n", final)


def write_jsonl(rows: list[dict], final: Path) -> Path:
    return write_bytes(b"".join(jsonio.dumps_bytes(r) + b"\n" for r in rows), final)


def file_sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class Warehouse:
    """Paths and I/O for asset tables under one data root."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.layout = DataLayout(self.data_dir)
        self.root = self.layout.warehouse

    def path(self, asset: str, partition: str | None = None) -> Path:
        if not _ASSET_RE.match(asset):
            raise StorageError(f"invalid asset name {asset!r}")
        if partition is None:
            return safe_join(self.root, f"{asset}.parquet")
        return safe_join(self.root, asset, f"{validate_partition(partition)}.parquet")

    def write(self, table: pa.Table, asset: str, partition: str | None = None) -> Path:
        return write_parquet(table, self.path(asset, partition))

    def read(self, asset: str, partition: str | None = None) -> pa.Table:
        path = self.path(asset, partition)
        if not path.exists():
            raise FileNotFoundError(f"{asset}{'[' + partition + ']' if partition else ''} is not materialised ({path})")
        return pq.read_table(path)

    def exists(self, asset: str, partition: str | None = None) -> bool:
        return self.path(asset, partition).exists()

    def partitions(self, asset: str) -> list[str]:
        folder = self.root / asset
        if not folder.is_dir():
            return []
        return sorted(p.stem for p in folder.glob("*.parquet") if _PARTITION_RE.match(p.stem))

    def refresh_duckdb_views(self, db_path: Path | None = None) -> list[str]:
        """(Re)create one view per asset over its Parquet files so users can query with SQL."""
        db_path = db_path or self.layout.duckdb
        db_path.parent.mkdir(parents=True, exist_ok=True)
        views: list[str] = []
        if not self.root.exists():
            return views
        con = duckdb.connect(str(db_path))
        try:
            for entry in sorted(self.root.iterdir()):
                if not _ASSET_RE.match(entry.name.removesuffix(".parquet")):
                    continue
                if entry.is_dir() and any(entry.glob("*.parquet")):
                    name, glob = entry.name, str(entry / "*.parquet")
                    con.execute(
                        f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{glob}', union_by_name=true, filename=true)"
                    )
                elif entry.suffix == ".parquet" and _ASSET_RE.match(entry.stem):
                    name = entry.stem
                    con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('{entry}')")
                else:
                    continue
                views.append(name)
        finally:
            con.close()
        return views
