"""The ``curation_ablation`` asset (its own job): what each curation stage is worth, measured by
training the same tiny recipe on each stage's cut of the train pool (``evaluation.ablation``)."""

import dagster as dg
from pydantic import Field

from oro_assets.defs.common import OWNER_ML, code_version
from oro_assets.defs.resources import (
    FirehoseSource,
    ModelProfileResource,
    TrackingResource,
    WarehouseResource,
)
from oro_assets.evaluation.ablation import (
    ARM_NAMES,
    arms_from_warehouse,
    build_arms,
    run_ablation,
    write_ablation_report,
)


class AblationConfig(dg.Config):
    partitions: list[str] = Field(default_factory=list, description=(
        "Days whose traces make up the arms; empty: every day with a trace ledger."))
    seeds: list[int] = Field(default_factory=lambda: [0, 1], description="Training seeds (each draws its own rows).")
    max_rows: int | None = Field(default=None, description="Rows per arm (default: the smallest arm's size).")
    max_steps: int | None = Field(default=None, description="SFT steps per arm (default: the profile's).")
    copy_drills: int | None = Field(default=None, description="Copy-drill warm-up rows, shared by every arm (default: the profile's).")
    copy_drill_target_loss: float | None = Field(default=None, description=(
        "Tail loss the warm-up must end at or below, else extra epochs, restarts, then failure (default: the "
        "profile's)."))
    copy_drill_extra_epochs: int | None = Field(default=None, description=(
        "Most extra warm-up epochs while above the target loss (default: the profile's)."))
    eval_problems: int = Field(default=150, description="Dev-pool problems of the category scored (greedy).")
    category: str = Field(default="Product", description="Problem category scored.")
    arms: list[str] = Field(default_factory=lambda: list(ARM_NAMES), description="Arms trained, in order.")
    trained_shapes_only: bool = Field(default=True, description=(
        "Draw each arm's N rows from the row shapes the profile's SFT trains (tiny: Product); off: from every row."))


@dg.asset(
    group_name="evaluation",
    owners=[OWNER_ML],
    kinds={"pytorch", "mlflow"},
    deps=["trace_ledger", "normalized_traces", "leak_clusters", "problem_pool", "eval_problems", "base_model"],
    description=(
        "Curation ablation: the same tiny SFT recipe (same N rows, steps, tokenizer, view, base, seeds) trained on the "
        "train pool as it stands after each curation stage - raw, + success, + structural, + format/grounding gates, "
        "+ reasoning gate, full curated corpus - and scored greedily on the same eval-pool problems: ASR per arm "
        "with 95% intervals over seeds, a plot, MLflow runs, and each arm's make-up by miner kind."
    ),
    code_version=code_version(build_arms, arms_from_warehouse, run_ablation, write_ablation_report),
)
def curation_ablation(context: dg.AssetExecutionContext, config: AblationConfig, warehouse: WarehouseResource,
                      firehose: FirehoseSource, tracking: TrackingResource,
                      model_profile: ModelProfileResource) -> dg.MaterializeResult:
    from types import SimpleNamespace

    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.evaluation.heldout import (
        DEFAULT_POOL,
        eval_problem_sample,
        load_eval_problems,
        registry_view,
    )
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.tracking import Tracking

    wh, layout = warehouse.warehouse, warehouse.layout
    ledger_days = set(wh.partitions("trace_ledger"))
    partitions = sorted(config.partitions) or sorted(ledger_days)
    missing = [p for p in partitions if p not in ledger_days]
    if not partitions or missing:
        raise dg.Failure(description=f"no trace ledger for {missing or 'any day'}: materialise curation_job first")
    unknown_arms = sorted(set(config.arms) - set(ARM_NAMES))
    if unknown_arms:
        raise dg.Failure(description=f"unknown arms {unknown_arms}; accepted: {', '.join(ARM_NAMES)}")
    problems = warehouse.pool_problems()
    registry = warehouse.registry()
    catalogue = Catalogue.from_jsonl(layout.world_catalogue)
    arms = arms_from_warehouse(wh, registry, problems, catalogue, firehose.root(), partitions)
    context.log.info(f"arm sizes {arms.sizes()}, not in any arm {dict(arms.skipped)}")

    profile = get_profile(model_profile.profile, SimpleNamespace(qwen3_4b_path=model_profile.qwen3_4b_path))
    overrides = {k: v for k, v in (("max_steps", config.max_steps), ("copy_drills", config.copy_drills),
                                   ("copy_drill_target_loss", config.copy_drill_target_loss),
                                   ("copy_drill_extra_epochs", config.copy_drill_extra_epochs)) if v is not None}
    if overrides:
        profile = with_overrides(profile, "sft", **overrides)
    # the ablation is a screen: it reads the dev pool, never the locked test pool
    cluster_map, pool_ids = registry_view(registry, DEFAULT_POOL)
    eval_all = [p for p in load_eval_problems(layout.dataset("eval_problems", ".jsonl"), DEFAULT_POOL)
                if p.get("category", "Product") == config.category]
    eval_set = eval_problem_sample(eval_all, config.eval_problems, 0)
    tracker = Tracking(tracking.tracking_uri, tracking.artifact_root)
    result = run_ablation(
        arms, base_checkpoint=current_checkpoint(layout.checkpoints, "base"), profile=profile,
        eval_problems=eval_set, catalogue=catalogue, out_root=layout.ablation_checkpoints, seeds=config.seeds,
        max_rows=config.max_rows, category=config.category, arm_names=config.arms,
        trained_shapes_only=config.trained_shapes_only, tracking=tracker,
        eval_kwargs={"eval_pool_ids": pool_ids, "cluster_map": cluster_map,
                     "problems_by_id": {p["problem_id"]: p for p in problems}},
        log=context.log.info,
    )
    written = write_ablation_report(result, layout.ablation_reports, partitions=partitions,
                                    eval_problems=len(eval_set), pool=DEFAULT_POOL, tracking=tracker)
    return dg.MaterializeResult(metadata={
        "results": dg.MetadataValue.md(written.markdown_inline),
        "rows_per_arm": result.n_rows,
        "arm_sizes": dg.MetadataValue.json(arms.sizes()),
        "eval_problems": len(eval_set),
        "pool": DEFAULT_POOL,
        "partitions": dg.MetadataValue.json(partitions),
        "plot": dg.MetadataValue.path(str(written.plot)),
        **({"mlflow_run_id": written.mlflow_run_id} if written.mlflow_run_id else {}),
    })


curation_ablation_job = dg.define_asset_job(
    "curation_ablation_job", selection=[curation_ablation],
    description="Train the same tiny recipe on each curation stage's cut of the train pool and compare (not part of "
                "the main command; needs curation_job's days, the datasets and base_model).",
)


@dg.definitions
def ablation_definitions() -> dg.Definitions:
    return dg.Definitions(assets=[curation_ablation], jobs=[curation_ablation_job])
