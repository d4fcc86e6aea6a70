"""Benchmark: catalogue build (50k products) and find_product QPS of the embedded arena.

Ratios are against baselines measured in the same run on the same machine:
* build: the world build (problems + catalogue + distractors) vs one plain pass that only
  tokenises every product's text (the least work any BM25 catalogue needs);
* search: BM25 ``find_product`` (sparse index + numpy filters) vs a plain Python scan that scores
  every product by query-token overlap and filters by price.

    python benchmarks/arena_catalogue.py [--products 50000] [--queries 300]
"""

from __future__ import annotations

import argparse
import json
import time

from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.generator import build_world
from oro_assets.arena.oracle import price_filter
from oro_assets.arena.problems import reward_items
from oro_assets.arena.search import parse_price_range, product_text, tokenize


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--products", type=int, default=50_000)
    ap.add_argument("--problems", type=int, default=1500)
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()

    t = time.perf_counter()
    world = build_world(15, n_problems=args.problems, n_products=args.products)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    _ = world.catalogue.index
    index_s = time.perf_counter() - t
    t = time.perf_counter()
    token_sets = [set(tokenize(product_text(p))) for p in world.catalogue.products]
    tokenise_s = time.perf_counter() - t

    queries = [(p["query"], price_filter(reward_items(p)[0])) for p in world.problems[: args.queries]]
    env = InProcessEnv(world.catalogue)
    t = time.perf_counter()
    for q, price in queries:
        env.find_product(q, price=price)
    bm25_s = time.perf_counter() - t

    prices = [p["price"] for p in world.catalogue.products]
    n_scan = max(1, min(len(queries), 30))
    t = time.perf_counter()
    for q, price in queries[:n_scan]:
        lo, hi = parse_price_range(price)
        qt = set(tokenize(q))
        hits = [(len(qt & ts), i) for i, ts in enumerate(token_sets)
                if (lo is None or prices[i] >= lo) and (hi is None or prices[i] <= hi) and qt & ts]
        sorted(hits, reverse=True)[:50]
    scan_s = time.perf_counter() - t

    bm25_qps = len(queries) / bm25_s
    scan_qps = n_scan / scan_s
    print(json.dumps({
        "products": len(world.catalogue), "problems": len(world.problems),
        "world_build_s": round(build_s, 3), "bm25_index_s": round(index_s, 3),
        "baseline_tokenise_only_s": round(tokenise_s, 3),
        "build_plus_index_vs_tokenise_only": round((build_s + index_s) / tokenise_s, 2),
        "bm25_qps": round(bm25_qps, 1), "baseline_python_scan_qps": round(scan_qps, 2),
        "bm25_speedup_vs_scan": round(bm25_qps / scan_qps, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
