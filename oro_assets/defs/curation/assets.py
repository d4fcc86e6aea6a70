"""Daily curation assets: ingest → normalise → structural filter → gates → dedup → split → ledger.

Each asset calls one stage of ``oro_assets.curation`` / ``oro_assets.traces`` and writes Parquet
under ``<data>/warehouse/<asset>/<YYYY-MM-DD>.parquet``; rejected rows go to
``rejections_<stage>/<date>.parquet`` and every raw record ends in ``trace_ledger`` with one fate.
All daily assets use a single-run backfill policy (``dg launch --partition-range`` works): a run
over a range processes its partitions one after another.
"""


from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from oro_assets import jsonio
from oro_assets.curation.clusters import Registry
from oro_assets.curation.dedup import DedupIndex, dedup_and_rank
from oro_assets.curation.gates import (
    DEFAULT_REASONING_THRESHOLD,
    DEFAULT_TOKEN_BUDGET,
    estimate_tokens,
    gate_traces,
    merge_gate_stats,
    ungated_run_scores,
)
from oro_assets.curation.ledger import (
    LEDGER_ROWS_SQL,
    ORDER_BY,
    check_conservation,
    funnel,
    reason_counts,
    write_ledger,
)
from oro_assets.curation.reasons import ReasonCode
from oro_assets.curation.split import split_traces as split_stage
from oro_assets.curation.structural import structural_filter
from oro_assets.defs.common import (
    DAILY,
    OWNER_DATA,
    SINGLE_RUN,
    code_version,
    funnel_markdown,
    markdown_table,
    parquet_metadata,
)
from oro_assets.defs.curation.registry_lock import registry_lock
from oro_assets.defs.curation.tables import (
    CURATED_SCHEMA,
    GATED_SCHEMA,
    LABELS_SCHEMA,
    SPLIT_SCHEMA,
    SUBTASK_SCHEMA,
    PartitionWriter,
    iter_row_batches,
    rejections_writer,
)
from oro_assets.defs.judge.resources import JudgeResource
from oro_assets.defs.resources import FirehoseSource, ModelProfileResource, WarehouseResource
from oro_assets.settings import load_settings
from oro_assets.storage import (
    atomic_path,
    duckdb_session,
    file_sha256,
    iter_parquet_batches,
    sql_path,
    write_sorted,
)
from oro_assets.traces.ingest import normalize_partition
from oro_assets.traces.schema import validate_row

DEDUP_BATCH_ROWS = 5000  # larger batches: within a batch the best-ranked duplicate wins
CURATION = dict(group_name="curation", owners=[OWNER_DATA], partitions_def=DAILY, backfill_policy=SINGLE_RUN)
RAW_INDEX_COLUMNS = "trace_id, partition, source_file, line_no, raw_sha256, format"
RAW_INDEX_SCHEMA = pa.schema([(name, pa.int64() if name == "line_no" else pa.string())
                              for name in [*RAW_INDEX_COLUMNS.split(", "), "ingest", "stage", "reason", "detail"]])


def write_raw_index(normalized: Path, quarantine: Path, out: Path, temp_dir: Path) -> None:
    """One row per raw record, in file/line order: normalised, or quarantined with its reason.
    DuckDB reads only the provenance columns and sorts out of core; the sorted rows stream to the
    file in Arrow batches (a day is never in memory)."""
    rows = f"""
        SELECT {RAW_INDEX_COLUMNS}, 'normalized' AS ingest, NULL::VARCHAR AS stage, NULL::VARCHAR AS reason,
               NULL::VARCHAR AS detail FROM read_parquet('{sql_path(normalized)}')
        UNION ALL
        SELECT {RAW_INDEX_COLUMNS}, 'quarantined', stage, reason, detail FROM read_parquet('{sql_path(quarantine)}')"""
    order = "source_file NULLS FIRST, line_no NULLS FIRST, trace_id NULLS FIRST, ingest, reason NULLS FIRST"
    with duckdb_session(temp_dir) as con, atomic_path(out) as tmp:
        write_sorted(con, rows, order, tmp, RAW_INDEX_SCHEMA)


class GateConfig(dg.Config):
    """Run config of the gates (editable in the launchpad)."""

    reasoning_threshold: float = DEFAULT_REASONING_THRESHOLD
    token_budget: int = DEFAULT_TOKEN_BUDGET
    max_judge_failure_ratio: float = 0.5


def _spill_dir(warehouse: WarehouseResource) -> Path:
    """Where DuckDB spills day-scale joins and sorts (removed by DuckDB when the session ends)."""
    return warehouse.state_dir / "duckdb_spill"


def partition_version(wh, asset: str, partitions: list[str]) -> dg.DataVersion:
    """Content hash of the written Parquet file(s): the same inputs and code give the same data version."""
    return dg.DataVersion(jsonio.content_hash([file_sha256(wh.path(asset, p)) for p in partitions])[:16])


def _merge_counts(total: Counter, part: dict[str, int]) -> None:
    for key, value in part.items():
        total[key] += value


# --------------------------------------------------------------------------------------------
# ingest + normalise (one streaming pass, two assets)
# --------------------------------------------------------------------------------------------


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "raw_traces",
            description=(
                "Index of every raw firehose record of the day, one row per non-blank line: source file, line, "
                "partition, sha256 of the raw line, detected format, and the ingest verdict (normalised or "
                "quarantined with a reason code: malformed JSON, invalid UTF-8, oversize, corrupt gzip, duplicates)."
            ),
            kinds={"python", "parquet"},
            **{k: v for k, v in CURATION.items() if k != "backfill_policy"},
        ),
        dg.AssetSpec(
            "normalized_traces",
            deps=["raw_traces"],
            description=(
                "Every parsable record in the canonical OpenAI tool-call schema (messages with assistant tool_calls, "
                "thinking in reasoning_content, JSON-string arguments, unique call ids) plus per-step proxy-call "
                "evidence and validator metadata. See docs/architecture.md."
            ),
            kinds={"python", "parquet"},
            **{k: v for k, v in CURATION.items() if k != "backfill_policy"},
        ),
    ],
    check_specs=[
        dg.AssetCheckSpec(
            "schema_valid",
            asset="normalized_traces",
            blocking=True,
            description="Every normalised row validates against the canonical schema (blocking).",
        )
    ],
    backfill_policy=SINGLE_RUN,
    can_subset=False,
    code_version=code_version(normalize_partition),
)
def ingest(context: dg.AssetExecutionContext, warehouse: WarehouseResource, firehose: FirehoseSource):
    wh = warehouse.warehouse
    by_reason: Counter = Counter()
    by_format: Counter = Counter()
    totals: Counter = Counter()
    invalid: list[str] = []
    for partition in context.partition_keys:
        files = firehose.partition_files(partition)
        context.log.info(f"{partition}: {len(files)} part file(s) under {firehose.root()}")
        quarantine_tmp = warehouse.state_dir / "staging" / f"quarantine-{partition}.parquet"
        stats = normalize_partition(files, partition, wh.path("normalized_traces", partition), quarantine_tmp,
                                    workers=load_settings().ingest_workers)
        normalized_path = wh.path("normalized_traces", partition)
        write_raw_index(normalized_path, quarantine_tmp, wh.path("raw_traces", partition), _spill_dir(warehouse))
        quarantine_tmp.unlink(missing_ok=True)
        # full validation is in the normaliser; re-check a sample
        sample = next(iter_parquet_batches(normalized_path, 200), None)
        for row in sample.to_pylist() if sample is not None else []:
            problems = validate_row(row)
            if problems:
                invalid.append(f"{row['trace_id']}: {problems[0]}")
        totals.update(raw=stats.raw_records, normalized=stats.normalized, quarantined=stats.quarantined, files=len(files))
        by_reason.update(stats.by_reason)
        by_format.update(stats.by_format)
    last = context.partition_keys[-1]
    yield dg.MaterializeResult(
        asset_key="raw_traces",
        metadata={
            **parquet_metadata(wh.path("raw_traces", last),
                             preview_columns=["trace_id", "source_file", "line_no", "format", "ingest", "reason"]),
            "raw_records": totals["raw"],
            "part_files": totals["files"],
            "quarantined_by_reason": dict(sorted(by_reason.items())),
            "firehose_root": firehose.root(),
        },
        data_version=partition_version(wh, "raw_traces", context.partition_keys),
    )
    yield dg.MaterializeResult(
        asset_key="normalized_traces",
        metadata={
            **parquet_metadata(wh.path("normalized_traces", last),
                             preview_columns=["trace_id", "format", "problem_id", "status", "n_steps", "n_tool_calls"]),
            "normalized": totals["normalized"],
            "by_format": dict(sorted(by_format.items())),
        },
        data_version=partition_version(wh, "normalized_traces", context.partition_keys),
    )
    yield dg.AssetCheckResult(
        asset_key="normalized_traces",
        check_name="schema_valid",
        passed=not invalid,
        metadata={"invalid_rows": len(invalid), "examples": dg.MetadataValue.json(invalid[:5])},
    )


# --------------------------------------------------------------------------------------------
# structural filter
# --------------------------------------------------------------------------------------------


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "structural_labels",
            deps=["normalized_traces"],
            description=(
                "One row per normalised trace: agentic / subtask / no_inference with the per-step evidence "
                "(did the step's inference response carry its tool calls, query copied verbatim by code, step-shape "
                "regularity) and whether the trace goes on to the gates (`kept`)."
            ),
            kinds={"python", "parquet"},
            **{k: v for k, v in CURATION.items() if k != "backfill_policy"},
        ),
        dg.AssetSpec(
            "subtask_traces",
            deps=["normalized_traces"],
            description=(
                "Sub-task trajectories (a deterministic loop drives the tools; the model only classifies or narrates), "
                "set aside — not deleted — for later use."
            ),
            kinds={"python", "parquet"},
            **{k: v for k, v in CURATION.items() if k != "backfill_policy"},
        ),
    ],
    backfill_policy=SINGLE_RUN,
    can_subset=False,
    code_version=code_version(structural_filter),
)
def structural(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    wh = warehouse.warehouse
    labels_total: Counter = Counter()
    rejected_total: Counter = Counter()
    for partition in context.partition_keys:
        with (PartitionWriter(wh, "structural_labels", partition, LABELS_SCHEMA) as labels_out,
              PartitionWriter(wh, "subtask_traces", partition, SUBTASK_SCHEMA) as subtasks_out,
              rejections_writer(wh, "structural", partition) as rejected_out):
            for rows in iter_row_batches(wh, "normalized_traces", partition):
                result, subtasks, labels = structural_filter(rows)
                kept_ids = {r["trace_id"] for r in result.kept}
                for label in labels:
                    label["kept"] = label["trace_id"] in kept_ids
                    labels_total[label["label"]] += 1
                labels_out.write(labels)
                subtasks_out.write(subtasks)
                rejected_out.write(result.rejected)
                _merge_counts(rejected_total, result.stats["rejected"])
    last = context.partition_keys[-1]
    yield dg.MaterializeResult(
        asset_key="structural_labels",
        metadata={
            **parquet_metadata(wh.path("structural_labels", last),
                             preview_columns=["trace_id", "label", "kept"]),
            "labels": dict(sorted(labels_total.items())),
            "rejected": dict(sorted(rejected_total.items())),
        },
        data_version=partition_version(wh, "structural_labels", context.partition_keys),
    )
    yield dg.MaterializeResult(
        asset_key="subtask_traces",
        metadata=parquet_metadata(wh.path("subtask_traces", last),
                                preview_columns=["trace_id", "format", "problem_id", "n_steps"]),
        data_version=partition_version(wh, "subtask_traces", context.partition_keys),
    )


# --------------------------------------------------------------------------------------------
# gates
# --------------------------------------------------------------------------------------------


class _CountingJudge:
    """Feeds every judge result into JudgeStats (calls, cache hits, tokens, failures)."""

    def __init__(self, judge: Any):
        from oro_assets.judge.base import JudgeStats

        self.inner = judge
        self.stats = JudgeStats()

    def judge(self, row: dict):
        from oro_assets.judge.base import judge_or_unavailable

        result = judge_or_unavailable(self.inner, row)
        self.stats.add(result)
        return result


def _structural_kept_ids(wh, partition: str) -> pa.Array:
    labels = pq.read_table(wh.path("structural_labels", partition), columns=["trace_id", "kept"])
    return labels.filter(pc.fill_null(labels.column("kept"), False)).column("trace_id").combine_chunks()


def _structural_kept(wh, partition: str, kept: pa.Array):
    """Batches of the normalised rows the structural filter kept (``kept``: their trace ids)."""
    yield from iter_row_batches(wh, "normalized_traces", partition,
                                keep=lambda batch: pc.is_in(batch.column("trace_id"), value_set=kept))


def _structural_set_aside(wh, partition: str, kept: pa.Array):
    """Batches of the ``meta`` of the normalised rows the structural filter set aside (their validator
    scores still count in their runs' reasoning coefficients)."""
    yield from iter_row_batches(wh, "normalized_traces", partition, columns=["trace_id", "meta"],
                                keep=lambda batch: pc.invert(pc.is_in(batch.column("trace_id"), value_set=kept)))


@dg.asset(
    **CURATION,
    deps=["structural_labels"],
    kinds={"python", "parquet"},
    description=(
        "Agentic traces that pass the format-validity gate (unpaired calls, recommend not exactly once, unparseable "
        "recommend args, over the token budget counted with the active model profile's tokenizer, think-then-stop), "
        "the grounding check (recommended ids seen in a tool result) and the reasoning gate (validator-recorded judge "
        "score, else the project's judge; threshold 0.7 by default). Metadata: judge calls/cache hits/tokens/failures, "
        "the token counter used, and ORO's reasoning coefficient per eval run (over every validator-scored trace of "
        "the run, including those the structural filter set aside)."
    ),
    check_specs=[
        dg.AssetCheckSpec(
            "judge_failure_ratio",
            asset="gated_traces",
            blocking=True,
            description="Under half of the partition's judge calls failed (else the gate refuses to produce a corpus).",
        )
    ],
    code_version=code_version(gate_traces),
)
def gated_traces(context: dg.AssetExecutionContext, config: GateConfig, warehouse: WarehouseResource,
                 judge: JudgeResource, model_profile: ModelProfileResource):
    from oro_assets.judge.base import JudgeFailureRatioExceeded, check_failure_ratio

    wh = warehouse.warehouse
    counting = _CountingJudge(judge.build())
    counter, why_estimate = model_profile.token_counter(warehouse.data_dir)
    if counter is None:
        context.log.warning(f"token budget counted with the {why_estimate}")
    count_tokens = counter if counter is not None else estimate_tokens
    # Every partition is gated into temporary files that are published only once the judge's failure
    # ratio is known to be acceptable: a refused run writes nothing.
    batch_stats: dict[str, list[dict]] = {}
    set_aside: dict[str, list[dict]] = {}  # validator scores of traces the gates never see, per partition
    with ExitStack() as outputs:
        for partition in context.partition_keys:
            kept_out = outputs.enter_context(PartitionWriter(wh, "gated_traces", partition, GATED_SCHEMA))
            rejected_out = outputs.enter_context(rejections_writer(wh, "gates", partition))
            kept_ids = _structural_kept_ids(wh, partition)
            set_aside[partition] = [ungated_run_scores(rows) for rows in _structural_set_aside(wh, partition, kept_ids)]
            for rows in _structural_kept(wh, partition, kept_ids):
                result = gate_traces(rows, judge=counting, threshold=config.reasoning_threshold, count_tokens=count_tokens,
                                     token_budget=config.token_budget, judge_concurrency=judge.concurrency)
                kept_out.write(result.kept)
                rejected_out.write(result.rejected)
                batch_stats.setdefault(partition, []).append(result.stats)
        stats = counting.stats
        judge_meta = stats.as_metadata()
        try:
            check_failure_ratio(stats, config.max_judge_failure_ratio)
        except JudgeFailureRatioExceeded as exc:
            # Refuse before publishing anything: the last good corpus stays in place and is not marked fresh.
            raise dg.Failure(description=f"reasoning gate refused the partition: {exc}", metadata=judge_meta) from None
    rejected_total: Counter = Counter()
    coefficients: dict[str, Any] = {}
    kept_total = 0
    for partition in context.partition_keys:
        merged = merge_gate_stats(batch_stats.get(partition, []) + set_aside.get(partition, []))
        _merge_counts(rejected_total, merged.get("rejected", {}))
        coefficients.update(merged.get("reasoning_coefficients", {}))
        kept_total += merged.get("kept", 0)
    last = context.partition_keys[-1]
    return dg.MaterializeResult(
        metadata={
            **parquet_metadata(wh.path("gated_traces", last),
                             preview_columns=["trace_id", "problem_id", "reasoning_score", "reasoning_source", "n_tokens"]),
            **judge_meta,
            "kept": kept_total,
            "rejected": dict(sorted(rejected_total.items())),
            "reasoning_threshold": config.reasoning_threshold,
            "token_budget": config.token_budget,
            "token_counter": counter.name if counter is not None else why_estimate,
            "reasoning_coefficients": dg.MetadataValue.json(dict(sorted(coefficients.items())[:50])),
        },
        check_results=[
            dg.AssetCheckResult(check_name="judge_failure_ratio", passed=True,
                                metadata={"detail": f"failure ratio {stats.failure_ratio:.1%}", **judge_meta})
        ],
        data_version=partition_version(wh, "gated_traces", context.partition_keys),
    )


# --------------------------------------------------------------------------------------------
# dedup + ranking
# --------------------------------------------------------------------------------------------


@dg.asset(
    **CURATION,
    deps=["gated_traces"],
    kinds={"python", "parquet"},
    description=(
        "Gated traces after exact and near-duplicate removal (MinHash over assistant+tool content within a problem; "
        "the higher-ranked twin is kept), with the structural rank score (think/tool depth, query reformulations, "
        "verification view before recommend, step-shape regularity)."
    ),
    check_specs=[
        dg.AssetCheckSpec("row_count_floor", asset="curated_traces",
                          description="Warns when a day curates fewer than 1% of its raw records (or none).")
    ],
    code_version=code_version(dedup_and_rank),
)
def curated_traces(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    wh = warehouse.warehouse
    rejected_total: Counter = Counter()
    kept_total = raw_total = 0
    for partition in context.partition_keys:
        # One index per partition: batches dedupe against each other (an earlier kept copy wins across
        # batches; within a batch the higher-ranked copy wins).
        index = DedupIndex()
        with (PartitionWriter(wh, "curated_traces", partition, CURATED_SCHEMA) as kept_out,
              rejections_writer(wh, "dedup", partition) as rejected_out):
            for rows in iter_row_batches(wh, "gated_traces", partition, batch_size=DEDUP_BATCH_ROWS):
                result = dedup_and_rank(rows, index=index)
                kept_out.write(result.kept)
                rejected_out.write(result.rejected)
                _merge_counts(rejected_total, result.stats["rejected"])
                kept_total += len(result.kept)
        raw_total += pq.ParquetFile(wh.path("raw_traces", partition)).metadata.num_rows
    last = context.partition_keys[-1]
    floor = max(1, raw_total // 100)
    return dg.MaterializeResult(
        metadata={
            **parquet_metadata(wh.path("curated_traces", last),
                             preview_columns=["trace_id", "problem_id", "rank_score", "reasoning_score"]),
            "kept": kept_total,
            "rejected": dict(sorted(rejected_total.items())),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="row_count_floor",
                passed=kept_total >= floor,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"kept": kept_total, "floor": floor, "raw": raw_total},
            )
        ],
        data_version=partition_version(wh, "curated_traces", context.partition_keys),
    )


# --------------------------------------------------------------------------------------------
# split + ledger
# --------------------------------------------------------------------------------------------


def pool_problems(wh) -> list[dict]:
    """The problem_pool asset's rows as problem dicts (reward decoded)."""
    if not wh.exists("problem_pool"):
        return []
    out = []
    for row in wh.read("problem_pool").to_pylist():
        out.append({**row, "reward": jsonio.loads(row["reward"]) if row.get("reward") else None,
                    "voucher": jsonio.loads(row["voucher"]) if row.get("voucher") else None})
    return out


@dg.asset(
    **CURATION,
    deps=["curated_traces", "leak_clusters", "problem_pool"],
    kinds={"python", "parquet"},
    description=(
        "Curated traces with their leak cluster and pool (train / eval / never_touch). Traces are matched to the "
        "problem pool by problem_id, else by exact query text; unknown problems are clustered by query text alone "
        "and registered. A problem bridging clusters of different pools is a leak conflict: its traces are "
        "quarantined and reported, never silently resolved."
    ),
    check_specs=[
        dg.AssetCheckSpec("no_leak", asset="split_traces", blocking=True,
                          description="No cluster, ground-truth product id or near-duplicate query is on both train and eval (blocking).")
    ],
    code_version=code_version(split_stage),
)
def split_traces(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    from oro_assets.curation.clusters import leak_violations, near_duplicate_leaks

    wh = warehouse.warehouse
    problems = pool_problems(wh)
    pools: Counter = Counter()
    conflicts: list[dict] = []
    with registry_lock(warehouse.state_dir):
        registry = Registry.load(warehouse.state_dir)
        for partition in context.partition_keys:
            with (PartitionWriter(wh, "split_traces", partition, SPLIT_SCHEMA) as kept_out,
                  rejections_writer(wh, "split", partition) as rejected_out):
                for rows in iter_row_batches(wh, "curated_traces", partition):
                    result = split_stage(rows, registry, problems, first_seen=partition)
                    kept_out.write(result.kept)
                    rejected_out.write(result.rejected)
                    _merge_counts(pools, result.stats.get("pools", {}))
                    conflicts.extend(result.stats.get("conflicts", []))
        registry.save(warehouse.state_dir)
        violations = leak_violations(registry) + near_duplicate_leaks(registry)
    last = context.partition_keys[-1]
    return dg.MaterializeResult(
        metadata={
            **parquet_metadata(wh.path("split_traces", last),
                             preview_columns=["trace_id", "problem_id", "cluster_id", "pool", "rank_score"]),
            "pools": dict(sorted(pools.items())),
            "leak_conflicts": len(conflicts),
            "conflicts": dg.MetadataValue.json(conflicts[:20]),
        },
        check_results=[
            dg.AssetCheckResult(check_name="no_leak", passed=not violations,
                                metadata={"violations": len(violations), "examples": dg.MetadataValue.json(violations[:5])})
        ],
        data_version=partition_version(wh, "split_traces", context.partition_keys),
    )


LEDGER_STAGES = ("structural", "gates", "dedup", "split")


@dg.asset(
    **CURATION,
    deps=["raw_traces", "normalized_traces", "structural_labels", "gated_traces", "curated_traces", "split_traces"],
    kinds={"python", "parquet", "duckdb"},
    description=(
        "One row per raw record: trace id, provenance (file, line, partition, sha256), fate (kept/rejected), the "
        "stage that decided it and one reason code from oro_assets.curation.reasons (with a human-readable detail). "
        "Metadata: counts per reason code and the rejection funnel."
    ),
    check_specs=[
        dg.AssetCheckSpec("conservation", asset="trace_ledger", blocking=True,
                          description="Raw record count = ledger rows, and every kept record lands in exactly one pool (blocking).")
    ],
    code_version=code_version(write_ledger, LEDGER_ROWS_SQL, ORDER_BY),
)
def trace_ledger(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    wh = warehouse.warehouse
    problems: list[str] = []
    reasons: Counter = Counter()
    funnel_rows: list[dict] = []
    raw_total = 0
    for partition in context.partition_keys:
        raw_index, ledger_path = wh.path("raw_traces", partition), wh.path("trace_ledger", partition)
        split_path = wh.path("split_traces", partition)
        sources = {"provenance": wh.path("normalized_traces", partition), "quarantine": raw_index,
                   "rejections": [wh.path(f"rejections_{stage}", partition) for stage in LEDGER_STAGES],
                   "kept": split_path}
        with atomic_path(ledger_path) as tmp:
            write_ledger(sources, tmp, where={"quarantine": "ingest = 'quarantined'"}, temp_dir=_spill_dir(warehouse))
        raw_count = pq.ParquetFile(raw_index).metadata.num_rows
        problems += [f"{partition}: {p}" for p in check_conservation(raw_count, ledger_path, split_path)]
        reasons.update(reason_counts(ledger_path))
        funnel_rows = funnel(ledger_path)
        raw_total += raw_count
    views = wh.refresh_duckdb_views()
    last = context.partition_keys[-1]
    order = {code.value: n for n, code in enumerate(ReasonCode)}  # pipeline order: ingest first, split last
    counts = {"kept": reasons.get("kept", 0),
              **{k: v for k, v in sorted(reasons.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
                 if k != "kept"}}
    return dg.MaterializeResult(
        metadata={
            **parquet_metadata(wh.path("trace_ledger", last),
                             preview_columns=["trace_id", "source_file", "line_no", "fate", "stage", "reason", "pool"]),
            "raw_records": raw_total,
            "reason_counts": dg.MetadataValue.json(counts),
            "rejection_funnel": dg.MetadataValue.md(funnel_markdown(counts, raw_total)),
            "stage_funnel": dg.MetadataValue.md(markdown_table(funnel_rows)),
            "duckdb_views": len(views),
        },
        check_results=[
            dg.AssetCheckResult(check_name="conservation", passed=not problems,
                                metadata={"raw_records": raw_total, "problems": dg.MetadataValue.json(problems[:10])})
        ],
        data_version=partition_version(wh, "trace_ledger", context.partition_keys),
    )
