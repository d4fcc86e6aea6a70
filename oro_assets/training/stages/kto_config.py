"""Config of the ``kto`` stage (TRL ``KTOConfig`` knobs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oro_assets.training.stages.train_args import TrainArgs


@dataclass(frozen=True)
class KTOStageConfig:
    """KTO on turns labelled desirable / undesirable by production-strict success, class weights balanced."""

    train: TrainArgs = field(
        default_factory=lambda: TrainArgs(learning_rate=1e-6, per_device_train_batch_size=2,
                                          gradient_accumulation_steps=4),
        metadata={"help": "Optimiser and schedule."})
    beta: float = field(default=0.02, metadata={"help": "KTO beta: strength of the implicit KL to the reference."})
    max_length: int = field(default=14_336, metadata={"help": "Token length an example is cut to."})
    max_examples: int | None = field(default=None, metadata={"help": "Examples taken from the dataset (None: all)."})
