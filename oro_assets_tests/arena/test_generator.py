"""Generated world: determinism, ground truth satisfies the reward, one-constraint distractors,
learnable easy problems, leak variants, voucher arithmetic."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from oro_assets import jsonio
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.generator import build_world
from oro_assets.arena.oracle import price_filter
from oro_assets.arena.problems import problem_ground_truth_ids, reward_items
from oro_assets.arena.scoring import budget_ok, field_checks, score_trace


@pytest.fixture(scope="module")
def world():
    return build_world(21, n_problems=400, n_products=12000)


def test_deterministic():
    a, b = build_world(9, n_problems=40, n_products=1500), build_world(9, n_problems=40, n_products=1500)
    assert jsonio.dumps(a.problems) == jsonio.dumps(b.problems)
    assert jsonio.dumps(a.catalogue.products) == jsonio.dumps(b.catalogue.products)
    assert a.variant_groups == b.variant_groups
    c = build_world(10, n_problems=40, n_products=1500)
    assert jsonio.dumps(c.problems) != jsonio.dumps(a.problems)


def test_sizes_and_mix(world):
    assert len(world.problems) == 400 and len(world.catalogue) == 12000
    assert len({p["problem_id"] for p in world.problems}) == 400
    cats = Counter(p["category"] for p in world.problems)
    assert all(cats[c] >= 60 for c in ("Product", "Shop", "Voucher"))
    assert set(Counter(p["difficulty"] for p in world.problems)) == {"easy", "medium", "hard"}
    for p in world.problems:
        if p["category"] == "Shop":
            assert 2 <= len(p["reward"]) <= 4
            shops = {world.catalogue.get(g)["shop_id"] for g in problem_ground_truth_ids(p)}
            assert len(shops) == 1
        if p["category"] == "Product" and p["difficulty"] == "easy":
            assert set(p["reward"]) == {"product_id", "title", "price"}


def test_ground_truth_solves_every_problem(world):
    for p in world.problems:
        r = score_trace(p, problem_ground_truth_ids(p), world.catalogue)
        assert r.success and r.gt == 1.0, p["problem_id"]
        # and it succeeds on the rule alone (not just by id): the gt product satisfies every field
        for item, reward in zip(r.items, reward_items(p), strict=True):
            fields, checked = field_checks(world.catalogue.get(item.product_id), reward)
            assert all(fields[f] == 1.0 for f in checked)


def test_distractors_break_exactly_one_constraint(world):
    by_brand = defaultdict(list)
    for prod in world.catalogue:
        by_brand[(prod["attributes"].get("brand") or [""])[0]].append(prod)
    kinds = Counter()
    for p in world.problems:
        if p["problem_id"] in world.variant_info:
            continue
        for reward in reward_items(p):
            gt = world.catalogue.get(reward["product_id"])
            near = [x for x in by_brand[gt["brand"]] if x["product_id"] != gt["product_id"]]
            assert near, "every item has near-miss distractors"
            for d in near:
                fields, checked = field_checks(d, reward)
                failed = [f for f in checked if fields[f] != 1.0]
                if failed:
                    assert len(failed) == 1, (reward, d)
                    kinds[failed[0]] += 1
                elif d["shop_id"] != gt["shop_id"] and p["category"] == "Shop":
                    kinds["shop"] += 1
                else:
                    assert p["category"] == "Voucher"  # expensive twin: breaks the budget
                    others = sum(world.catalogue.get(g)["price"] for g in problem_ground_truth_ids(p)) - gt["price"]
                    assert not budget_ok(others + d["price"], p["voucher"], 1)
                    kinds["budget"] += 1
    assert set(kinds) >= {"price", "service", "sku", "attributes", "shop", "budget"}


def test_easy_products_learnable_and_price_matters(world):
    env = InProcessEnv(world.catalogue)
    easy = [p for p in world.problems if p["category"] == "Product" and p["difficulty"] == "easy"]
    assert len(easy) >= 20
    top_with, top_without = 0, 0
    for p in easy:
        gt = p["reward"]["product_id"]
        brand = world.catalogue.get(gt)["brand"]
        assert brand in p["query"].lower()  # key title words verbatim
        for bound in next(iter(p["reward"]["price"][0].values())):
            if bound is not None:
                assert str(bound) in p["query"]  # bounds stated as plain numbers
        top_with += env.find_product(p["query"], price=price_filter(p["reward"]))[0]["product_id"] == gt
        top_without += env.find_product(p["query"])[0]["product_id"] == gt
    assert top_with / len(easy) >= 0.95
    assert top_without / len(easy) <= 0.2  # a price-ignoring agent lands on a distractor


def test_voucher_arithmetic(world):
    needs_voucher = 0
    vouchers = [p for p in world.problems if p["category"] == "Voucher"]
    for p in vouchers:
        v = p["voucher"]
        total = sum(world.catalogue.get(g)["price"] for g in problem_ground_truth_ids(p))
        assert v["threshold"] <= total
        assert budget_ok(total, v, 1)
        needs_voucher += total > v["budget"]
        assert f"`{v['budget']}`" in p["query"] and f"`{v['threshold']}`" in p["query"]
    assert 0.3 <= needs_voucher / len(vouchers) <= 0.9
    assert {p["voucher"]["discount_type"] for p in vouchers} == {"fixed", "percentage"}
    assert {p["voucher"]["voucher_type"] for p in vouchers} == {"platform", "shop"}


def test_leak_variants(world):
    groups = defaultdict(list)
    for p in world.problems:
        groups[world.variant_groups[p["problem_id"]]].append(p)
    multi = [g for g in groups.values() if len(g) > 1]
    assert len(multi) >= 20
    kinds = Counter()
    for g in multi:
        assert len({jsonio.canonical_dumps(p["reward"]) for p in g}) == 1  # same reward spec
        assert len({p["query"] for p in g}) == len(g)  # every variant asks differently
        kinds.update(world.variant_info[p["problem_id"]]["variant_kind"] for p in g if p["problem_id"] in world.variant_info)
        assert all("variant" not in key for p in g for key in p)  # the truth never leaks into problems
    assert set(kinds) == {"paraphrase", "reorder", "format", "asked_differently"}
    # different base problems never share a group
    bases = [p for p in world.problems if p["problem_id"] not in world.variant_info]
    assert len({world.variant_groups[p["problem_id"]] for p in bases}) == len(bases)
