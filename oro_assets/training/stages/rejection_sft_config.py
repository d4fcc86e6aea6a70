"""Config of the ``rejection_sft`` stage: k rollouts per train problem, successes kept, mixed with SFT rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from oro_assets.training.stages.train_args import TrainArgs


@dataclass(frozen=True)
class RejectionStageConfig:
    """Rejection re-SFT (reference §6: k = 8 at T 0.9, top-p 0.95, 50/50 with the SFT corpus)."""

    train: TrainArgs = field(default_factory=TrainArgs, metadata={"help": "Optimiser and schedule."})
    max_length: int = field(default=14_336, metadata={"help": "Token length an example is cut to."})
    k: int = field(default=8, metadata={"help": "Rollouts per train problem."})
    temperature: float = field(default=0.9, metadata={"help": "Sampling temperature of the rollouts."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling of the rollouts."})
    max_new_tokens: int = field(default=1024, metadata={"help": "New tokens per assistant turn."})
    max_steps_per_episode: int = field(default=30, metadata={"help": "Turn limit of one rollout."})
    max_problems: int | None = field(default=None, metadata={"help": "Train problems rolled out (None: all)."})
    mix_ratio: float = field(default=0.5, metadata={"help": "Share of kept rollouts in the final mix."})
    categories: tuple[str, ...] | None = field(default=None, metadata={
        "help": "Roll out on train problems of these categories only (None: all)."})
    max_solve_rate: float = field(default=1.0, metadata={
        "help": "Keep a problem's successes only when at most this share of its k rollouts succeeded (1.0: every "
                "success). Lower keeps the problems the parent solves least reliably, where a success is text the "
                "parent does not already write every time."})

    def __post_init__(self) -> None:
        if not 0.0 < self.max_solve_rate <= 1.0:
            raise ValueError(f"rejection_sft.max_solve_rate must be in (0, 1], got {self.max_solve_rate}")
