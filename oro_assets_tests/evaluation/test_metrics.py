import math

import pytest

from oro_assets.arena.episode import CallRecord, StepRecord
from oro_assets.evaluation.metrics import aggregate, pass_at_k, process_metrics, wilson_interval


def test_pass_at_k_hand_computed():
    assert pass_at_k(8, 0, 1) == 0.0
    assert pass_at_k(8, 8, 3) == 1.0
    assert pass_at_k(8, 2, 1) == pytest.approx(0.25)
    assert pass_at_k(8, 2, 4) == pytest.approx(1 - 15 / 70)  # C(6,4)=15, C(8,4)=70
    assert pass_at_k(8, 2, 7) == 1.0  # only 6 failures: any 7 samples include a success
    assert pass_at_k(5, 1, 2) == pytest.approx(0.4)  # 1 - C(4,2)/C(5,2) = 1 - 6/10
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_wilson_interval_known_values():
    lo, hi = wilson_interval(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson_interval(0, 75)
    assert lo == 0.0 and hi == pytest.approx(0.0487, abs=1e-4)
    lo, hi = wilson_interval(75, 75)
    assert hi == 1.0 and lo == pytest.approx(1 - 0.0487, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 0.0)


def _sample(pid, success, *, greedy=False, category="Product", difficulty="easy", gt=None, rule=None, status="success",
            process=None):
    return {"problem_id": pid, "category": category, "difficulty": difficulty, "greedy": greedy,
            "success": success, "gt": float(success) if gt is None else gt, "rule": float(success) if rule is None else rule,
            "format": 1.0, "status": status,
            "process": process or {"steps": 3, "tool_calls": 3, "views": 0, "reformulations": 0, "verification": False,
                                   "recommended": True, "hallucinated_ids": []}}


def test_aggregate_pass_at_k_averaged_over_problems_and_greedy_asr():
    samples = []
    # A: 1/4 sampled successes, greedy solves; B: 0/4, greedy fails; C: 4/4, greedy solves (Shop, hard).
    samples += [_sample("A", i == 0) for i in range(4)] + [_sample("A", True, greedy=True)]
    samples += [_sample("B", False) for _ in range(4)] + [_sample("B", False, greedy=True, status="timed_out")]
    samples += [_sample("C", True, category="Shop", difficulty="hard") for _ in range(4)]
    samples += [_sample("C", True, greedy=True, category="Shop", difficulty="hard", gt=0.0, rule=1.0)]
    m = aggregate(samples)
    assert m["asr_basis"] == "greedy"
    assert m["asr"] == pytest.approx(2 / 3)
    assert m["solved"] == 2 and m["n_problems"] == 3
    assert m["points_per_problem"] == pytest.approx(100 / 3)
    lo, hi = m["asr_ci"]
    assert lo < 2 / 3 < hi
    assert m["gt_rate"] == pytest.approx(1 / 3)  # only A's greedy run hit the ground truth
    assert m["mean_rule"] == pytest.approx(2 / 3)
    assert m["pass_at_k"]["1"] == pytest.approx((0.25 + 0 + 1) / 3)
    assert m["pass_at_k"]["2"] == pytest.approx((0.5 + 0 + 1) / 3)  # A: 1 - C(3,2)/C(4,2)
    assert m["pass_at_k"]["4"] == pytest.approx(2 / 3)
    assert "8" not in m["pass_at_k"] and m["samples_per_problem"] == 4
    assert m["pass_at_k_unavailable"]["8"].endswith("the fewest any problem has is 4")
    assert m["by_category"]["Product"]["asr"] == pytest.approx(0.5)
    assert m["by_category"]["Shop"]["asr"] == 1.0
    assert m["by_difficulty"]["hard"]["n_problems"] == 1
    assert m["status_counts"] == {"success": 14, "timed_out": 1}


def test_aggregate_without_greedy_uses_mean_over_samples():
    samples = [_sample("A", i < 3) for i in range(4)] + [_sample("B", False) for _ in range(4)]
    m = aggregate(samples)
    assert m["asr_basis"] == "mean_over_samples"
    assert m["asr"] == pytest.approx(3 / 8)
    assert m["asr"] == pytest.approx(m["pass_at_1"])


def _step(n, calls):
    return StepRecord(step=n, timestamp=1000 + n, think="", response="",
                      calls=[CallRecord(name, args, None, result, f"call_{n}_{i}") for i, (name, args, result) in enumerate(calls)],
                      inference=[], events=[], execution_time=0.1)


def test_process_metrics_counts_and_hallucinations():
    steps = [
        _step(1, [("find_product", {"q": "red shoes"}, [{"product_id": "11"}, {"product_id": "12"}])]),
        _step(2, [("find_product", {"q": "Red Shoes "}, [{"product_id": "11"}])]),  # same query: not a reformulation
        _step(3, [("find_product", {"q": "red running shoes"}, [{"product_id": "13"}])]),
        _step(4, [("view_product_information", {"product_ids": "12, 13"}, [{"product_id": "12"}, {"product_id": "13"}])]),
        _step(5, [("recommend_product", {"product_ids": "12,999"}, "ok"), ("terminate", {"status": "success"}, "ok")]),
    ]
    p = process_metrics(steps, ["12", "999"])
    assert p["steps"] == 5 and p["tool_calls"] == 6
    assert p["searches"] == 3 and p["views"] == 1
    assert p["reformulations"] == 1
    assert p["verification"] is True
    assert p["hallucinated_ids"] == ["999"]
    # An id that first appears in a result after the recommendation is still a hallucination.
    late = steps[:1] + [_step(2, [("recommend_product", {"product_ids": "13"}, "ok")]),
                        _step(3, [("find_product", {"q": "x"}, [{"product_id": "13"}])])]
    assert process_metrics(late, ["13"])["hallucinated_ids"] == ["13"]
    assert process_metrics(late, ["13"])["verification"] is False
    assert not math.isnan(process_metrics([], [])["steps"])


def test_item_breakdown_locates_multi_item_failures():
    def shop(pid, asked, recommended, met, one_shop):
        return {**_sample(pid, False, category="Shop"),
                "items": {"asked": asked, "recommended": recommended, "met": met, "condition": one_shop}}

    samples = [
        shop("S1", 3, 1, [True, False, False], False),   # stops after item 1 (the tiny model's Shop failure)
        shop("S1", 3, 3, [True, False, True], True),
        shop("S2", 2, 2, [True, True], True),
        shop("S2", 2, 2, [False, True], False),
        _sample("P", True),                              # a row without items (an older result) is left out
    ]
    b = aggregate(samples)["items_by_category"]
    assert set(b) == {"Shop"}
    s = b["Shop"]
    assert s["runs"] == 4
    assert s["right_count"] == pytest.approx(3 / 4)
    assert s["met_by_position"] == pytest.approx([3 / 4, 2 / 4, 1 / 2])  # position 3: only the two S1 runs ask for it
    assert s["all_met"] == pytest.approx(1 / 4)
    assert s["condition"] == pytest.approx(2 / 4)


def test_score_rollout_items_pair_positions_with_asked_items():
    from oro_assets.arena.scoring import score_trace
    from oro_assets.evaluation.rollout import item_metrics

    catalogue = {"1": {"product_id": "1", "shop_id": "A", "title": "red mug", "price": 5.0},
                 "2": {"product_id": "2", "shop_id": "B", "title": "blue cup", "price": 7.0}}
    problem = {"problem_id": "s", "category": "Shop", "query": "q",
               "reward": [{"product_id": "1", "title": ["red mug"]}, {"product_id": "2", "title": ["blue cup"]}]}
    swapped = item_metrics(score_trace(problem, "2,1", catalogue))
    assert swapped == {"asked": 2, "recommended": 2, "met": [False, False], "condition": False}
    in_order = item_metrics(score_trace(problem, "1,2", catalogue))
    assert in_order == {"asked": 2, "recommended": 2, "met": [True, True], "condition": False}  # two shops
    one = item_metrics(score_trace(problem, "1", catalogue))
    assert one["recommended"] == 1 and one["met"] == [True, False]
