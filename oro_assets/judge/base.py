"""The judge interface, its result type, batch judging and ORO's failure semantics.

A judge maps a canonical normalised trace to one of ORO's five reasoning scores. The score is
``None`` (``available=False``) when judging failed: such a trace is excluded with reason
``judge_unavailable``, never scored 0. A partition where more than half of the judgings failed
is invalid (:func:`check_failure_ratio`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

SCORES: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
# score -> gate reached: 1-4 = the first failing gate, 5 = every gate passed
GATE_OF_SCORE: dict[float, int] = {0.1: 1, 0.3: 2, 0.5: 3, 0.7: 4, 0.9: 5}
SCORE_OF_GATE: dict[int, float] = {gate: score for score, gate in GATE_OF_SCORE.items()}
UNAVAILABLE_GATE = 0


@dataclass(frozen=True)
class JudgeResult:
    score: float | None  # one of SCORES; None = judge_unavailable
    gate: int  # 1-4 failing gate, 5 all passed, 0 unavailable
    explanation: str
    judge_id: str
    judge_version: str
    available: bool
    tokens: int = 0
    cached: bool = False

    def __post_init__(self) -> None:
        if self.available:
            if self.score not in SCORES:
                raise ValueError(f"score {self.score!r} is not one of {SCORES}")
            if GATE_OF_SCORE[self.score] != self.gate:
                raise ValueError(f"gate {self.gate} does not match score {self.score}")
        elif self.score is not None:
            raise ValueError("an unavailable result has no score")

    def to_dict(self) -> dict:
        return asdict(self)


def verdict(score: float, explanation: str, judge_id: str, judge_version: str, tokens: int = 0) -> JudgeResult:
    return JudgeResult(
        score=score,
        gate=GATE_OF_SCORE[score],
        explanation=explanation,
        judge_id=judge_id,
        judge_version=judge_version,
        available=True,
        tokens=tokens,
    )


def unavailable(explanation: str, judge_id: str, judge_version: str, tokens: int = 0) -> JudgeResult:
    return JudgeResult(
        score=None,
        gate=UNAVAILABLE_GATE,
        explanation=explanation,
        judge_id=judge_id,
        judge_version=judge_version,
        available=False,
        tokens=tokens,
    )


def judge_or_unavailable(judge: Any, row: dict) -> JudgeResult:
    """``judge.judge(row)`` (or ``judge(row)``); a judge that raises gives an unavailable result, so a
    judge bug marks the trace ``judge_unavailable`` and never stops a batch or scores it 0."""
    try:
        return judge.judge(row) if hasattr(judge, "judge") else judge(row)
    except Exception as exc:
        return unavailable(f"judge raised {type(exc).__name__}: {str(exc)[:200]}",
                           str(getattr(judge, "judge_id", type(judge).__name__)), "0")


@runtime_checkable
class Judge(Protocol):
    judge_id: str
    judge_version: str

    @property
    def config_hash(self) -> str: ...

    def judge(self, trace: dict) -> JudgeResult: ...


_STATS_LOCK = threading.Lock()


@dataclass
class JudgeStats:
    traces: int = 0
    calls: int = 0  # traces judged by the underlying judge (not served from the cache)
    cache_hits: int = 0
    requests: int = 0  # HTTP requests an LLM judge sent (0 for the rule judge)
    tokens: int = 0
    failures: int = 0  # traces whose judging failed (judge_unavailable)

    def add(self, result: JudgeResult) -> None:
        with _STATS_LOCK:  # judges run on several threads (gate_traces' concurrency)
            self._add(result)

    def _add(self, result: JudgeResult) -> None:
        self.traces += 1
        if result.cached:
            self.cache_hits += 1
        else:
            self.calls += 1
        self.tokens += result.tokens
        if not result.available:
            self.failures += 1

    @property
    def failure_ratio(self) -> float:
        return self.failures / self.traces if self.traces else 0.0

    def as_metadata(self) -> dict[str, int | float]:
        return {
            "judge_traces": self.traces,
            "judge_calls": self.calls,
            "judge_cache_hits": self.cache_hits,
            "judge_requests": self.requests,
            "judge_tokens": self.tokens,
            "judge_failures": self.failures,
            "judge_failure_ratio": round(self.failure_ratio, 4),
        }


class JudgeFailureRatioExceeded(RuntimeError):
    """More than the allowed share of a partition's judgings failed; the partition is invalid."""


def _requests_made(judge: object) -> int:
    # CachedJudge forwards its inner judge's counter; the rule judge has none.
    return int(getattr(judge, "requests_made", 0) or 0)


def judge_batch(judge: Judge, traces: Iterable[dict]) -> tuple[list[JudgeResult], JudgeStats]:
    """Judge every trace; an exception on one trace makes that trace unavailable, not the batch."""
    stats = JudgeStats()
    before = _requests_made(judge)
    results = []
    for trace in traces:
        try:
            result = judge.judge(trace)
        except Exception as exc:  # noqa: BLE001 - one bad trace must not sink the partition
            result = unavailable(f"judging raised {type(exc).__name__}: {str(exc)[:200]}", judge.judge_id, judge.judge_version)
        stats.add(result)
        results.append(result)
    stats.requests = _requests_made(judge) - before
    return results, stats


def check_failure_ratio(stats: JudgeStats, max_ratio: float = 0.5) -> None:
    """Raise :class:`JudgeFailureRatioExceeded` when failures / traces > ``max_ratio``."""
    if stats.traces and stats.failure_ratio > max_ratio:
        raise JudgeFailureRatioExceeded(
            f"{stats.failures} of {stats.traces} judge calls failed ({stats.failure_ratio:.0%} > {max_ratio:.0%}); "
            "the partition is invalid rather than scored: fix the judge endpoint or switch ORO_JUDGE=rule and re-run"
        )
