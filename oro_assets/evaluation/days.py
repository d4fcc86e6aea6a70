"""A result holds only if it holds on other days: the stage table over several days (each its own
fresh data dir), with the mean and range over days, a pooled 95% Wilson interval, and each stage's
change over the stage before with a paired bootstrap interval (same problems, same day)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oro_assets.evaluation.metrics import wilson_interval

STAGE_ORDER = ("base", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo")


@dataclass(frozen=True)
class DayStage:
    """One stage's greedy outcomes on one day: problem id -> solved, for the problems of ``category``."""

    day: str
    stage: str
    solved: Mapping[str, bool]

    @property
    def asr(self) -> float:
        return sum(self.solved.values()) / len(self.solved) if self.solved else 0.0


def load_day(reports_dir: str | Path, day: str, category: str | None = "Product") -> dict[str, DayStage]:
    """Every evaluated stage's greedy outcomes: from its run on every hold-out problem of the category
    (``<reports_dir>/eval/<stage>/holdout_greedy/eval_result.json``) when there is one, else from its
    stratified sample (``<reports_dir>/eval/<stage>/eval_result.json``)."""
    from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, EvalResult

    out = {}
    for stage in STAGE_ORDER:
        path = Path(reports_dir) / "eval" / stage / HOLDOUT_GREEDY_DIR / "eval_result.json"
        if not path.exists() or category is None:
            path = Path(reports_dir) / "eval" / stage / "eval_result.json"
        if not path.exists():
            continue
        rows = EvalResult.load(path).rows
        solved = {str(r["problem_id"]): bool(r.get("greedy_success")) for r in rows
                  if category is None or r.get("category") == category}
        out[stage] = DayStage(day, stage, solved)
    return out


def paired_delta_interval(pairs: Sequence[tuple[Mapping[str, bool], Mapping[str, bool]]], *, resamples: int = 2000,
                          seed: int = 0) -> tuple[float, float, float]:
    """(mean over days of ASR(after) - ASR(before), 95% percentile bootstrap interval), resampling
    problems within each day (the two stages are scored on the same problems)."""
    days = [[(bool(a.get(p)), bool(b.get(p))) for p in sorted(set(a) & set(b))] for a, b in pairs]
    days = [d for d in days if d]
    if not days:
        return 0.0, 0.0, 0.0

    def mean_delta(samples: list[list[tuple[bool, bool]]]) -> float:
        return sum(sum(y - x for x, y in d) / len(d) for d in samples) / len(samples)

    rng = random.Random(seed)
    boots = sorted(mean_delta([[d[rng.randrange(len(d))] for _ in d] for d in days]) for _ in range(resamples))
    return mean_delta(days), boots[int(0.025 * resamples)], boots[min(resamples - 1, int(0.975 * resamples))]


def stage_table(days: Mapping[str, Mapping[str, DayStage]]) -> list[dict[str, Any]]:
    """Per stage: ASR per day, mean and range over days, pooled Wilson interval; change over the previous
    evaluated stage (paired bootstrap) and whether every day's interval clears the base's."""
    table = []
    prev: str | None = None
    for stage in STAGE_ORDER:
        runs = [d[stage] for d in days.values() if stage in d]
        if not runs:
            continue
        wins = sum(sum(r.solved.values()) for r in runs)
        total = sum(len(r.solved) for r in runs)
        lo, hi = wilson_interval(wins, total)
        row: dict[str, Any] = {
            "stage": stage, "days": [r.day for r in runs], "asr_by_day": {r.day: r.asr for r in runs},
            "n_by_day": {r.day: len(r.solved) for r in runs},
            "asr_mean": sum(r.asr for r in runs) / len(runs), "asr_min": min(r.asr for r in runs),
            "asr_max": max(r.asr for r in runs), "ci_low": lo, "ci_high": hi,
        }
        if prev is not None:
            pairs = [(d[prev].solved, d[stage].solved) for d in days.values() if prev in d and stage in d]
            delta, dlo, dhi = paired_delta_interval(pairs)
            row.update({"vs": prev, "delta": delta, "delta_low": dlo, "delta_high": dhi})
        base = [d["base"] for d in days.values() if "base" in d and stage in d]
        if stage != "base" and base:
            clears = []
            for b in base:
                s = days[b.day][stage]
                s_lo = wilson_interval(sum(s.solved.values()), len(s.solved))[0]
                b_hi = wilson_interval(sum(b.solved.values()), len(b.solved))[1]
                clears.append(s_lo > b_hi)
            row["above_base_every_day"] = all(clears)
        table.append(row)
        prev = stage
    return table


def markdown(table: Sequence[Mapping[str, Any]], category: str = "Product") -> str:
    days = sorted({d for row in table for d in row["days"]})
    lines = [f"| stage | {category} ASR mean (range) over {len(days)} days | pooled 95% CI | per day | "
             "change over the stage before (95% CI) | above base every day |", "|---|---|---|---|---|---|"]
    for row in table:
        per_day = ", ".join(f"{100 * row['asr_by_day'][d]:.0f}% (n={row['n_by_day'][d]})" for d in row["days"])
        change = (f"{100 * row['delta']:+.1f} pts over {row['vs']} ({100 * row['delta_low']:+.1f} to "
                  f"{100 * row['delta_high']:+.1f})") if "delta" in row else "-"
        above = {True: "yes", False: "no"}.get(row.get("above_base_every_day"), "-")
        lines.append(f"| {row['stage']} | **{100 * row['asr_mean']:.1f}%** ({100 * row['asr_min']:.1f}–"
                     f"{100 * row['asr_max']:.1f}) | {100 * row['ci_low']:.1f}–{100 * row['ci_high']:.1f} | "
                     f"{per_day} | {change} | {above} |")
    return "\n".join(lines)
