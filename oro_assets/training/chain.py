"""The training chain: one declared sequence of stages, the one place to read it.

    base → sft → rejection_sft → teacher_sft → kto → dr_grpo

Each :class:`Stage` names its parent checkpoint, the assets it reads besides that parent, its config class
(``training/stages/<stage>_config.py``: the paper's knobs, with help text; ``training.profiles`` chooses their
values) and the function that runs it (``training/stages/<stage>.py``: ``from_params(StageContext)``, what
``training.pipes_entry`` calls). Generated from :data:`CHAIN`: the training assets and their checks
(``defs/training/assets.py``), one evaluation asset per stage and the report's inputs
(``defs/evaluation/assets.py``), the job selections (``defs/ops/jobs.py``), the report's stage order
(``evaluation/report.py``) and the multi-day table (``evaluation/days.py``).

The run functions are named, not imported: reading the chain imports no stage module (and no torch), and a
module that reads the chain does not take every stage's code into its code version.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oro_assets.training.stages.base_config import TinyArch
from oro_assets.training.stages.dr_grpo_config import DrGRPOStageConfig
from oro_assets.training.stages.kto_config import KTOStageConfig
from oro_assets.training.stages.rejection_sft_config import RejectionStageConfig
from oro_assets.training.stages.sft_config import SFTStageConfig
from oro_assets.training.stages.teacher_sft_config import TeacherSFTStageConfig

STAGES_PACKAGE = "oro_assets.training.stages"


@dataclass(frozen=True)
class Stage:
    """One training stage: ``parent`` (None for the base), the assets it reads besides the parent checkpoint,
    its config class, and ``run`` (``"<module of training.stages>:<function>"``, taking a StageContext)."""

    name: str
    parent: str | None
    inputs: tuple[str, ...]
    Config: type
    run: str
    asset: str
    description: str
    config_of: str | None = None
    compared_with: str | None = None

    @property
    def config_stage(self) -> str:
        """The stage whose config (in the profile) this one trains with: its own, or ``config_of`` (an arm)."""
        return self.config_of or self.name

    @property
    def module(self) -> str:
        """The stage's module (``oro_assets.training.stages.<stage>``): its code version is the stage's."""
        return f"{STAGES_PACKAGE}.{self.run.partition(':')[0]}"

    def load_run(self) -> Callable[[Any], Any]:
        """The stage's ``from_params`` (imports the stage module)."""
        return getattr(importlib.import_module(self.module), self.run.partition(":")[2])


#: The chain, in order: each stage trains from its parent's checkpoint.
CHAIN: tuple[Stage, ...] = (
    Stage("base", None, ("arena_world", "leak_clusters"), TinyArch, "base:from_params", "base_model",
          "The base model of the active profile. tiny: a Qwen3ForCausalLM with a small config and a word-level "
          "tokenizer trained locally on the arena's text, carrying Qwen3's special tokens and chat template "
          "(deterministic from the seed). qwen3-4b: a pointer to the real weights (ORO_QWEN3_4B_PATH)."),
    Stage("sft", "base", ("sft_dataset", "leak_clusters"), SFTStageConfig, "sft:from_params", "sft_checkpoint",
          "LoRA SFT (qwen3-4b) / full fine-tune (tiny) on the curated agentic corpus with assistant-only loss. "
          "The checkpoint keeps its resolved config, metrics, MLflow run and the manifest of example ids it "
          "trained on."),
    Stage("rejection_sft", "sft", ("sft_dataset", "leak_clusters"), RejectionStageConfig,
          "rejection_sft:from_params", "rejection_sft_checkpoint",
          "Rejection re-SFT: k rollouts per train problem in the arena with the SFT model at T = 0.9, keep "
          "reward = 1.0, mix 50/50 with the SFT corpus."),
    Stage("teacher_sft", "rejection_sft", ("leak_clusters",), TeacherSFTStageConfig, "teacher_sft:from_params",
          "teacher_sft_checkpoint",
          "Continued SFT on a teacher's successful trajectories on train problems (an OpenAI-compatible endpoint "
          "when ORO_TEACHER_BASE_URL is set, else the arena's strongest scripted agent), voucher bucket upsampled."),
    Stage("kto", "teacher_sft", ("kto_dataset", "leak_clusters"), KTOStageConfig, "kto:from_params",
          "kto_checkpoint",
          "KTO on desirable / undesirable turns labelled by production-strict success (beta 0.02, class weights "
          "balanced): the curated kto_dataset's turns and/or the parent's own rollouts on train problems "
          "(on_policy_k; the tiny profile: problems with both outcomes, turns both outcomes took dropped)."),
    Stage("dr_grpo", "kto", ("rl_prompts", "leak_clusters"), DrGRPOStageConfig, "dr_grpo:from_params",
          "dr_grpo_checkpoint",
          "Dr. GRPO (loss_type dr_grpo, scale_rewards none, beta 0). reward_level episode (the tiny profile): a "
          "group is whole arena episodes of one train problem run by the rollout engine, tool results masked from "
          "the loss, reward = success + rule score; step (the paper's, qwen3-4b): per-step prompts with format + "
          "tool-call match against the teacher's next step + outcome. Reports the share of groups with reward "
          "variance and learned_nothing when none varied."),
)

#: Comparison arms: trained like a chain stage (``config_of``) from other data, evaluated beside the chain and read
#: against ``compared_with``; never a parent, not part of the main job (the final report trains them).
ARMS: tuple[Stage, ...] = (
    Stage("scaffold", "base", ("sft_dataset", "leak_clusters"), SFTStageConfig, "sft:scaffold_from_params",
          "scaffold_checkpoint",
          "The sft stage's recipe without one curated row: the same warm-up checkpoint, then the same optimizer "
          "steps on the made-up whole-episode drills alone. What the scaffold teaches by itself; the sft stage's "
          "figure over this arm is what the curated corpus adds.", config_of="sft", compared_with="sft"),
)

#: Stage names in chain order.
STAGE_NAMES: tuple[str, ...] = tuple(stage.name for stage in CHAIN)
#: Arm names, in declaration order.
ARM_NAMES: tuple[str, ...] = tuple(arm.name for arm in ARMS)
#: stage or arm name -> its checkpoint asset
CHECKPOINT_ASSETS: dict[str, str] = {stage.name: stage.asset for stage in (*CHAIN, *ARMS)}


def stage_named(name: str) -> Stage:
    """The stage (or arm) called ``name``; a clear error naming the accepted ones otherwise."""
    for stage in (*CHAIN, *ARMS):
        if stage.name == name:
            return stage
    raise ValueError(f"unknown stage {name!r}; one of {', '.join(STAGE_NAMES + ARM_NAMES)}")


def report_order() -> tuple[str, ...]:
    """Chain order with each arm just before the stage it is compared with (a table's "change over the row
    before" then reads that stage over its arm)."""
    order: list[str] = []
    for name in STAGE_NAMES:
        order += [arm.name for arm in ARMS if arm.compared_with == name]
        order.append(name)
    return tuple(order)


def descendants(name: str) -> list[str]:
    """The stages trained (transitively) from ``name``'s checkpoint, in chain order."""
    below = {name}
    for stage in CHAIN:
        if stage.parent in below:
            below.add(stage.name)
    return [s for s in STAGE_NAMES if s in below and s != name]


def stage_code_versions() -> dict[str, str]:
    """Per stage, the version of the code that produced its checkpoint: its own module's code version
    (:func:`oro_assets.code_version.module_version`: the module and what it imports, not its siblings)
    chained with its parent's, so an edit re-versions that stage and its descendants, and no other."""
    from oro_assets.code_version import module_version
    from oro_assets.jsonio import content_hash

    versions: dict[str, str] = {}
    for stage in (*CHAIN, *ARMS):
        own = module_version(stage.module)
        versions[stage.name] = content_hash([own, versions.get(stage.parent or "", "")])[:12]
    return versions
