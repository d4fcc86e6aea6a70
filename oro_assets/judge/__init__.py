"""Reasoning judge (reference §4): judge view, rule judge, LLM judge, cache, failure semantics.

The LLM judge lives in :mod:`oro_assets.judge.llm` (imported on demand: it pulls in ``openai``).
"""

from oro_assets.judge.base import (
    SCORES,
    Judge,
    JudgeFailureRatioExceeded,
    JudgeResult,
    JudgeStats,
    check_failure_ratio,
    judge_batch,
)
from oro_assets.judge.cache import CachedJudge, JudgeCache
from oro_assets.judge.factory import make_judge
from oro_assets.judge.rule import RuleJudge

__all__ = [
    "SCORES",
    "CachedJudge",
    "Judge",
    "JudgeCache",
    "JudgeFailureRatioExceeded",
    "JudgeResult",
    "JudgeStats",
    "RuleJudge",
    "check_failure_ratio",
    "judge_batch",
    "make_judge",
]
