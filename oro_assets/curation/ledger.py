"""The trace ledger: one row per raw record with its fate, plus conservation and funnel helpers.

Ledger row: ``trace_id, partition, source_file, line_no, raw_sha256, format, fate (kept|rejected),
stage (Stage), reason (ReasonCode or null when kept), detail, pool`` (pool for kept rows).
Rejections come from ingest/normalisation (the traces package's quarantine rows, which carry
their own provenance) and from the curation stages (provenance joined from the normalised rows
by ``trace_id``). Kept rows are the split's output.

The ledger is one SQL query run by DuckDB, over Arrow tables (the in-memory chain, tests) or over
the day's Parquet files (the ``trace_ledger`` asset, :func:`write_ledger`): the join and the sort
spill to disk under a memory limit, so a day of a million raw records is never a million Python
dicts, nor a day of Arrow copies. The conservation check, reason counts and funnel are SQL too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.curation.rows import as_rows
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.storage import conform, duckdb_session, sql_path, write_sorted

KEPT = "kept"
REJECTED = "rejected"
POOLS = ("train", "eval", "never_touch")
STAGE_ORDER = [str(s) for s in Stage]
LEDGER_SCHEMA = pa.schema(
    [
        ("trace_id", pa.string()),
        ("partition", pa.string()),
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("raw_sha256", pa.string()),
        ("format", pa.string()),
        ("fate", pa.string()),
        ("stage", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("pool", pa.string()),
    ]
)
_PROVENANCE = ("partition", "source_file", "line_no", "raw_sha256", "format")
_ID_AND_PROVENANCE = ("trace_id", *_PROVENANCE)
#: The columns each ledger input needs (missing ones are nulls).
INPUT_COLUMNS = {
    "provenance": _ID_AND_PROVENANCE,
    "quarantine": (*_ID_AND_PROVENANCE, "stage", "reason", "detail"),
    "rejections": ("trace_id", "partition", "stage", "reason", "detail"),
    "kept": (*_ID_AND_PROVENANCE, "cluster_id", "pool"),
}
#: Ledger (and raw index) row order: source file, line, trace id (missing values first); the rest
#: of the key only makes the order total.
ORDER_BY = "source_file NULLS FIRST, line_no NULLS FIRST, trace_id NULLS FIRST, fate, stage, reason NULLS FIRST"

LEDGER_ROWS_SQL = f"""
SELECT trace_id, partition, source_file, line_no, raw_sha256, format, '{REJECTED}' AS fate,
       stage, reason, coalesce(detail, '') AS detail, NULL::VARCHAR AS pool
FROM quarantine
UNION ALL
SELECT r.trace_id, coalesce(p.partition, r.partition), p.source_file, p.line_no, p.raw_sha256, p.format,
       '{REJECTED}', r.stage, r.reason, coalesce(r.detail, ''), NULL::VARCHAR
FROM rejections r LEFT JOIN provenance p ON r.trace_id = p.trace_id
UNION ALL
SELECT k.trace_id, coalesce(p.partition, k.partition), coalesce(p.source_file, k.source_file),
       coalesce(p.line_no, k.line_no), coalesce(p.raw_sha256, k.raw_sha256), coalesce(p.format, k.format),
       '{KEPT}', '{Stage.SPLIT}', NULL::VARCHAR,
       'pool=' || coalesce(k.pool, 'None') || ' cluster=' || coalesce(k.cluster_id::VARCHAR, 'None'), k.pool
FROM kept k LEFT JOIN provenance p ON k.trace_id = p.trace_id
"""
Rows = pa.Table | Iterable[dict]
Source = Rows | Path  # a Parquet file (or several: a list of paths) is read by DuckDB directly


def _table(rows: Rows, names: tuple[str, ...]) -> pa.Table:
    """``names`` columns of a table or of row dicts, typed as in the ledger (absent columns are nulls)."""
    schema = pa.schema([LEDGER_SCHEMA.field(n) if n in LEDGER_SCHEMA.names else pa.field(n, pa.string())
                        for n in names])
    return conform(rows if isinstance(rows, pa.Table) else list(as_rows(rows)), schema, undeclared="drop")


@contextmanager
def ledger_session(sources: Mapping[str, Source | list[Path]], *, where: Mapping[str, str] | None = None,
                   temp_dir: Path | None = None, memory_limit: str = "256MB") -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection where each named source is a view with the columns of ``INPUT_COLUMNS``
    (``ledger``: the ledger's columns; ``pooled``: ``trace_id``; other names: ``columns``). Parquet
    paths are scanned, Arrow tables registered, row dicts converted; Parquet and Arrow sources are
    filtered by ``where[name]`` (SQL) when given. Joins and sorts spill to ``temp_dir`` beyond
    ``memory_limit``."""
    with duckdb_session(temp_dir, memory_limit) as con:
        for name, source in sources.items():
            names = INPUT_COLUMNS.get(name) or (tuple(LEDGER_SCHEMA.names) if name == "ledger" else ("trace_id",))
            register_view(con, name, source, names, (where or {}).get(name))
        yield con


def register_view(con: duckdb.DuckDBPyConnection, name: str, source: Source | list[Path], names: tuple[str, ...],
                  where: str | None = None) -> None:
    """View ``name`` with exactly ``names`` (absent columns are typed nulls) over a Parquet file (or a
    list of them), an Arrow table (or a list of them) or row dicts, filtered by ``where``."""
    items = source if isinstance(source, list) else [source]
    if items and all(isinstance(p, Path) for p in items):  # Parquet
        present = set(pq.read_schema(items[0]).names)
        files = ", ".join(f"'{sql_path(p)}'" for p in items)
        scan = f"read_parquet([{files}], union_by_name = true)"
    elif items and all(isinstance(t, pa.Table) for t in items):
        table = pa.concat_tables(items, promote_options="default") if len(items) > 1 else items[0]
        con.register(f"_src_{name}", table)
        present, scan = set(table.column_names), f"_src_{name}"
    else:  # row dicts
        con.register(f"_src_{name}", _table(source, names))
        present, scan, where = set(names), f"_src_{name}", None
    types = {f.name: _duck_type(f.type) for f in _table([], names).schema}
    cols = ", ".join(f'"{n}"' if n in present else f'NULL::{types[n]} AS "{n}"' for n in names)
    filt = f" WHERE {where}" if where else ""
    con.execute(f"CREATE VIEW {name} AS SELECT {cols} FROM {scan}{filt}")


def _duck_type(t: pa.DataType) -> str:
    return "BIGINT" if pa.types.is_integer(t) else "BOOLEAN" if pa.types.is_boolean(t) else "VARCHAR"


def check_vocabulary(con: duckdb.DuckDBPyConnection) -> None:
    """ValueError when a stage or reason code is not in the documented enums (reason may be null)."""
    seen = con.execute("SELECT DISTINCT stage, reason FROM (SELECT stage, reason FROM quarantine "
                       "UNION ALL SELECT stage, reason FROM rejections)").fetchall()
    stages, reasons = {str(s) for s in Stage}, {str(r) for r in ReasonCode}
    for stage, reason in sorted(seen, key=str):
        if stage not in stages:
            raise ValueError(f"{stage!r} is not a valid stage (the vocabulary is oro_assets.reasons)")
        if reason is not None and reason not in reasons:
            raise ValueError(f"{reason!r} is not a valid reason code (the vocabulary is oro_assets.reasons)")


def ledger_arrow(normalized: Source, quarantine: Source, rejections: Source, kept: Source) -> pa.Table:
    """The ledger as one Arrow table in (source file, line, trace id) order.

    ``normalized``: the normalised rows' trace id and provenance; ``quarantine``: ingest/normalise
    rejections with their own provenance and ``stage, reason, detail``; ``rejections``: the curation
    stages' rejected rows (``trace_id, partition, stage, reason, detail``, any order); ``kept``: the
    split's kept rows (``trace_id, cluster_id, pool`` and optionally provenance). Raises ValueError
    on a stage or reason code outside :mod:`oro_assets.reasons`."""
    sources = {"provenance": normalized, "quarantine": quarantine, "rejections": rejections, "kept": kept}
    with ledger_session(sources) as con:
        check_vocabulary(con)
        return con.sql(f"SELECT * FROM ({LEDGER_ROWS_SQL}) ORDER BY {ORDER_BY}").to_arrow_table().cast(LEDGER_SCHEMA)


def write_ledger(sources: Mapping[str, Source | list[Path]], out: Path, **session) -> None:
    """:func:`ledger_arrow` of Parquet inputs, sorted out of core and streamed to ``out``
    (:func:`oro_assets.storage.write_sorted`: never a day in Python, exactly ``LEDGER_SCHEMA``).
    ``sources``: ``provenance``, ``quarantine``, ``rejections``, ``kept``; ``session``:
    :func:`ledger_session`'s ``where``, ``temp_dir``, ``memory_limit``."""
    with ledger_session(sources, **session) as con:
        check_vocabulary(con)
        write_sorted(con, LEDGER_ROWS_SQL, ORDER_BY, out, LEDGER_SCHEMA)


def build_ledger(normalized: Rows, quarantine: Rows, rejections: Rows, kept: Rows) -> list[dict]:
    """:func:`ledger_arrow` as row dicts (for the in-memory chain and tests)."""
    return ledger_arrow(normalized, quarantine, rejections, kept).to_pylist()


def check_conservation(raw_count: int, ledger: Source, pooled: Source | None = None, **session) -> list[str]:
    """Violations (empty = conserved): ledger rows ≠ raw records; a record with several fates; a
    kept record without exactly one pool; pooled rows (e.g. union of the split's pools) that are
    not kept records, or kept records missing from them. ``ledger``/``pooled``: tables, row dicts
    or Parquet paths."""
    sources = {"ledger": ledger, **({"pooled": pooled} if pooled is not None else {})}
    pools = ", ".join(f"'{p}'" for p in POOLS)
    kept_ids = f"(SELECT DISTINCT trace_id FROM ledger WHERE fate = '{KEPT}')"
    # (query giving the number of violations and the smallest example, message), checked in order
    checks = [
        ("SELECT count(*), min((trace_id, source_file, line_no)) FROM (SELECT trace_id, source_file, line_no "
         "FROM ledger GROUP BY ALL HAVING count(*) > 1)", "records have more than one ledger row"),
        (f"SELECT count(*), min(trace_id) FROM ledger WHERE fate = '{KEPT}' "
         f"AND (pool IS NULL OR pool NOT IN ({pools}))", "kept records without a pool"),
        (f"SELECT count(*), min(trace_id) FROM ledger WHERE (fate = '{KEPT}') <> (reason IS NULL)",
         "rows where fate and reason disagree"),
    ]
    if pooled is not None:
        checks += [
            ("SELECT count(*), min(trace_id) FROM (SELECT trace_id FROM pooled GROUP BY trace_id HAVING count(*) > 1)",
             "records in more than one pool row"),
            (f"SELECT count(*), min(trace_id) FROM {kept_ids} WHERE trace_id NOT IN (SELECT trace_id FROM pooled)",
             "kept records in no pool"),
            (f"SELECT count(*), min(trace_id) FROM (SELECT DISTINCT trace_id FROM pooled) WHERE trace_id NOT IN {kept_ids}",
             "pooled records not kept in the ledger"),
        ]
    problems: list[str] = []
    with ledger_session(sources, **session) as con:
        (rows,) = con.execute("SELECT count(*) FROM ledger").fetchone()
        if rows != raw_count:
            problems.append(f"ledger has {rows} rows for {raw_count} raw records")
        for sql, message in checks:
            n, example = con.execute(sql).fetchone()
            if n:
                example = tuple(example.values()) if isinstance(example, dict) else example
                problems.append(f"{n} {message}, e.g. {example}")
    return problems


def reason_counts(ledger: Source) -> dict[str, int]:
    with ledger_session({"ledger": ledger}) as con:
        rows = con.execute(f"SELECT coalesce(reason, '{KEPT}'), count(*) FROM ledger GROUP BY ALL").fetchall()
    return dict(sorted(rows))


def funnel(ledger: Source) -> list[dict]:
    """Rejection funnel in stage order: records entering each stage, rejected there, remaining."""
    with ledger_session({"ledger": ledger}) as con:
        (total,) = con.execute("SELECT count(*) FROM ledger").fetchone()
        rejected_at = dict(con.execute(f"SELECT stage, count(*) FROM ledger WHERE fate = '{REJECTED}' "
                                       "GROUP BY ALL").fetchall())
    out = []
    remaining = total
    for stage in STAGE_ORDER:
        entering = remaining
        remaining -= rejected_at.get(stage, 0)
        out.append({"stage": stage, "entering": entering, "rejected": rejected_at.get(stage, 0),
                    "remaining": remaining})
    return out
