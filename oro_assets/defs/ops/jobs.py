"""Jobs: the daily curation job (schedules, sensors and backfills target it) and the downstream stages.

Selections come from the declarations: curation's tables from ``curation.pipeline.STEPS``, the training and
evaluation assets from ``training.chain.CHAIN``."""

import dagster as dg

from oro_assets.curation.datasets import WINDOW_DATASETS
from oro_assets.curation.pipeline import STEPS
from oro_assets.training.chain import ARMS, CHAIN

#: every table the curation steps write, in step order (what one day's curation materialises)
DAILY_CURATION_ASSETS = [out.asset for step in STEPS for out in step.assets]
DATASET_ASSETS = list(WINDOW_DATASETS)
TRAINING_ASSETS = [stage.asset for stage in CHAIN]
EVALUATION_ASSETS = [f"eval_{stage.name}" for stage in CHAIN] + ["eval_report"]
#: the comparison arms (``training.chain.ARMS``) and their evaluations: trained for the final report only
ARM_ASSETS = [arm.asset for arm in ARMS] + [f"eval_{arm.name}" for arm in ARMS]

curation_job = dg.define_asset_job(
    "curation_job",
    selection=dg.AssetSelection.assets(*DAILY_CURATION_ASSETS),
    description="Curate one day of the firehose: ingest, normalise, filter, gate, dedup, split, ledger.",
    tags={"oro/kind": "curation"},
)

arena_job = dg.define_asset_job(
    "arena_job",
    selection=dg.AssetSelection.groups("arena") | dg.AssetSelection.assets("leak_clusters"),
    description="Refresh the problem pool, catalogue and leak-cluster registry.",
)

datasets_job = dg.define_asset_job(
    "datasets_job",
    selection=dg.AssetSelection.assets(*DATASET_ASSETS),
    description="Rebuild the training and evaluation datasets over the partition window.",
)

training_job = dg.define_asset_job(
    "training_job",
    selection=dg.AssetSelection.assets(*TRAINING_ASSETS),
    description="Run the training chain in order (training.chain.CHAIN: " + " -> ".join(s.name for s in CHAIN) + ").",
    tags={"oro/kind": "training"},
)

# The curation ablation trains a dozen models: its own job (curation_ablation_job), never part of these. The
# curated corpus is a publication, exported on demand (the UI, or `oro-assets export` for any day range).
_ON_DEMAND = dg.AssetSelection.assets("curation_ablation", "curated_corpus")
_ARMS = dg.AssetSelection.assets(*ARM_ASSETS)

evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.assets(*EVALUATION_ASSETS),
    description="Roll out every checkpoint on the leak-guarded hold-out and build the comparison report.",
    tags={"oro/kind": "evaluation"},
)

main_job = dg.define_asset_job(
    "main_job",
    selection=dg.AssetSelection.all() - _ON_DEMAND - _ARMS,
    description="Everything for one day: arena -> curation -> datasets -> training -> evaluation report.",
    tags={"oro/kind": "training"},
)

final_report_job = dg.define_asset_job(
    "final_report_job",
    selection=dg.AssetSelection.all() - _ON_DEMAND,
    description="main_job plus the comparison arms (" + ", ".join(arm.name for arm in ARMS) + "), every evaluation "
                "on the locked test pool: what `oro-assets main --final-report` runs.",
    tags={"oro/kind": "training"},
)

arms_job = dg.define_asset_job(
    "arms_job",
    selection=_ARMS,
    description="Train and evaluate the comparison arms (" + ", ".join(arm.name for arm in ARMS) + ") against a data "
                "dir the main job already ran in.",
    tags={"oro/kind": "training"},
)


@dg.definitions
def jobs() -> dg.Definitions:
    return dg.Definitions(jobs=[curation_job, arena_job, datasets_job, training_job, evaluation_job, main_job,
                                final_report_job, arms_job])
