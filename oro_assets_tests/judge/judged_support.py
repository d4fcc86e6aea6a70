"""The rule judge run over rows with some of its module's names rebound (a kernel on or off), for the native tests."""

from __future__ import annotations

from typing import Any

from oro_assets.judge import rule
from oro_assets.judge.evidence import parse_trace


def clear_rule_caches() -> None:
    """Every per-text cache of the rule judge emptied: a cached result would hide the code under test."""
    for name in dir(rule):
        if hasattr(getattr(rule, name), "cache_clear"):
            getattr(rule, name).cache_clear()


def judged(rows: list[dict], **bound: Any) -> tuple[list, list]:
    """Features of every row and the verdicts, with ``rule``'s names rebound as given (restored after), caches
    cleared before and after."""
    saved = {name: getattr(rule, name) for name in bound}
    for name, value in bound.items():
        setattr(rule, name, value)
    try:
        clear_rule_caches()
        judge = rule.RuleJudge()
        features = [judge._features(parse_trace(r)) for r in rows]
        return features, [judge.judge(r) for r in rows]
    finally:
        for name, value in saved.items():
            setattr(rule, name, value)
        clear_rule_caches()


def judge_each(rows: list[dict]) -> list:
    """Every row judged by a fresh judge from empty caches, as bound now (a checking fixture sees every call)."""
    clear_rule_caches()
    judge = rule.RuleJudge()
    return [judge.judge(r) for r in rows]
