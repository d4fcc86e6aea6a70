"""A perfect scripted agent: it knows the reward and plays the tools to find matching products.

Used to check that a problem pool is playable in a catalogue (tests, benchmarks). It works
through ``execute_tool`` so it exercises exactly the tool semantics an agent sees.
"""

from __future__ import annotations

import itertools
from typing import Any

from oro_assets.arena.env import ShoppingEnv
from oro_assets.arena.problems import reward_items
from oro_assets.arena.scoring import budget_ok, field_checks
from oro_assets.arena.search import MAX_PAGE
from oro_assets.arena.tools import execute_tool
from oro_assets.toolcalls import FIND_PRODUCT, VIEW_PRODUCT_INFORMATION


def price_filter(reward: dict) -> str | None:
    """Reward price constraints as a find_product ``price`` filter ("lo-hi" / "lo-")."""
    lo, hi = None, None
    for c in reward.get("price") or []:
        for kind, bounds in c.items():
            a, z = (list(bounds) + [None, None])[:2]
            if kind in ("between", "greater than") and a is not None:
                lo = a if lo is None else max(lo, a)
            if kind in ("between", "less than") and z is not None:
                hi = z if hi is None else min(hi, z)
    if lo is None and hi is None:
        return None
    return f"{lo if lo is not None else 0}-{hi if hi is not None else ''}"


def _query(reward: dict) -> str:
    titles = reward.get("title") or []
    return titles[0] if isinstance(titles, list) and titles else str(titles or "")


def matching_candidates(env: ShoppingEnv, reward: dict, *, shop_id: str | None = None,
                        title_threshold: float = 0.7, log: list | None = None) -> list[dict]:
    """Products (raw dicts) from the search results that satisfy every constrained field of ``reward``."""
    args: dict[str, Any] = {"q": _query(reward)}
    if price_filter(reward):
        args["price"] = price_filter(reward)
    if reward.get("service"):
        args["service"] = ",".join(reward["service"])
    if shop_id:
        args["shop_id"] = shop_id
    out: list[dict] = []
    for page in range(1, MAX_PAGE + 1):
        hits = execute_tool(env, FIND_PRODUCT, {**args, "page": page})
        if log is not None:
            log.append((FIND_PRODUCT, {**args, "page": page}))
        if not isinstance(hits, list) or not hits:
            break
        details = execute_tool(env, VIEW_PRODUCT_INFORMATION, {"product_ids": ",".join(h["product_id"] for h in hits)})
        for d in details if isinstance(details, list) else []:
            if "error" in d:
                continue
            fields, checked = field_checks(d, reward, title_threshold=title_threshold)
            if d["product_id"] == reward.get("product_id") or (checked and all(fields[f] for f in checked)):
                out.append(d)
        if len(hits) < 10:
            break
    gt = reward.get("product_id")
    out.sort(key=lambda d: d["product_id"] != gt)  # the ground truth first when it was found
    return out


def solve(problem: dict, env: ShoppingEnv, *, title_threshold: float = 0.7) -> list[str]:
    """Ids to recommend (in reward order); [] when no solution was found."""
    rewards = reward_items(problem)
    category = problem.get("category", "Product")
    voucher = problem.get("voucher") if isinstance(problem.get("voucher"), dict) else None
    if category == "Shop" or (voucher and voucher.get("voucher_type") == "shop"):
        first = matching_candidates(env, rewards[0], title_threshold=title_threshold)
        for cand in first:
            basket = [cand]
            for r in rewards[1:]:
                found = matching_candidates(env, r, shop_id=cand["shop_id"], title_threshold=title_threshold)
                if not found:
                    break
                basket.append(found[0])
            else:
                if not voucher or budget_ok(sum(p["price"] for p in basket), voucher, 1):
                    return [p["product_id"] for p in basket]
        return []
    per_item = [matching_candidates(env, r, title_threshold=title_threshold)[:4] for r in rewards]
    if any(not c for c in per_item):
        return [c[0]["product_id"] if c else "" for c in per_item if c]
    for basket in itertools.product(*per_item):
        if not voucher or budget_ok(sum(p["price"] for p in basket), voucher, len({p["shop_id"] for p in basket})):
            return [p["product_id"] for p in basket]
    return [c[0]["product_id"] for c in per_item]
