"""Evaluation metrics: production-strict success, ASR with a Wilson interval, pass@k, process metrics.

Definitions (reference §3):

* a sample's success is the production-strict ``score_trace(...).success`` of its last
  ``recommend_product`` (timeouts and crashes are failures);
* **ASR** is measured on the greedy run of each problem when there is one (one run per problem,
  as the arena scores a miner), otherwise on the mean over samples (= pass@1);
* **pass@k** is the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per problem over its ``n``
  sampled runs with ``c`` successes, averaged over problems (the greedy run is not a sample);
* one problem is ``100 / n_problems`` ASR points, hence the Wilson interval next to every ASR.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from oro_assets.toolcalls import FIND_PRODUCT, RECOMMEND_PRODUCT, VIEW_PRODUCT_INFORMATION

DEFAULT_KS = (1, 2, 4, 8, 16)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: probability that k of the n samples include a success."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def wilson_interval(successes: float, total: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95 % by default); (0, 0) when total = 0.

    ``successes`` may be fractional (a mean over samples per problem, summed over problems).
    """
    if total <= 0:
        return (0.0, 0.0)
    if not 0 <= successes <= total:
        raise ValueError(f"need 0 <= successes <= total, got {successes}/{total}")
    p = successes / total
    z2 = z * z
    denom = 1.0 + z2 / total
    centre = (p + z2 / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == total else min(1.0, centre + half)
    return (lo, hi)


# ---------------------------------------------------------------- process metrics of one episode
def _walk_ids(value: Any, out: set[str]) -> None:
    """Collect product ids anywhere in a tool result (``product_id`` / ``product_ids`` keys)."""
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "product_id" and isinstance(v, str | int):
                out.add(str(v).strip())
            elif key == "product_ids":
                if isinstance(v, list):
                    out.update(str(x).strip() for x in v)
                elif isinstance(v, str):
                    out.update(p.strip() for p in v.split(",") if p.strip())
            else:
                _walk_ids(v, out)
    elif isinstance(value, list):
        for v in value:
            _walk_ids(v, out)


def process_metrics(steps: Sequence[Any], recommended: Sequence[str]) -> dict[str, Any]:
    """Behaviour of one episode from its step records (``Episode.steps``).

    ``verification``: a ``view_product_information`` of a recommended id happened before the last
    ``recommend_product``. ``reformulations``: ``find_product`` calls whose query differs from the
    previous search's query. ``hallucinated_ids``: recommended ids never returned by any tool
    result *before* the recommendation (the model made them up).
    """
    n_calls = n_views = n_search = reformulations = 0
    seen: set[str] = set()
    viewed: set[str] = set()
    last_q: str | None = None
    seen_at_recommend: set[str] | None = None
    viewed_at_recommend: set[str] = set()
    for step in steps:
        for call in step.calls:
            n_calls += 1
            args = call.arguments if isinstance(call.arguments, dict) else {}
            if call.name == FIND_PRODUCT:
                n_search += 1
                q = str(args.get("q", "")).strip().lower()
                if last_q is not None and q != last_q:
                    reformulations += 1
                last_q = q
            elif call.name == VIEW_PRODUCT_INFORMATION:
                n_views += 1
                ids = args.get("product_ids", "")
                viewed.update(p.strip() for p in str(ids).split(",") if p.strip())
            elif call.name == RECOMMEND_PRODUCT:
                seen_at_recommend = set(seen)
                viewed_at_recommend = set(viewed)
            _walk_ids(call.result, seen)
    pool = seen_at_recommend if seen_at_recommend is not None else seen
    hallucinated = [pid for pid in recommended if pid not in pool]
    return {
        "steps": len(steps),
        "tool_calls": n_calls,
        "searches": n_search,
        "views": n_views,
        "reformulations": reformulations,
        "verification": bool(recommended) and any(pid in viewed_at_recommend for pid in recommended),
        "hallucinated_ids": hallucinated,
        "recommended": bool(recommended),
    }


# ---------------------------------------------------------------- aggregation over sample rows
def _mean(values: Iterable[float]) -> float | None:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else None


def _rate_block(rows: Sequence[dict]) -> dict[str, Any]:
    """ASR and friends over one row per problem (``success_frac`` is 0/1 for a greedy basis)."""
    n = len(rows)
    wins = sum(r["success_frac"] for r in rows)
    lo, hi = wilson_interval(wins, n)
    formats = [r["format"] for r in rows if r.get("format") is not None]
    return {
        "n_problems": n,
        "solved": wins,
        "asr": wins / n if n else 0.0,
        "asr_ci": [lo, hi],
        "gt_rate": _mean(r["gt"] for r in rows) or 0.0,
        "mean_rule": _mean(r["rule"] for r in rows) or 0.0,
        "format": _mean(formats),
        "points_per_problem": 100.0 / n if n else None,
    }


def per_problem_rows(samples: Sequence[dict]) -> list[dict]:
    """One row per problem, in first-seen order: ASR basis (greedy run, else mean over samples), n, c."""
    by_problem: dict[str, list[dict]] = defaultdict(list)
    order: list[str] = []
    for s in samples:
        if s["problem_id"] not in by_problem:
            order.append(s["problem_id"])
        by_problem[s["problem_id"]].append(s)
    rows = []
    for pid in order:
        group = by_problem[pid]
        greedy = [s for s in group if s.get("greedy")]
        sampled = [s for s in group if not s.get("greedy")]
        basis = greedy[:1] if greedy else sampled
        rows.append({
            "problem_id": pid,
            "category": group[0].get("category") or "Product",
            "difficulty": group[0].get("difficulty") or "unknown",
            "n": len(sampled),
            "c": sum(1 for s in sampled if s["success"]),
            "basis": "greedy" if greedy else "mean_over_samples",
            "success_frac": _mean(float(bool(s["success"])) for s in basis) or 0.0,
            "gt": _mean(s["gt"] for s in basis) or 0.0,
            "rule": _mean(s["rule"] for s in basis) or 0.0,
            "format": _mean(s["format"] for s in basis if s.get("format") is not None),
            "greedy_success": bool(greedy[0]["success"]) if greedy else None,
        })
    return rows


def aggregate(samples: Sequence[dict], ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """All metrics of one evaluated policy from its sample rows.

    A sample row needs ``problem_id``, ``category``, ``difficulty``, ``greedy`` (bool),
    ``success``, ``gt``, ``rule``, ``format`` (or None), ``status`` and ``process`` (from
    :func:`process_metrics`); ``outcome`` (``evaluation.rollout.episode_outcome``) when known.
    """
    rows = per_problem_rows(samples)
    has_greedy = any(s.get("greedy") for s in samples)
    metrics: dict[str, Any] = {"asr_basis": "greedy" if has_greedy else "mean_over_samples", **_rate_block(rows)}

    def grouped(key: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for value in sorted({r[key] for r in rows}):
            block = _rate_block([r for r in rows if r[key] == value])
            out[value] = {k: block[k] for k in ("n_problems", "solved", "asr", "asr_ci", "gt_rate", "mean_rule")}
        return out

    metrics["by_category"] = grouped("category")
    metrics["by_difficulty"] = grouped("difficulty")

    sampled_rows = [r for r in rows if r["n"] > 0]
    n_min = min((r["n"] for r in sampled_rows), default=0)
    metrics["samples_per_problem"] = n_min
    pass_k: dict[str, float] = {}
    for k in sorted(set(ks) | ({n_min} if n_min else set())):
        if 1 <= k <= n_min:
            pass_k[str(k)] = sum(pass_at_k(r["n"], r["c"], k) for r in sampled_rows) / len(sampled_rows)
    metrics["pass_at_k"] = pass_k
    # asked-for k that the samples cannot support are named, not silently left out
    metrics["pass_at_k_unavailable"] = {
        str(k): f"needs {k} samples of every problem; the fewest any problem has is {n_min}"
        for k in sorted(set(ks)) if k > n_min}
    metrics["pass_at_1"] = pass_k.get("1")
    metrics["pass_at_8"] = pass_k.get("8")

    statuses: dict[str, int] = defaultdict(int)
    for s in samples:
        statuses[s.get("status") or "unknown"] += 1
    metrics["status_counts"] = dict(sorted(statuses.items()))
    # what the runs came to (evaluation.rollout.episode_outcome): a run with no tool call is
    # "no_tool_call" here, where the arena's status says "success"
    outcomes: dict[str, int] = defaultdict(int)
    for s in samples:
        outcomes[s.get("outcome") or s.get("status") or "unknown"] += 1
    metrics["outcome_counts"] = dict(sorted(outcomes.items()))
    metrics["n_samples"] = len(samples)
    procs = [s["process"] for s in samples if s.get("process")]
    metrics["process"] = {
        "mean_steps": _mean(p["steps"] for p in procs),
        "mean_tool_calls": _mean(p["tool_calls"] for p in procs),
        "mean_views": _mean(p["views"] for p in procs),
        "mean_reformulations": _mean(p["reformulations"] for p in procs),
        "verification_rate": _mean(float(p["verification"]) for p in procs),
        "recommend_rate": _mean(float(p["recommended"]) for p in procs),
        "hallucination_rate": _mean(float(bool(p["hallucinated_ids"])) for p in procs),
        "hallucinated_ids": sum(len(p["hallucinated_ids"]) for p in procs),
    }
    metrics["items_by_category"] = item_breakdown(samples)
    return metrics


def item_breakdown(samples: Sequence[dict]) -> dict[str, Any]:
    """Per category, over every run with ``items`` (``evaluation.rollout.item_metrics``): the share of runs that
    recommend as many products as the problem asks for, that meet item 1, 2, ... in full (position by position:
    the scorer pairs the i-th recommendation with the i-th asked item), that meet every item, and that meet the
    category's own condition (Shop: one shop; Voucher: the budget)."""
    by_cat: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        if s.get("items"):
            by_cat[s.get("category") or "Product"].append(s["items"])
    out: dict[str, Any] = {}
    for cat, items in sorted(by_cat.items()):
        n = len(items)
        positions = max(it["asked"] for it in items)
        met_at = []
        for i in range(positions):
            asked = [it for it in items if it["asked"] > i]
            met_at.append(sum(bool(it["met"][i]) for it in asked) / len(asked))
        conditions = [it["condition"] for it in items if it.get("condition") is not None]
        out[cat] = {"runs": n,
                    "right_count": sum(it["recommended"] == it["asked"] for it in items) / n,
                    "met_by_position": met_at,
                    "all_met": sum(bool(it["met"]) and all(it["met"]) for it in items) / n,
                    "condition": sum(bool(c) for c in conditions) / len(conditions) if conditions else None}
    return out
