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


#: per world, per training run (a replicate of the world's chain at another training seed), problem id -> value
RunValues = Mapping[str, Mapping[str, Mapping[str, float]]]


def clustered_interval(worlds: Sequence[Sequence[float]], *, resamples: int = RESAMPLES,
                       seed: int = 0) -> tuple[float, float, float]:
    """(mean over worlds of each world's mean, 95% two-stage bootstrap interval).

    ``worlds``: per world, one value per problem (a success 0/1, a pass@k estimate, or a paired difference), from
    one training run. Worlds are drawn with replacement, then problems with replacement within each drawn world."""
    return replicated_interval({str(i): {"0": dict(enumerate(w))} for i, w in enumerate(worlds)},
                               resamples=resamples, seed=seed)


def _shared_problems(runs: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Each run's values on the problems every run of the world has (what :func:`replicated_interval` resamples)."""
    first, *rest = runs.values()
    shared = [p for p in first if all(p in r for r in rest)]
    return {r: {p: v[p] for p in shared} for r, v in runs.items()}


def replicated_interval(worlds: RunValues, *, resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, float, float]:
    """(mean over worlds of the mean over each world's training runs of the run's mean over problems, 95% bootstrap
    interval over worlds, training runs and problems).

    ``worlds``: world -> training run -> problem id -> value. A world's runs are replicates of its chain at other
    training seeds, scored on the same problems: worlds are drawn with replacement, then within a drawn world its
    runs with replacement and, once for all of them, its problems with replacement (the problems are shared, so a
    problem hard for every seed counts as one problem, not one per seed). With one run a world reduces to the
    two-stage bootstrap over worlds and problems. Only problems every run of a world has are used."""
    cells = []
    for runs in worlds.values():
        runs = {name: r for name, r in runs.items() if r}
        shared = list(_shared_problems(runs).values()) if runs else []
        if shared and shared[0]:
            cells.append(([[float(v) for v in r.values()] for r in shared], len(shared[0])))
    if not cells:
        raise ValueError("no world has a problem: nothing to estimate")

    def world_mean(runs: Sequence[Sequence[float]], picks: Sequence[int]) -> float:
        return sum(sum(run[i] for i in picks) / len(picks) for run in runs) / len(runs)

    rng = random.Random(seed)
    boots = []
    for _ in range(resamples):
        total = 0.0
        for runs, n in [cells[rng.randrange(len(cells))] for _ in cells]:
            if len(runs) > 1:
                runs = [runs[rng.randrange(len(runs))] for _ in runs]
            total += world_mean(runs, [rng.randrange(n) for _ in range(n)])
        boots.append(total / len(cells))
    boots.sort()
    estimate = sum(world_mean(runs, range(n)) for runs, n in cells) / len(cells)
    return estimate, boots[int(0.025 * resamples)], boots[min(resamples - 1, int(0.975 * resamples))]


def _paired(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {p: float(after[p]) - float(before[p]) for p in sorted(set(before) & set(after))}


def _block(per_world: RunValues) -> dict[str, Any]:
    per_world = {w: {r: v for r, v in runs.items() if v} for w, runs in per_world.items()}
    # runs scored on different problem sets (one evaluated on every held-out problem, one on the sample): every
    # figure of the world, its mean and n included, is over the problems they share, as its interval is
    per_world = {w: _shared_problems(runs) for w, runs in per_world.items() if runs}
    per_world = {w: runs for w, runs in per_world.items() if all(runs.values())}
    if not per_world:
        return {}
    est, lo, hi = replicated_interval(per_world)
    by_run = {w: {r: sum(v.values()) / len(v) for r, v in runs.items()} for w, runs in per_world.items()}
    return {"mean": est, "low": lo, "high": hi,
            "by_world": {w: sum(means.values()) / len(means) for w, means in by_run.items()},
            "n_by_world": {w: max(len(v) for v in runs.values()) for w, runs in per_world.items()},
            "runs_by_world": {w: len(runs) for w, runs in per_world.items()}, "by_run": by_run}


def _delta(before: RunValues, after: RunValues) -> dict[str, Any]:
    """The paired change: within each world and training run, the same problems before and after."""
    diffs = {w: {r: _paired(before[w][r], after[w][r]) for r in sorted(set(before[w]) & set(after[w]))}
             for w in sorted(set(before) & set(after))}
    diffs = {w: {r: d for r, d in runs.items() if d} for w, runs in diffs.items()}
    diffs = {w: runs for w, runs in diffs.items() if runs}
    if not diffs:
        return {}
    est, lo, hi = replicated_interval(diffs)
    return {"delta": est, "low": lo, "high": hi, "excludes_zero": lo > 0 or hi < 0}


def _as_runs(world: Mapping[str, Any]) -> Mapping[str, Mapping[str, WorldStage]]:
    """A world given as its stages (one training run, named ``"0"``) or as training run -> its stages."""
    if all(isinstance(v, WorldStage) for v in world.values()):
        return {"0": world}
    return world


def stage_table(worlds: Mapping[str, Mapping[str, Any]], *, ks: Sequence[int] = (1, 8)) -> list[dict[str, Any]]:
    """Per stage: greedy ASR and pass@k as the mean over worlds with clustered intervals, and each one's
    paired change over the previous evaluated stage (same world, same training run, same problems).

    ``worlds``: world -> stage -> :class:`WorldStage` (one training run a world), or world -> training run ->
    stage -> :class:`WorldStage` (replicates at other training seeds, :func:`replicated_interval`)."""
    runs_of = {w: _as_runs(stages) for w, stages in worlds.items()}
    pools = {ws.pool for runs in runs_of.values() for stages in runs.values() for ws in stages.values()}
    if len(pools) > 1:
        raise MixedPoolsError(f"results come from more than one pool: {sorted(map(str, pools))}")
    pool = pools.pop() if pools else None

    def values(ws: WorldStage, name: str) -> dict[str, float]:
        return {p: float(s) for p, s in ws.solved.items()} if name == "asr" else ws.pass_values(int(name.removeprefix("pass@")))

    def metric(stage: str, name: str) -> dict[str, dict[str, dict[str, float]]]:
        return {w: {r: values(stages[stage], name) for r, stages in runs.items() if stage in stages}
                for w, runs in runs_of.items()}

    names = ["asr", *(f"pass@{k}" for k in ks)]
    table, prev = [], None
    for stage in _stage_order():
        holders = sorted(w for w, runs in runs_of.items() if any(stage in s for s in runs.values()))
        if not holders:
            continue
        row: dict[str, Any] = {"stage": stage, "pool": pool, "worlds": holders}
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


def _world_cell(asr: Mapping[str, Any], world: str) -> str:
    runs = asr.get("by_run", {}).get(world, {})
    # runs that share the stage's checkpoint (a restaged replicate's parents) score alike: no spread to show
    spread = (f"; {len(runs)} runs " + "/".join(_pct(v) for v in runs.values())) if len(set(runs.values())) > 1 else ""
    return f"{_pct(asr['by_world'][world])}% (n={asr['n_by_world'][world]}{spread})"


def markdown(table: Sequence[Mapping[str, Any]], title: str) -> str:
    """The table as Markdown: one row per stage, mean over worlds with its clustered interval, per world,
    and the change over the stage before."""
    worlds = sorted({w for row in table for w in row["worlds"]})
    pool = next((row["pool"] for row in table if row.get("pool")), None)
    replicated = any(n > 1 for row in table for n in (row.get("asr") or {}).get("runs_by_world", {}).values())
    how = ("Mean over worlds of the mean over each world's training runs (95% interval: bootstrap over worlds, "
           "training runs, then problems)" if replicated else "Mean over worlds (95% interval: bootstrap over worlds, "
                                                              "then problems)")
    lines = [f"{title} — pool `{pool or 'unknown'}`, {len(worlds)} world(s): {', '.join(worlds)}. {how}.", "",
             "| stage | ASR (greedy) | per world | change over the stage before | pass@1 | pass@8 |",
             "|---|---|---|---|---|---|"]
    def cell(row: Mapping[str, Any], name: str) -> str:
        b = row.get(name)
        return f"{_pct(b['mean'])}% ({_pct(b['low'])}–{_pct(b['high'])})" if b else "-"

    for row in table:

        asr = row.get("asr") or {}
        per_world = ", ".join(_world_cell(asr, w) for w in worlds if w in asr.get("by_world", {}))
        ch = row.get("asr_change")
        change = (f"{100 * ch['delta']:+.1f} pts over {ch['vs']} ({100 * ch['low']:+.1f} to {100 * ch['high']:+.1f})"
                  if ch else "-")
        lines.append(f"| {row['stage']} | **{cell(row, 'asr')}** | {per_world} | {change} | "
                     f"{cell(row, 'pass@1')} | {cell(row, 'pass@8')} |")
    return "\n".join(lines)
