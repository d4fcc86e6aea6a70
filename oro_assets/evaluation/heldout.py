"""What an evaluation runs on: one held-out pool (``dev`` by default, ``test`` only for the final report),
chosen by the registry's one held-out rule (:meth:`oro_assets.curation.clusters.Registry.problems_in`), and
every result records the pool it was measured on."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio

#: the pools an evaluation may run on: ``dev`` (screens, recipe choices, the main command) and ``test`` (locked)
EVAL_POOLS = ("dev", "test")
DEFAULT_POOL = "dev"


#: The run tag that marks a final-report run (``oro-assets main --final-report``): the only runs that read ``test``.
FINAL_REPORT_TAG = "oro/final_report"
LOCKED_POOL = "test"


class LockedPoolError(PermissionError):
    """Something other than the final report asked to read the locked ``test`` pool."""


def check_pool(pool: str) -> str:
    if pool not in EVAL_POOLS:
        raise ValueError(f"unknown evaluation pool {pool!r}; accepted: {', '.join(EVAL_POOLS)}")
    return pool


def require_reader(pool: str, *, final_report: bool, reader: str) -> str:
    """``pool`` if ``reader`` may read it. The ``test`` pool is locked: only a final-report run reads it, never
    a screen, a training input, ``benchmarks/train_tiny.py``, the ablation or an ad-hoc evaluation."""
    check_pool(pool)
    if pool == LOCKED_POOL and not final_report:
        raise LockedPoolError(
            f"{reader}: the test pool is locked: only the final report reads it (oro-assets main --final-report, "
            f"or a run tagged {FINAL_REPORT_TAG}=true); screens and recipe choices use the dev pool")
    return pool


def load_eval_problems(path: Path, pool: str, *, final_report: bool = False, reader: str = "evaluation") -> list[dict]:
    """The ``eval_problems`` dataset's rows on ``pool`` (``test`` only for the final report: :func:`require_reader`).
    A missing file, or one written before the dev/test split (rows without ``pool``), is refused with what to
    rematerialise."""
    require_reader(pool, final_report=final_report, reader=reader)
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} is missing: materialise eval_problems")
    rows = [jsonio.loads(line) for line in Path(path).read_bytes().splitlines() if line.strip()]
    if any("pool" not in r for r in rows):
        raise ValueError(f"{path} has rows without a pool (written before the dev/test split): "
                         "materialise eval_problems again")
    return [r for r in rows if r["pool"] == pool]


def registry_view(registry: Any, pool: str) -> tuple[dict[str, str], list[str]]:
    """From the leak-cluster registry: problem key → cluster id, and the ids (key and problem id) of the
    problems ``pool`` holds now - what may be evaluated, read from the registry itself, not from the
    ``eval_problems`` dataset being checked."""
    check_pool(pool)
    cluster_map = {k: m["cluster_id"] for k, m in registry.members.items() if m.get("cluster_id")}
    ids: set[str] = set()
    for key in registry.problems_in(pool):
        ids.update(str(i) for i in (key, registry.members[key].get("problem_id")) if i)  # eval rows use either
    return cluster_map, sorted(ids)


def eval_problem_sample(problems: list[dict], max_problems: int, seed: int) -> list[dict]:
    """A deterministic, category-stratified sample of the hold-out (all of it when it is small enough)."""
    if len(problems) <= max_problems:
        return problems
    by_category: dict[str, list[dict]] = {}
    for p in sorted(problems, key=lambda p: p["problem_id"]):
        by_category.setdefault(str(p.get("category")), []).append(p)
    rng = random.Random(seed)
    for members in by_category.values():
        rng.shuffle(members)
    chosen: list[dict] = []
    while len(chosen) < max_problems:
        for category in sorted(by_category):
            if by_category[category] and len(chosen) < max_problems:
                chosen.append(by_category[category].pop())
    return sorted(chosen, key=lambda p: p["problem_id"])


def evaluate_on_pool(checkpoint: Path, stage: str, pool: str, sample: Sequence[dict], holdout: Sequence[dict],
                     catalogue: Any, out_dir: Path, settings: Mapping[str, Any], leak_refs: Mapping[str, Any],
                     log: Callable[[str], None] = print) -> Any:
    """The stratified ``sample`` (``settings["n"]`` samples + greedy) and, when ``holdout`` is given, one greedy
    run on all of it (its by-category metrics become ``metrics["holdout_greedy"]``); both results record
    ``config["pool"]``."""
    from oro_assets.evaluation.report import HOLDOUT_GREEDY_DIR, evaluate_checkpoint

    common = dict(max_new_tokens=settings["max_new_tokens"], seed=settings["seed"],
                  batch_size=settings["batch_size"], enforce_checks=True, **leak_refs)
    log(f"evaluating {checkpoint} on {len(sample)} {pool} problems, n={settings['n']}")
    result = evaluate_checkpoint(checkpoint, sample, catalogue, stage=stage, n=settings["n"],
                                 temperature=settings["temperature"], out_dir=out_dir, **common)
    if holdout:
        log(f"greedy run on all {len(holdout)} {pool} problems of {settings['holdout_greedy_categories']}")
        greedy = evaluate_checkpoint(checkpoint, holdout, catalogue, stage=result.stage, n=0,
                                     out_dir=out_dir / HOLDOUT_GREEDY_DIR, **common)
        greedy.config["pool"] = pool
        greedy.save(out_dir / HOLDOUT_GREEDY_DIR)
        result.metrics["holdout_greedy"] = greedy.metrics["by_category"]
    result.config["pool"] = pool
    result.save(out_dir)
    return result
