"""Step: the structural filter (agentic / sub-task / no-inference), on every normalised trace."""

from __future__ import annotations

from collections import Counter
from typing import Any

from oro_assets.curation.gates import validator_score
from oro_assets.curation.rows import meta_of
from oro_assets.curation.schemas import LABELS_SCHEMA, SUBTASK_SCHEMA
from oro_assets.curation.step import Output, PartitionContext, Step, StepResult
from oro_assets.curation.structural import AGENTIC, LABELS, RICHNESS_AGREES_AT, SUBTASKS, structural_filter
from oro_assets.reasons import Stage


class StructuralStep(Step):
    name = "structural"
    stage = Stage.STRUCTURAL
    input = "normalized_traces"
    outputs = (
        Output(LABELS, LABELS_SCHEMA,
               "One row per normalised trace: agentic / subtask / no_inference with the per-step evidence "
               "(did the step's inference response carry its tool calls, query copied verbatim by code, step-shape "
               "regularity), ORO's own `agentic_richness` (share of catalogue dispatches the latest answer in ORO's "
               "step list named next; null without proxy calls or dispatches; blind to dropped bodies and to ORO's "
               "bucketing), the record's `recorder_era` (a6b1cf3 / later / mixed) and whether the trace goes on to "
               "the gates (`kept`). Metadata: how often richness agrees with the label, per label.",
               ("trace_id", "label", "agentic_richness", "recorder_era", "kept")),
        Output(SUBTASKS, SUBTASK_SCHEMA,
               "Sub-task trajectories (a deterministic loop drives the tools; the model only classifies or narrates), "
               "set aside — not deleted — for later use.",
               ("trace_id", "format", "problem_id", "n_steps")),
    )

    def process(self, rows: list[dict], state: Any) -> StepResult:
        result = structural_filter(rows)
        labels = result.outputs[LABELS]
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
        return StepResult(kept, result.rejected, result.outputs,
                          {"labels": result.stats["labels"], "richness": richness_agreement(labels),
                           "recorder_eras": dict(Counter(str(label["recorder_era"]) for label in labels))})

    def finish(self, ctx: PartitionContext, state: Any, stats: dict[str, Any]) -> dict[str, Any]:
        return {**stats, "labels": dict(sorted(stats.get("labels", {}).items()))}

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        if asset != LABELS:
            return {}
        total = self.merge(list(report.stats.values()))
        return {"labels": dict(sorted(total.get("labels", {}).items())),
                "rejected": dict(sorted(total.get("rejected", {}).items())),
                "recorder_eras": dict(sorted(total.get("recorder_eras", {}).items())),
                "agentic_richness_vs_label": {k: dict(sorted(v.items())) for k, v in sorted(total.get("richness", {}).items())}}


def richness_agreement(labels: list[dict]) -> dict[str, dict[str, int]]:
    """Per label: traces whose ORO richness agrees with it (richness >= RICHNESS_AGREES_AT exactly
    when agentic), disagrees, or is not computable."""
    out: dict[str, dict[str, int]] = {}
    for label in labels:
        value = label["agentic_richness"]
        key = ("unmeasured" if value is None
               else "agree" if (value >= RICHNESS_AGREES_AT) == (label["label"] == AGENTIC) else "disagree")
        counts = out.setdefault(label["label"], {})
        counts[key] = counts.get(key, 0) + 1
    return out

