"""ORO "production-strict" outcome scorer (reference section 3).

Per trace: take the LAST ``recommend_product`` call, split its ids on ",", strip, dedupe
keeping order. Reward item i is scored against recommended id i (order matters):
exact ground-truth id -> 1; otherwise ``rule = hits / checks`` over the constrained fields

* ``title``      best similarity to the reward titles >= threshold (0.7 ORO, 0.5 ShoppingBench)
* ``price``      every price constraint holds: between [lo, hi] inclusive, "less than" hi
                 strictly below, "greater than" lo strictly above
* ``service``    the product offers every required service
* ``sku``        one single SKU of the product carries every required option (best single SKU)
* ``attributes`` for every required key the product's values include every required value

A field without a constraint scores 0 and is not counted; no checks -> 0. Strings compare
case-insensitively after stripping. Success: Product ``rule >= 1``; Shop also all scored
products share one shop_id; Voucher also the budget rule (``budget_ok``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from oro_assets.arena.problems import problem_id_for, reward_items
from oro_assets.arena.similarity import (
    ORO_TITLE_THRESHOLD,
    TitleSimilarity,
    best_title_similarity,
    default_similarity,
)
from oro_assets.toolcalls import RECOMMEND_PRODUCT, arguments_dict

FIELDS = ("title", "price", "service", "sku", "attributes")
_EPS = 1e-9


def _norm(x: Any) -> str:
    return str(x).strip().lower()


def price_ok(price: float, constraints: Sequence[dict]) -> bool:
    for c in constraints:
        if not isinstance(c, dict):
            return False
        for kind, bounds in c.items():
            lo, hi = (list(bounds) + [None, None])[:2] if isinstance(bounds, list | tuple) else (None, None)
            if kind == "between":
                if lo is None or hi is None or not (float(lo) - _EPS <= price <= float(hi) + _EPS):
                    return False
            elif kind == "less than":
                if hi is None or not price < float(hi):
                    return False
            elif kind == "greater than":
                if lo is None or not price > float(lo):
                    return False
            else:
                return False
    return True


def service_ok(services: Sequence[str], required: Sequence[str]) -> bool:
    have = {_norm(s) for s in services or []}
    return all(_norm(s) in have for s in required)


def required_sku(reward: dict) -> dict[str, str]:
    req: dict[str, str] = {}
    for opt in reward.get("sku_options") or []:
        if isinstance(opt, dict):
            for k, v in opt.items():
                req[_norm(k)] = _norm(v)
    return req


def best_sku_matches(product: dict, req: dict[str, str]) -> int:
    """Most required options carried by one single SKU of the product."""
    best = 0
    for sku in (product.get("sku_options") or {}).values():
        if not isinstance(sku, dict):
            continue
        have = {_norm(k): _norm(v) for k, v in sku.items()}
        best = max(best, sum(1 for k, v in req.items() if have.get(k) == v))
    return best


def attributes_ok(product: dict, required: Sequence[dict]) -> bool:
    have = {_norm(k): {_norm(v) for v in (vals if isinstance(vals, list) else [vals])}
            for k, vals in (product.get("attributes") or {}).items()}
    for entry in required:
        if not isinstance(entry, dict):
            return False
        for k, vals in entry.items():
            values = vals if isinstance(vals, list) else [vals]
            if not {_norm(v) for v in values} <= have.get(_norm(k), set()):
                return False
    return True


def field_checks(
    product: dict, reward: dict, *, similarity: TitleSimilarity | None = None, title_threshold: float = ORO_TITLE_THRESHOLD
) -> tuple[dict[str, float], list[str]]:
    """Per-field scores (1/0; 0 when unconstrained) and the list of constrained fields."""
    sim = similarity or default_similarity()
    scores = dict.fromkeys(FIELDS, 0.0)
    checked: list[str] = []
    titles = [t for t in reward.get("title") or [] if isinstance(t, str)] if not isinstance(
        reward.get("title"), str) else [reward["title"]]
    if titles:
        checked.append("title")
        scores["title"] = float(best_title_similarity(sim, str(product.get("title") or ""), titles) >= title_threshold)
    if reward.get("price"):
        checked.append("price")
        scores["price"] = float(price_ok(float(product.get("price") or 0.0), reward["price"]))
    if reward.get("service"):
        checked.append("service")
        scores["service"] = float(service_ok(product.get("service") or [], reward["service"]))
    req = required_sku(reward)
    if req:
        checked.append("sku")
        scores["sku"] = float(best_sku_matches(product, req) == len(req))
    if reward.get("attributes"):
        checked.append("attributes")
        scores["attributes"] = float(attributes_ok(product, reward["attributes"]))
    return scores, checked


def voucher_applies(total: float, voucher: dict, n_shops: int) -> bool:
    if voucher.get("voucher_type") == "shop" and n_shops != 1:
        return False
    return total + _EPS >= float(voucher.get("threshold") or 0.0)


def price_after_voucher(total: float, voucher: dict) -> float:
    """fixed: total - face_value; percentage: max(total * (1 - d), total - cap) (no cap: total * (1 - d))."""
    if voucher.get("discount_type") == "fixed":
        return total - float(voucher.get("face_value") or 0.0)
    d = float(voucher.get("discount") or 0.0)
    after = total * (1.0 - d)
    cap = voucher.get("cap")
    if cap is not None:
        after = max(after, total - float(cap))
    return after


def budget_ok(total: float, voucher: dict, n_shops: int) -> bool:
    budget = float(voucher.get("budget") or 0.0)
    if total <= budget + _EPS:
        return True
    return voucher_applies(total, voucher, n_shops) and price_after_voucher(total, voucher) <= budget + _EPS


@dataclass
class ItemScore:
    index: int
    product_id: str | None
    ground_truth_id: str | None
    found: bool
    exact: bool
    score: float
    fields: dict[str, float]
    checked: list[str]


@dataclass
class ScoreResult:
    problem_id: str
    category: str
    recommended: list[str]
    gt: float
    rule: float
    items: list[ItemScore]
    shop: bool | None
    budget: bool | None
    total_price: float | None
    success: bool
    format: float | None = None
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def format_score(timestamps_ok: Sequence[bool] | None) -> float | None:
    """Mean over steps of 1 (valid timestamp) or 0.5 (missing: ORO halves the step); None = unknown."""
    if timestamps_ok is None:
        return None
    if len(timestamps_ok) == 0:
        return 0.0
    return sum(1.0 if ok else 0.5 for ok in timestamps_ok) / len(timestamps_ok)


def split_ids(value: Any) -> list[str]:
    """ORO's id parsing: split on ",", strip, drop empties, dedupe keeping order.

    A list (some agents send one) is read element by element, each element split the same way;
    an integer is one id. Anything else gives no ids."""
    if isinstance(value, str | int) and not isinstance(value, bool):
        items = [str(value)]
    elif isinstance(value, list):
        items = [str(v) for v in value]
    else:
        return []
    seen: dict[str, None] = {}
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if part:
                seen.setdefault(part, None)
    return list(seen)


def score_trace(
    problem: dict,
    recommended: list[str] | str | None,
    catalogue: Any,
    *,
    title_threshold: float = ORO_TITLE_THRESHOLD,
    similarity: TitleSimilarity | None = None,
    timestamps_ok: list[bool] | None = None,
) -> ScoreResult:
    """Score one trace's last recommendation against the problem (``catalogue.get(id)`` looks products up)."""
    sim = similarity or default_similarity()
    ids = split_ids(recommended)
    rewards = reward_items(problem)
    items: list[ItemScore] = []
    scored_products: list[dict] = []
    missing = 0
    for i, reward in enumerate(rewards):
        gt_id = str(reward["product_id"]) if reward.get("product_id") is not None else None
        pid = ids[i] if i < len(ids) else None
        product = catalogue.get(pid) if pid is not None else None
        if product is None:
            # "exact ground-truth id -> 1" holds even where the catalogue lacks the product; its shop
            # and price stay unknown, so a Shop or Voucher check cannot pass on it (missing below)
            exact = gt_id is not None and pid == gt_id
            missing += 1
            items.append(ItemScore(i, pid, gt_id, False, exact, 1.0 if exact else 0.0,
                                   dict.fromkeys(FIELDS, 0.0), []))
            continue
        scored_products.append(product)
        fields, checked = field_checks(product, reward, similarity=sim, title_threshold=title_threshold)
        exact = gt_id is not None and pid == gt_id
        if exact:
            score = 1.0
        elif checked:
            score = sum(fields[f] for f in checked) / len(checked)
        else:
            score = 0.0
        items.append(ItemScore(i, pid, gt_id, True, exact, score, fields, checked))
    n = len(rewards)
    rule = sum(it.score for it in items) / n if n else 0.0
    gt = 1.0 if n and all(it.exact for it in items) else 0.0
    category = problem.get("category") or "Product"
    shops = {p.get("shop_id") for p in scored_products}
    total = sum(float(p.get("price") or 0.0) for p in scored_products) if scored_products else None
    success = rule >= 1.0 - _EPS
    shop: bool | None = None
    budget: bool | None = None
    if category == "Shop":
        shop = len(scored_products) > 0 and len(shops) == 1 and not missing
        success = success and shop
    if category == "Voucher" and isinstance(problem.get("voucher"), dict):
        budget = total is not None and not missing and budget_ok(total, problem["voucher"], len(shops))
        success = success and budget
    return ScoreResult(
        problem_id=problem_id_for(problem),
        category=category,
        recommended=ids,
        gt=gt,
        rule=rule,
        items=items,
        shop=shop,
        budget=budget,
        total_price=total,
        success=bool(success),
        format=format_score(timestamps_ok),
    )


def _calls_in(item: dict) -> list[tuple[str, Any]]:
    """(name, arguments) of the tool calls in a canonical message or an ORO step."""
    calls: list[tuple[str, Any]] = []
    if item.get("role") == "assistant":
        for tc in item.get("tool_calls") or []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict):
                calls.append((fn.get("name"), fn.get("arguments")))
    elif isinstance(item.get("completion"), dict):
        msg = item["completion"].get("message") or {}
        for tc in msg.get("tool_call") or []:
            if isinstance(tc, dict):
                calls.append((tc.get("name"), tc.get("parameters")))
    elif isinstance(item.get("message"), dict):  # ShoppingBench rollout step
        for tc in item["message"].get("tool_call") or []:
            if isinstance(tc, dict):
                calls.append((tc.get("name"), tc.get("parameters", tc.get("arguments"))))
    elif "tool_calls" in item:  # per-step evidence rows
        for tc in item.get("tool_calls") or []:
            if isinstance(tc, dict):
                calls.append((tc.get("name"), tc.get("arguments")))
    return calls


def last_recommended_ids(steps_or_messages: Sequence[dict]) -> list[str] | None:
    """Ids of the LAST ``recommend_product`` call (split, stripped, deduped); None if there is none.

    Accepts canonical messages, ORO dialogue steps or canonical per-step evidence rows.
    Unparseable arguments give ``[]`` (the call exists but recommends nothing).
    """
    last: Any = None
    seen = False
    for item in steps_or_messages or []:
        if not isinstance(item, dict):
            continue
        for name, args in _calls_in(item):
            if name == RECOMMEND_PRODUCT:
                seen, last = True, args
    if not seen:
        return None
    parsed = arguments_dict(last)
    if parsed is None:
        return []
    return split_ids(parsed.get("product_ids", parsed.get("product_id")))
