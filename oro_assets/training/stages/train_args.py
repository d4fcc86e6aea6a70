"""The TrainingArguments fields every stage but ``base`` shares (TRL names; ``common.base_args`` maps them), and the
``extrapolate`` knob the short stages (KTO, Dr. GRPO) share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TrainArgs:
    """The optimiser and schedule of one stage (TRL/transformers ``TrainingArguments`` names)."""

    learning_rate: float = field(default=1e-4, metadata={"help": "Peak learning rate."})
    num_train_epochs: float = field(default=1.0, metadata={"help": "Epochs over the stage's data when max_steps is -1."})
    max_steps: int = field(default=-1, metadata={"help": "Optimizer steps (-1: run num_train_epochs)."})
    per_device_train_batch_size: int = field(default=1, metadata={"help": "Examples per device and step."})
    gradient_accumulation_steps: int = field(default=8, metadata={"help": "Micro-batches accumulated per optimizer step."})
    lr_scheduler_type: str = field(default="cosine", metadata={"help": "transformers scheduler name."})
    warmup_ratio: float = field(default=0.03, metadata={"help": "Share of the steps spent warming the rate up."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm."})
    logging_steps: int = field(default=1, metadata={"help": "Steps between two logged losses."})
    seed: int = field(default=0, metadata={"help": "Seed of the trainer (data order, initialisation)."})


def extrapolate_field() -> Any:
    """The ``extrapolate`` knob of a stage that trains a short update on its parent (KTO, Dr. GRPO)."""
    return field(default=1.0, metadata={
        "help": "Weight extrapolation (ExPO, Zheng et al. 2024): the checkpoint is saved at parent + extrapolate x "
                "(trained - parent), the trainable parameters only (the adapters under LoRA). 1.0: as trained; above "
                "1 follows the stage's short update further along its direction."})


def check_extrapolate(stage: str, value: float) -> None:
    """Refuse an ``extrapolate`` that undoes, inverts or loses the update, naming the field."""
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{stage}.extrapolate must be a finite number above 0, got {value}")
