"""Ingest one partition: read → normalise in batches → two Arrow/Parquet tables.

``normalized`` rows follow :data:`~oro_assets.traces.schema.NORMALIZED_SCHEMA`; every raw record
that does not normalise lands in ``quarantine`` (:data:`~oro_assets.traces.schema.QUARANTINE_SCHEMA`)
with one reason code, so ``raw records = normalized rows + quarantine rows`` (conservation).
Parquet files are written incrementally to a temporary name beside the target and renamed into
place only when complete, so a killed run never leaves a file that looks finished.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from oro_assets.curation.reasons import ReasonCode, Stage
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.reader import MAX_LINE_BYTES, MAX_PART_BYTES, Quarantined, RawLine, RecordReader
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA, trace_id_for, validate_row

_NORM_NAMES = NORMALIZED_SCHEMA.names
_QUAR_NAMES = QUARANTINE_SCHEMA.names


@dataclass
class IngestStats:
    partition: str
    files: int = 0
    raw_records: int = 0
    normalized: int = 0
    quarantined: int = 0
    blank_lines: int = 0
    bytes_read: int = 0
    by_reason: Counter = field(default_factory=Counter)
    by_format: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"partition": self.partition, "files": self.files, "raw_records": self.raw_records,
                "normalized": self.normalized, "quarantined": self.quarantined, "blank_lines": self.blank_lines,
                "bytes_read": self.bytes_read, "by_reason": dict(sorted(self.by_reason.items())),
                "by_format": dict(sorted(self.by_format.items()))}


def _quarantine_from_error(item: RawLine, exc: NormalizationError) -> Quarantined:
    p = item.provenance
    return Quarantined(trace_id=trace_id_for(p.raw_sha256), partition=p.partition, source_file=p.source_file,
                       line_no=p.line_no, raw_sha256=p.raw_sha256, reason=exc.reason, detail=exc.detail,
                       stage=Stage.NORMALIZE, format=exc.format.value if exc.format else None)


def normalize_item(item: RawLine, *, validate: bool = False) -> dict[str, Any] | Quarantined:
    """Normalise one read line; never raises (an unexpected failure is a SCHEMA_VIOLATION)."""
    try:
        row = normalize_record(item.obj, provenance=item.provenance)
    except NormalizationError as exc:
        return _quarantine_from_error(item, exc)
    except Exception as exc:  # a bug must not lose a record or stop a day's ingest
        err = NormalizationError(ReasonCode.SCHEMA_VIOLATION, f"normaliser failed: {type(exc).__name__}: {exc}")
        return _quarantine_from_error(item, err)
    if validate:
        problems = validate_row(row)
        if problems:
            err = NormalizationError(ReasonCode.SCHEMA_VIOLATION, "; ".join(problems))
            q = _quarantine_from_error(item, err)
            q.format = row["format"]
            return q
    return row


def _columns(rows: list[dict[str, Any]], names: list[str]) -> dict[str, list]:
    return {n: [r[n] for r in rows] for n in names}


def _batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    cols = _columns(rows, schema.names)
    return pa.record_batch([pa.array(cols[f.name], type=f.type) for f in schema], schema=schema)


def ingest_batches(files: Iterable[str], partition: str, *, batch_size: int = 2000,
                   max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                   validate: bool = False, stats: IngestStats | None = None,
                   ) -> Iterator[tuple[pa.RecordBatch, pa.RecordBatch]]:
    """(normalised batch, quarantine batch) pairs, in input order; either may have 0 rows."""
    reader = RecordReader(files, partition=partition, max_line_bytes=max_line_bytes, max_part_bytes=max_part_bytes)
    stats = stats if stats is not None else IngestStats(partition=partition)
    stats.files = len(reader.files)
    rows: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    for item in reader:
        stats.raw_records += 1
        out = normalize_item(item, validate=validate) if isinstance(item, RawLine) else item
        if isinstance(out, Quarantined):
            quarantined.append(out.to_row())
            stats.quarantined += 1
            stats.by_reason[out.reason.value] += 1
        else:
            rows.append(out)
            stats.normalized += 1
            stats.by_format[out["format"]] += 1
        if len(rows) + len(quarantined) >= batch_size:
            yield _batch(rows, NORMALIZED_SCHEMA), _batch(quarantined, QUARANTINE_SCHEMA)
            rows, quarantined = [], []
    stats.blank_lines = reader.blank_lines
    stats.bytes_read = reader.bytes_read
    if rows or quarantined:
        yield _batch(rows, NORMALIZED_SCHEMA), _batch(quarantined, QUARANTINE_SCHEMA)


def _tmp_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def normalize_partition(files: Iterable[str], partition: str, out_normalized: str | os.PathLike,
                        out_quarantine: str | os.PathLike, *, batch_size: int = 2000,
                        max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                        validate: bool = False, compression: str = "zstd") -> IngestStats:
    """Ingest a partition into two Parquet files (written atomically); returns the counts."""
    targets = [Path(out_normalized), Path(out_quarantine)]
    for t in targets:
        t.parent.mkdir(parents=True, exist_ok=True)
    tmps = [_tmp_path(t) for t in targets]
    stats = IngestStats(partition=partition)
    writers: list[pq.ParquetWriter] = []
    try:
        writers = [pq.ParquetWriter(tmps[0], NORMALIZED_SCHEMA, compression=compression),
                   pq.ParquetWriter(tmps[1], QUARANTINE_SCHEMA, compression=compression)]
        for norm, quar in ingest_batches(files, partition, batch_size=batch_size, max_line_bytes=max_line_bytes,
                                         max_part_bytes=max_part_bytes, validate=validate, stats=stats):
            if norm.num_rows:
                writers[0].write_batch(norm)
            if quar.num_rows:
                writers[1].write_batch(quar)
        for w in writers:
            w.close()
        writers = []
        for tmp, target in zip(tmps, targets, strict=True):
            os.replace(tmp, target)
    finally:
        for w in writers:
            w.close()
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
    return stats
