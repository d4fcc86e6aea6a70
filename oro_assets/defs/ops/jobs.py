"""Jobs: the daily curation job (schedules, sensors and backfills target it) and the downstream stages."""

import dagster as dg

DAILY_CURATION_ASSETS = [
    "raw_traces",
    "normalized_traces",
    "structural_labels",
    "subtask_traces",
    "gated_traces",
    "curated_traces",
    "split_traces",
    "trace_ledger",
]
DATASET_ASSETS = ["sft_dataset", "kto_dataset", "rl_prompts", "eval_problems"]

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
    selection=dg.AssetSelection.groups("training"),
    description="Run the five training stages in order (base model -> SFT -> rejection SFT -> teacher SFT -> KTO -> Dr. GRPO).",
    tags={"oro/kind": "training"},
)

# The curation ablation trains a dozen models: its own job (curation_ablation_job), never part of these.
_ON_DEMAND = dg.AssetSelection.assets("curation_ablation")

evaluation_job = dg.define_asset_job(
    "evaluation_job",
    selection=dg.AssetSelection.groups("evaluation") - _ON_DEMAND,
    description="Roll out every checkpoint on the leak-guarded hold-out and build the comparison report.",
    tags={"oro/kind": "evaluation"},
)

main_job = dg.define_asset_job(
    "main_job",
    selection=dg.AssetSelection.all() - _ON_DEMAND,
    description="Everything for one day: arena -> curation -> datasets -> training -> evaluation report.",
    tags={"oro/kind": "training"},
)


@dg.definitions
def jobs() -> dg.Definitions:
    return dg.Definitions(jobs=[curation_job, arena_job, datasets_job, training_job, evaluation_job, main_job])
