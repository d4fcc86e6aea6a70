"""Step: the structural filter (agentic / sub-task / no-inference), on every normalised trace."""

from __future__ import annotations

from typing import Any

from oro_assets.curation._rows import meta_of
from oro_assets.curation.gates import validator_score
from oro_assets.curation.schemas import LABELS_SCHEMA, SUBTASK_SCHEMA
from oro_assets.curation.step import Output, PartitionContext, Step, StepResult
from oro_assets.curation.structural import structural_filter
from oro_assets.reasons import Stage


class StructuralStep(Step):
    name = "structural"
    stage = Stage.STRUCTURAL
    input = "normalized_traces"
    outputs = (
        Output("structural_labels", LABELS_SCHEMA,
               "One row per normalised trace: agentic / subtask / no_inference with the per-step evidence "
               "(did the step's inference response carry its tool calls, query copied verbatim by code, step-shape "
               "regularity) and whether the trace goes on to the gates (`kept`).",
               ("trace_id", "label", "kept")),
        Output("subtask_traces", SUBTASK_SCHEMA,
               "Sub-task trajectories (a deterministic loop drives the tools; the model only classifies or narrates), "
               "set aside — not deleted — for later use.",
               ("trace_id", "format", "problem_id", "n_steps")),
    )

    def process(self, rows: list[dict], state: Any) -> StepResult:
        result, subtasks, labels = structural_filter(rows)
        kept_ids = {r["trace_id"] for r in result.kept}
        kept = []
        for row, label in zip(rows, labels, strict=True):
            label["kept"] = row["trace_id"] in kept_ids
            meta = meta_of(row)
            run_id = meta.get("eval_run_id")
            label["eval_run_id"] = None if run_id is None else str(run_id)
            label["validator_score"] = validator_score(row, meta)
            if label["kept"]:
                kept.append(row)  # the gates read the normalised row, as they do from the warehouse
        return StepResult(kept, result.rejected, {"structural_labels": labels, "subtask_traces": subtasks},
                          {"labels": result.stats["labels"]})

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        return {**stats, "labels": dict(sorted(stats.get("labels", {}).items()))}

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        if asset != "structural_labels":
            return {}
        total = self.merge(list(report.stats.values()))
        return {"labels": dict(sorted(total.get("labels", {}).items())),
                "rejected": dict(sorted(total.get("rejected", {}).items()))}
