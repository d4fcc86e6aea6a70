"""Step: exact and near-duplicate removal with the structural rank, within a partition."""

from __future__ import annotations

from typing import Any

from oro_assets.curation.dedup import DEFAULT_NEAR_THRESHOLD, DedupIndex, dedup_and_rank
from oro_assets.curation.schemas import CURATED_SCHEMA
from oro_assets.curation.step import (
    CheckOutcome,
    CheckSpec,
    Output,
    PartitionContext,
    RunParams,
    Step,
    StepResult,
    totals,
)
from oro_assets.reasons import Stage


class DedupStep(Step):
    name = "dedup"
    stage = Stage.DEDUP
    input = "gated_traces"
    # larger batches: within a batch the best-ranked duplicate wins, across batches the earlier one
    batch_rows = 5000
    kept = Output(
        "curated_traces", CURATED_SCHEMA,
        "Gated traces after exact and near-duplicate removal (MinHash over assistant+tool content within a problem; "
        "the higher-ranked twin is kept), with the structural rank score (think/tool depth, query reformulations, "
        "verification view before recommend, step-shape regularity).",
        ("trace_id", "problem_id", "rank_score", "reasoning_score"))
    checks = (CheckSpec("row_count_floor", "curated_traces",
                        "Warns when a day curates fewer than 1% of its raw records (or none)."),)

    def open_run(self, store, params: RunParams) -> float:
        """The run's near-duplicate threshold."""
        return params.near_threshold if params.near_threshold is not None else DEFAULT_NEAR_THRESHOLD

    def begin(self, ctx: PartitionContext) -> tuple[DedupIndex, float]:
        return DedupIndex(), ctx.run  # one index per partition: its batches dedupe against each other

    def process(self, rows: list[dict], state: tuple[DedupIndex, float]) -> StepResult:
        index, near_threshold = state
        return dedup_and_rank(rows, near_threshold=near_threshold, index=index)

    def outcomes(self, store, report) -> list[CheckOutcome]:
        kept, _ = totals(report)
        raw = sum(store.num_rows("raw_traces", p) for p in report.partitions if store.exists("raw_traces", p))
        floor = max(1, raw // 100)
        return [CheckOutcome("row_count_floor", "curated_traces", kept >= floor,
                             {"kept": kept, "floor": floor, "raw": raw}, warn=True)]

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        kept, rejected = totals(report)
        return {"kept": kept, "rejected": rejected}
