"""The one checkpoint lifecycle every stage goes through (training.stages.lifecycle)."""

import pytest

from oro_assets.training.stages import STAGES
from oro_assets.training.stages.lifecycle import StageCheckpoint
from oro_assets.training.tracking import Tracking


def test_a_failed_stage_leaves_no_checkpoint_and_no_temporary_dir(small_profile, tmp_path):
    checkpoint = StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "not/a/local/parent", tmp_path,
                                 Tracking.disabled())
    seen = {}

    def train(tmp, run):
        seen["tmp"] = tmp
        (tmp / "partial.bin").write_bytes(b"x")
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        checkpoint.run_once(train, log=lambda m: None)
    assert not seen["tmp"].exists()
    assert not checkpoint.final.exists()
    assert list((tmp_path / "sft").iterdir()) == []
    assert checkpoint.existing() is None


def test_the_version_moves_with_data_config_and_parent(small_profile, tmp_path):
    def version(config, hashes, parent):
        return StageCheckpoint(small_profile, "sft", config, hashes, parent, tmp_path, Tracking.disabled()).version

    v = version({"k": 1}, {"sft": "abc"}, "p")
    assert v == version({"k": 1}, {"sft": "abc"}, "p")
    assert len({v, version({"k": 2}, {"sft": "abc"}, "p"), version({"k": 1}, {"sft": "abd"}, "p"),
                version({"k": 1}, {"sft": "abc"}, "q")}) == 4


def test_every_stage_the_assets_run_is_dispatched_by_name():
    assert list(STAGES) == ["base", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo"]


def test_pipes_entry_names_the_accepted_stages_for_an_unknown_one():
    from oro_assets.training.pipes_entry import run_stage

    with pytest.raises(ValueError, match="unknown stage 'sfft'; one of base, sft, rejection_sft"):
        run_stage({"stage": "sfft", "out_root": "x"})


def test_the_version_follows_the_training_code(small_profile, tmp_path, monkeypatch):
    from oro_assets.training.stages import lifecycle

    def version():
        return StageCheckpoint(small_profile, "sft", {"k": 1}, {"sft": "abc"}, "p", tmp_path, Tracking.disabled()).version

    before = version()
    monkeypatch.setattr(lifecycle, "training_code_version", lambda stage: "edited")
    assert version() != before


def test_a_tiny_checkpoint_rolls_out_with_the_threads_it_trained_with(base_ckpt):
    import torch

    from oro_assets.training.checkpoints import load_policy

    torch.set_num_threads(2)
    try:
        load_policy(base_ckpt)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(2)


def test_the_tiny_base_version_follows_its_code(small_profile, monkeypatch):
    import oro_assets.code_version as cv
    from oro_assets.training import tiny_model

    before = tiny_model.base_version(small_profile, ["a text"], 0)
    assert before == tiny_model.base_version(small_profile, ["a text"], 0)
    assert before != tiny_model.base_version(small_profile, ["another text"], 0)
    monkeypatch.setattr(cv, "code_version", lambda *objs: "edited")
    assert tiny_model.base_version(small_profile, ["a text"], 0) != before
