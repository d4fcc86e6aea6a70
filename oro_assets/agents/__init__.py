"""Model-backed policies shared by training and evaluation (no Dagster imports)."""

from oro_assets.agents.engine import EngineConfig, RolloutEngine, grpo_rollout_func
from oro_assets.agents.local_model import ContextOverflowError, LocalModelPolicy
from oro_assets.agents.openai_policy import OpenAIPolicy
from oro_assets.agents.rollout import Rollout, rollout_many
from oro_assets.agents.toolcall import ParsedCall, ParsedOutput, parse_assistant_text, render_assistant_text

__all__ = [
    "ContextOverflowError",
    "EngineConfig",
    "LocalModelPolicy",
    "OpenAIPolicy",
    "ParsedCall",
    "ParsedOutput",
    "Rollout",
    "RolloutEngine",
    "grpo_rollout_func",
    "parse_assistant_text",
    "render_assistant_text",
    "rollout_many",
]
