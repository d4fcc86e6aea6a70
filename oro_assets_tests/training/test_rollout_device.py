"""Where a loaded checkpoint rolls out: a GPU profile's policy goes to the GPU when there is one.

On the first H200 run of the qwen3-4b path every stage after SFT stalled: rejection sampling loaded the 4B policy
without a device and rolled it out on the machine's CPU.
"""

from __future__ import annotations

import json

import pytest
import torch

from oro_assets.training import checkpoints as ck


@pytest.mark.parametrize(("profile", "cuda", "expected"), [
    ("qwen3-4b", True, "cuda"),
    ("qwen3-4b", False, None),
    ("tiny", True, None),  # the tiny profile trains on the CPU (use_cpu): it rolls out there too
    (None, True, None),    # a checkpoint without a profile (a base model): the caller decides
])
def test_rollout_device_follows_the_profile(monkeypatch, profile, cuda, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert ck.rollout_device(profile) == expected


def test_load_policy_puts_a_gpu_profile_checkpoint_on_the_gpu(monkeypatch, tmp_path):
    (tmp_path / ck.META_FILE).write_text(json.dumps({"stage": "sft", "profile": "qwen3-4b", "dtype": "bfloat16"}))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    asked: dict = {}

    def loader(path, *, dtype, device=None, trainable=False):
        asked.update(dtype=dtype, device=device)
        raise RuntimeError("loaded")

    monkeypatch.setattr(ck, "load_model_and_tokenizer", loader)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    with pytest.raises(RuntimeError, match="loaded"):
        ck.load_policy(tmp_path)
    assert asked == {"dtype": "bfloat16", "device": "cuda"}
    with pytest.raises(RuntimeError, match="loaded"):
        ck.load_policy(tmp_path, device="cpu")  # a device the caller names wins
    assert asked["device"] == "cpu"
