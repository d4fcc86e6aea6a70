"""The scripted miner population (see :mod:`oro_assets.arena.population` for kinds and shares)."""

from oro_assets.arena.policies.agentic import ScriptedAgent, TeacherPolicy, teacher, teacher_episode
from oro_assets.arena.policies.broken import BrokenAgent
from oro_assets.arena.policies.harness import RegexAgent, ShortcutAgent, SubtaskHarness

__all__ = ["BrokenAgent", "RegexAgent", "ScriptedAgent", "ShortcutAgent", "SubtaskHarness", "TeacherPolicy", "teacher",
           "teacher_episode"]
