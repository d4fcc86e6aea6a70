"""The TrainingArguments fields every stage but ``base`` shares (TRL names; ``common.base_args`` maps them)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
