"""Daily curation assets, generated from the declared step list (``oro_assets.curation.pipeline.STEPS``).

Each step becomes one multi-asset with one asset per table it writes (``step.assets``), its checks,
and a code version over the step's module (and what it imports). Materialising runs that one step
over the warehouse (``run_steps([step], WarehouseStore)``) for the run's partitions; any subset of a
step's assets can be selected (the others are computed and discarded, never written). Where a run's
parameters come from is declared by the step too: the resources it reads (``step.resources``), its run
config (``step.Config``, a dataclass, made a Dagster config here) and ``step.run_params``, which turns
them into the run's :class:`~oro_assets.curation.step.RunParams`. Nothing here is written per step.
All daily assets use a single-run backfill policy (``dg launch --partition-range`` works).
"""


import dataclasses
from typing import Any, get_type_hints

import dagster as dg
from pydantic import Field, create_model

from oro_assets import jsonio
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import Markdown, MarkdownTable, RunRefused, Step, run_steps
from oro_assets.curation.store import WarehouseStore
from oro_assets.defs.common import (
    DAILY,
    OWNER_DATA,
    SINGLE_RUN,
    code_version,
    markdown_table,
    parquet_metadata,
)
from oro_assets.defs.resources import WarehouseResource
from oro_assets.storage import file_sha256


def partition_version(wh, asset: str, partitions: list[str]) -> dg.DataVersion:
    """Content hash of the written Parquet file(s): the same inputs and code give the same data version."""
    return dg.DataVersion(jsonio.content_hash([file_sha256(wh.path(asset, p)) for p in partitions])[:16])


def config_class(step: Step) -> type[dg.Config] | None:
    """The step's run config (``step.Config``, a dataclass) as a Dagster config: the same fields, types and
    defaults, each field's ``help`` as its description."""
    if step.Config is None:
        return None
    hints = get_type_hints(step.Config)
    fields = {f.name: (hints[f.name], Field(default=f.default, description=f.metadata.get("help")))
              for f in dataclasses.fields(step.Config)}
    return create_model(step.Config.__name__, __base__=dg.Config, __doc__=step.Config.__doc__, **fields)


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
    config = config_class(step)

    @dg.multi_asset(
        name=step.primary if len(step.assets) == 1 else step.name,  # the op names runs configure
        specs=[_spec(step, i) for i in range(len(step.assets))],
        check_specs=[dg.AssetCheckSpec(c.name, asset=c.asset, blocking=c.blocking, description=c.description)
                     for c in step.checks],
        can_subset=True,
        backfill_policy=SINGLE_RUN,
        code_version=code_version(type(step)),
        required_resource_keys={"warehouse", *step.resources},
        config_schema=config.to_fields_dict() if config is not None else None,
    )
    def _materialize(context: dg.AssetExecutionContext):
        warehouse: WarehouseResource = context.resources.warehouse
        wh = warehouse.warehouse
        store = WarehouseStore(wh, warehouse.state_dir)
        sources = {name: getattr(context.resources, name) for name in ("warehouse", *step.resources)}
        settings = step.Config(**config(**context.op_config).model_dump()) if config is not None else None
        params = step.run_params(sources, settings, list(context.partition_keys), context.log)
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
