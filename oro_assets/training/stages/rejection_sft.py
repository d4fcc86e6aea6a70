"""Stage 2, rejection re-SFT: k rollouts per train problem with the parent at T = 0.9 (top_p 0.95)
through the arena's episode loop in the rollout engine (agents/engine.py), keep the production-strict successes, mix them with the SFT
corpus (``mix_ratio``) and continue SFT."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oro_assets.training import checkpoints as ck
from oro_assets.training.augment import catalogue_swap_variants
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import DatasetError, load_rows, rows_hash, sft_example, sft_training_rows
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import (
    LogFn,
    StageContext,
    apply_threads,
    default_tools,
    print_log,
    row_problem_ids,
)
from oro_assets.training.stages.rollouts import (
    category_of,
    counts_by_category,
    dedupe_trajectories,
    default_scorer,
    episode_row,
    of_categories,
)
from oro_assets.training.stages.sft import train_sft
from oro_assets.training.tracking import Tracking


def run_rejection_sft(profile: ModelProfile, sft_rows: str | Path | Sequence[dict], train_problems: Sequence[dict],
                      env: Any, parent: str | Path, out_root: str | Path, tracking: Tracking = Tracking.disabled(),
                      *, scorer: Callable[[dict, Any], bool] | None = None, catalogue: Any = None,
                      tools: Sequence[dict] | None = None, seed: int = 0, log: LogFn = print_log,
                      force: bool = False) -> StageResult:
    """k rollouts per train problem with the parent at T=0.9 (top_p 0.95); keep successes; mix with SFT rows."""
    from oro_assets.agents.rollout import rollout_many

    cfg = profile.rejection_sft
    tools = list(tools) if tools is not None else default_tools()
    if catalogue is None:
        catalogue = getattr(env, "catalogue", None)
    if scorer is None:
        if catalogue is None:
            raise ValueError("run_rejection_sft needs a scorer or a catalogue to score rollouts")
        scorer = default_scorer(catalogue)
    problems = of_categories(train_problems, cfg.categories)
    problems = problems[: cfg.max_problems] if cfg.max_problems else problems
    apply_threads(profile)
    policy = ck.load_policy(parent, temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                            seed=seed, dtype=profile.dtype)
    t0 = time.perf_counter()
    engine_stats: dict = {}  # the rollout engine's counters (agents/engine.py): tokens generated, prompt reuse
    rollouts = rollout_many(policy, problems, env, n=cfg.k, max_steps=cfg.max_steps_per_episode,
                            batch_size=max(1, min(32, len(problems) * cfg.k)), stats=engine_stats)
    succeeded = [r for r in rollouts if scorer(r.problem, r.episode)]
    solved = {r.problem_id for r in succeeded}
    rollout_s = time.perf_counter() - t0
    successes = len(succeeded)
    wins = Counter(r.problem_id for r in succeeded)
    tries = Counter(r.problem_id for r in rollouts)
    kept = [episode_row(r.episode, tools, "rejection", r.problem_id, r.sample) for r in succeeded
            if wins[r.problem_id] <= cfg.max_solve_rate * tries[r.problem_id]]
    too_easy = len(solved - {r["problem_id"] for r in kept})
    kept = dedupe_trajectories(kept)  # k samples of an easy problem often take the same path: one row each
    category = {str(p["problem_id"]): category_of(p) for p in problems}
    kept_by_category = counts_by_category(category[str(r["problem_id"])] for r in kept)
    log(f"rejection_sft: {successes}/{len(rollouts)} rollouts succeeded, {len(kept)} distinct kept "
        f"({len(solved)}/{len(problems)} problems, {too_easy} above max_solve_rate; kept by category "
        f"{kept_by_category}) in {rollout_s:.1f}s")
    # the half of the mix that keeps the SFT corpus: the rows SFT itself trains on (its shapes, the hits shown)
    sft = sft_training_rows(load_rows(sft_rows), profile.view, shapes=profile.sft.row_shapes)[0]
    sft += catalogue_swap_variants(sft, catalogue, profile.sft.word_swaps, seed, profile.sft.word_swap_every_search)
    rng = random.Random(seed)
    n_sft = max(1, round(len(kept) * (1 - cfg.mix_ratio) / cfg.mix_ratio)) if kept else min(len(sft), 64)
    sft_sample = rng.sample(sft, min(n_sft, len(sft))) if sft else []
    mix = kept + sft_sample
    rng.shuffle(mix)
    if not mix:
        raise DatasetError("rejection_sft: no kept rollouts and no SFT rows to train on")
    examples = [sft_example(r, profile.view, tools) for r in mix]
    extra = {"rollouts": len(rollouts), "rollouts_succeeded": successes, "rollouts_kept": len(kept),
             "problems": len(problems),
             "problems_solved": len(solved), "problems_above_max_solve_rate": too_easy,
             **{f"rollouts_kept_{c}": n for c, n in kept_by_category.items()},
             "rollout_wall_time_s": round(rollout_s, 2),
             "rollout_success_rate": successes / len(rollouts) if rollouts else 0.0,
             "rollout_episodes_per_s": round(len(rollouts) / rollout_s, 3) if rollout_s > 0 else None,
             **{f"rollout_{k}": v for k, v in engine_stats.items()
                if k in ("generated_tokens", "prefill_tokens", "reused_tokens")}}
    hashes = {"sft": rows_hash(sft), "rollouts": rows_hash(kept),
              "problems": rows_hash([{"id": p["problem_id"]} for p in problems])}
    problem_ids = sorted({str(p["problem_id"]) for p in problems} | set(row_problem_ids(sft_sample)))
    return train_sft(profile, "rejection_sft", cfg, examples, problem_ids, hashes, parent, out_root, tracking, log,
                     extra_metrics=extra, force=force)


def from_params(ctx: StageContext) -> StageResult:
    env, catalogue = ctx.env()
    return run_rejection_sft(ctx.profile, ctx.need("sft_rows"), ctx.rows("problems"), env, ctx.need("parent"),
                             ctx.out_root, ctx.tracking, catalogue=catalogue, seed=ctx.seed, log=ctx.log,
                             force=ctx.force)
