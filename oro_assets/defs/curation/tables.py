"""Row <-> Parquet glue for the curation assets (stage functions work on row dicts)."""


import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.storage import Warehouse

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


def rows_to_table(rows: list[dict], base: pa.Schema | None = None) -> pa.Table:
    """A table from row dicts; base-schema columns keep their declared types, extra columns are inferred."""
    if not rows:
        return pa.Table.from_pylist([], schema=base or pa.schema([("trace_id", pa.string())]))
    if base is None:
        return pa.Table.from_pylist(rows)
    names = list(dict.fromkeys(k for r in rows for k in r))
    extra = [n for n in names if n not in base.names]
    inferred = pa.Table.from_pylist([{k: r.get(k) for k in extra} for r in rows]) if extra else None
    fields = [pa.field(f.name, f.type) for f in base] + ([inferred.schema.field(n) for n in extra] if inferred else [])
    return pa.Table.from_pylist([{k: r.get(k) for k in [f.name for f in fields]} for r in rows], schema=pa.schema(fields))


def rejections_table(rows: list[dict]) -> pa.Table:
    """One batch's rejected rows in the rejections schema (kept as Arrow until the partition is written)."""
    clean = [{f.name: r.get(f.name) for f in REJECTIONS_SCHEMA} for r in rows]
    return pa.Table.from_pylist(clean, schema=REJECTIONS_SCHEMA)


def write_rejections(warehouse: Warehouse, stage: str, partition: str, tables: list[pa.Table]) -> None:
    """Each stage's rejected rows: ``rejections_<stage>/<date>.parquet`` (the ledger gathers them)."""
    write_tables(warehouse, f"rejections_{stage}", partition, tables, REJECTIONS_SCHEMA)


def read_rejections(warehouse: Warehouse, stage: str, partition: str) -> list[dict]:
    return pq.read_table(warehouse.path(f"rejections_{stage}", partition)).to_pylist()


BATCH_ROWS = 1000


def iter_row_batches(warehouse: Warehouse, asset: str, partition: str, batch_size: int = BATCH_ROWS,
                     columns: list[str] | None = None):
    """Rows of a partition, a batch at a time: stages never hold a day of records as Python dicts."""
    parquet = pq.ParquetFile(warehouse.path(asset, partition))
    for batch in parquet.iter_batches(batch_size=batch_size, columns=columns):
        yield batch.to_pylist()


def write_tables(warehouse: Warehouse, asset: str, partition: str, tables: list[pa.Table],
                 base: pa.Schema | None = None) -> None:
    """Write the Arrow batches of one partition as one file (columns a batch lacked become nulls)."""
    non_empty = [t for t in tables if t.num_rows]
    if non_empty:
        table = pa.concat_tables(non_empty, promote_options="permissive")
    else:
        table = rows_to_table([], base)
    warehouse.write(table, asset, partition)
