"""Config of the ``kto`` stage (TRL ``KTOConfig`` knobs and where its labelled turns come from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oro_assets.training.stages.train_args import TrainArgs, check_extrapolate, extrapolate_field


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
    curated_turns: bool = field(default=True, metadata={
        "help": "Train on the turns of the curated kto_dataset (miners' trajectories labelled by production-strict "
                "success)."})
    on_policy_k: int = field(default=0, metadata={
        "help": "Rollouts per train problem sampled from the parent checkpoint in the arena and labelled by "
                "production-strict success (the arena scorer); their turns become KTO examples. 0: none."})
    on_policy_problems: int | None = field(default=None, metadata={
        "help": "Train problems rolled out for the on-policy examples (None: all)."})
    categories: tuple[str, ...] | None = field(default=None, metadata={
        "help": "On-policy: roll out on train problems of these categories only (None: all)."})
    contrastive_only: bool = field(default=True, metadata={
        "help": "On-policy: keep only the rollouts of problems on which some of the k succeeded and some failed, "
                "and drop a turn that both a successful and a failed rollout took (it did not decide the outcome)."})
    turn_credit: str = field(default="episode", metadata={
        "help": "On-policy: which turns carry a rollout's label. 'episode': every turn. 'first_deviation': turns are "
                "compared by what they do (calls and arguments, thinking aside); a turn whose calls so far some "
                "rollout of the other outcome also made carries no label, a successful rollout's later turns are "
                "desirable, and a failed rollout gives only the first turn no success made (the rest follows from it). "
                "'recommendation': only the recommendation turns carry their rollout's label."})
    temperature: float = field(default=0.9, metadata={"help": "On-policy: sampling temperature of the rollouts."})
    top_p: float = field(default=0.95, metadata={"help": "On-policy: nucleus sampling of the rollouts."})
    max_new_tokens: int = field(default=160, metadata={"help": "On-policy: new tokens per assistant turn."})
    max_steps_per_episode: int = field(default=10, metadata={"help": "On-policy: turn limit of one rollout."})
    extrapolate: float = extrapolate_field()

    def __post_init__(self) -> None:
        check_extrapolate("kto", self.extrapolate)
