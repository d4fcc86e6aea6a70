"""Hand-computed vectors for every branch of the production-strict scorer."""

from __future__ import annotations

import json

import pytest

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.scoring import (
    budget_ok,
    format_score,
    last_recommended_ids,
    price_after_voucher,
    price_ok,
    score_trace,
)
from oro_assets.arena.similarity import LexicalSimilarity


def _p(pid, shop, title, price, service=(), sku=None, attrs=None):
    return {"product_id": pid, "shop_id": shop, "brand": "", "category": "A > B > C", "title": title,
            "short_description": "", "description": "", "specification": "", "price": float(price),
            "sold_count": 0, "sku_options": sku or {}, "attributes": attrs or {}, "service": list(service)}


CAT = Catalogue([
    _p("1", "S1", "Red Canvas Tote Bag", 200, ["COD", "freeShipping"],
       {"1": {"color_family": "red", "size": "m"}, "2": {"color_family": "blue", "size": "l"}},
       {"material": ["canvas"], "brand": ["velo"]}),
    _p("2", "S1", "Blue Canvas Tote Bag", 450, ["official"], {"1": {"color_family": "blue", "size": "m"}},
       {"material": ["nylon"]}),
    _p("3", "S2", "Steel Frying Pan 24cm", 300),
    _p("4", "S1", "Steel Frying Pan 24cm", 120),
    # red and m exist, but never on the same SKU
    _p("5", "S3", "Red Canvas Tote Bag", 200, ["COD"],
       {"1": {"color_family": "red", "size": "l"}, "2": {"color_family": "blue", "size": "m"}}, {"material": ["canvas"]}),
    _p("6", "S2", "Steel Frying Pan 24cm", 120),
])
BAG = {"product_id": "9", "title": ["Red Canvas Tote Bag"], "price": [{"between": [100, 250]}], "service": ["COD"],
       "sku_options": [{"color_family": "red", "size": "m"}], "attributes": [{"material": ["canvas"]}]}
PAN = {"product_id": "9", "title": ["Steel Frying Pan 24cm"]}


def product(reward):
    return {"problem_id": "p", "query": "q", "category": "Product", "reward": reward}


def test_all_five_fields_hit():
    r = score_trace(product(BAG), "1", CAT)
    # title 1 (identical tokens), price 200 in [100,250], COD offered, SKU 1 = red/m, canvas -> 5/5
    assert r.items[0].fields == {"title": 1.0, "price": 1.0, "service": 1.0, "sku": 1.0, "attributes": 1.0}
    assert r.rule == 1.0 and r.gt == 0.0 and r.success


def test_partial_rule_and_title_threshold():
    r = score_trace(product(BAG), "2", CAT)
    # title: {blue,canvas,tote,bag} vs {red,canvas,tote,bag} = 3/sqrt(4*4) = 0.75 >= 0.7 -> 1;
    # price 450 not in [100,250] -> 0; only 'official' -> 0; SKU blue/m has 1 of 2 -> 0; nylon -> 0
    assert r.rule == pytest.approx(1 / 5)
    assert not r.success
    strict = score_trace(product(BAG), "2", CAT, title_threshold=0.8)  # 0.75 < 0.8 -> title 0 -> 0/5
    assert strict.rule == 0.0


def test_best_single_sku_not_union():
    # product 5 has red (SKU 1) and m (SKU 2) but no single SKU with both -> sku 0 -> 4/5
    r = score_trace(product(BAG), "5", CAT)
    assert r.items[0].fields["sku"] == 0.0
    assert r.rule == pytest.approx(4 / 5)


def test_exact_ground_truth_id_scores_one_even_when_fields_miss():
    reward = {**BAG, "product_id": "2"}
    r = score_trace(product(reward), "2", CAT)
    assert r.items[0].score == 1.0 and r.gt == 1.0 and r.success


def test_exact_ground_truth_id_scores_one_when_the_catalogue_lacks_it():
    # "exact ground-truth id -> 1" does not need the product record; its shop and price are unknown
    r = score_trace(product({**PAN, "product_id": "777"}), "777", CAT)
    assert r.items[0].score == 1.0 and r.items[0].exact and r.gt == 1.0 and r.success
    shop = {"problem_id": "s", "query": "q", "category": "Shop",
            "reward": [{"product_id": "777", "title": ["Steel Frying Pan 24cm"]}, {"product_id": "4", "title": []}]}
    both = score_trace(shop, "777,4", CAT)
    assert both.rule == 1.0 and both.gt == 1.0
    assert both.shop is False and not both.success  # one shop cannot be shown for an unknown product


def test_unconstrained_fields_not_counted_and_no_checks_is_zero():
    r = score_trace(product(PAN), "3", CAT)  # only the title is checked: 1/1
    assert r.items[0].checked == ["title"] and r.rule == 1.0 and r.success
    assert r.items[0].fields["price"] == 0.0  # unconstrained field scores 0
    empty = score_trace(product({"product_id": "9", "title": []}), "3", CAT)
    assert empty.rule == 0.0 and not empty.success


def test_unknown_and_missing_recommendation():
    assert score_trace(product(PAN), "999", CAT).rule == 0.0
    r = score_trace(product(PAN), None, CAT)
    assert r.rule == 0.0 and not r.success and r.recommended == []


@pytest.mark.parametrize(
    ("constraint", "price", "ok"),
    [
        ({"between": [200, 300]}, 200.0, True),  # inclusive lower bound
        ({"between": [200, 300]}, 300.0, True),  # inclusive upper bound
        ({"between": [200, 300]}, 300.5, False),
        ({"less than": [None, 200]}, 200.0, False),  # strict
        ({"less than": [None, 200]}, 199.99, True),
        ({"greater than": [200, None]}, 200.0, False),  # strict
        ({"greater than": [200, None]}, 200.01, True),
    ],
)
def test_price_branches(constraint, price, ok):
    assert price_ok(price, [constraint]) is ok


def test_strip_dedupe_and_order_matters_for_shop():
    shop = {"problem_id": "s", "query": "q", "category": "Shop",
            "reward": [{"product_id": "x", "title": ["Red Canvas Tote Bag"]}, {"product_id": "y", "title": ["Steel Frying Pan 24cm"]}]}
    r = score_trace(shop, " 1 , 1, 4 ", CAT)
    assert r.recommended == ["1", "4"]
    assert r.rule == 1.0 and r.shop is True and r.success  # both in S1
    swapped = score_trace(shop, "4,1", CAT)
    # item 0: pan vs bag title: no shared token -> 0; item 1: bag vs pan -> 0
    assert swapped.rule == 0.0 and not swapped.success
    two_shops = score_trace(shop, "1,3", CAT)  # S1 + S2
    assert two_shops.rule == 1.0 and two_shops.shop is False and not two_shops.success
    half = score_trace(shop, "1", CAT)  # second item missing -> (1 + 0) / 2
    assert half.rule == 0.5 and not half.success


def _voucher(**kw):
    base = {"voucher_type": "platform", "threshold": 400, "discount_type": "fixed", "face_value": 60,
            "discount": None, "cap": None, "budget": 450}
    return {**base, **kw}


def _vprob(v):
    return {"problem_id": "v", "query": "q", "category": "Voucher", "voucher": v,
            "reward": [{"product_id": "x", "title": ["Red Canvas Tote Bag"]}, {"product_id": "y", "title": ["Steel Frying Pan 24cm"]}]}


def test_voucher_fixed_and_threshold():
    # "1,3": total 200 + 300 = 500 > 450; applies (500 >= 400); 500 - 60 = 440 <= 450 -> ok
    r = score_trace(_vprob(_voucher()), "1,3", CAT)
    assert r.total_price == 500.0 and r.budget is True and r.success
    assert score_trace(_vprob(_voucher(budget=430)), "1,3", CAT).budget is False  # 440 > 430
    assert score_trace(_vprob(_voucher(threshold=501)), "1,3", CAT).budget is False  # not applicable, 500 > 450
    assert score_trace(_vprob(_voucher(threshold=501, budget=500)), "1,3", CAT).budget is True  # within budget w/o voucher


def test_voucher_percentage_with_cap():
    # max(500 * 0.8, 500 - 50) = max(400, 450) = 450
    v = _voucher(discount_type="percentage", face_value=None, discount=0.2, cap=50)
    assert price_after_voucher(500.0, v) == pytest.approx(450.0)
    assert score_trace(_vprob(v), "1,3", CAT).budget is True  # 450 <= 450
    assert score_trace(_vprob({**v, "budget": 449}), "1,3", CAT).budget is False
    # no cap: 500 * 0.8 = 400 <= 449
    assert budget_ok(500.0, {**v, "cap": None, "budget": 449}, 2) is True


def test_shop_voucher_only_for_one_shop():
    # "1,4": 200 + 120 = 320 in one shop (S1); threshold 300 met; 320 - 30 = 290 <= 300
    v = _voucher(voucher_type="shop", threshold=300, face_value=30, budget=300)
    assert score_trace(_vprob(v), "1,4", CAT).budget is True
    # "1,6": same total 320 but S1 + S2 -> shop voucher does not apply -> 320 > 300
    assert score_trace(_vprob(v), "1,6", CAT).budget is False
    assert score_trace(_vprob({**v, "voucher_type": "platform"}), "1,6", CAT).budget is True


def test_voucher_needs_rule_too():
    r = score_trace(_vprob(_voucher(budget=10_000)), "2,3", CAT)
    # item 0: "Blue Canvas Tote Bag" title 0.75 -> 1/1; item 1: pan -> 1/1 -> rule 1, budget ok
    assert r.rule == 1.0 and r.success
    r2 = score_trace(_vprob(_voucher(budget=10_000)), "3,2", CAT)
    assert r2.rule == 0.0 and not r2.success


def test_format_score():
    assert format_score([True, False, True, True]) == pytest.approx((1 + 0.5 + 1 + 1) / 4)
    assert format_score(None) is None
    assert format_score([]) == 0.0


def test_last_recommended_ids_from_messages_and_steps():
    def call(name, args):
        return {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}

    msgs = [call("recommend_product", {"product_ids": "7"}), {"role": "tool", "content": "ok"},
            call("find_product", {"q": "x"}), call("recommend_product", {"product_ids": " 3, 4,3 ,"})]
    assert last_recommended_ids(msgs) == ["3", "4"]
    assert last_recommended_ids([call("find_product", {"q": "x"})]) is None
    broken = [{"role": "assistant", "tool_calls": [{"function": {"name": "recommend_product", "arguments": "{oops"}}]}]
    assert last_recommended_ids(broken) == []
    steps = [{"completion": {"message": {"tool_call": [{"name": "recommend_product", "parameters": {"product_ids": "5,6"}}]}}}]
    assert last_recommended_ids(steps) == ["5", "6"]
    # a list is read element by element, each element split on "," like a string
    assert last_recommended_ids([call("recommend_product", {"product_ids": ["1, 2", "2", 3]})]) == ["1", "2", "3"]
    assert last_recommended_ids([call("recommend_product", {"product_ids": {"a": 1}})]) == []


def test_lexical_similarity_values():
    sim = LexicalSimilarity()
    assert sim("Red Canvas Tote Bag", "red canvas TOTE bag!") == 1.0
    # {a,b,c} vs {a,b,c,d,e}: 3 / sqrt(15) = 0.7746
    assert sim("a b c", "a b c d e") == pytest.approx(3 / 15 ** 0.5)
    assert sim("", "x") == 0.0


def test_pluggable_embedding_similarity():
    import numpy as np

    from oro_assets.arena.similarity import EmbeddingSimilarity, make_similarity

    # a deterministic "embedding": bag of letters a-z; "Red Canvas Tote Bag" vs "Blue Canvas Tote Bag"
    def encode(texts):
        return np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=float)

    sim = EmbeddingSimilarity(encode)
    a, b = encode(["Red Canvas Tote Bag"])[0], encode(["Blue Canvas Tote Bag"])[0]
    expected = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert sim("Red Canvas Tote Bag", "Blue Canvas Tote Bag") == pytest.approx(expected)
    # plugged into the scorer: title check uses it (threshold above/below the value flips the title field)
    reward = {"product_id": "9", "title": ["Red Canvas Tote Bag"]}
    assert score_trace(product(reward), "2", CAT, similarity=sim, title_threshold=expected - 1e-6).rule == 1.0
    assert score_trace(product(reward), "2", CAT, similarity=sim, title_threshold=expected + 1e-6).rule == 0.0
    assert make_similarity("embedding:/no/such/model").name == "lexical-token-cosine"
