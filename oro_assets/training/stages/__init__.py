"""The post-training stages (reference §6), one module each, every one producing a checkpoint:

* ``base``           the base model of the profile (tiny: built locally; qwen3-4b: the real weights).
* ``sft``            SFTTrainer, assistant-only loss, on the curated SFT rows.
* ``rejection_sft``  k rollouts per train problem at T=0.9 with the parent, keep production-strict
                     successes, mix with the SFT corpus.
* ``teacher_sft``    continued SFT on a teacher's successful trajectories (voucher upsampled).
* ``kto``            KTOTrainer, desirable / undesirable = production-strict success, weights balanced.
* ``dr_grpo``        GRPOTrainer(loss_type="dr_grpo", scale_rewards="none", beta=0) with a
                     teacher-anchored per-step reward.

Each ``run_<stage>(profile, <datasets...>, parent, out_root, tracking, ...) -> StageResult`` writes
``<out_root>/<stage>/<version>/`` through one lifecycle (``lifecycle.StageCheckpoint``); each module's
``from_params(StageContext)`` is what ``training.pipes_entry`` dispatches to through :data:`STAGES`.
"""

from __future__ import annotations

from collections.abc import Callable

from oro_assets.training.checkpoints import StageResult
from oro_assets.training.stages import base, dr_grpo, kto, rejection_sft, sft, teacher_sft
from oro_assets.training.stages.common import StageContext, apply_threads
from oro_assets.training.stages.dr_grpo import grpo_prompt_text, grpo_targets, run_dr_grpo
from oro_assets.training.stages.kto import balanced_kto_weights, run_kto
from oro_assets.training.stages.rejection_sft import run_rejection_sft
from oro_assets.training.stages.rollouts import default_scorer, episode_row
from oro_assets.training.stages.sft import build_sft_trainer_for_inspection, run_sft
from oro_assets.training.stages.teacher_sft import default_teacher, run_teacher_sft, teacher_rows

STAGES: dict[str, Callable[[StageContext], StageResult]] = {
    "base": base.from_params,
    "sft": sft.from_params,
    "rejection_sft": rejection_sft.from_params,
    "teacher_sft": teacher_sft.from_params,
    "kto": kto.from_params,
    "dr_grpo": dr_grpo.from_params,
}

__all__ = [
    "STAGES", "StageContext", "apply_threads", "balanced_kto_weights", "build_sft_trainer_for_inspection",
    "default_scorer", "default_teacher", "episode_row", "grpo_prompt_text", "grpo_targets", "run_dr_grpo", "run_kto",
    "run_rejection_sft", "run_sft", "run_teacher_sft", "teacher_rows",
]
