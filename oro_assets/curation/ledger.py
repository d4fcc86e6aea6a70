"""The trace ledger: one row per raw record with its fate, plus conservation and funnel helpers.

Ledger row: ``trace_id, partition, source_file, line_no, raw_sha256, format, fate (kept|rejected),
stage (Stage), reason (ReasonCode or null when kept), detail, pool`` (pool for kept rows).
Rejections come from ingest/normalisation (the traces package's quarantine rows, which carry
their own provenance) and from the curation stages (provenance joined from the normalised rows
by ``trace_id``). Kept rows are the split's output.

The ledger is built, checked and counted with Arrow's join, sort and count kernels, so a day of a
million raw records never becomes a million Python dicts. Every function also takes row dicts
(converted at the edge), which is what the in-memory ``curate_partition`` chain hands over.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from oro_assets.curation._rows import as_rows
from oro_assets.curation.reasons import ReasonCode, Stage

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
#: Ledger and raw-index row order: by source file, line, trace id (missing values first).
FILE_LINE_ORDER = [(k, "ascending", "at_start") for k in ("source_file", "line_no", "trace_id")]

Rows = pa.Table | Iterable[dict]


def _table(rows: Rows, names: tuple[str, ...]) -> pa.Table:
    """``names`` columns of a table or of row dicts, typed as in the ledger (absent columns are nulls)."""
    schema = pa.schema([LEDGER_SCHEMA.field(n) if n in LEDGER_SCHEMA.names else pa.field(n, pa.string())
                        for n in names])
    if not isinstance(rows, pa.Table):
        return pa.Table.from_pylist([{n: r.get(n) for n in names} for r in as_rows(rows)], schema=schema)
    cols = [rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type)
            for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def _check_vocabulary(table: pa.Table, what: str) -> None:
    """ValueError when a stage or reason code is not in the documented enums (reason may be null)."""
    for column, allowed in (("stage", list(map(str, Stage))), ("reason", list(map(str, ReasonCode)))):
        values = table.column(column)
        known = pc.fill_null(pc.is_in(values, value_set=pa.array(allowed)), column == "reason")
        bad = values.filter(pc.invert(known))
        if len(bad):
            raise ValueError(f"{what}: {bad[0].as_py()!r} is not a valid {column} "
                             f"({len(bad)} row(s); the vocabulary is oro_assets.curation.reasons)")


def _fated(rows: pa.Table, fate: str, stage, reason, detail, pool) -> pa.Table:
    n = rows.num_rows
    arrays = [rows.column(k) for k in _ID_AND_PROVENANCE]
    arrays += [pa.array([fate] * n, pa.string()), stage, reason, pc.fill_null(detail, ""), pool]
    return pa.Table.from_arrays(arrays, schema=LEDGER_SCHEMA)


def _join_provenance(rows: pa.Table, prov: pa.Table) -> pa.Table:
    """``rows`` (their own provenance columns prefixed ``own_``) left-joined to the normalised rows'
    provenance by trace id; provenance the join did not find falls back to the row's own."""
    joined = rows.join(prov, "trace_id", join_type="left outer", use_threads=False)
    for k in _PROVENANCE:
        i = joined.column_names.index(k)
        joined = joined.set_column(i, k, pc.coalesce(joined.column(k), joined.column(f"own_{k}")))
    return joined


def ledger_arrow(normalized: Rows, quarantine: Rows, rejections: Rows, kept: Rows) -> pa.Table:
    """The ledger as one Arrow table in (source file, line, trace id) order.

    ``normalized``: the normalised rows' trace id and provenance; ``quarantine``: ingest/normalise
    rejections with their own provenance and ``stage, reason, detail``; ``rejections``: the curation
    stages' rejected rows (``trace_id, partition, stage, reason, detail``, any order); ``kept``: the
    split's kept rows (``trace_id, cluster_id, pool`` and optionally provenance). Raises ValueError
    on a stage or reason code outside :mod:`oro_assets.curation.reasons`."""
    prov = _table(normalized, _ID_AND_PROVENANCE)
    quar = _table(quarantine, (*_ID_AND_PROVENANCE, "stage", "reason", "detail"))
    rej = _table(rejections, ("trace_id", "partition", "stage", "reason", "detail"))
    kept_t = _table(kept, (*_ID_AND_PROVENANCE, "cluster_id", "pool"))
    _check_vocabulary(quar, "quarantine")
    _check_vocabulary(rej, "rejections")

    own = {k: f"own_{k}" for k in _PROVENANCE}
    rej = rej.rename_columns([own.get(c, c) for c in rej.column_names])
    for k in _PROVENANCE[1:]:
        rej = rej.append_column(f"own_{k}", pa.nulls(rej.num_rows, LEDGER_SCHEMA.field(k).type))
    rej = _join_provenance(rej, prov)
    kept_t = _join_provenance(kept_t.rename_columns([own.get(c, c) for c in kept_t.column_names]), prov)

    def text(column: str) -> pa.ChunkedArray:
        return pc.fill_null(kept_t.column(column), "None")

    kept_detail = pc.binary_join_element_wise("pool=", text("pool"), " cluster=", text("cluster_id"), "")
    n_kept = kept_t.num_rows
    parts = [
        _fated(quar, REJECTED, quar.column("stage"), quar.column("reason"), quar.column("detail"),
               pa.nulls(quar.num_rows, pa.string())),
        _fated(rej, REJECTED, rej.column("stage"), rej.column("reason"), rej.column("detail"),
               pa.nulls(rej.num_rows, pa.string())),
        _fated(kept_t, KEPT, pa.array([str(Stage.SPLIT)] * n_kept, pa.string()), pa.nulls(n_kept, pa.string()),
               kept_detail, kept_t.column("pool")),
    ]
    ledger = pa.concat_tables(parts)
    return ledger.sort_by(FILE_LINE_ORDER).combine_chunks()


def build_ledger(normalized: Rows, quarantine: Rows, rejections: Rows, kept: Rows) -> list[dict]:
    """:func:`ledger_arrow` as row dicts (for the in-memory chain and tests)."""
    return ledger_arrow(normalized, quarantine, rejections, kept).to_pylist()


def ledger_table(rows: Rows) -> pa.Table:
    return _table(rows, tuple(LEDGER_SCHEMA.names))


def _value_counts(values: pa.ChunkedArray | pa.Array) -> dict:
    return {d["values"]: d["counts"] for d in pc.value_counts(values).to_pylist()}


def _example(table: pa.Table, mask) -> str | None:
    hit = table.filter(mask)
    return None if not hit.num_rows else hit.column("trace_id")[0].as_py()


def check_conservation(raw_count: int, ledger: Rows, pooled: Rows | None = None) -> list[str]:
    """Violations (empty = conserved): ledger rows ≠ raw records; a record with several fates; a
    kept record without exactly one pool; pooled rows (e.g. union of the split's pools) that are
    not kept records, or kept records missing from them."""
    table = ledger_table(ledger)
    problems: list[str] = []
    if table.num_rows != raw_count:
        problems.append(f"ledger has {table.num_rows} rows for {raw_count} raw records")
    keys = ["trace_id", "source_file", "line_no"]
    per_key = table.group_by(keys, use_threads=False).aggregate([([], "count_all")])
    dupes = per_key.filter(pc.greater(per_key.column("count_all"), 1))
    if dupes.num_rows:
        first = tuple(dupes.select(keys).slice(0, 1).to_pylist()[0].values())
        problems.append(f"{dupes.num_rows} records have more than one ledger row, e.g. {first}")
    is_kept = pc.equal(table.column("fate"), KEPT)
    kept = table.filter(is_kept)
    bad_pool = pc.invert(pc.fill_null(pc.is_in(kept.column("pool"), value_set=pa.array(POOLS)), False))
    if n := pc.sum(bad_pool).as_py():
        problems.append(f"{n} kept records without a pool, e.g. {_example(kept, bad_pool)}")
    disagree = pc.not_equal(is_kept, pc.is_null(table.column("reason")))
    if n := pc.sum(disagree).as_py():
        problems.append(f"{n} rows where fate and reason disagree, e.g. {_example(table, disagree)}")
    if pooled is not None:
        counts = _value_counts(_table(pooled, ("trace_id",)).column("trace_id"))
        kept_ids = set(kept.column("trace_id").to_pylist())
        multi = [t for t, n in counts.items() if n > 1]
        if multi:
            problems.append(f"{len(multi)} records in more than one pool row, e.g. {multi[0]}")
        missing = sorted(kept_ids - set(counts))
        extra = sorted(set(counts) - kept_ids)
        if missing:
            problems.append(f"{len(missing)} kept records in no pool, e.g. {missing[0]}")
        if extra:
            problems.append(f"{len(extra)} pooled records not kept in the ledger, e.g. {extra[0]}")
    return problems


def reason_counts(ledger: Rows) -> dict[str, int]:
    counts = _value_counts(pc.fill_null(ledger_table(ledger).column("reason"), KEPT))
    return dict(sorted(counts.items()))


def funnel(ledger: Rows) -> list[dict]:
    """Rejection funnel in stage order: records entering each stage, rejected there, remaining."""
    table = ledger_table(ledger)
    rejected_at = _value_counts(table.filter(pc.equal(table.column("fate"), REJECTED)).column("stage"))
    out = []
    remaining = table.num_rows
    for stage in STAGE_ORDER:
        entering = remaining
        remaining -= rejected_at.get(stage, 0)
        out.append({"stage": stage, "entering": entering, "rejected": rejected_at.get(stage, 0),
                    "remaining": remaining})
    return out
