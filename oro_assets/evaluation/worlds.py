"""A figure counts only on problems nobody tuned on: the stage table over several *worlds*.

A world is one simulator seed (its own catalogue, problem pool and pool assignment) run by the main command
on its own date from a fresh data dir; each world is also one training run (its own traces, its own training
seed). So the spread between worlds is the spread a user would see on a new world, training-seed variance
included, and an interval must resample worlds as well as problems: :func:`clustered_interval` is a two-stage
bootstrap (worlds with replacement, then problems with replacement within each drawn world). A pooled Wilson
interval over all worlds' problems would count a world's repeated training run as independent evidence.

Every figure names the pool it was read from (``dev`` while developing, ``test`` for the report); a table
mixing pools is refused.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oro_assets.evaluation.metrics import pass_at_k

RESAMPLES = 2000


def _stage_order() -> tuple[str, ...]:
    """The chain's stages with each comparison arm (``scaffold``) just before the stage it is read against, so
    that stage's "change over the row before" is its change over the arm."""
    from oro_assets.training.chain import report_order

    return report_order()


@dataclass(frozen=True)
class WorldStage:
    """One stage's outcomes in one world, for the problems of one category (or all).

    ``solved``: problem id -> greedy success. ``samples``: problem id -> (n, c), the sampled runs behind
    pass@k (empty when the evaluation had no samples)."""

    world: str
    stage: str
    solved: Mapping[str, bool]
    samples: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    pool: str | None = None

    @property
    def asr(self) -> float:
        return sum(self.solved.values()) / len(self.solved) if self.solved else 0.0

    def pass_values(self, k: int) -> dict[str, float]:
        """Per problem, the unbiased pass@k estimate (only problems with at least k samples)."""
        return {p: pass_at_k(n, c, k) for p, (n, c) in self.samples.items() if n >= k}


class MixedPoolsError(ValueError):
    """A table was asked over results read from different problem pools."""


def load_world(data_dir: str | Path, world: str, category: str | None = "Product") -> dict[str, WorldStage]:
    """Every evaluated stage's outcomes in one world (the main command's data dir).

    Greedy outcomes of ``category`` come from the stage's run on every hold-out problem
    (``<stage>/holdout_greedy/eval_result.json``) when it has that category, else from its stratified sample; pass@k
    always from the stratified sample."""
    from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, EvalResult
    from oro_assets.layout import DataLayout

    layout = DataLayout(Path(data_dir))
    out = {}
    for stage in _stage_order():
        sample_path = layout.eval_result(stage)
        holdout_path = sample_path.parent / HOLDOUT_GREEDY_DIR / sample_path.name
        if not sample_path.exists():
            continue
        sample = EvalResult.load(sample_path)
        if sample.config.get("pool") is None:  # still running: the sample part is saved before its pool is stamped
            continue

        def keep(row: Mapping[str, Any]) -> bool:
            return category is None or row.get("category") == category

        greedy = sample
        if category is not None and holdout_path.exists():
            holdout = EvalResult.load(holdout_path)
            if any(keep(r) for r in holdout.rows):  # the hold-out run covers its categories only (Product)
                greedy = holdout

        solved = {str(r["problem_id"]): bool(r.get("greedy_success")) for r in greedy.rows if keep(r)}
        samples = {str(r["problem_id"]): (int(r.get("n") or 0), int(r.get("c") or 0))
                   for r in sample.rows if keep(r) and r.get("n")}
        pools = {res.config.get("pool") for res in (sample, greedy)}
        if len(pools) > 1:
            raise MixedPoolsError(f"{world} {stage}: greedy and sampled results come from pools {sorted(map(str, pools))}")
        out[stage] = WorldStage(world, stage, solved, samples, pools.pop())
    return out


def clustered_interval(worlds: Sequence[Sequence[float]], *, resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float, float]:
    """(mean over worlds of each world's mean, 95% two-stage bootstrap interval).

    ``worlds``: per world, one value per problem (a success 0/1, a pass@k estimate, or a paired difference).
    Worlds are drawn with replacement, then problems with replacement within each drawn world."""
    worlds = [list(w) for w in worlds if len(w)]
    if not worlds:
        raise ValueError("no world has a problem: nothing to estimate")

    def mean_of_means(ws: Sequence[Sequence[float]]) -> float:
        return sum(sum(w) / len(w) for w in ws) / len(ws)

    rng = random.Random(seed)
    boots = []
    for _ in range(resamples):
        drawn = [worlds[rng.randrange(len(worlds))] for _ in worlds]
        boots.append(mean_of_means([[w[rng.randrange(len(w))] for _ in w] for w in drawn]))
    boots.sort()
    return mean_of_means(worlds), boots[int(0.025 * resamples)], boots[min(resamples - 1, int(0.975 * resamples))]


def _paired(before: Mapping[str, float], after: Mapping[str, float]) -> list[float]:
    return [float(after[p]) - float(before[p]) for p in sorted(set(before) & set(after))]


def _block(per_world: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    means = {w: sum(v.values()) / len(v) for w, v in per_world.items() if v}
    if not means:
        return {}
    est, lo, hi = clustered_interval([list(v.values()) for v in per_world.values()])
    return {"mean": est, "low": lo, "high": hi, "by_world": means,
            "n_by_world": {w: len(v) for w, v in per_world.items()}}


def _delta(before: Mapping[str, Mapping[str, float]], after: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    diffs = [_paired(before[w], after[w]) for w in sorted(set(before) & set(after))]
    diffs = [d for d in diffs if d]
    if not diffs:
        return {}
    est, lo, hi = clustered_interval(diffs)
    return {"delta": est, "low": lo, "high": hi, "excludes_zero": lo > 0 or hi < 0}


def stage_table(worlds: Mapping[str, Mapping[str, WorldStage]], *, ks: Sequence[int] = (1, 8)) -> list[dict[str, Any]]:
    """Per stage: greedy ASR and pass@k as the mean over worlds with clustered intervals, and each one's
    paired change over the previous evaluated stage (same world, same problems)."""
    pools = {ws.pool for stages in worlds.values() for ws in stages.values()}
    if len(pools) > 1:
        raise MixedPoolsError(f"results come from more than one pool: {sorted(map(str, pools))}")
    pool = pools.pop() if pools else None

    def metric(stage: str, name: str) -> dict[str, dict[str, float]]:
        out = {}
        for w, stages in worlds.items():
            if stage not in stages:
                continue
            ws = stages[stage]
            out[w] = {p: float(s) for p, s in ws.solved.items()} if name == "asr" else ws.pass_values(int(name.removeprefix("pass@")))
        return out

    names = ["asr", *(f"pass@{k}" for k in ks)]
    table, prev = [], None
    for stage in _stage_order():
        if not any(stage in s for s in worlds.values()):
            continue
        row: dict[str, Any] = {"stage": stage, "pool": pool, "worlds": sorted(w for w, s in worlds.items() if stage in s)}
        for name in names:
            block = _block(metric(stage, name))
            if block:
                row[name] = block
                if prev is not None:
                    change = _delta(metric(prev, name), metric(stage, name))
                    if change:
                        row[f"{name}_change"] = {"vs": prev, **change}
        table.append(row)
        prev = stage
    return table


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def markdown(table: Sequence[Mapping[str, Any]], title: str) -> str:
    """The table as Markdown: one row per stage, mean over worlds with its clustered interval, per world,
    and the change over the stage before."""
    worlds = sorted({w for row in table for w in row["worlds"]})
    pool = next((row["pool"] for row in table if row.get("pool")), None)
    lines = [f"{title} — pool `{pool or 'unknown'}`, {len(worlds)} world(s): {', '.join(worlds)}. "
             "Mean over worlds (95% interval: bootstrap over worlds, then problems).", "",
             "| stage | ASR (greedy) | per world | change over the stage before | pass@1 | pass@8 |",
             "|---|---|---|---|---|---|"]
    def cell(row: Mapping[str, Any], name: str) -> str:
        b = row.get(name)
        return f"{_pct(b['mean'])}% ({_pct(b['low'])}–{_pct(b['high'])})" if b else "-"

    for row in table:

        asr = row.get("asr") or {}
        per_world = ", ".join(f"{_pct(asr['by_world'][w])}% (n={asr['n_by_world'][w]})" for w in worlds
                              if w in asr.get("by_world", {}))
        ch = row.get("asr_change")
        change = (f"{100 * ch['delta']:+.1f} pts over {ch['vs']} ({100 * ch['low']:+.1f} to {100 * ch['high']:+.1f})"
                  if ch else "-")
        lines.append(f"| {row['stage']} | **{cell(row, 'asr')}** | {per_world} | {change} | "
                     f"{cell(row, 'pass@1')} | {cell(row, 'pass@8')} |")
    return "\n".join(lines)
