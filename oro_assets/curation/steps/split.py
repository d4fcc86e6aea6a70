"""Step: the leak-cluster-guarded split (train / eval / never_touch) against the persistent registry."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oro_assets.curation.clusters import Registry, leak_violations, near_duplicate_leaks, registry_lock
from oro_assets.curation.schemas import SPLIT_SCHEMA
from oro_assets.curation.split import split_traces
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


@dataclass
class SplitRun:
    """One run of the split: the registry it assigns to, the pool's problems, and the registry lock
    it holds when the registry is the persistent one."""

    registry: Registry
    problems: list[dict]
    lock: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)


class SplitStep(Step):
    name = "split"
    stage = Stage.SPLIT
    input = "curated_traces"
    deps = ("leak_clusters", "problem_pool")
    kept = Output(
        "split_traces", SPLIT_SCHEMA,
        "Curated traces with their leak cluster and pool (train / eval / never_touch). Traces are matched to the "
        "problem pool by problem_id, else by exact query text; unknown problems are clustered by query text alone "
        "and registered. A problem bridging clusters of different pools is a leak conflict: its traces are "
        "quarantined and reported, never silently resolved.",
        ("trace_id", "problem_id", "cluster_id", "pool", "rank_score"))
    checks = (CheckSpec("no_leak", "split_traces",
                        "No cluster, ground-truth product id or near-duplicate query is on both train and eval "
                        "(blocking).", blocking=True),)

    def run_params(self, sources: Mapping[str, Any], config: None, partitions: list[str],
                   log: logging.Logger) -> RunParams:
        warehouse = sources["warehouse"]  # the persistent registry's state_dir, the pool's problems
        return RunParams(state_dir=warehouse.state_dir, pool_problems=warehouse.pool_problems())

    def open_run(self, store, params: RunParams) -> SplitRun:
        """The registry the run assigns to: the given one, or the persistent one under ``state_dir``,
        loaded and (in :meth:`close_run`) saved under the registry lock."""
        if params.registry is not None:
            return SplitRun(params.registry, list(params.pool_problems))
        if params.state_dir is None:
            raise ValueError("the split needs a registry or the state_dir of the persistent one")
        lock = contextlib.ExitStack()
        lock.enter_context(registry_lock(params.state_dir))
        try:
            return SplitRun(Registry.load(params.state_dir), list(params.pool_problems), lock)
        except BaseException:
            lock.close()
            raise

    def begin(self, ctx: PartitionContext) -> tuple[SplitRun, str]:
        return ctx.run, ctx.partition

    def process(self, rows: list[dict], state: tuple[SplitRun, str]) -> StepResult:
        run, partition = state
        return split_traces(rows, run.registry, run.problems, first_seen=partition)

    def close_run(self, run: SplitRun, store, params: RunParams, report) -> None:
        if params.registry is None:
            run.registry.save(params.state_dir)
        report.run["violations"] = leak_violations(run.registry) + near_duplicate_leaks(run.registry)

    def release(self, run: SplitRun) -> None:
        run.lock.close()

    def outcomes(self, store, report) -> list[CheckOutcome]:
        violations = report.run.get("violations", [])
        return [CheckOutcome("no_leak", "split_traces", not violations,
                             {"violations": len(violations), "examples": violations[:5]})]

    def metadata(self, store, report, asset: str) -> dict[str, Any]:
        pools: dict[str, int] = {}
        conflicts: list = []
        for stats in report.stats.values():
            for k, v in stats.get("pools", {}).items():
                pools[k] = pools.get(k, 0) + v
            conflicts += stats.get("conflicts", [])
        kept, rejected = totals(report)
        return {"kept": kept, "pools": dict(sorted(pools.items())), "leak_conflicts": len(conflicts),
                "conflicts": conflicts[:20]}
