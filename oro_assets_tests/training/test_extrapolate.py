"""Weight extrapolation (ExPO) of a short stage's update: the arithmetic, LoRA, the config's refusal, and the saved
checkpoint of a real KTO stage against the same stage trained without it."""

from __future__ import annotations

import math

import pytest

from oro_assets.training.profiles import with_overrides
from oro_assets.training.stages import run_kto
from oro_assets.training.stages.common import extrapolate_weights, trainable_snapshot
from oro_assets.training.stages.dr_grpo_config import DrGRPOStageConfig
from oro_assets.training.stages.kto_config import KTOStageConfig


def test_extrapolation_follows_the_update_alpha_times_and_leaves_frozen_parameters_alone():
    import torch

    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0]]))
        layer.bias.copy_(torch.tensor([0.5]))
    layer.bias.requires_grad_(False)
    start = trainable_snapshot(layer)
    assert set(start) == {"weight"}, "only what trains is copied"
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[4.0, -2.0]]))  # the update: (+3, -4), norm 5
        layer.bias.add_(1.0)  # a frozen parameter moving is not the stage's update
    norms = extrapolate_weights(layer, start, 2.0)
    assert layer.weight.tolist() == [[7.0, -6.0]]  # 1 + 2 x 3, 2 + 2 x (-4)
    assert layer.bias.tolist() == [1.5]
    assert norms == pytest.approx((5.0, 10.0))
    extrapolate_weights(layer, trainable_snapshot(layer), 0.5)  # no update since the snapshot: nothing moves
    assert layer.weight.tolist() == [[7.0, -6.0]]


@pytest.mark.slow
def test_under_lora_the_adapters_alone_are_extrapolated(lora_linear):
    import torch

    model = lora_linear
    start = trainable_snapshot(model)
    assert start and all("lora_" in name for name in start)
    base = model.base_model.model.proj.weight.detach().clone()
    b_name = next(n for n in start if "lora_B" in n)
    with torch.no_grad():
        dict(model.named_parameters())[b_name].add_(0.25)
    extrapolate_weights(model, start, 3.0)
    assert torch.allclose(dict(model.named_parameters())[b_name], torch.full_like(start[b_name], 0.75))
    assert torch.equal(model.base_model.model.proj.weight, base)


@pytest.mark.parametrize("config", [DrGRPOStageConfig, KTOStageConfig])
@pytest.mark.parametrize("alpha", [0.0, -1.0, math.nan, math.inf])
def test_an_extrapolation_that_undoes_inverts_or_loses_the_update_is_refused_naming_the_field(config, alpha):
    with pytest.raises(ValueError, match=r"(dr_grpo|kto)\.extrapolate must be a finite number above 0"):
        config(extrapolate=alpha)


@pytest.mark.slow
def test_a_kto_stage_saved_at_twice_its_update_against_the_same_stage_trained_as_is(small_profile, base_ckpt,
                                                                                    teacher_traj, tmp_path):
    import torch
    from safetensors.torch import load_file

    rows = [dict(r, label=True) for r in teacher_traj[:3]]
    for r in teacher_traj[3:6]:
        msgs = [dict(m, content="I give up.") if m["role"] == "assistant" else m for m in r["messages"]]
        rows.append(dict(r, id=r["id"] + "_bad", messages=msgs, label=False))
    curated = with_overrides(small_profile, "kto", on_policy_k=0, max_steps=3, learning_rate=1e-3)
    plain = run_kto(curated, rows, base_ckpt, tmp_path / "plain")
    doubled = run_kto(with_overrides(curated, "kto", extrapolate=2.0), rows, base_ckpt, tmp_path / "doubled")

    def weights(path):
        return load_file(path / "model" / "model.safetensors")

    parent, trained, saved = weights(base_ckpt), weights(plain.path), weights(doubled.path)
    moved = [k for k in parent if not torch.equal(parent[k], trained[k])]
    assert moved, "the plain stage must move some weight for the comparison to mean anything"
    for k in parent:
        assert torch.allclose(saved[k], parent[k] + 2 * (trained[k] - parent[k]), atol=1e-6), k
    assert plain.metrics["extrapolate"] == 1.0 and "extrapolated_norm" not in plain.metrics
    before, after = doubled.metrics["extrapolated_norm"]
    assert before > 0 and after == pytest.approx(2 * before, rel=1e-4)
    assert doubled.metrics["weights_changed"] is True
    assert doubled.version != plain.version, "the knob is part of the checkpoint's identity"


@pytest.mark.slow
def test_screen_extrapolate_writes_a_copy_of_the_child_moved_alpha_times_along_its_update(base_ckpt, tmp_path):
    import shutil
    import sys
    from pathlib import Path

    import torch

    from oro_assets.training.checkpoints import load_model_and_tokenizer, model_path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from screen import extrapolate_checkpoint

    child = tmp_path / "child"
    shutil.copytree(base_ckpt, child)
    model, _ = load_model_and_tokenizer(child)
    name, param = next(iter(model.named_parameters()))
    with torch.no_grad():
        param.add_(0.5)
    model.save_pretrained(model_path(child))

    out = extrapolate_checkpoint(base_ckpt, child, 3.0, tmp_path / "out")
    parent, _ = load_model_and_tokenizer(base_ckpt)
    saved, _ = load_model_and_tokenizer(out)
    before = dict(parent.named_parameters())
    for n, p in saved.named_parameters():
        expected = before[n] + 1.5 if n == name else before[n]
        assert torch.allclose(p, expected, atol=1e-6), n
    assert (out / "oro_checkpoint.json").read_text() == (child / "oro_checkpoint.json").read_text()
