"""Paired change of one recipe over another on the same unseen worlds, stage by stage.

    .venv/bin/python benchmarks/worlds_compare.py /tmp/worlds30 /tmp/worlds28 \
        --worlds seed201-2026-11-30 seed202-2026-11-29 seed203-2026-11-28

Each root holds ``days.py --run`` worlds (``<root>/<world>/data``, and Dr. GRPO's other training seeds in
``<root>/<world>/dr_grpo-seed<T>/data`` where ``--restage dr_grpo`` made them). Per stage, per world, each problem's
mean outcome over the new recipe's runs minus its mean over the old recipe's (the problems are the same: a world's
pools depend on its seed only); the interval is the two-stage bootstrap over worlds, then problems
(``evaluation.worlds.clustered_interval``): it does not resample training seeds.
"""

from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oro_assets.evaluation.report import EvalResult  # noqa: E402
from oro_assets.evaluation.worlds import clustered_interval  # noqa: E402

STAGES = ("scaffold", "sft", "rejection_sft", "teacher_sft", "kto", "dr_grpo")
#: (label, the evaluation's sub-folder, outcome, category or None for all)
METRICS = (("all categories greedy", "", "greedy", None), ("Voucher greedy", "", "greedy", "Voucher"),
           ("Shop greedy", "", "greedy", "Shop"), ("all categories pass@1", "", "pass@1", None),
           ("Product greedy, every Product problem", "holdout_greedy", "greedy", None))


@cache  # every metric of a stage reads the same evaluations
def _outcomes(data: Path, stage: str, sub: str) -> tuple[dict, dict] | None:
    path = data / "reports" / "eval" / stage / sub / "eval_result.json"
    if not path.exists():
        return None
    rows = EvalResult.load(path).rows
    greedy = {str(r["problem_id"]): float(bool(r.get("greedy_success"))) for r in rows}
    pass1 = {str(r["problem_id"]): int(r["c"]) / int(r["n"]) for r in rows if r.get("n")}
    return {"greedy": greedy, "pass@1": pass1}, {str(r["problem_id"]): str(r.get("category")) for r in rows}


def _runs(root: Path, world: str, stage: str, sub: str) -> list:
    dirs = [root / world / "data"]
    if stage == "dr_grpo":
        dirs += sorted((root / world).glob("dr_grpo-seed*/data"))
    return [o for o in (_outcomes(d, stage, sub) for d in dirs) if o is not None]


def compare_roots(new: Path, old: Path, worlds: list[str]) -> list[dict]:
    rows = []
    for stage in STAGES:
        for label, sub, outcome, category in METRICS:
            per_world, new_means, old_means = [], [], []
            for world in worlds:
                after, before = _runs(new, world, stage, sub), _runs(old, world, stage, sub)
                if not after or not before:
                    continue
                categories = after[0][1]
                ids = [p for p in after[0][0][outcome] if all(p in r[0][outcome] for r in after + before)
                       and (category is None or categories[p] == category)]
                if not ids:
                    continue
                new_mean = {p: sum(a[0][outcome][p] for a in after) / len(after) for p in ids}
                old_mean = {p: sum(b[0][outcome][p] for b in before) / len(before) for p in ids}
                per_world.append([new_mean[p] - old_mean[p] for p in ids])
                new_means.append(sum(new_mean.values()) / len(ids))
                old_means.append(sum(old_mean.values()) / len(ids))
            if per_world:
                delta, low, high = clustered_interval(per_world)
                rows.append({"stage": stage, "metric": label, "worlds": len(per_world),
                             "old": 100 * sum(old_means) / len(old_means), "new": 100 * sum(new_means) / len(new_means),
                             "delta": 100 * delta, "low": 100 * low, "high": 100 * high,
                             "new_per_world": [100 * m for m in new_means]})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("new", type=Path, help="root of the new recipe's worlds")
    p.add_argument("old", type=Path, help="root of the old recipe's worlds")
    p.add_argument("--worlds", nargs="+", required=True, help="world folders, e.g. seed201-2026-11-30")
    args = p.parse_args(argv)
    for r in compare_roots(args.new, args.old, args.worlds):
        print(f"{r['stage']:14s} {r['metric']:38s} worlds={r['worlds']} {r['old']:5.1f} -> {r['new']:5.1f}  "
              f"{r['delta']:+5.1f} ({r['low']:+.1f} to {r['high']:+.1f})  per world: "
              + " / ".join(f"{m:.1f}" for m in r["new_per_world"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
