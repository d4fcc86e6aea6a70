"""Daily curation assets, generated from the declared step list (``oro_assets.curation.pipeline.STEPS``).

The steps become one multi-asset, ``curation``, with one asset per table a step writes (``step.assets``), every
step's checks, and each asset versioned by its step's module (and what it imports): an edit to one step marks
only its assets stale. Materialising runs the steps that write a selected asset over the warehouse
(``run_steps(steps, WarehouseStore)``), fused as the chain runs them in memory: each feeds the next its kept
rows as it goes, so no step reads back what the one before it wrote (issue 33: the reads cost the job a tenth
of its CPU). A step feeds the next only when every one of its tables is selected, since a later step may read
any of them; otherwise the next starts from the warehouse, as it does when its step's assets are selected
alone. Any subset can be selected (a step's unselected tables are computed and discarded, never written).
Where a run's parameters come from is declared by each step: the resources it reads (``step.resources``),
its run config (``step.Config``, a dataclass, made a Dagster config here, under the step's name) and
``step.run_params``, which turns them into its part of the run's
:class:`~oro_assets.curation.step.RunParams`. Nothing here is written per step. All daily assets use a
single-run backfill policy (``dg launch --partition-range`` works).
"""


import dataclasses
from collections.abc import Sequence
from typing import Any, get_type_hints

import dagster as dg
from pydantic import Field, create_model

from oro_assets import jsonio
from oro_assets.curation.pipeline import STEPS
from oro_assets.curation.step import Markdown, MarkdownTable, RunRefused, Step, merge_params, run_steps
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


# ----------------------------------------------------------------- one multi-asset for the steps


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
                        group_name="curation", owners=[OWNER_DATA], partitions_def=DAILY,
                        code_version=code_version(type(step)))


def fused_runs(steps: Sequence[Step], selected: set[str]) -> list[list[Step]]:
    """The steps a selection runs, in order, cut into runs fused in memory: a step runs when one of its assets is
    selected, and feeds the next when the next runs too and every one of its own assets is selected."""
    runs: list[list[Step]] = []
    for i, step in enumerate(steps):
        if not {out.asset for out in step.assets} & selected:
            continue
        before = steps[i - 1] if i else None
        if runs and runs[-1][-1] is before and {out.asset for out in before.assets} <= selected:
            runs[-1].append(step)
        else:
            runs.append([step])
    return runs


def _settings(step: Step, config: type[dg.Config] | None, op_config: dict[str, Any]) -> Any:
    """The step's ``Config`` from its part of the op's run config (``config``: its Dagster twin)."""
    return step.Config(**config(**op_config.get(step.name, {})).model_dump()) if config is not None else None


def curation_asset(steps: Sequence[Step]) -> dg.AssetsDefinition:
    """The multi-asset of the steps: their tables, their checks, subsettable, each asset versioned by its step."""
    configs = {step.name: config_class(step) for step in steps if step.Config is not None}

    @dg.multi_asset(
        name="curation",  # the op runs configure: {"ops": {"curation": {"config": {<step>: {...}}}}}
        specs=[_spec(step, i) for step in steps for i in range(len(step.assets))],
        check_specs=[dg.AssetCheckSpec(c.name, asset=c.asset, blocking=c.blocking, description=c.description)
                     for step in steps for c in step.checks],
        can_subset=True,
        backfill_policy=SINGLE_RUN,
        required_resource_keys={"warehouse", *(name for step in steps for name in step.resources)},
        config_schema={name: config.to_fields_dict() for name, config in configs.items()},
    )
    def _materialize(context: dg.AssetExecutionContext):
        warehouse: WarehouseResource = context.resources.warehouse
        wh = warehouse.warehouse
        store = WarehouseStore(wh, warehouse.state_dir)
        selected = {key.to_user_string() for key in context.selected_asset_keys}
        checks = {(key.asset_key.to_user_string(), key.name) for key in context.selected_asset_check_keys}
        partitions = list(context.partition_keys)
        for run in fused_runs(steps, selected):
            parts = []
            for step in run:
                sources = {name: getattr(context.resources, name) for name in ("warehouse", *step.resources)}
                settings = _settings(step, configs.get(step.name), context.op_config or {})
                parts.append(step.run_params(sources, settings, partitions, context.log))
            params = merge_params(parts)
            params.temp_dir = store.spill_dir
            every = {out.asset for step in run for out in step.assets}
            try:
                reports = run_steps(run, store, partitions, params, write=None if selected >= every else selected)
            except RunRefused as exc:
                # refused before publishing anything: the last good output stays in place and is not marked fresh
                raise dg.Failure(description=str(exc), metadata=exc.metadata) from None
            for step in run:
                yield from _results(step, reports[step.name], store, wh, selected, checks, partitions)

    return _materialize


def _results(step: Step, report: Any, store: WarehouseStore, wh: Any, selected: set[str],
             checks: set[tuple[str, str]], partitions: list[str]):
    """A finished step's materialisations (its selected assets) and check results (its selected checks)."""
    last = partitions[-1]
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
            data_version=partition_version(wh, out.asset, partitions),
        )
    for outcome in step.outcomes(store, report):
        if (outcome.asset, outcome.name) not in checks:
            continue
        yield dg.AssetCheckResult(
            asset_key=outcome.asset, check_name=outcome.name, passed=outcome.passed,
            severity=dg.AssetCheckSeverity.WARN if outcome.warn else dg.AssetCheckSeverity.ERROR,
            metadata={k: _metadata_value(v) for k, v in outcome.metadata.items()},
        )


curation = curation_asset(STEPS)
