"""The trace ledger: one row per raw record with its fate, plus conservation and funnel helpers.

Ledger row: ``trace_id, partition, source_file, line_no, raw_sha256, format, fate (kept|rejected),
stage (Stage), reason (ReasonCode or null when kept), detail, pool`` (pool for kept rows).
Rejections come from ingest/normalisation (the traces package's quarantine rows, which carry
their own provenance) and from the curation stages (provenance joined from the normalised rows
by ``trace_id``). Kept rows are the split's output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import pyarrow as pa

from oro_assets.curation._rows import as_rows
from oro_assets.curation.reasons import ReasonCode, Stage

KEPT = "kept"
REJECTED = "rejected"
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


def build_ledger(
    normalized: Iterable[dict],
    quarantine: Iterable[dict],
    rejections: Iterable[dict],
    kept: Iterable[dict],
) -> list[dict]:
    """Assemble ledger rows. ``rejections`` are the curation stages' rejected rows (any order);
    ``kept`` the split's kept rows. Raises ValueError on an unknown stage or reason code."""
    prov: dict[str, dict] = {}
    for row in as_rows(normalized):
        prov[row["trace_id"]] = {k: row.get(k) for k in _PROVENANCE}
    out: list[dict] = []
    for q in as_rows(quarantine):
        out.append(
            _ledger_row(
                q, {k: q.get(k) for k in _PROVENANCE}, REJECTED, q["stage"], q["reason"], q.get("detail")
            )
        )
    for r in as_rows(rejections):
        out.append(
            _ledger_row(r, prov.get(r["trace_id"], {}), REJECTED, r["stage"], r["reason"], r.get("detail"))
        )
    for k in as_rows(kept):
        detail = f"pool={k.get('pool')} cluster={k.get('cluster_id')}"
        row = _ledger_row(
            k,
            prov.get(k["trace_id"], {k2: k.get(k2) for k2 in _PROVENANCE}),
            KEPT,
            str(Stage.SPLIT),
            None,
            detail,
        )
        row["pool"] = k.get("pool")
        out.append(row)
    out.sort(key=lambda r: (str(r["source_file"]), r["line_no"] or 0, str(r["trace_id"])))
    return out


def _ledger_row(row: dict, prov: dict, fate: str, stage: str, reason: str | None, detail: str | None) -> dict:
    stage = str(Stage(stage))
    reason = None if reason is None else str(ReasonCode(reason))
    return {
        "trace_id": row.get("trace_id"),
        "partition": prov.get("partition") or row.get("partition"),
        "source_file": prov.get("source_file"),
        "line_no": prov.get("line_no"),
        "raw_sha256": prov.get("raw_sha256"),
        "format": prov.get("format"),
        "fate": fate,
        "stage": stage,
        "reason": reason,
        "detail": detail or "",
        "pool": None,
    }


def ledger_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA)


def check_conservation(raw_count: int, ledger: list[dict], pooled: Iterable[dict] | None = None) -> list[str]:
    """Violations (empty = conserved): ledger rows ≠ raw records; a record with several fates; a
    kept record without exactly one pool; pooled rows (e.g. union of the split's pools) that are
    not kept records, or kept records missing from them."""
    problems: list[str] = []
    if len(ledger) != raw_count:
        problems.append(f"ledger has {len(ledger)} rows for {raw_count} raw records")
    keys = Counter((r["trace_id"], r["source_file"], r["line_no"]) for r in ledger)
    dupes = [k for k, n in keys.items() if n > 1]
    if dupes:
        problems.append(f"{len(dupes)} records have more than one ledger row, e.g. {dupes[0]}")
    kept = [r for r in ledger if r["fate"] == KEPT]
    bad_pool = [r["trace_id"] for r in kept if r.get("pool") not in ("train", "eval", "never_touch")]
    if bad_pool:
        problems.append(f"{len(bad_pool)} kept records without a pool, e.g. {bad_pool[0]}")
    bad_reason = [r["trace_id"] for r in ledger if (r["fate"] == KEPT) != (r["reason"] is None)]
    if bad_reason:
        problems.append(f"{len(bad_reason)} rows where fate and reason disagree, e.g. {bad_reason[0]}")
    if pooled is not None:
        counts = Counter(r["trace_id"] for r in as_rows(pooled))
        kept_ids = Counter(r["trace_id"] for r in kept)
        multi = [t for t, n in counts.items() if n > 1]
        if multi:
            problems.append(f"{len(multi)} records in more than one pool row, e.g. {multi[0]}")
        missing = sorted(set(kept_ids) - set(counts))
        extra = sorted(set(counts) - set(kept_ids))
        if missing:
            problems.append(f"{len(missing)} kept records in no pool, e.g. {missing[0]}")
        if extra:
            problems.append(f"{len(extra)} pooled records not kept in the ledger, e.g. {extra[0]}")
    return problems


def reason_counts(ledger: Iterable[dict]) -> dict[str, int]:
    counts = Counter(r["reason"] or KEPT for r in ledger)
    return dict(sorted(counts.items()))


def funnel(ledger: Iterable[dict]) -> list[dict]:
    """Rejection funnel in stage order: records entering each stage, rejected there, remaining."""
    rows = list(ledger)
    total = len(rows)
    rejected_at = Counter(r["stage"] for r in rows if r["fate"] == REJECTED)
    out = []
    remaining = total
    for stage in STAGE_ORDER:
        entering = remaining
        remaining -= rejected_at.get(stage, 0)
        out.append(
            {
                "stage": stage,
                "entering": entering,
                "rejected": rejected_at.get(stage, 0),
                "remaining": remaining,
            }
        )
    return out
