"""One partition through every curation stage: a convenience chain over the stage functions.

The Dagster assets may call the stages one by one (each is a pure function returning
``(kept, rejected, stats)``); this chain is what tests, benchmarks and lineage fixtures use, and
it is the reference for the order: structural → gates → dedup/rank → split → ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from oro_assets.curation._rows import as_rows
from oro_assets.curation.clusters import Registry
from oro_assets.curation.dedup import DEFAULT_NEAR_THRESHOLD, dedup_and_rank
from oro_assets.curation.gates import (
    DEFAULT_REASONING_THRESHOLD,
    DEFAULT_TOKEN_BUDGET,
    estimate_tokens,
    gate_traces,
    merge_gate_stats,
    ungated_run_scores,
)
from oro_assets.curation.ledger import build_ledger, funnel, reason_counts
from oro_assets.curation.split import split_traces
from oro_assets.curation.structural import structural_filter


@dataclass
class PartitionOutputs:
    structural_labels: list[dict]
    subtask_traces: list[dict]
    gated_traces: list[dict]
    curated_traces: list[dict]  # after dedup and split: with rank_score, cluster_id, pool
    rejections: list[dict]
    trace_ledger: list[dict]
    stats: dict[str, Any] = field(default_factory=dict)


def curate_partition(
    normalized: Iterable[dict],
    quarantine: Iterable[dict],
    registry: Registry,
    *,
    judge: Any | None = None,
    pool_problems: Iterable[dict] = (),
    threshold: float = DEFAULT_REASONING_THRESHOLD,
    count_tokens: Callable[[str], int] = estimate_tokens,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    near_threshold: float = DEFAULT_NEAR_THRESHOLD,
    partition: str = "",
) -> PartitionOutputs:
    """Run structural → gates → dedup → split and build the ledger. ``registry`` gains any new
    problems (save it afterwards when ``stats["split"]["registry_new"]`` > 0)."""
    normalized = list(as_rows(normalized))
    quarantine = list(as_rows(quarantine))
    (kept, rej_struct, st_struct), subtasks, labels = structural_filter(normalized)
    gated = gate_traces(
        kept, judge=judge, threshold=threshold, count_tokens=count_tokens, token_budget=token_budget
    )
    # the runs' coefficients also cover the validator-scored traces the structural filter set aside
    kept_ids = {r.get("trace_id") for r in kept}
    set_aside = [r for r in normalized if r.get("trace_id") not in kept_ids]
    gated.stats.update(merge_gate_stats([gated.stats, ungated_run_scores(set_aside)]))
    deduped = dedup_and_rank(gated.kept, near_threshold=near_threshold)
    split = split_traces(deduped.kept, registry, pool_problems, first_seen=partition)
    rejections = rej_struct + gated.rejected + deduped.rejected + split.rejected
    ledger = build_ledger(normalized, quarantine, rejections, split.kept)
    stats = {
        "structural": st_struct,
        "gates": gated.stats,
        "dedup": deduped.stats,
        "split": split.stats,
        "reason_counts": reason_counts(ledger),
        "funnel": funnel(ledger),
    }
    return PartitionOutputs(labels, subtasks, gated.kept, split.kept, rejections, ledger, stats)
