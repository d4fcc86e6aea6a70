"""Step: read and normalise a day's part files (``oro_assets.traces``), and index every raw record."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from oro_assets.curation.ledger import register_view
from oro_assets.curation.schemas import RAW_INDEX_COLUMNS, RAW_INDEX_SCHEMA
from oro_assets.curation.step import (
    CheckOutcome,
    CheckSpec,
    Output,
    PartitionContext,
    RunParams,
    Step,
    StepResult,
)
from oro_assets.storage import duckdb_session, iter_parquet_batches, sorted_batches
from oro_assets.traces.ingest import IngestStats, ingest_row_batches, normalize_partition_rows
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA, validate_row

RAW = Output(
    "raw_traces", RAW_INDEX_SCHEMA,
    "Index of every raw firehose record of the day, one row per non-blank line: source file, line, "
    "partition, sha256 of the raw line, detected format, and the ingest verdict (normalised or "
    "quarantined with a reason code: malformed JSON, invalid UTF-8, oversize, corrupt gzip, duplicates).",
    ("trace_id", "source_file", "line_no", "format", "ingest", "reason"))
NORMALIZED = Output(
    "normalized_traces", NORMALIZED_SCHEMA,
    "Every parsable record in the canonical OpenAI tool-call schema (messages with assistant tool_calls, "
    "thinking in reasoning_content, JSON-string arguments, unique call ids) plus per-step proxy-call "
    "evidence and validator metadata. See docs/architecture.md.",
    ("trace_id", "format", "problem_id", "status", "n_steps", "n_tool_calls"))
_COLS = ", ".join(RAW_INDEX_COLUMNS)
RAW_INDEX_SQL = f"""
    SELECT {_COLS}, 'normalized' AS ingest, NULL::VARCHAR AS stage, NULL::VARCHAR AS reason,
           NULL::VARCHAR AS detail FROM normalized
    UNION ALL
    SELECT {_COLS}, 'quarantined', stage, reason, detail FROM quarantine"""
RAW_INDEX_ORDER = "source_file NULLS FIRST, line_no NULLS FIRST, trace_id NULLS FIRST, ingest, reason NULLS FIRST"
SCHEMA_SAMPLE = 200


def raw_index_batches(normalized: Path | pa.Table, quarantine: Path | pa.Table,
                      temp_dir: Path | None = None):
    """One row per raw record, in file/line order: normalised, or quarantined with its reason. DuckDB
    reads only the provenance columns and sorts out of core; the rows come out in Arrow batches."""
    with duckdb_session(temp_dir) as con:
        register_view(con, "normalized", normalized, RAW_INDEX_COLUMNS)
        register_view(con, "quarantine", quarantine, (*RAW_INDEX_COLUMNS, "stage", "reason", "detail"))
        yield from sorted_batches(con, RAW_INDEX_SQL, RAW_INDEX_ORDER, RAW_INDEX_SCHEMA)


def raw_index(normalized: Path | pa.Table, quarantine: Path | pa.Table) -> pa.Table:
    return pa.Table.from_batches(list(raw_index_batches(normalized, quarantine)), schema=RAW_INDEX_SCHEMA)


@dataclass(frozen=True)
class IngestConfig:
    """Run config of ingest."""

    workers: int = field(default=0, metadata={
        "help": "Processes that read and normalise a day's part files (0: the firehose's ingest_workers)."})


@dataclass
class _Day:
    stats: IngestStats
    normalized: Any = None  # what the raw index reads: a Parquet path or an Arrow table
    quarantine: Any = None
    staged: list[Path] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)


class IngestStep(Step):
    """Its input is the firehose (``RunParams.files``). Over the warehouse the traces package writes
    ``normalized_traces`` itself (``normalize_partition``: parallel workers, row groups cut by the rows,
    the same bytes for any worker count); in memory the same normaliser streams its batches
    (``ingest_row_batches``: a later step is fed the rows each batch was built from, equal to the
    batch read back). Both then index every raw record into ``raw_traces``."""

    name = "ingest"
    input = "firehose"
    # the embedded simulator draws the day from the arena's world (and writes it beside the days)
    deps = ("arena_world",)
    own = (RAW, NORMALIZED)
    chained = True
    resources = ("firehose",)  # the day's part files and its default worker count
    Config = IngestConfig
    checks = (CheckSpec("schema_valid", "normalized_traces",
                        "Every normalised row validates against the canonical schema (blocking).", blocking=True),)

    def run_params(self, sources: Mapping[str, Any], config: IngestConfig, partitions: list[str],
                   log: logging.Logger) -> RunParams:
        firehose = sources["firehose"]  # partition_files(partition), root(), ingest_workers
        files = {}
        for partition in partitions:
            files[partition] = firehose.partition_files(partition)
            log.info(f"{partition}: {len(files[partition])} part file(s) under {firehose.root()}")
        return RunParams(files=files, ingest_workers=config.workers or firehose.ingest_workers)

    def begin(self, ctx: PartitionContext) -> _Day:
        files = ctx.params.files.get(ctx.partition, [])
        return _Day(IngestStats(partition=ctx.partition, files=len(files)))

    def read(self, ctx: PartitionContext, day: _Day):
        files, store, p = ctx.params.files.get(ctx.partition, []), ctx.store, ctx.partition
        if hasattr(store, "staging"):  # the warehouse
            target = store.path(NORMALIZED.asset, p) if ctx.selected(NORMALIZED.asset) \
                else store.staging(f"normalized-{p}.parquet")
            quarantine = store.staging(f"quarantine-{p}.parquet")
            day.staged = [quarantine] + ([] if target == store.path(NORMALIZED.asset, p) else [target])
            stats = IngestStats(partition=p, files=len(files))
            # fused with the next step: the rows go on as they are written (with several workers they are made in
            # other processes, so they are read back from the file)
            streamed = False
            for rows in normalize_partition_rows(files, p, target, quarantine, stats, batch_size=self.batch_rows,
                                                 workers=ctx.params.ingest_workers):
                if ctx.fused:
                    streamed = True
                    yield rows
            stats.files = len(files)
            day.stats, day.normalized, day.quarantine = stats, target, quarantine
            sample = next(iter_parquet_batches(target, SCHEMA_SAMPLE), None)
            day.invalid = _invalid(sample.to_pylist() if sample is not None else [])
            if ctx.fused and not streamed:
                for batch in iter_parquet_batches(target, self.batch_rows):
                    yield batch.to_pylist()
            return
        writer = ctx.writer(NORMALIZED.asset, NORMALIZED.schema)
        quarantined: list[pa.RecordBatch] = []
        sampled = False
        for rows, norm, quar in ingest_row_batches(files, p, batch_size=self.batch_rows, stats=day.stats):
            writer.write(pa.Table.from_batches([norm]))
            quarantined.append(quar)
            if not sampled and norm.num_rows:
                day.invalid, sampled = _invalid(norm.slice(0, SCHEMA_SAMPLE).to_pylist()), True
            if ctx.fused:
                yield rows
        day.normalized = store.source(NORMALIZED.asset, p) if store.exists(NORMALIZED.asset, p) else None
        day.quarantine = pa.Table.from_batches(quarantined, schema=QUARANTINE_SCHEMA)

    def process(self, rows: list[dict], day: _Day) -> StepResult:
        return StepResult(rows, [])

    def finish(self, ctx: PartitionContext, day: _Day, stats: dict[str, Any]) -> dict[str, Any]:
        writer = ctx.writer(RAW.asset, RAW.schema)
        if ctx.selected(RAW.asset) and day.normalized is not None:
            temp = getattr(ctx.store, "spill_dir", None)
            for batch in raw_index_batches(day.normalized, day.quarantine, temp):
                writer.write(pa.Table.from_batches([batch]))
        for path in day.staged:
            path.unlink(missing_ok=True)
        return {**day.stats.to_dict(), "invalid": day.invalid}

    def outcomes(self, store, report) -> list[CheckOutcome]:
        invalid = [x for stats in report.stats.values() for x in stats.get("invalid", [])]
        return [CheckOutcome("schema_valid", "normalized_traces", not invalid,
                             {"invalid_rows": len(invalid), "examples": invalid[:5]})]

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        by_reason: dict[str, int] = {}
        by_format: dict[str, int] = {}
        raw = files = normalized = 0
        for stats in report.stats.values():
            raw += stats["raw_records"]
            files += stats["files"]
            normalized += stats["normalized"]
            for k, v in stats["by_reason"].items():
                by_reason[k] = by_reason.get(k, 0) + v
            for k, v in stats["by_format"].items():
                by_format[k] = by_format.get(k, 0) + v
        if asset == RAW.asset:
            return {"raw_records": raw, "part_files": files, "quarantined_by_reason": dict(sorted(by_reason.items()))}
        return {"normalized": normalized, "by_format": dict(sorted(by_format.items()))}


def _invalid(rows: list[dict]) -> list[str]:
    """Full validation is in the normaliser; the step re-checks a sample of the written rows."""
    out = []
    for row in rows:
        problems = validate_row(row)
        if problems:
            out.append(f"{row['trace_id']}: {problems[0]}")
    return out
