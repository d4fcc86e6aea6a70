"""Config of the ``dr_grpo`` stage (TRL ``GRPOConfig`` knobs and the teacher-anchored reward's weights)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oro_assets.training.stages.train_args import TrainArgs, check_extrapolate, extrapolate_field


@dataclass(frozen=True)
class DrGRPOStageConfig:
    """Dr. GRPO (loss_type dr_grpo, scale_rewards none, beta 0) on per-step prompts or whole episodes."""

    train: TrainArgs = field(
        default_factory=lambda: TrainArgs(learning_rate=1e-6, per_device_train_batch_size=4,
                                          gradient_accumulation_steps=1),
        metadata={"help": "Optimiser and schedule."})
    num_generations: int = field(default=4, metadata={"help": "Completions per prompt in a group."})
    max_completion_length: int = field(default=512, metadata={"help": "New tokens per completion."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of the completions."})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient (Dr. GRPO: 0)."})
    loss_type: str = field(default="dr_grpo", metadata={"help": "TRL GRPO loss type."})
    scale_rewards: str = field(default="none", metadata={"help": "Advantage scaling (Dr. GRPO: none)."})
    max_prompts: int | None = field(default=None, metadata={"help": "RL prompts used (None: all)."})
    format_weight: float = field(default=1.0, metadata={"help": "Weight of the format reward."})
    match_weight: float = field(default=1.0, metadata={"help": "Weight of the tool-call match with the teacher's step."})
    outcome_weight: float = field(default=1.0, metadata={"help": "Weight of the outcome when the step ends the episode."})
    reward_level: str = field(default="step", metadata={
        "help": "step: one model turn per completion, the teacher-anchored reward above (rl_prompts). episode: a "
                "completion is a whole arena episode of a train problem run by the rollout engine (tool results "
                "masked from the loss), rewarded outcome_weight x success + rule_weight x ORO's rule score + "
                "format_weight x it ended with a recommendation (training/stages/grpo_episodes.py)."})
    rule_weight: float = field(default=0.0, metadata={
        "help": "episode: weight of ORO's rule-based score of the last recommendation (partial credit)."})
    rule_every_item: bool = field(default=False, metadata={
        "help": "episode: the rule credit only for a recommendation naming as many products as the request asks "
                "(ORO's rule score counts a missing item as 0, so an answer after the first of several items still "
                "earns partial credit, more surely than going on; docs/experiments.md, session 28)."})
    max_steps_per_episode: int = field(default=10, metadata={"help": "episode: turns an episode may take."})
    categories: tuple[str, ...] | None = field(default=None, metadata={
        "help": "episode: problem categories trained on (None: every category)."})
    rollout_engine: bool = field(default=True, metadata={
        "help": "Generate the groups in the project's rollout engine (agents/engine.py, the one evaluation and "
                "rejection sampling use: per-completion seeds, KV cache, slots refilled as completions end) through "
                "TRL's rollout_func; False: TRL's own generate."})
    extrapolate: float = extrapolate_field()

    def __post_init__(self) -> None:
        check_extrapolate("dr_grpo", self.extrapolate)
