"""Training assets, generated from the declared chain (``oro_assets.training.chain.CHAIN``):
base model → SFT → rejection SFT → teacher SFT → KTO → Dr. GRPO, and its comparison arms (``ARMS``: scaffold).

One asset per stage, named by the chain, depending on its parent checkpoint and the stage's inputs, versioned
by the stage's own module (and what it imports). Each stage runs out of the Dagster process through Dagster
Pipes (``PipesSubprocessClient`` here; ``dagster_k8s.PipesK8sClient`` on a GPU pod runs the same
``oro_assets.training.pipes_entry``). Progress (step, loss, tokens/s) streams to the run's logs; the child
reports the checkpoint's path, version, MLflow run, examples, tokens, wall time and final loss.
"""

import sys
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from oro_assets.code_version import module_version
from oro_assets.defs.common import OWNER_ML
from oro_assets.defs.resources import ModelProfileResource, TrackingResource, WarehouseResource
from oro_assets.training import pipes_entry
from oro_assets.training.chain import ARMS, CHAIN, CHECKPOINT_ASSETS, Stage, stage_named
from oro_assets.training.checkpoints import current_checkpoint, set_current_checkpoint


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
    copy_drill_target_loss: float | None = _override(
        "Tail loss the sft warm-up must end at or below (sft); above it, extra epochs, then restarts, then the stage "
        "fails. Raise it to train the sft on a warm-up that stalled.")
    copy_drill_extra_epochs: int | None = _override("Most extra warm-up epochs while above the target loss (sft).")
    copy_drill_restarts: int | None = _override(
        "Fresh warm-ups from the parent, on other drills, when one still ends above the target loss (sft).")
    k: int | None = _override("Rollouts per train problem (rejection_sft).")
    max_problems: int | None = _override("Train problems rolled out (rejection_sft, teacher_sft).")
    synthetic_problems: int | None = _override("Synthetic Product problems added to the teacher's (teacher_sft).")
    synthetic_option_share: float | None = _override(
        "Share of the synthetic problems that ask for the target's own options or attributes (teacher_sft).")
    option_drills: int | None = _override("Made-up episodes where only the viewed details decide (teacher_sft).")
    num_generations: int | None = _override("Completions per prompt in a group (dr_grpo).")
    max_completion_length: int | None = _override("New tokens per completion (dr_grpo).")
    max_prompts: int | None = _override("RL prompts used (dr_grpo).")
    on_policy_k: int | None = _override("Rollouts per train problem from the parent, labelled by success (kto).")
    on_policy_problems: int | None = _override("Train problems rolled out for the on-policy examples (kto).")
    curated_turns: bool | None = _override("Train on the curated kto_dataset's turns too (kto).")
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
        with_overrides(get_profile(profile_name, None), stage_named(stage).config_stage, **overrides)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{CHECKPOINT_ASSETS[stage]}: {exc}") from None
    return overrides


def _params(stage: Stage, config: TrainingConfig, warehouse: WarehouseResource, tracking: TrackingResource,
            model_profile: ModelProfileResource) -> dict:
    from oro_assets.training.inputs import write_training_inputs

    layout = warehouse.layout
    inputs = write_training_inputs(layout, warehouse.registry(), warehouse.pool_problems())
    params = {
        "stage": stage.name,
        "profile": model_profile.profile,
        "out_root": str(layout.checkpoints),
        **model_profile.stage_settings(),
        "tracking_uri": tracking.tracking_uri,
        "artifact_dir": tracking.artifact_root,
        "catalogue": str(layout.world_catalogue),
        "problems": str(inputs.train_problems),
        "sft_rows": str(layout.dataset("sft_dataset")),
        "kto_rows": str(layout.dataset("kto_dataset")),
        "rl_prompts": str(layout.dataset("rl_prompts")),
        "exclude_product_ids": inputs.exclude_product_ids,
        "eval_problems": str(inputs.heldout_problems),
        "seed": config.seed,
        "force": config.force,
        "overrides": stage_overrides(stage.name, config, model_profile.profile),
    }
    if stage.parent is not None:
        params["parent"] = str(current_checkpoint(layout.checkpoints, stage.parent))
    return params


def _checks(path: Path, warehouse: WarehouseResource) -> list[dg.AssetCheckResult]:
    from oro_assets.training.checkpoints import load_checkpoint
    from oro_assets.training.checks import (
        check_copies_request,
        check_loss,
        check_manifest_disjoint,
        check_reload_tool_call,
        check_weights_changed,
    )
    from oro_assets.training.inputs import heldout_ids

    # the held-out problems come from the registry itself (the one held-out rule), never from a dataset that may
    # be missing: with no held-out problem there is nothing to check, and the check fails
    held_out = heldout_ids(warehouse.registry())
    loaded = load_checkpoint(path)  # once for both checks that roll the checkpoint out (a 4B load under qwen3-4b)
    results = []
    for outcome in (check_loss(path), check_weights_changed(path), check_reload_tool_call(loaded),
                    check_copies_request(loaded, _world_catalogue(warehouse)),
                    check_manifest_disjoint(path, held_out)):
        results.append(dg.AssetCheckResult(
            check_name=outcome.name, passed=outcome.passed,
            metadata={"detail": outcome.description, **{k: dg.MetadataValue.json(v) if isinstance(v, (list, dict)) else v
                                                        for k, v in outcome.metadata.items()}},
        ))
    return results


def _world_catalogue(warehouse: WarehouseResource) -> Any:
    """The arena world's catalogue (None before ``arena_world`` wrote it: the copy check then has nothing to check)."""
    from oro_assets.arena.catalogue import Catalogue

    path = warehouse.layout.world_catalogue
    return Catalogue.from_jsonl(path) if path.exists() else None


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
    set_current_checkpoint(warehouse.layout.checkpoints, params["stage"], path, version)
    run_id = metadata.get("mlflow_run_id")
    if run_id is not None:
        metadata["mlflow_link"] = dg.MetadataValue.url(
            f"http://127.0.0.1:5000/#/experiments/0/runs/{run_id.value}"
        )
    metadata["checkpoint_dir"] = dg.MetadataValue.path(str(path))
    return dg.MaterializeResult(
        metadata=metadata,
        check_results=_checks(path, warehouse) if with_checks else None,
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
        dg.AssetCheckSpec("weights_changed", asset=asset_name,
                          description="Training changed the weights the stage started from (one that did not is a "
                                      "no-op); fails when the checkpoint does not record it."),
        dg.AssetCheckSpec("reload_emits_tool_call", asset=asset_name,
                          description="The checkpoint reloads and answers an arena prompt with a parseable tool call."),
        dg.AssetCheckSpec("copies_request_words", asset=asset_name,
                          description="Greedy on 32 made-up requests of catalogue words no stage trained on, the "
                                      "first find_product query copies every product word the request names in at "
                                      "least half of them (a model that learned no copy scores near 0 everywhere)."),
        dg.AssetCheckSpec("manifest_disjoint_from_eval", asset=asset_name, blocking=True,
                          description="Neither this checkpoint nor its ancestors trained on a held-out (dev or test) "
                                      "problem; fails when there is no held-out problem to check against (blocking)."),
    ]


def stage_asset(stage: Stage) -> dg.AssetsDefinition:
    """The asset of one declared stage: its parent checkpoint and inputs as deps, its checks (not for the base:
    it trains nothing), versioned by the stage's module and the Pipes entry point it runs through."""
    with_checks = stage.parent is not None
    deps = [CHECKPOINT_ASSETS[stage.parent]] if stage.parent is not None else []

    @dg.asset(name=stage.asset, **TRAINING, deps=[*deps, *stage.inputs], description=stage.description,
              check_specs=_stage_checks(stage.asset) if with_checks else None,
              code_version=module_version(stage.module, pipes_entry.__name__))
    def _stage(context: dg.AssetExecutionContext, config: TrainingConfig, warehouse: WarehouseResource,
               tracking: TrackingResource, model_profile: ModelProfileResource,
               pipes_subprocess_client: dg.PipesSubprocessClient) -> dg.MaterializeResult:
        params = _params(stage, config, warehouse, tracking, model_profile)
        return _run_stage(context, pipes_subprocess_client, params, warehouse, with_checks=with_checks)

    return _stage


TRAINING_ASSETS = [stage_asset(stage) for stage in (*CHAIN, *ARMS)]
