"""The post-training stages (reference §6), one module each, every one producing a checkpoint; their order,
parents and inputs are declared once in :data:`oro_assets.training.chain.CHAIN`.

Each stage module ``<stage>.py`` holds its ``run_<stage>(...)`` and ``from_params(StageContext)`` (what
``training.pipes_entry`` runs); its config dataclass is ``<stage>_config.py`` beside it. All write
``<out_root>/<stage>/<version>/`` through one lifecycle (``lifecycle.StageCheckpoint``).

This package imports no stage module: a stage's code version (``oro_assets.code_version``, which follows the
packages above a module) then covers that stage's own module and what it imports, not its siblings, so editing
``dr_grpo.py`` re-versions Dr. GRPO alone. The names below are resolved on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> module of this package that defines it (imported on first access only)
_LAZY = {
    "StageContext": "common", "apply_threads": "common",
    "balanced_kto_weights": "kto", "run_kto": "kto",
    "build_sft_trainer_for_inspection": "sft", "run_sft": "sft",
    "default_scorer": "rollouts", "episode_row": "rollouts",
    "default_teacher": "teacher_sft", "run_teacher_sft": "teacher_sft", "teacher_rows": "teacher_sft",
    "grpo_prompt_text": "dr_grpo", "grpo_targets": "dr_grpo", "run_dr_grpo": "dr_grpo",
    "run_rejection_sft": "rejection_sft",
}

__all__ = ["STAGES", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name == "STAGES":  # stage name -> from_params, in chain order (the chain module names no stage module)
        chain = importlib.import_module("oro_assets.training.chain")
        return {stage.name: stage.load_run() for stage in chain.CHAIN}
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
