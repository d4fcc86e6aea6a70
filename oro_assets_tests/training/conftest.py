"""Shared fixtures: a small arena world, teacher trajectories and a very small tiny-profile base model."""

from __future__ import annotations

import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


@pytest.fixture(scope="session")
def world():
    from oro_assets.arena.generator import build_world

    return build_world(11, n_problems=40, n_products=400)


@pytest.fixture(scope="session")
def env(world):
    from oro_assets.arena.env import InProcessEnv

    return InProcessEnv(world.catalogue)


@pytest.fixture(scope="session")
def product_problems(world):
    return [p for p in world.problems if p["category"] == "Product"]


@pytest.fixture(scope="session")
def teacher_traj(world, env, product_problems):
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.stages import default_scorer, teacher_rows

    rows, _ = teacher_rows(TeacherPolicy({p["problem_id"]: p for p in world.problems}), product_problems, env,
                           default_scorer(world.catalogue), TOOL_SCHEMAS)
    assert rows, "the scripted teacher must solve some product problems"
    return rows


@pytest.fixture(scope="session")
def small_profile():
    """The tiny profile with an even smaller model and a handful of steps per stage (test budget)."""
    from oro_assets.training.profiles import TinyArch, get_profile, with_overrides

    p = get_profile("tiny")
    p = dataclasses.replace(p, arch=TinyArch(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                             num_key_value_heads=1, intermediate_size=64, head_dim=16,
                                             max_position_embeddings=1024, tie_word_embeddings=False))
    # every row shape (the tests train on probe and teacher rows; the tiny profile itself trains Product rows only);
    # no word-swap variants unless a test asks for them (they need the catalogue, which most of these calls omit)
    # no extra warm-up epochs (a handful of steps never reaches the profile's loss target) unless a test asks for them
    p = with_overrides(p, "sft", max_steps=4, per_device_train_batch_size=4, learning_rate=3e-3, max_length=512,
                       row_shapes=None, word_swaps=0, copy_drill_target_loss=None)
    p = with_overrides(p, "rejection_sft", max_steps=2, per_device_train_batch_size=2, k=2, max_problems=3,
                       max_new_tokens=48, max_steps_per_episode=3, max_length=512)
    p = with_overrides(p, "teacher_sft", max_steps=2, per_device_train_batch_size=2, max_problems=6, max_length=512,
                       synthetic_problems=4)
    # the tiny profile's KTO rolls the parent out (on_policy_k); the curated turns too here, since a barely trained
    # parent's rollouts rarely contrast
    p = with_overrides(p, "kto", max_steps=2, per_device_train_batch_size=2, max_examples=8, max_length=512,
                       on_policy_k=2, on_policy_problems=2, max_new_tokens=24, max_steps_per_episode=3,
                       curated_turns=True)
    p = with_overrides(p, "dr_grpo", max_steps=1, per_device_train_batch_size=4, num_generations=2,
                       max_completion_length=24, max_prompts=2)
    return p


@pytest.fixture(scope="session")
def base_ckpt(tmp_path_factory, small_profile, world):
    from oro_assets.training.tiny_model import build_base_checkpoint

    root = tmp_path_factory.mktemp("ckpts")
    return build_base_checkpoint(small_profile, root, world.catalogue, world.problems, seed=3)


@pytest.fixture
def lora_linear():
    """A one-layer module (``proj``: 4 -> 4) under a fresh rank-2 LoRA adapter."""
    import torch
    from peft import LoraConfig, get_peft_model

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(x)

    return get_peft_model(Tiny(), LoraConfig(r=2, target_modules=["proj"]))
