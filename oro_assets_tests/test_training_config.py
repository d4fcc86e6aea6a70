"""The training assets take typed stage-config overrides (not a JSON string), checked before a stage starts."""

from __future__ import annotations

import dataclasses

import dagster as dg
import pytest

from oro_assets.defs.training.assets import TrainingConfig, stage_overrides
from oro_assets.ops.runner import SMOKE_STAGE_OVERRIDES, smoke_run_config
from oro_assets.training.chain import CHAIN
from oro_assets.training.profiles import TrainArgs, get_profile, with_overrides


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    import os

    os.environ["ORO_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))
    from oro_assets.definitions import defs

    return defs().resolve_job_def("main_job")


def test_overrides_are_typed_fields_and_unset_ones_keep_the_profile():
    assert TrainingConfig().overrides() == {}
    config = TrainingConfig(seed=3, force=True, max_steps=5, learning_rate=1e-3, per_device_train_batch_size=2,
                            max_length=256)
    assert config.overrides() == {"max_steps": 5, "learning_rate": 1e-3, "per_device_train_batch_size": 2,
                                  "max_length": 256}
    assert "overrides_json" not in TrainingConfig.model_fields
    with pytest.raises(Exception, match="max_steps"):
        TrainingConfig(max_steps="many")


def test_every_override_field_is_a_field_of_some_stage_config():
    """No field the stages would reject by name everywhere (a typo here would only fail at run time)."""
    profile = get_profile("tiny")
    known = {f.name for f in dataclasses.fields(TrainArgs)}
    for stage in CHAIN:  # the base's config is the tiny arch
        known |= {f.name for f in dataclasses.fields(stage.Config)}
        if stage.parent is not None:
            assert type(profile.stage_config(stage.name)) is stage.Config  # the profile fills the declared class
    fields = set(TrainingConfig.model_fields) - {"seed", "force"}
    assert fields <= known, sorted(fields - known)


def test_stage_overrides_reach_the_stage_config_as_before():
    config = TrainingConfig(max_steps=3, max_examples=16, copy_drills=32, copy_drill_target_loss=1e9,
                            copy_drill_extra_epochs=1)
    overrides = stage_overrides("sft", config, "tiny")
    assert overrides == SMOKE_STAGE_OVERRIDES["sft_checkpoint"]
    sft = with_overrides(get_profile("tiny"), "sft", **overrides).sft
    assert (sft.train.max_steps, sft.max_examples, sft.copy_drills, sft.copy_drill_target_loss) == (3, 16, 32, 1e9)


def test_a_field_the_stage_does_not_have_is_refused_before_the_stage_starts():
    with pytest.raises(ValueError, match=r"sft_checkpoint: unknown sft config fields: \['k'\]"):
        stage_overrides("sft", TrainingConfig(k=2), "tiny")
    with pytest.raises(ValueError, match=r"base_model: unknown base config fields: \['max_steps'\]"):
        stage_overrides("base", TrainingConfig(max_steps=1), "tiny")
    assert stage_overrides("base", TrainingConfig(seed=1, force=True), "tiny") == {}


def test_the_sft_warm_ups_target_extra_epochs_and_restarts_are_run_config():
    config = TrainingConfig(copy_drill_target_loss=0.5, copy_drill_extra_epochs=1, copy_drill_restarts=2)
    sft = with_overrides(get_profile("tiny"), "sft", **stage_overrides("sft", config, "tiny")).sft
    assert (sft.copy_drill_target_loss, sft.copy_drill_extra_epochs, sft.copy_drill_restarts) == (0.5, 1, 2)
    with pytest.raises(ValueError, match=r"sft_checkpoint: sft.copy_drill_restarts must be >= 0, got -1"):
        stage_overrides("sft", TrainingConfig(copy_drill_restarts=-1), "tiny")
    with pytest.raises(ValueError, match=r"kto_checkpoint: unknown kto config fields: \['copy_drill_restarts'\]"):
        stage_overrides("kto", TrainingConfig(copy_drill_restarts=1), "tiny")


def test_the_base_takes_the_tiny_arch_fields_and_real_weights_ignore_them():
    assert stage_overrides("base", TrainingConfig(copy_pretrain_steps=60), "tiny") == {"copy_pretrain_steps": 60}
    tiny = with_overrides(get_profile("tiny"), "base", copy_pretrain_steps=60)
    assert tiny.arch.copy_pretrain_steps == 60 and get_profile("tiny").arch.copy_pretrain_steps == 1600
    assert tiny.sft == get_profile("tiny").sft
    qwen = get_profile("qwen3-4b")
    assert with_overrides(qwen, "base", copy_pretrain_steps=60) == qwen
    with pytest.raises(ValueError, match="unknown base config fields"):
        with_overrides(qwen, "base", learning_rate=1.0)


def test_the_smoke_run_config_is_valid_typed_config_of_the_main_job(main_job):
    run_config = smoke_run_config()
    assert run_config["ops"]["rejection_sft_checkpoint"]["config"] == {"max_steps": 2, "k": 2, "max_problems": 2}
    dg.validate_run_config(main_job, run_config)
    for asset, overrides in SMOKE_STAGE_OVERRIDES.items():
        stage = "base" if asset == "base_model" else asset.removesuffix("_checkpoint")
        assert stage_overrides(stage, TrainingConfig(**overrides), "tiny") == overrides
        assert stage_overrides(stage, TrainingConfig(**overrides), "qwen3-4b") == overrides


def test_a_json_string_of_overrides_is_no_longer_accepted(main_job):
    with pytest.raises(dg.DagsterInvalidConfigError, match="overrides_json"):
        dg.validate_run_config(main_job, {"ops": {"sft_checkpoint": {"config": {"overrides_json": '{"max_steps": 3}'}}}})


def test_the_scaffold_arm_runs_in_a_final_report_and_never_in_the_main_job(main_job):
    from oro_assets.definitions import defs
    from oro_assets.ops.runner import final_report_run_config

    def keys(job) -> set[str]:
        return {k.to_user_string() for k in job.asset_layer.selected_asset_keys}

    final_job = defs().resolve_job_def("final_report_job")
    assert {"scaffold_checkpoint", "eval_scaffold"} <= keys(final_job)
    assert not {"scaffold_checkpoint", "eval_scaffold"} & keys(main_job)
    assert keys(final_job) - keys(main_job) == {"scaffold_checkpoint", "eval_scaffold"}
    run_config = final_report_run_config(smoke_run_config(with_arms=True), with_arms=True)
    dg.validate_run_config(final_job, run_config)
    assert run_config["ops"]["eval_scaffold"]["config"]["pool"] == "test"
    # the arm trains with the sft stage's config, so it takes the sft stage's smoke overrides and fields
    assert run_config["ops"]["scaffold_checkpoint"]["config"] == SMOKE_STAGE_OVERRIDES["sft_checkpoint"]
    assert stage_overrides("scaffold", TrainingConfig(max_steps=3), "tiny") == {"max_steps": 3}
    with pytest.raises(ValueError, match=r"scaffold_checkpoint: unknown sft config fields: \['k'\]"):
        stage_overrides("scaffold", TrainingConfig(k=2), "tiny")
    with pytest.raises(dg.DagsterInvalidConfigError):  # the main job has no arm to configure
        dg.validate_run_config(main_job, smoke_run_config(with_arms=True))


def test_a_training_seed_reaches_each_stage_trainer_and_seed_0_changes_nothing():
    from oro_assets.training.pipes_entry import stage_profile

    tiny = get_profile("tiny")
    assert stage_profile({"stage": "dr_grpo", "profile": "tiny"}) == tiny
    assert stage_profile({"stage": "dr_grpo", "profile": "tiny", "seed": 0}) == tiny
    seeded = stage_profile({"stage": "dr_grpo", "profile": "tiny", "seed": 2, "overrides": {"max_steps": 3}})
    assert (seeded.dr_grpo.train.seed, seeded.dr_grpo.train.max_steps) == (tiny.dr_grpo.train.seed + 2, 3)
    assert seeded.sft == tiny.sft, "only the running stage's trainer is reseeded"
    # the arm trains with sft's config; the base has no trainer (its seed builds the base itself)
    assert stage_profile({"stage": "scaffold", "profile": "tiny", "seed": 1}).sft.train.seed == tiny.sft.train.seed + 1
    assert stage_profile({"stage": "base", "profile": "tiny", "seed": 1}) == tiny


def test_main_at_another_training_seed_seeds_every_training_asset_and_no_evaluation():
    from oro_assets.definitions import defs
    from oro_assets.ops.runner import (
        EVAL_ASSETS,
        final_report_run_config,
        training_assets,
        with_training_seed,
    )

    final_job = defs().resolve_job_def("final_report_job")
    run_config = with_training_seed(final_report_run_config(smoke_run_config(with_arms=True), with_arms=True),
                                    training_assets(with_arms=True), 3)
    dg.validate_run_config(final_job, run_config)
    ops = run_config["ops"]
    assert {name for name, op in ops.items() if op["config"].get("seed") == 3} == \
        {stage.asset for stage in CHAIN} | {"scaffold_checkpoint"}
    assert ops["sft_checkpoint"]["config"]["max_steps"] == 3, "the smoke overrides are kept"
    assert all("seed" not in ops[name]["config"] for name in EVAL_ASSETS)
