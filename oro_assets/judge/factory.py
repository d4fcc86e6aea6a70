"""Build the configured judge (what the Dagster resource and the CLI call)."""

from __future__ import annotations

from pathlib import Path

from oro_assets.judge.base import Judge
from oro_assets.judge.cache import CachedJudge, JudgeCache
from oro_assets.judge.rule import RuleJudge
from oro_assets.settings import Settings, api_key


def make_judge(settings: Settings, kind: str | None = None, cache_path: str | Path | None = None) -> Judge:
    """``kind`` defaults to ``settings.judge`` (rule|llm); ``cache_path`` wraps it in a SQLite cache.

    The Dagster layer passes ``settings.state_dir / "judge_cache.sqlite"``.
    """
    kind = kind or settings.judge
    if kind == "rule":
        judge: Judge = RuleJudge()
    elif kind == "llm":
        from oro_assets.judge.llm import LLMJudge  # openai is only needed here

        judge = LLMJudge.from_settings(settings, api_key=api_key())
    else:
        raise ValueError(f"unknown judge kind {kind!r}; accepted: rule, llm")
    if cache_path is not None:
        judge = CachedJudge(judge, JudgeCache(cache_path))
    return judge
