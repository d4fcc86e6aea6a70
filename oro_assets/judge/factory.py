"""Build the configured judge (what the Dagster resource and the CLI call)."""

from __future__ import annotations

from pathlib import Path

from oro_assets.judge.base import Judge
from oro_assets.judge.cache import CachedJudge, JudgeCache
from oro_assets.judge.rule import RuleJudge
from oro_assets.settings import Settings, api_key


def make_judge(settings: Settings | None = None, kind: str | None = None, cache_path: str | Path | None = None, *,
               base_url: str | None = None, models: tuple[str, ...] | list[str] = ()) -> Judge:
    """``kind`` (rule|llm) defaults to ``settings.judge``; the LLM judge's endpoint and models come from
    ``base_url``/``models`` (the Dagster resource's fields) or else from ``settings``; ``cache_path``
    wraps the judge in a SQLite cache (the Dagster layer passes ``<data>/state/judge_cache.sqlite``)."""
    kind = kind or (settings.judge if settings is not None else "rule")
    if kind == "rule":
        judge: Judge = RuleJudge()
    elif kind == "llm":
        from oro_assets.judge.llm import LLMJudge, LLMJudgeConfig  # openai is only needed here

        url = base_url or (settings.judge_base_url if settings is not None else None)
        names = tuple(models) or (tuple(settings.judge_models) if settings is not None else ())
        if not url or not names:
            raise ValueError("the LLM judge needs a base URL and a model (ORO_JUDGE_BASE_URL, ORO_JUDGE_MODEL)")
        judge = LLMJudge(LLMJudgeConfig(base_url=url, models=names), api_key=api_key())
    else:
        raise ValueError(f"unknown judge kind {kind!r}; accepted: rule, llm")
    if cache_path is not None:
        judge = CachedJudge(judge, JudgeCache(cache_path))
    return judge
