"""Step: the gates (format validity, grounding, reasoning judge) on the structurally kept traces."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc

from oro_assets.curation.gates import (
    DEFAULT_REASONING_THRESHOLD,
    DEFAULT_TOKEN_BUDGET,
    estimate_tokens,
    gate_traces,
    merge_gate_stats,
    run_scores,
)
from oro_assets.curation.schemas import GATED_SCHEMA
from oro_assets.curation.step import (
    CheckOutcome,
    CheckSpec,
    Output,
    PartitionContext,
    RunParams,
    Step,
    StepResult,
)
from oro_assets.judge.base import JudgeStats, check_failure_ratio, judge_or_unavailable
from oro_assets.reasons import Stage


class CountingJudge:
    """Feeds every judge result into JudgeStats (calls, cache hits, tokens, failures)."""

    def __init__(self, judge: Any):
        self.inner = judge
        self.stats = JudgeStats()

    def judge(self, row: dict):
        result = judge_or_unavailable(self.inner, row)
        self.stats.add(result)
        return result


def structural_kept_ids(store, partition: str):
    """The trace ids the structural filter kept (an Arrow array)."""
    labels = store.table("structural_labels", partition, columns=["trace_id", "kept"])
    return labels.filter(pc.fill_null(labels.column("kept"), False)).column("trace_id").combine_chunks()


class GateStep(Step):
    name = "gates"
    stage = Stage.GATES
    input = "normalized_traces"
    deps = ("structural_labels",)
    kept = Output(
        "gated_traces", GATED_SCHEMA,
        "Agentic traces that pass the format-validity gate (unpaired calls, recommend not exactly once, unparseable "
        "recommend args, over the token budget counted with the active model profile's tokenizer, think-then-stop), "
        "the grounding check (recommended ids seen in a tool result) and the reasoning gate (validator-recorded judge "
        "score, else the project's judge; threshold 0.7 by default). Metadata: judge calls/cache hits/tokens/failures, "
        "the token counter used, and ORO's reasoning coefficient per eval run (over every validator-scored trace of "
        "the run, including those the structural filter set aside).",
        ("trace_id", "problem_id", "reasoning_score", "reasoning_source", "n_tokens"))
    checks = (CheckSpec("judge_failure_ratio", "gated_traces",
                        "Under half of the partition's judge calls failed (else the gate refuses to produce a corpus).",
                        blocking=True),)

    def open_run(self, store, params: RunParams) -> None:
        self.judge = CountingJudge(params.judge) if params.judge is not None else None
        self.threshold = params.threshold if params.threshold is not None else DEFAULT_REASONING_THRESHOLD
        self.token_budget = params.token_budget if params.token_budget is not None else DEFAULT_TOKEN_BUDGET
        self.count_tokens = params.count_tokens if params.count_tokens is not None else estimate_tokens
        self.concurrency = params.judge_concurrency
        self.min_richness = params.min_agentic_richness
        self.counter_name = params.token_counter_name or getattr(params.count_tokens, "name", "byte estimate")

    def read(self, ctx: PartitionContext, state: Any):
        kept = structural_kept_ids(ctx.store, ctx.partition)
        for batch in ctx.store.batches(self.input, ctx.partition, self.batch_rows):
            yield batch.filter(pc.is_in(batch.column("trace_id"), value_set=kept)).to_pylist()

    def process(self, rows: list[dict], state: Any) -> StepResult:
        return gate_traces(rows, judge=self.judge, threshold=self.threshold, count_tokens=self.count_tokens,
                           token_budget=self.token_budget, judge_concurrency=self.concurrency,
                           min_agentic_richness=self.min_richness)

    def merge(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return merge_gate_stats(parts)

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        # a run's coefficient also covers its validator-scored traces the structural filter set aside
        labels = ctx.store.table("structural_labels", ctx.partition, columns=["kept", "eval_run_id", "validator_score"])
        aside = labels.filter(pc.invert(pc.fill_null(labels.column("kept"), False)))
        part = run_scores(zip(aside.column("eval_run_id").to_pylist(), aside.column("validator_score").to_pylist(),
                              strict=True))
        return merge_gate_stats(([stats] if "reasoning_coefficients" in stats else []) + [part])

    def judge_metadata(self) -> dict[str, Any]:
        return (self.judge.stats if self.judge is not None else JudgeStats()).as_metadata()

    def before_publish(self, report, params: RunParams) -> None:
        report.run["judge"] = self.judge_metadata()
        if params.max_judge_failure_ratio is not None and self.judge is not None:
            check_failure_ratio(self.judge.stats, params.max_judge_failure_ratio)  # raises: nothing published

    def outcomes(self, store, report) -> list[CheckOutcome]:
        judge = report.run.get("judge") or self.judge_metadata()
        return [CheckOutcome("judge_failure_ratio", "gated_traces", True,
                             {"detail": f"failure ratio {judge.get('judge_failure_ratio', 0.0):.1%}", **judge})]

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        coefficients: dict[str, Any] = {}
        rejected: dict[str, int] = {}
        kept = 0
        for stats in report.stats.values():
            coefficients.update(stats.get("reasoning_coefficients", {}))
            for k, v in stats.get("rejected", {}).items():
                rejected[k] = rejected.get(k, 0) + v
            kept += stats.get("kept", 0)
        return {**(report.run.get("judge") or self.judge_metadata()), "kept": kept,
                "rejected": dict(sorted(rejected.items())), "reasoning_threshold": self.threshold,
                "token_budget": self.token_budget, "token_counter": self.counter_name,
                "min_agentic_richness": "off" if self.min_richness is None else self.min_richness,
                "reasoning_coefficients": dict(sorted(coefficients.items())[:50])}
