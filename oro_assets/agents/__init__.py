"""Model-backed policies shared by training and evaluation (no Dagster imports)."""

from oro_assets.agents.local_model import ContextOverflowError, LocalModelPolicy
from oro_assets.agents.openai_policy import OpenAIPolicy
from oro_assets.agents.rollout import Rollout, rollout_many
from oro_assets.agents.toolcall import ParsedCall, ParsedOutput, parse_assistant_text, render_assistant_text

__all__ = [
    "ContextOverflowError",
    "LocalModelPolicy",
    "OpenAIPolicy",
    "ParsedCall",
    "ParsedOutput",
    "Rollout",
    "parse_assistant_text",
    "render_assistant_text",
    "rollout_many",
]
