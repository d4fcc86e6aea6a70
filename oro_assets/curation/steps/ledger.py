"""Step: the trace ledger, one row per raw record with its one fate, from every step's tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from oro_assets.curation.ledger import (
    LEDGER_ROWS_SQL,
    LEDGER_SCHEMA,
    ORDER_BY,
    check_conservation,
    check_vocabulary,
    funnel,
    ledger_session,
    reason_counts,
)
from oro_assets.curation.step import (
    CheckOutcome,
    CheckSpec,
    MarkdownTable,
    Output,
    PartitionContext,
    Step,
    StepResult,
)
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.storage import sorted_batches

#: the steps whose rejections the ledger gathers (ingest's are in ``raw_traces``)
LEDGER_STAGES = (Stage.STRUCTURAL, Stage.GATES, Stage.DEDUP, Stage.SPLIT)


def ledger_sources(store, partition: str) -> dict[str, Any]:
    rejections = [store.source(f"rejections_{stage}", partition) for stage in LEDGER_STAGES]
    return {"provenance": store.source("normalized_traces", partition),
            "quarantine": store.source("raw_traces", partition),
            "rejections": rejections if all(isinstance(r, Path) for r in rejections)
            else pa.concat_tables(rejections, promote_options="default"),
            "kept": store.source("split_traces", partition)}


class LedgerStep(Step):
    name = "ledger"
    input = "split_traces"
    kinds = ("python", "parquet", "duckdb")
    completes_partition = True
    reads_rows = False  # one SQL query over the day's tables: the split's kept rows are in split_traces
    deps = ("raw_traces", "normalized_traces", "structural_labels", "gated_traces", "curated_traces")
    own = (Output(
        "trace_ledger", LEDGER_SCHEMA,
        "One row per raw record: trace id, provenance (file, line, partition, sha256), fate (kept/rejected), the "
        "stage that decided it and one reason code from oro_assets.reasons (with a human-readable detail). "
        "Metadata: counts per reason code and the rejection funnel.",
        ("trace_id", "source_file", "line_no", "fate", "stage", "reason", "pool")),)
    checks = (CheckSpec("conservation", "trace_ledger",
                        "Raw record count = ledger rows, and every kept record lands in exactly one pool (blocking).",
                        blocking=True),)

    def read(self, ctx: PartitionContext, state: Any):
        return []  # the ledger is one SQL query over the day's tables, run in ``finish``

    def process(self, rows: list[dict], state: Any) -> StepResult:
        return StepResult(rows, [])  # fed nothing (``reads_rows``): the split's kept rows are in split_traces

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        writer = ctx.writer("trace_ledger", LEDGER_SCHEMA)
        temp = getattr(ctx.store, "spill_dir", None)
        with ledger_session(ledger_sources(ctx.store, ctx.partition), where={"quarantine": "ingest = 'quarantined'"},
                            temp_dir=temp) as con:
            check_vocabulary(con)
            for batch in sorted_batches(con, LEDGER_ROWS_SQL, ORDER_BY, LEDGER_SCHEMA):
                writer.write(pa.Table.from_batches([batch]))
        return {}

    def outcomes(self, store, report) -> list[CheckOutcome]:
        problems, raw = [], 0
        for p in report.partitions:
            count = store.num_rows("raw_traces", p)
            raw += count
            problems += [f"{p}: {x}" for x in check_conservation(count, store.source("trace_ledger", p),
                                                                 store.source("split_traces", p))]
        return [CheckOutcome("conservation", "trace_ledger", not problems,
                             {"raw_records": raw, "problems": problems[:10]})]

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        raw = 0
        steps: list[dict] = []
        for p in report.partitions:
            ledger = store.source("trace_ledger", p)
            for k, v in reason_counts(ledger).items():
                reasons[k] = reasons.get(k, 0) + v
            raw += store.num_rows("raw_traces", p)
            steps = funnel(ledger)
        order = {code.value: n for n, code in enumerate(ReasonCode)}  # pipeline order: ingest first, split last
        counts = {"kept": reasons.get("kept", 0),
                  **{k: v for k, v in sorted(reasons.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
                     if k != "kept"}}
        rows = [{"outcome": k, "records": v, "share": f"{(v / raw if raw else 0):.1%}"} for k, v in counts.items()]
        return {"raw_records": raw, "reason_counts": counts,
                "rejection_funnel": MarkdownTable(rows), "stage_funnel": MarkdownTable(steps)}

