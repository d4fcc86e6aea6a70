"""Daily curation assets, generated from the declared step list (``oro_assets.curation.pipeline.STEPS``).

Each step becomes one multi-asset with one asset per table it writes (``step.assets``), its checks,
and a code version over the step's module (and what it imports). Materialising runs that one step
over the warehouse (``run_steps([step], WarehouseStore)``) for the run's partitions; any subset of a
step's assets can be selected (the others are computed and discarded, never written). What is wired
here per step is only where its parameters come from (resources and run config).
All daily assets use a single-run backfill policy (``dg launch --partition-range`` works).
"""


from collections.abc import Callable
from typing import Any

import dagster as dg

from oro_assets import jsonio
from oro_assets.curation.gates import DEFAULT_REASONING_THRESHOLD, DEFAULT_TOKEN_BUDGET, estimate_tokens
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import Markdown, MarkdownTable, RunParams, RunRefused, Step, run_steps
from oro_assets.curation.store import WarehouseStore
from oro_assets.defs.common import (
    DAILY,
    OWNER_DATA,
    SINGLE_RUN,
    code_version,
    markdown_table,
    parquet_metadata,
)
from oro_assets.defs.judge.resources import JudgeResource
from oro_assets.defs.resources import FirehoseSource, ModelProfileResource, WarehouseResource
from oro_assets.storage import file_sha256


class GateConfig(dg.Config):
    """Run config of the gates (editable in the launchpad)."""

    reasoning_threshold: float = DEFAULT_REASONING_THRESHOLD
    token_budget: int = DEFAULT_TOKEN_BUDGET
    max_judge_failure_ratio: float = 0.5


class IngestConfig(dg.Config):
    """Run config of ingest: worker processes (0: the firehose resource's ``ingest_workers``)."""

    workers: int = 0


def partition_version(wh, asset: str, partitions: list[str]) -> dg.DataVersion:
    """Content hash of the written Parquet file(s): the same inputs and code give the same data version."""
    return dg.DataVersion(jsonio.content_hash([file_sha256(wh.path(asset, p)) for p in partitions])[:16])


# ----------------------------------------------------------------- where each step's parameters come from


def _ingest_params(context, resources, config: IngestConfig) -> RunParams:
    firehose: FirehoseSource = resources.firehose
    files = {}
    for partition in context.partition_keys:
        files[partition] = firehose.partition_files(partition)
        context.log.info(f"{partition}: {len(files[partition])} part file(s) under {firehose.root()}")
    return RunParams(files=files, ingest_workers=config.workers or firehose.ingest_workers)


def _gate_params(context, resources, config: GateConfig) -> RunParams:
    judge: JudgeResource = resources.judge
    profile: ModelProfileResource = resources.model_profile
    counter, why_estimate = profile.token_counter(resources.warehouse.data_dir)
    if counter is None:
        context.log.warning(f"token budget counted with the {why_estimate}")
    return RunParams(judge=judge.build(), judge_concurrency=judge.concurrency, threshold=config.reasoning_threshold,
                     token_budget=config.token_budget, count_tokens=counter if counter is not None else estimate_tokens,
                     token_counter_name=counter.name if counter is not None else why_estimate,
                     max_judge_failure_ratio=config.max_judge_failure_ratio,
                     min_agentic_richness=judge.min_agentic_richness if judge.min_agentic_richness >= 0 else None)


def _split_params(context, resources, config: None) -> RunParams:
    warehouse: WarehouseResource = resources.warehouse
    return RunParams(state_dir=warehouse.state_dir, pool_problems=warehouse.pool_problems())


def _no_params(context, resources, config: None) -> RunParams:
    return RunParams()


#: step name → (resources besides the warehouse, run config class, parameter builder)
WIRING: dict[str, tuple[set[str], type[dg.Config] | None, Callable[..., RunParams]]] = {
    "ingest": ({"firehose"}, IngestConfig, _ingest_params),
    "gates": ({"judge", "model_profile"}, GateConfig, _gate_params),
    "split": (set(), None, _split_params),
}


# ----------------------------------------------------------------- one multi-asset per step


def _metadata_value(value: Any) -> Any:
    if isinstance(value, MarkdownTable):
        return dg.MetadataValue.md(markdown_table(list(value)))
    if isinstance(value, Markdown):
        return dg.MetadataValue.md(str(value))
    if isinstance(value, list) or (isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values())):
        return dg.MetadataValue.json(value)
    return value


def _spec(step: Step, index: int) -> dg.AssetSpec:
    out = step.assets[index]
    upstream = [step.input] if step.input != "firehose" else []
    deps = [d for d in [*upstream, *step.deps, *(a.asset for a in step.assets[:index] if step.chained)]
            if d != out.asset]
    return dg.AssetSpec(out.asset, deps=deps, description=out.description, kinds=set(step.kinds),
                        group_name="curation", owners=[OWNER_DATA], partitions_def=DAILY)


def step_asset(step: Step) -> dg.AssetsDefinition:
    """The multi-asset of one step: its tables, its checks, subsettable, versioned by the step's module."""
    extra, config_class, build = WIRING.get(step.name, (set(), None, _no_params))

    @dg.multi_asset(
        name=step.primary if len(step.assets) == 1 else step.name,  # the op names runs configure
        specs=[_spec(step, i) for i in range(len(step.assets))],
        check_specs=[dg.AssetCheckSpec(c.name, asset=c.asset, blocking=c.blocking, description=c.description)
                     for c in step.checks],
        can_subset=True,
        backfill_policy=SINGLE_RUN,
        code_version=code_version(type(step)),
        required_resource_keys={"warehouse", *extra},
        config_schema=config_class.to_fields_dict() if config_class is not None else None,
    )
    def _materialize(context: dg.AssetExecutionContext):
        warehouse: WarehouseResource = context.resources.warehouse
        wh = warehouse.warehouse
        store = WarehouseStore(wh, warehouse.state_dir)
        config = config_class(**context.op_config) if config_class is not None else None
        params = build(context, context.resources, config)
        params.temp_dir = store.spill_dir
        selected = {key.to_user_string() for key in context.selected_asset_keys}
        every = {out.asset for out in step.assets}
        try:
            report = run_steps([step], store, list(context.partition_keys), params,
                               write=None if selected >= every else selected)[step.name]
        except RunRefused as exc:
            # refused before publishing anything: the last good output stays in place and is not marked fresh
            raise dg.Failure(description=str(exc), metadata=exc.metadata) from None
        last = context.partition_keys[-1]
        # the day is complete: refresh the DuckDB views (SQL over every asset)
        views = wh.refresh_duckdb_views() if step.completes_partition else None
        for out in step.assets:
            if out.asset not in selected:
                continue
            meta = {k: _metadata_value(v) for k, v in step.metadata(store, report, out.asset).items()}
            if views is not None:
                meta["duckdb_views"] = len(views)
            yield dg.MaterializeResult(
                asset_key=out.asset,
                metadata={**parquet_metadata(wh.path(out.asset, last), preview_columns=list(out.preview)), **meta},
                data_version=partition_version(wh, out.asset, list(context.partition_keys)),
            )
        checks = {(key.asset_key.to_user_string(), key.name) for key in context.selected_asset_check_keys}
        for outcome in step.outcomes(store, report):
            if (outcome.asset, outcome.name) not in checks:
                continue
            yield dg.AssetCheckResult(
                asset_key=outcome.asset, check_name=outcome.name, passed=outcome.passed,
                severity=dg.AssetCheckSeverity.WARN if outcome.warn else dg.AssetCheckSeverity.ERROR,
                metadata={k: _metadata_value(v) for k, v in outcome.metadata.items()},
            )

    return _materialize


CURATION_ASSETS = [step_asset(step) for step in STEPS]
ingest, structural, gates, dedup, split, ledger = CURATION_ASSETS
