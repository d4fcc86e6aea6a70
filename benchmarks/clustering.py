"""Leak-clustering benchmark: time, recall on true variant groups, false merges.

Usage: ``python benchmarks/clustering.py [--n 100000] [--world] [--text-only]
[--truth PATH/_truth/problems.jsonl --problems PATH/problems.jsonl]``

Truth: the simulator's ``_truth/problems.jsonl`` (``problem_id → variant_group``) joined with its
``problems.jsonl`` when given; ``--world`` builds the arena generator's problem pool with leak
variants; else the seeded generator in ``oro_assets.curation.variants``. ``--text-only`` drops the
rewards so only the query text links problems (the case of problems unknown to the pool).

* recall = share of true same-group pairs that end in one cluster (pair-counted);
* false merges = share of problems whose cluster also holds a problem of another true group.
Targets (issue 5): 100k problems < 30 s, recall ≥ 0.99, false merges ≤ 1%.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from math import comb

from oro_assets import jsonio
from oro_assets.curation.clusters import ClusterConfig, Registry
from oro_assets.curation.variants import variant_problems


def evaluate(problems: list[dict], labels: list[str]) -> dict:
    groups = [p["variant_group"] for p in problems]
    true_pairs = sum(comb(n, 2) for n in Counter(groups).values())
    hit = sum(comb(n, 2) for n in Counter(zip(groups, labels, strict=True)).values())
    groups_in_cluster: dict[str, set[str]] = defaultdict(set)
    for g, lab in zip(groups, labels, strict=True):
        groups_in_cluster[lab].add(g)
    false = sum(1 for lab in labels if len(groups_in_cluster[lab]) > 1)
    return {
        "problems": len(problems),
        "true_groups": len(set(groups)),
        "clusters": len(set(labels)),
        "recall": round(hit / true_pairs, 5) if true_pairs else 1.0,
        "false_merge_rate": round(false / len(problems), 5),
    }


def load_truth(problems_path: str, truth_path: str) -> list[dict]:
    with open(truth_path) as f:
        truth = {r["problem_id"]: r["variant_group"] for r in map(jsonio.loads, f)}
    with open(problems_path) as f:
        rows = [jsonio.loads(line) for line in f if line.strip()]
    return [{**r, "variant_group": truth[r["problem_id"]]} for r in rows if r.get("problem_id") in truth]


def run(problems: list[dict], config: ClusterConfig) -> dict:
    registry = Registry({}, config)
    t0, c0 = time.perf_counter(), time.process_time()
    registry.assign(problems, first_seen="bench")
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    from oro_assets.curation.clusters import problem_key

    labels = [registry.members[problem_key(p)]["cluster_id"] or "conflict" for p in problems]
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), **evaluate(problems, labels)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--variants", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--problems", help="simulator problems.jsonl")
    ap.add_argument("--truth", help="simulator _truth/problems.jsonl")
    ap.add_argument(
        "--world", action="store_true", help="use the arena generator's world (leak variants) of --n problems"
    )
    ap.add_argument("--text-only", action="store_true", help="drop rewards: cluster by query text alone")
    args = ap.parse_args(argv)
    if args.truth and args.problems:
        problems, source = load_truth(args.problems, args.truth), "simulator truth"
    elif args.world:
        from oro_assets.arena.generator import build_world

        world = build_world(args.seed, n_problems=args.n, n_products=min(args.n, 20_000))
        problems = [{**p, "variant_group": world.variant_groups[p["problem_id"]]} for p in world.problems]
        source = "arena generator world"
    else:
        problems, source = variant_problems(args.n, args.variants, args.seed), "variant generator"
    if args.text_only:
        problems = [{k: v for k, v in p.items() if k not in ("reward",)} for p in problems]
        source += " (text only)"
    result = {"source": source, **run(problems, ClusterConfig())}
    result["targets_met"] = (
        result["recall"] >= 0.99
        and result["false_merge_rate"] <= 0.01
        and (result["problems"] < 100_000 or result["seconds"] < 30)
    )
    print(jsonio.dumps(result))
    return 0 if result["targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
