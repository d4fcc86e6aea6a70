"""The curation pipeline: one declared sequence of steps, the one place to read it.

    ingest → structural → gates → dedup → split → ledger

Each step (``oro_assets/curation/steps/``) declares the asset it reads, the tables it writes with
their schemas, and how it processes a batch; :func:`oro_assets.curation.step.run_steps` runs any
contiguous part of the sequence over a store. The Dagster assets are generated from :data:`STEPS`
(``oro_assets/defs/curation/assets.py``: one asset per table, each run of a step over the warehouse);
:func:`curate_partition` and :func:`curate_files` run the same steps over memory (tests, benchmarks,
lineage fixtures), with the same batches, so they produce what the assets produce.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oro_assets.curation.clusters import Registry
from oro_assets.curation.ledger import funnel, reason_counts
from oro_assets.curation.rows import as_rows
from oro_assets.curation.step import RunParams, Step, StepReport, run_steps
from oro_assets.curation.steps.dedup import DedupStep
from oro_assets.curation.steps.gates import GateStep
from oro_assets.curation.steps.ingest import IngestStep, raw_index
from oro_assets.curation.steps.ledger import LEDGER_STAGES, LedgerStep
from oro_assets.curation.steps.split import SplitStep
from oro_assets.curation.steps.structural import StructuralStep
from oro_assets.curation.store import MemoryStore
from oro_assets.storage import conform
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA

#: The pipeline, in order. Each step feeds the next; each writes its own tables.
STEPS: tuple[Step, ...] = (IngestStep(), StructuralStep(), GateStep(), DedupStep(), SplitStep(), LedgerStep())


def step_named(name: str) -> Step:
    return next(s for s in STEPS if s.name == name)


@dataclass
class PartitionOutputs:
    structural_labels: list[dict]
    subtask_traces: list[dict]
    gated_traces: list[dict]
    curated_traces: list[dict]  # after dedup and split: with rank_score, cluster_id, pool
    rejections: list[dict]
    trace_ledger: list[dict]
    stats: dict[str, Any] = field(default_factory=dict)


def curation_params(*, judge: Any | None = None, pool_problems: Iterable[dict] = (), threshold: float | None = None,
                    count_tokens: Callable[[str], int] | None = None, token_budget: int | None = None,
                    near_threshold: float | None = None, registry: Registry | None = None,
                    state_dir: Path | None = None, **more: Any) -> RunParams:
    return RunParams(judge=judge, pool_problems=list(pool_problems), threshold=threshold, count_tokens=count_tokens,
                     token_budget=token_budget, near_threshold=near_threshold, registry=registry,
                     state_dir=state_dir, **more)


def curate_partition(normalized: Iterable[dict], quarantine: Iterable[dict], registry: Registry | None = None, *,
                     partition: str = "", state_dir: Path | None = None, **params: Any) -> PartitionOutputs:
    """Already-normalised rows (and the ingest quarantine) through structural → gates → dedup → split →
    ledger in memory: :data:`STEPS` after ingest, run as the assets run them. ``registry`` gains any new
    problems; without one, the persistent registry under ``state_dir`` is loaded and saved (under its
    lock), as the split asset does. ``params``: :func:`curation_params`'s keywords."""
    store = MemoryStore()
    norm = conform(list(as_rows(normalized)), NORMALIZED_SCHEMA)
    quar = conform(list(as_rows(quarantine)), QUARANTINE_SCHEMA)
    store.put("normalized_traces", partition, norm)
    store.put("raw_traces", partition, raw_index(norm, quar))
    reports = run_steps(list(STEPS[1:]), store, [partition],
                        curation_params(registry=registry, state_dir=state_dir, **params))
    return partition_outputs(store, partition, reports)


def curate_files(files: list[str], partition: str, store: MemoryStore | None = None,
                 **params: Any) -> tuple[MemoryStore, dict[str, StepReport]]:
    """A day's part files through every step in memory (benchmarks): ``store`` may keep only some
    columns of the large tables (:class:`MemoryStore`'s ``columns``)."""
    store = store if store is not None else MemoryStore()
    run = curation_params(**params)
    run.files = {partition: list(files)}
    return store, run_steps(list(STEPS), store, [partition], run)


def partition_outputs(store: MemoryStore, partition: str, reports: dict[str, StepReport]) -> PartitionOutputs:
    ledger = store.table("trace_ledger", partition)
    rejections = [r for stage in LEDGER_STAGES for r in store.rows(f"rejections_{stage}", partition)]
    stats = {name: reports[name].stats[partition] for name in ("structural", "gates", "dedup", "split")}
    stats.update(reason_counts=reason_counts(ledger), funnel=funnel(ledger))
    return PartitionOutputs(store.rows("structural_labels", partition), store.rows("subtask_traces", partition),
                            store.rows("gated_traces", partition), store.rows("split_traces", partition),
                            rejections, ledger.to_pylist(), stats)
