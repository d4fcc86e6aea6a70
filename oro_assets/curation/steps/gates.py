"""Step: the gates (format validity, grounding, reasoning judge) on the structurally kept traces."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    RunRefused,
    Step,
    StepResult,
)
from oro_assets.judge.base import (
    JudgeFailureRatioExceeded,
    JudgeStats,
    check_failure_ratio,
    judge_or_unavailable,
)
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


@dataclass(frozen=True)
class GateConfig:
    """Run config of the gates (editable in the launchpad)."""

    reasoning_threshold: float = field(default=DEFAULT_REASONING_THRESHOLD, metadata={
        "help": "Reasoning score a trace needs to pass the reasoning gate."})
    token_budget: int = field(default=DEFAULT_TOKEN_BUDGET, metadata={
        "help": "Tokens a trace may have (counted with the model profile's tokenizer)."})
    max_judge_failure_ratio: float = field(default=0.5, metadata={
        "help": "Share of failed judge calls above which the run is refused (nothing is published)."})


@dataclass(frozen=True)
class GateRun:
    """One run of the gates: its settings and its counting judge (None: validator scores only)."""

    judge: CountingJudge | None
    threshold: float
    token_budget: int
    count_tokens: Any
    concurrency: int
    min_richness: float | None
    counter_name: str

    def judge_metadata(self) -> dict[str, Any]:
        return (self.judge.stats if self.judge is not None else JudgeStats()).as_metadata()


def structural_kept_ids(store, partition: str):
    """The trace ids the structural filter kept (an Arrow array)."""
    labels = store.table("structural_labels", partition, columns=["trace_id", "kept"])
    return labels.filter(pc.fill_null(labels.column("kept"), False)).column("trace_id").combine_chunks()


class GateStep(Step):
    name = "gates"
    stage = Stage.GATES
    input = "normalized_traces"
    deps = ("structural_labels",)
    resources = ("judge", "model_profile")  # the judge; the tokenizer the token budget is counted with
    Config = GateConfig
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

    def run_params(self, sources: Mapping[str, Any], config: GateConfig, partitions: list[str],
                   log: logging.Logger) -> RunParams:
        judge, profile = sources["judge"], sources["model_profile"]
        counter, why_estimate = profile.token_counter(sources["warehouse"].data_dir)
        if counter is None:
            log.warning(f"token budget counted with the {why_estimate}")
        return RunParams(judge=judge.build(), judge_concurrency=judge.concurrency,
                         threshold=config.reasoning_threshold, token_budget=config.token_budget,
                         count_tokens=counter if counter is not None else estimate_tokens,
                         token_counter_name=counter.name if counter is not None else why_estimate,
                         max_judge_failure_ratio=config.max_judge_failure_ratio,
                         min_agentic_richness=judge.min_agentic_richness if judge.min_agentic_richness >= 0 else None)

    def open_run(self, store, params: RunParams) -> GateRun:
        return GateRun(
            judge=CountingJudge(params.judge) if params.judge is not None else None,
            threshold=params.threshold if params.threshold is not None else DEFAULT_REASONING_THRESHOLD,
            token_budget=params.token_budget if params.token_budget is not None else DEFAULT_TOKEN_BUDGET,
            count_tokens=params.count_tokens if params.count_tokens is not None else estimate_tokens,
            concurrency=params.judge_concurrency,
            min_richness=params.min_agentic_richness,
            counter_name=params.token_counter_name or getattr(params.count_tokens, "name", "byte estimate"))

    def begin(self, ctx: PartitionContext) -> GateRun:
        return ctx.run

    def read(self, ctx: PartitionContext, state: Any):
        kept = structural_kept_ids(ctx.store, ctx.partition)
        for batch in ctx.store.batches(self.input, ctx.partition, self.batch_rows):
            yield batch.filter(pc.is_in(batch.column("trace_id"), value_set=kept)).to_pylist()

    def process(self, rows: list[dict], run: GateRun) -> StepResult:
        return gate_traces(rows, judge=run.judge, threshold=run.threshold, count_tokens=run.count_tokens,
                           token_budget=run.token_budget, judge_concurrency=run.concurrency,
                           min_agentic_richness=run.min_richness)

    def merge(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return merge_gate_stats(parts)

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        # a run's coefficient also covers its validator-scored traces the structural filter set aside
        labels = ctx.store.table("structural_labels", ctx.partition, columns=["kept", "eval_run_id", "validator_score"])
        aside = labels.filter(pc.invert(pc.fill_null(labels.column("kept"), False)))
        part = run_scores(zip(aside.column("eval_run_id").to_pylist(), aside.column("validator_score").to_pylist(),
                              strict=True))
        return merge_gate_stats(([stats] if "reasoning_coefficients" in stats else []) + [part])

    def before_publish(self, run: GateRun, report, params: RunParams) -> None:
        report.run.update(judge=run.judge_metadata(), reasoning_threshold=run.threshold,
                          token_budget=run.token_budget, token_counter=run.counter_name,
                          min_agentic_richness="off" if run.min_richness is None else run.min_richness)
        if params.max_judge_failure_ratio is not None and run.judge is not None:
            try:
                check_failure_ratio(run.judge.stats, params.max_judge_failure_ratio)
            except JudgeFailureRatioExceeded as exc:  # nothing is published
                raise RunRefused(f"reasoning gate refused the partition: {exc}", report.run["judge"]) from exc

    def outcomes(self, store, report) -> list[CheckOutcome]:
        judge = report.run["judge"]
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
        run = report.run
        return {**run["judge"], "kept": kept, "rejected": dict(sorted(rejected.items())),
                **{k: run[k] for k in ("reasoning_threshold", "token_budget", "token_counter", "min_agentic_richness")},
                "reasoning_coefficients": dict(sorted(coefficients.items())[:50])}
