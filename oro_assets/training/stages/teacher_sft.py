"""Stage 3, teacher-SFT: continued SFT on a teacher's successful trajectories on train problems
(an OpenAI-compatible endpoint when configured, else the arena's scripted teacher), voucher rows
upsampled; the tiny profile adds synthetic Product problems decontaminated against the eval side."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from oro_assets.training.augment import catalogue_swap_variants
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import rows_hash, sft_example
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import LogFn, StageContext, default_tools, print_log
from oro_assets.training.stages.rollouts import (
    category_of,
    counts_by_category,
    default_scorer,
    episode_row,
    of_categories,
)
from oro_assets.training.stages.sft import copy_drills, train_sft
from oro_assets.training.tracking import Tracking


def default_teacher(settings: Any, problems: Sequence[dict], *, quote_items: bool = False,
                    count_items: bool = False, list_items: bool = False) -> Any:
    """OpenAI-compatible teacher when ``settings.teacher_base_url`` is set, else the arena's scripted teacher
    (``quote_items``, ``count_items``, ``list_items``: see ``arena.policies.agentic.teacher``)."""
    if settings is not None and getattr(settings, "teacher_base_url", None):
        from oro_assets.agents.openai_policy import OpenAIPolicy
        from oro_assets.settings import api_key

        return OpenAIPolicy(settings.teacher_base_url, settings.teacher_model or "teacher", api_key(),
                            temperature=0.0, name="teacher-endpoint")
    from oro_assets.arena.policies.agentic import TeacherPolicy

    return TeacherPolicy({p["problem_id"]: p for p in problems}, quote_items=quote_items, count_items=count_items,
                         list_items=list_items)


def teacher_rows(teacher: Any, problems: Sequence[dict], env: Any, scorer: Callable[[dict, Any], bool],
                 tools: Sequence[dict], *, max_steps: int = 30) -> tuple[list[dict], int]:
    """The teacher's successful trajectories on ``problems`` as dataset rows (+ number of episodes run)."""
    from oro_assets.agents.rollout import rollout_many

    rollouts = rollout_many(teacher, list(problems), env, n=1, max_steps=max_steps)
    rows = []
    for r in rollouts:
        if scorer(r.problem, r.episode):
            row = episode_row(r.episode, tools, "teacher", r.problem_id, 0)
            row["category"] = category_of(r.problem)
            rows.append(row)
    return rows, len(rollouts)


def run_teacher_sft(profile: ModelProfile, train_problems: Sequence[dict], env: Any, parent: str | Path,
                    out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, teacher: Any = None,
                    settings: Any = None, scorer: Callable[[dict, Any], bool] | None = None, catalogue: Any = None,
                    tools: Sequence[dict] | None = None, exclude_product_ids: Sequence[str] = (),
                    exclude_problems: Sequence[Mapping] = (), seed: int = 0, log: LogFn = print_log,
                    force: bool = False) -> StageResult:
    """Continued SFT on the teacher's successful trajectories on train problems; voucher rows upsampled.

    The synthetic problems added when ``profile.teacher_sft.synthetic_problems > 0`` are decontaminated
    against ``exclude_problems`` (the eval pool's problems: their targets, query keywords and leak
    clusters) and ``exclude_product_ids`` (bare eval ground-truth ids); what was dropped, by reason,
    is in the checkpoint's metrics (``synthetic``).
    """
    cfg = profile.teacher_sft
    tools = list(tools) if tools is not None else default_tools()
    problems = of_categories(train_problems, cfg.categories)
    if cfg.max_problems:
        problems = problems[: cfg.max_problems]
    catalogue = catalogue if catalogue is not None else getattr(env, "catalogue", None)
    synthetic: dict[str, Any] = {}
    if cfg.synthetic_problems > 0:
        if catalogue is None:
            raise ValueError("synthetic teacher problems need the catalogue")
        from oro_assets.training.corpus import synthetic_product_problems

        if not exclude_product_ids and not exclude_problems:
            log("teacher_sft: WARNING no eval problems given; synthetic problems are not decontaminated")
        problems = problems + synthetic_product_problems(
            catalogue, cfg.synthetic_problems, seed, set(map(str, exclude_product_ids)),
            exclude_problems=exclude_problems, report=synthetic, option_share=cfg.synthetic_option_share)
        log(f"teacher_sft: synthetic problems kept {synthetic.get('kept')} of {synthetic.get('drawn')} drawn, "
            f"dropped {synthetic.get('dropped_by')}")
    if scorer is None:
        if catalogue is None:
            raise ValueError("run_teacher_sft needs a scorer or a catalogue")
        scorer = default_scorer(catalogue)
    teacher = teacher if teacher is not None else default_teacher(settings, problems,
                                                                  quote_items=cfg.quote_shop_items,
                                                                  count_items=cfg.count_items,
                                                                  list_items=cfg.list_items)
    t0 = time.perf_counter()
    rows, n_eps = teacher_rows(teacher, problems, env, scorer, tools)
    log(f"teacher_sft: teacher solved {len(rows)}/{n_eps} train problems in {time.perf_counter() - t0:.1f}s")
    train_rows: list[dict] = []
    upsample = {"Voucher": cfg.voucher_upsample, "Shop": cfg.shop_upsample}
    for r in rows:
        train_rows.extend([r] * (upsample.get(r["category"], 1) * max(1, cfg.repeats)))
    hashes = {"teacher_rows": rows_hash(rows)}
    swapped = catalogue_swap_variants(rows, catalogue, cfg.word_swaps, seed)
    if swapped:
        train_rows.extend(swapped)
        hashes["word_swaps"] = rows_hash(swapped)
    if cfg.copy_drills > 0:
        drills = copy_drills(catalogue, cfg.copy_drills, seed + 1, tools)
        train_rows.extend(drills)
        hashes["copy_drills"] = rows_hash(drills)
    if cfg.option_drills > 0:
        from oro_assets.arena.episode import SYSTEM_PROMPT
        from oro_assets.training.corpus import option_drill_rows

        if catalogue is None:
            raise ValueError("option drills need the catalogue")
        option_rows = option_drill_rows(catalogue, cfg.option_drills, seed + 2, SYSTEM_PROMPT, tools,
                                        plain_share=cfg.option_drill_plain_share,
                                        multi_item_share=cfg.option_drill_multi_share,
                                        list_items=cfg.list_items)
        train_rows.extend(option_rows)
        hashes["option_drills"] = rows_hash(option_rows)
    random.Random(seed).shuffle(train_rows)
    examples = [sft_example(r, profile.view, tools) for r in train_rows]
    extra = {"teacher": getattr(teacher, "name", "teacher"), "teacher_episodes": n_eps,
             "teacher_successes": len(rows), "voucher_rows": sum(1 for r in rows if r.get("category") == "Voucher"),
             "teacher_rows_by_category": counts_by_category(r["category"] for r in rows),
             "rows_by_category": counts_by_category(category_of(r) for r in train_rows if "category" in r),
             "copy_drills": cfg.copy_drills, "option_drills": cfg.option_drills, "word_swap_rows": len(swapped)}
    if synthetic:
        extra["synthetic"] = {k: synthetic[k] for k in ("drawn", "kept", "dropped", "dropped_by") if k in synthetic}
    return train_sft(profile, "teacher_sft", cfg, examples, sorted({r["problem_id"] for r in rows}),
                     hashes, parent, out_root, tracking, log, extra_metrics=extra, force=force)


def from_params(ctx: StageContext) -> StageResult:
    env, catalogue = ctx.env()
    return run_teacher_sft(ctx.profile, ctx.rows("problems"), env, ctx.need("parent"), ctx.out_root, ctx.tracking,
                           settings=ctx.settings, catalogue=catalogue, seed=ctx.seed, log=ctx.log, force=ctx.force,
                           exclude_product_ids=ctx.params.get("exclude_product_ids") or (),
                           exclude_problems=ctx.optional_rows("eval_problems"))
