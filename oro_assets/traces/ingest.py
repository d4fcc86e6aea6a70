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

from oro_assets.reasons import ReasonCode, Stage
from oro_assets.storage import RowGroups, StorageError, column_array, parquet_writer
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.reader import MAX_LINE_BYTES, MAX_PART_BYTES, Quarantined, RawLine, RecordReader
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA, trace_id_for, validate_row

# A batch is flushed at ``batch_size`` records or this many raw bytes, whichever comes first: a day
# of multi-megabyte records must not be held whole (memory stays bounded by the batch, not the day).
MAX_BATCH_BYTES = 16 << 20
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


def iter_normalized(files: Iterable[str], partition: str, *, max_line_bytes: int = MAX_LINE_BYTES,
                    max_part_bytes: int = MAX_PART_BYTES) -> Iterator[tuple[dict[str, Any], dict[str, Any]] | Quarantined]:
    """For in-process consumers: ``(row, parsed)`` per normalised record (``parsed`` holds the Python
    ``messages`` and ``steps``, so they need not be parsed again), or a :class:`Quarantined`."""
    for item in RecordReader(files, partition=partition, max_line_bytes=max_line_bytes, max_part_bytes=max_part_bytes):
        if isinstance(item, Quarantined):
            yield item
            continue
        parsed: dict[str, Any] = {}
        try:
            yield normalize_record(item.obj, provenance=item.provenance, parsed_out=parsed), parsed
        except NormalizationError as exc:
            yield _quarantine_from_error(item, exc)
        except Exception as exc:  # same guarantee as normalize_item
            yield _quarantine_from_error(item, NormalizationError(
                ReasonCode.SCHEMA_VIOLATION, f"normaliser failed: {type(exc).__name__}: {exc}"))


def _columns(rows: list[dict[str, Any]], names: list[str]) -> dict[str, list]:
    return {n: [r[n] for r in rows] for n in names}


def _batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    cols = _columns(rows, schema.names)
    return pa.record_batch([column_array(cols[f.name], f.type) for f in schema], schema=schema)


def ingest_batches(files: Iterable[str], partition: str, *, batch_size: int = 1000,
                   max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                   validate: bool = False, stats: IngestStats | None = None, dedupe: bool = True,
                   max_batch_bytes: int = MAX_BATCH_BYTES,
                   ) -> Iterator[tuple[pa.RecordBatch, pa.RecordBatch]]:
    """(normalised batch, quarantine batch) pairs, in input order; either may have 0 rows.

    A batch closes at ``batch_size`` records or ``max_batch_bytes`` raw bytes, whichever comes first."""
    for _rows, norm, quar in ingest_row_batches(files, partition, batch_size=batch_size, max_line_bytes=max_line_bytes,
                                                max_part_bytes=max_part_bytes, validate=validate, stats=stats,
                                                dedupe=dedupe, max_batch_bytes=max_batch_bytes):
        yield norm, quar


def ingest_row_batches(files: Iterable[str], partition: str, *, batch_size: int = 1000,
                       max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                       validate: bool = False, stats: IngestStats | None = None, dedupe: bool = True,
                       max_batch_bytes: int = MAX_BATCH_BYTES,
                       ) -> Iterator[tuple[list[dict[str, Any]], pa.RecordBatch, pa.RecordBatch]]:
    """:func:`ingest_batches`' batches, each with the normalised rows it was built from, for an
    in-process consumer: the rows equal ``norm.to_pylist()`` (same values, Python types and key order:
    the normaliser builds every column in schema order with the schema's Python type), so they need not
    be converted back from Arrow (~30 us a 20 KB record). The batch is built before it is yielded; a
    consumer may then keep or change the rows."""
    reader = RecordReader(files, partition=partition, max_line_bytes=max_line_bytes, max_part_bytes=max_part_bytes,
                          dedupe=dedupe)
    stats = stats if stats is not None else IngestStats(partition=partition)
    stats.files = len(reader.files)
    rows: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    batch_bytes = 0
    for item in reader:
        stats.raw_records += 1
        if isinstance(item, RawLine):
            batch_bytes += item.nbytes
        out = normalize_item(item, validate=validate) if isinstance(item, RawLine) else item
        if isinstance(out, Quarantined):
            quarantined.append(out.to_row())
            stats.quarantined += 1
            stats.by_reason[out.reason.value] += 1
        else:
            rows.append(out)
            stats.normalized += 1
            stats.by_format[out["format"]] += 1
        if len(rows) + len(quarantined) >= batch_size or batch_bytes >= max_batch_bytes:
            yield rows, _batch(rows, NORMALIZED_SCHEMA), _batch(quarantined, QUARANTINE_SCHEMA)
            rows, quarantined, batch_bytes = [], [], 0
    stats.blank_lines = reader.blank_lines
    stats.bytes_read = reader.bytes_read
    if rows or quarantined:
        yield rows, _batch(rows, NORMALIZED_SCHEMA), _batch(quarantined, QUARANTINE_SCHEMA)


def _tmp_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def normalize_partition(files: Iterable[str], partition: str, out_normalized: str | os.PathLike,
                        out_quarantine: str | os.PathLike, *, batch_size: int = 1000,
                        max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                        validate: bool = False, compression: str = "zstd", workers: int = 1) -> IngestStats:
    """Ingest a partition into two Parquet files (written atomically); returns the counts.

    ``workers > 1`` normalises part files in that many processes started from the fork server; the output rows
    (and their order, duplicate numbering and trace ids) are the same as with one worker.
    """
    files = list(files)
    stats = IngestStats(partition=partition, files=len(files))
    for _rows in normalize_partition_rows(files, partition, out_normalized, out_quarantine, stats, batch_size=batch_size,
                                          max_line_bytes=max_line_bytes, max_part_bytes=max_part_bytes,
                                          validate=validate, compression=compression, workers=workers):
        pass
    return stats


def normalize_partition_rows(files: Iterable[str], partition: str, out_normalized: str | os.PathLike,
                             out_quarantine: str | os.PathLike, stats: IngestStats, *, batch_size: int = 1000,
                             max_line_bytes: int = MAX_LINE_BYTES, max_part_bytes: int = MAX_PART_BYTES,
                             validate: bool = False, compression: str = "zstd", workers: int = 1,
                             ) -> Iterator[list[dict[str, Any]]]:
    """:func:`normalize_partition`, yielding each batch's normalised rows as they are written (what
    ``to_pylist()`` of the batch gives: :func:`ingest_row_batches`), for a consumer in this process; the two
    files are published when the last batch was taken. With ``workers > 1`` nothing is yielded (the rows are
    made in other processes). ``stats`` gets the counts."""
    files = list(files)
    targets = [Path(out_normalized), Path(out_quarantine)]
    try:
        for t in targets:
            t.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(f"could not create {exc.filename or targets[0].parent}: {exc.strerror or exc}") from exc
    tmps = [_tmp_path(t) for t in targets]
    opts = {"batch_size": batch_size, "max_line_bytes": max_line_bytes, "max_part_bytes": max_part_bytes,
            "validate": validate}
    writers: list[pq.ParquetWriter] = []
    try:
        writers = [parquet_writer(tmps[0], NORMALIZED_SCHEMA, compression),
                   parquet_writer(tmps[1], QUARANTINE_SCHEMA, compression)]
        # row groups cut by the rows, not by how they were read: any number of workers, same bytes
        outputs = [RowGroups(writers[0], batch_size, MAX_BATCH_BYTES, ("messages", "steps", "meta", "tools")),
                   RowGroups(writers[1], batch_size, MAX_BATCH_BYTES, ("detail",))]
        if workers > 1 and len(files) > 1:
            _parallel(files, partition, outputs, stats, opts, workers, tmps[0].parent)
        else:
            for rows, norm, quar in ingest_row_batches(files, partition, stats=stats, **opts):
                if norm.num_rows:
                    outputs[0].write(norm)
                if quar.num_rows:
                    outputs[1].write(quar)
                if rows:
                    yield rows
        for out in outputs:
            out.close()
        for w in writers:
            w.close()
        writers = []
        for tmp, target in zip(tmps, targets, strict=True):
            os.replace(tmp, target)
    except OSError as exc:  # disk full, read-only data dir: one clear line, and no file left half-written
        raise StorageError(f"could not write {targets[0].name} / {targets[1].name} under {targets[0].parent}: "
                           f"{exc.strerror or exc}") from exc
    finally:
        for w in writers:
            w.close()
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
    return stats


# ------------------------------------------------------------------------ process parallelism


def _ingest_one_file(job: tuple[str, str, str, dict]) -> dict[str, Any]:
    """Worker: ingest one part without cross-line dedupe (the parent dedupes the whole partition)."""
    path, partition, out_dir, opts = job
    stats = IngestStats(partition=partition)
    out = Path(out_dir)
    with (parquet_writer(out / "n.parquet", NORMALIZED_SCHEMA, "lz4") as wn,
          parquet_writer(out / "q.parquet", QUARANTINE_SCHEMA, "lz4") as wq):
        for norm, quar in ingest_batches([path], partition, stats=stats, dedupe=False, **opts):
            if norm.num_rows:
                wn.write_batch(norm)
            if quar.num_rows:
                wq.write_batch(quar)
    return {"blank_lines": stats.blank_lines, "bytes_read": stats.bytes_read}


def _parallel(files: list[str], partition: str, outputs: list[RowGroups], stats: IngestStats,
              opts: dict, workers: int, tmp_root: Path) -> None:
    import multiprocessing
    import shutil
    import tempfile

    from oro_assets.traces.reader import duplicate_entry

    scratch = Path(tempfile.mkdtemp(prefix=".ingest-", dir=tmp_root))
    try:
        jobs = []
        for i, path in enumerate(files):
            (scratch / str(i)).mkdir()
            jobs.append((path, partition, str(scratch / str(i)), opts))
        seen: set[bytes] = set()
        dup_counts: dict[bytes, int] = {}
        # Not "fork": a child forked from a process whose Arrow or torch threads hold a lock waits on it forever
        # (seen as a hung worker in the test suite); the fork server's process has started no such threads.
        with multiprocessing.get_context("forkserver").Pool(min(workers, len(files))) as pool:
            for i, part in enumerate(pool.imap(_ingest_one_file, jobs, chunksize=1)):
                stats.blank_lines += part["blank_lines"]
                stats.bytes_read += part["bytes_read"]
                norm = pq.read_table(scratch / str(i) / "n.parquet")
                quar = pq.read_table(scratch / str(i) / "q.parquet").to_pylist()
                # replay the serial reader's duplicate decisions in line order across the partition
                events = [(ln, 0, j, sha) for j, (ln, sha) in enumerate(zip(
                    norm.column("line_no").to_pylist(), norm.column("raw_sha256").to_pylist(), strict=True))]
                events += [(q["line_no"], 1, j, q["raw_sha256"]) for j, q in enumerate(quar)
                           if q["raw_sha256"] is not None and q["reason"] != ReasonCode.OVERSIZED_RECORD.value]
                events.sort()
                keep = [True] * norm.num_rows
                new_quar: list[dict[str, Any]] = []
                for line_no, kind, j, sha in events:
                    key = bytes.fromhex(sha[:32])
                    if key not in seen:
                        seen.add(key)
                        continue
                    n = dup_counts.get(key, 0) + 1
                    dup_counts[key] = n
                    if kind == 0:
                        keep[j] = False
                    else:
                        quar[j] = None
                    new_quar.append(duplicate_entry(partition, files[i], line_no, sha, n).to_row())
                if not all(keep):
                    norm = norm.filter(pa.array(keep))
                rows = sorted([q for q in quar if q is not None] + new_quar, key=lambda q: q["line_no"])
                if norm.num_rows:
                    outputs[0].write(norm)
                    stats.by_format.update(norm.column("format").to_pylist())
                if rows:
                    outputs[1].write(pa.Table.from_pylist(rows, schema=QUARANTINE_SCHEMA))
                    stats.by_reason.update(q["reason"] for q in rows)
                stats.normalized += norm.num_rows
                stats.quarantined += len(rows)
                shutil.rmtree(scratch / str(i))
            pool.close()
            pool.join()
        stats.raw_records = stats.normalized + stats.quarantined
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
