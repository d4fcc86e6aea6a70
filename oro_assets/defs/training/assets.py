"""Training assets: base model → SFT → rejection SFT → teacher SFT → KTO → Dr. GRPO.

Each stage runs out of the Dagster process through Dagster Pipes (``PipesSubprocessClient`` here;
``dagster_k8s.PipesK8sClient`` on a GPU pod runs the same ``oro_assets.training.pipes_entry``).
Progress (step, loss, tokens/s) streams to the run's logs; the child reports the checkpoint's
path, version, MLflow run, examples, tokens, wall time and final loss.
"""

import sys
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from oro_assets import jsonio
from oro_assets.defs.arena.assets import world_paths
from oro_assets.defs.common import OWNER_ML, code_version
from oro_assets.defs.curation.assets import pool_problems
from oro_assets.defs.resources import ModelProfileResource, TrackingResource, WarehouseResource
from oro_assets.defs.training.checkpoints import CHECKPOINT_ASSETS, current_checkpoint, set_current_checkpoint
from oro_assets.storage import write_jsonl
from oro_assets.training import pipes_entry, stages


def _override(description: str) -> Any:
    return Field(default=None, description=f"{description} Unset: the model profile's value.")


class TrainingConfig(dg.Config):
    """Per-run knobs of a stage. Every other field, when set, overrides that field of the stage's config
    in the active model profile (``training.profiles``) for this run; a field the stage does not have is
    refused before the stage starts."""

    seed: int = Field(default=0, description="Seed of the stage (data order, sampling, initialisation).")
    force: bool = Field(default=False, description="Train again even when a checkpoint of the same inputs exists.")
    # TrainArgs (every stage but base)
    max_steps: int | None = _override("Optimizer steps (-1: run num_train_epochs).")
    num_train_epochs: float | None = _override("Epochs over the stage's data when max_steps is -1.")
    learning_rate: float | None = _override("Peak learning rate.")
    per_device_train_batch_size: int | None = _override("Examples per device and step.")
    gradient_accumulation_steps: int | None = _override("Micro-batches accumulated per optimizer step.")
    # Stage configs
    max_length: int | None = _override("Token length an example is cut to (sft, rejection_sft, teacher_sft, kto).")
    max_examples: int | None = _override("Examples taken from the dataset (sft, kto).")
    copy_drills: int | None = _override("Copy-drill rows of the tiny profile's warm-up (sft, teacher_sft).")
    k: int | None = _override("Rollouts per train problem (rejection_sft).")
    max_problems: int | None = _override("Train problems rolled out (rejection_sft, teacher_sft).")
    synthetic_problems: int | None = _override("Synthetic Product problems added to the teacher's (teacher_sft).")
    num_generations: int | None = _override("Completions per prompt in a group (dr_grpo).")
    max_completion_length: int | None = _override("New tokens per completion (dr_grpo).")
    max_prompts: int | None = _override("RL prompts used (dr_grpo).")
    # Base (tiny profile)
    copy_pretrain_steps: int | None = _override("Copy pre-training steps of the locally built tiny base (base).")

    def overrides(self) -> dict[str, Any]:
        """The stage-config fields this run sets (the ``overrides`` parameter of ``training.pipes_entry``)."""
        return {name: value for name, value in self.model_dump().items()
                if name not in _RUN_FIELDS and value is not None}


_RUN_FIELDS = frozenset({"seed", "force"})


def stage_overrides(stage: str, config: TrainingConfig, profile_name: str) -> dict[str, Any]:
    """``config``'s overrides, checked against ``stage``'s config in the profile: a field it lacks fails here,
    in one line, instead of in the training process."""
    from oro_assets.training.profiles import get_profile, with_overrides

    overrides = config.overrides()
    if not overrides:
        return overrides
    try:
        with_overrides(get_profile(profile_name, None), stage, **overrides)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{CHECKPOINT_ASSETS[stage]}: {exc}") from None
    return overrides


def _train_problems(warehouse: WarehouseResource) -> tuple[Path, Path, list[str]]:
    """Write the train-pool problems (with rewards) for the stages that roll out, and the eval-pool problems
    the teacher stage decontaminates its synthetic problems against; return both paths and the eval
    ground-truth ids."""
    from oro_assets.curation.clusters import Registry, problem_key

    wh = warehouse.warehouse
    registry = Registry.load(warehouse.state_dir)
    pool = {problem_key(p): p for p in pool_problems(wh)}
    train, held_out, eval_gt = [], [], set()
    for key, member in sorted(registry.members.items()):
        problem = pool.get(key)
        if problem is None or problem.get("reward") is None:
            continue
        if member.get("pool") == "train":
            train.append({k: problem[k] for k in ("problem_id", "query", "category", "difficulty", "reward", "voucher", "title")})
        elif member.get("pool") in ("eval", "never_touch"):
            held_out.append(problem)
            eval_gt.update(problem.get("ground_truth_ids") or [])
    inputs = Path(warehouse.data_dir) / "checkpoints" / "_inputs"
    write_jsonl(train, inputs / "train_problems.jsonl")
    write_jsonl(held_out, inputs / "eval_problems.jsonl")
    return inputs / "train_problems.jsonl", inputs / "eval_problems.jsonl", sorted(eval_gt)


def _params(stage: str, config: TrainingConfig, warehouse: WarehouseResource, tracking: TrackingResource,
            model_profile: ModelProfileResource, parent_stage: str | None) -> dict:
    wh_root = Path(warehouse.data_dir) / "warehouse"
    problems_path, eval_problems_path, eval_gt = _train_problems(warehouse)
    params = {
        "stage": stage,
        "profile": model_profile.profile,
        "out_root": str(warehouse.checkpoints_dir),
        **model_profile.stage_settings(),
        "tracking_uri": tracking.tracking_uri,
        "artifact_dir": tracking.artifact_root,
        "catalogue": str(world_paths(Path(warehouse.data_dir))[1]),
        "problems": str(problems_path),
        "sft_rows": str(wh_root / "sft_dataset.parquet"),
        "kto_rows": str(wh_root / "kto_dataset.parquet"),
        "rl_prompts": str(wh_root / "rl_prompts.parquet"),
        "exclude_product_ids": eval_gt,
        "eval_problems": str(eval_problems_path),
        "seed": config.seed,
        "force": config.force,
        "overrides": stage_overrides(stage, config, model_profile.profile),
    }
    if parent_stage is not None:
        params["parent"] = str(current_checkpoint(warehouse.checkpoints_dir, parent_stage))
    return params


def _checks(stage: str, path: Path, warehouse: WarehouseResource) -> list[dg.AssetCheckResult]:
    from oro_assets.training.checks import check_loss, check_manifest_disjoint, check_reload_tool_call

    eval_path = Path(warehouse.data_dir) / "warehouse" / "eval_problems.jsonl"
    eval_ids = [jsonio.loads(line)["problem_id"] for line in eval_path.read_bytes().splitlines() if line.strip()] \
        if eval_path.exists() else []
    results = []
    for outcome in (check_loss(path), check_reload_tool_call(path), check_manifest_disjoint(path, eval_ids)):
        results.append(dg.AssetCheckResult(
            check_name=outcome.name, passed=outcome.passed,
            metadata={"detail": outcome.description, **{k: dg.MetadataValue.json(v) if isinstance(v, (list, dict)) else v
                                                        for k, v in outcome.metadata.items()}},
        ))
    return results


def _run_stage(context: dg.AssetExecutionContext, pipes: dg.PipesSubprocessClient, params: dict,
               warehouse: WarehouseResource, with_checks: bool) -> dg.MaterializeResult:
    result = pipes.run(
        context=context,
        command=[sys.executable, "-m", pipes_entry.__name__],
        extras=params,
        env={"TQDM_DISABLE": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "TOKENIZERS_PARALLELISM": "false"},
    ).get_materialize_result()
    metadata = dict(result.metadata or {})
    path = Path(str(metadata["path"].value))
    version = str(metadata["version"].value)
    set_current_checkpoint(warehouse.checkpoints_dir, params["stage"], path, version)
    run_id = metadata.get("mlflow_run_id")
    if run_id is not None:
        metadata["mlflow_link"] = dg.MetadataValue.url(
            f"http://127.0.0.1:5000/#/experiments/0/runs/{run_id.value}"
        )
    metadata["checkpoint_dir"] = dg.MetadataValue.path(str(path))
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=_checks(params["stage"], path, warehouse) if with_checks else None,
        data_version=dg.DataVersion(version),
    )


# Priority 1 (evaluations have 0): with steps side by side, a free slot goes to the training chain, the run's
# critical path, before an evaluation that is ready at the same moment (measured 2026-12-01: teacher-SFT waited
# 1.5 min behind eval_rejection_sft).
TRAINING = dict(group_name="training", owners=[OWNER_ML], kinds={"pytorch", "mlflow"},
                op_tags={"oro/kind": "training", "dagster/priority": "1"})


def _stage_checks(asset_name: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec("loss_decreased", asset=asset_name,
                          description="Every logged loss is finite and the last steps' mean is below the first steps'."),
        dg.AssetCheckSpec("reload_emits_tool_call", asset=asset_name,
                          description="The checkpoint reloads and answers an arena prompt with a parseable tool call."),
        dg.AssetCheckSpec("manifest_disjoint_from_eval", asset=asset_name, blocking=True,
                          description="Neither this checkpoint nor its ancestors trained on an eval-pool problem (blocking)."),
    ]


@dg.asset(
    **TRAINING,
    deps=["arena_world", "leak_clusters"],
    description=(
        "The base model of the active profile. tiny: a Qwen3ForCausalLM with a small config and a word-level tokenizer "
        "trained locally on the arena's text, carrying Qwen3's special tokens and chat template (deterministic from the "
        "seed). qwen3-4b: a pointer to the real weights (ORO_QWEN3_4B_PATH)."
    ),
    code_version=code_version(pipes_entry.run_stage),
)
def base_model(context: dg.AssetExecutionContext, config: TrainingConfig, warehouse: WarehouseResource,
               tracking: TrackingResource, model_profile: ModelProfileResource,
               pipes_subprocess_client: dg.PipesSubprocessClient) -> dg.MaterializeResult:
    params = _params("base", config, warehouse, tracking, model_profile, None)
    return _run_stage(context, pipes_subprocess_client, params, warehouse, with_checks=False)


def make_stage_asset(stage: str, parent: str, deps: list[str], description: str, fn) -> dg.AssetsDefinition:
    asset_name = CHECKPOINT_ASSETS[stage]
    parent_asset = CHECKPOINT_ASSETS[parent]

    @dg.asset(name=asset_name, **TRAINING, deps=[parent_asset, *deps], description=description,
              check_specs=_stage_checks(asset_name), code_version=code_version(fn))
    def _stage(context: dg.AssetExecutionContext, config: TrainingConfig, warehouse: WarehouseResource,
               tracking: TrackingResource, model_profile: ModelProfileResource,
               pipes_subprocess_client: dg.PipesSubprocessClient) -> dg.MaterializeResult:
        params = _params(stage, config, warehouse, tracking, model_profile, parent)
        return _run_stage(context, pipes_subprocess_client, params, warehouse, with_checks=True)

    return _stage


sft_checkpoint = make_stage_asset(
    "sft", "base", ["sft_dataset"],
    "LoRA SFT (qwen3-4b) / full fine-tune (tiny) on the curated agentic corpus with assistant-only loss. "
    "The checkpoint keeps its resolved config, metrics, MLflow run and the manifest of example ids it trained on.",
    stages.run_sft,
)
rejection_sft_checkpoint = make_stage_asset(
    "rejection_sft", "sft", ["sft_dataset", "leak_clusters"],
    "Rejection re-SFT: k rollouts per train problem in the arena with the SFT model at T = 0.9, keep reward = 1.0, "
    "mix 50/50 with the SFT corpus.",
    stages.run_rejection_sft,
)
teacher_sft_checkpoint = make_stage_asset(
    "teacher_sft", "rejection_sft", ["leak_clusters"],
    "Continued SFT on a teacher's successful trajectories on train problems (an OpenAI-compatible endpoint when "
    "ORO_TEACHER_BASE_URL is set, else the arena's strongest scripted agent), voucher bucket upsampled.",
    stages.run_teacher_sft,
)
kto_checkpoint = make_stage_asset(
    "kto", "teacher_sft", ["kto_dataset"],
    "KTO on desirable / undesirable turns labelled by production-strict success (beta 0.02, class weights balanced).",
    stages.run_kto,
)
dr_grpo_checkpoint = make_stage_asset(
    "dr_grpo", "kto", ["rl_prompts"],
    "Dr. GRPO (loss_type dr_grpo, scale_rewards none, beta 0) with a per-step teacher-anchored reward: format + "
    "tool-call match against the teacher's next step + outcome when the step ends the episode. Reports when rewards "
    "did not vary within groups (learned nothing).",
    stages.run_dr_grpo,
)
