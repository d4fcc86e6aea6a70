"""benchmarks/screen.py ``compare``: paired change of two evaluations of the same problems, per category."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from screen import asked_items, compare, count_behaviour, item_behaviour, item_names, item_words  # noqa: E402


def _eval(path: Path, outcomes: dict[str, tuple[str, bool, int]], pool: str = "dev") -> Path:
    rows = [{"problem_id": pid, "category": cat, "greedy_success": ok, "n": 8, "c": c}
            for pid, (cat, ok, c) in outcomes.items()]
    path.mkdir(parents=True)
    (path / "eval_result.json").write_text(json.dumps({
        "stage": "sft", "policy_name": "p", "run_id": "r", "metrics": {}, "rows": rows, "trajectories_path": "",
        "samples_path": "", "config": {"pool": pool}}))
    return path


def test_compare_pairs_problems_per_category(tmp_path):
    before = _eval(tmp_path / "a", {"p1": ("Product", True, 4), "p2": ("Product", True, 2),
                                    "s1": ("Shop", False, 0), "s2": ("Shop", False, 0)})
    after = _eval(tmp_path / "b", {"p1": ("Product", False, 2), "p2": ("Product", True, 2),
                                   "s1": ("Shop", True, 8), "s2": ("Shop", True, 4), "x": ("Shop", True, 8)})
    rows = {(r["category"], r["metric"]): r for r in compare(before, after)}
    # only the problems both evaluated are paired ("x" is not)
    assert rows[("all", "greedy")]["n"] == 4
    assert rows[("all", "greedy")]["before"] == 50.0 and rows[("all", "greedy")]["after"] == 75.0
    assert rows[("Shop", "greedy")]["delta"] == pytest.approx(100.0)
    assert rows[("Shop", "greedy")]["low"] == pytest.approx(100.0)  # every Shop problem went 0 -> 1
    assert rows[("Product", "pass@1")]["delta"] == pytest.approx(-12.5)  # (2-4)/8 and 0 -> mean -1/8
    assert rows[("Product", "greedy")]["low"] < 0 < rows[("all", "greedy")]["high"]
    assert ("Voucher", "greedy") not in rows


def test_compare_refuses_evaluations_of_different_pools(tmp_path):
    a = _eval(tmp_path / "a", {"p1": ("Product", True, 1)})
    b = _eval(tmp_path / "b", {"p1": ("Product", True, 1)}, pool="test")
    with pytest.raises(SystemExit, match="different pools"):
        compare(a, b)


def test_asked_items_reads_the_arenas_wording_whatever_its_case_and_spacing():
    assert asked_items("Find a shop selling these items: First, a x in l. Second, a y. Third, a z.") == 3
    assert asked_items("  which store has all of the following: first ,   a x. second ,   a y.") == 2
    assert asked_items("i want to buy a x ,  and also  a y, and also a z.\n\nmy budget is only `5`") == 3
    assert asked_items("Show me a first aid kit priced under 30 pesos.") == 1


def _run(category, query, contents, calls, success=False):
    dialogue = [{"completion": {"content": text, "message": {"tool_call": [{"name": n, "parameters": a}
                                                                          for n, a in step]}}}
                for text, step in zip(contents, calls, strict=True)]
    return {"category": category, "query": query, "dialogue": dialogue, "score": {"success": success}}


def test_item_behaviour_counts_what_requests_for_several_products_get(tmp_path):
    shop = "Find a shop selling these items: First, a x. Second, a y."
    runs = [
        # plans item 2, searches twice, recommends both: a success
        _run("Shop", shop, ["<think>item 1: words x</think>", "<think>choose 1. item 2: words y</think>", "r"],
             [[("find_product", {"q": "x"})], [("find_product", {"q": "y"})],
              [("recommend_product", {"product_ids": "1,2"})]], success=True),
        # answers after the first choice
        _run("Shop", shop, ["<think>item 1: words x</think>", "<think>choose 1.</think>"],
             [[("find_product", {"q": "x"})], [("recommend_product", {"product_ids": "1"})]]),
        # a numbered plan ("item 2 of 2") counts; the voucher check is counted over every run
        _run("Voucher", "Show me a x, and also a y.\n\nMy budget", ["item 2 of 2: words y", "v"],
             [[("find_product", {"q": "y"})], [("calculate_voucher", {})]]),
        _run("Product", "Show me a x.", ["item 1"], [[("find_product", {"q": "x"})]], success=True),
        {"category": "Product", "query": "Show me a x.", "dialogue": None, "score": {}},  # a run that failed to start
    ]
    path = tmp_path / "eval"
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    got = {r["category"]: r for r in item_behaviour(path)}
    assert got["Shop"] == {"category": "Shop", "runs": 2, "several": 2, "item2_plan": 1, "two_searches": 1,
                           "item2_copied": 1, "right_count": 1, "voucher_check": 0, "item1_named": 2, "success": 1}
    assert got["Voucher"]["item2_plan"] == 1 and got["Voucher"]["voucher_check"] == 1
    assert got["Voucher"]["right_count"] == 0 and got["Voucher"]["two_searches"] == 0
    assert got["Voucher"]["item1_named"] == 0  # its one search is item 2's
    assert got["Product"] == {"category": "Product", "runs": 2, "several": 0, "item2_plan": 0, "two_searches": 0,
                              "item2_copied": 0, "right_count": 0, "voucher_check": 0, "item1_named": 1, "success": 1}


def test_count_behaviour_splits_greedy_runs_by_the_number_of_products_asked(tmp_path):
    three = "I want to buy a x, and also a y, and also a z.\n\nMy budget is only `9`"
    runs = [
        # stops at two of three
        {**_run("Voucher", three, ["a", "b"], [[("find_product", {"q": "x"})],
                                               [("recommend_product", {"product_ids": "1, 2"})]]), "eval_sample": "greedy"},
        # recommends nothing
        {**_run("Voucher", three, ["a"], [[("find_product", {"q": "x"})]]), "eval_sample": "greedy"},
        {**_run("Voucher", "Show me a x, and also a y.", ["a"], [[("recommend_product", {"product_ids": "1,2"})]],
                success=True), "eval_sample": "greedy"},
        # a sample: not a greedy run
        {**_run("Voucher", three, ["a"], [[("recommend_product", {"product_ids": "1,2,3"})]], success=True),
         "eval_sample": "s0"},
    ]
    path = tmp_path / "eval"
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    got = {(r["category"], r["asked"]): r for r in count_behaviour(path)}
    assert got[("Voucher", 3)] == {"category": "Voucher", "asked": 3, "runs": 2, "success": 0,
                                   "recommended": {2: 1, 0: 1}}
    assert got[("Voucher", 2)]["success"] == 1 and got[("Voucher", 2)]["recommended"] == {2: 1}
    every = {(r["category"], r["asked"]): r for r in count_behaviour(path, greedy_only=False)}
    assert every[("Voucher", 3)]["runs"] == 3 and every[("Voucher", 3)]["recommended"] == {2: 1, 0: 1, 3: 1}


def test_item_words_are_each_clauses_words_and_a_second_search_elsewhere_is_not_a_copy(tmp_path):
    shop = "Find a shop selling these items: First, a Kovi dry dog bed. Second, a Jijogu slim jogger pants."
    assert item_words(shop) == [{"a", "kovi", "dry", "dog", "bed"}, {"a", "jijogu", "slim", "jogger", "pants"}]
    voucher = "Show me a x bag, and also a y lamp.\n\nMy budget is only `5`, and also a voucher"
    assert item_words(voucher) == [{"show", "me", "a", "x", "bag"}, {"a", "y", "lamp"}]  # the budget paragraph is not an item
    runs = [_run("Voucher", voucher, ["a", "b"], [[("find_product", {"q": "x bag"})], [("find_product", {"q": "y lamp"})]]),
            # item 2 written from memory: a brand the request does not name
            _run("Voucher", voucher, ["a", "b"], [[("find_product", {"q": "x bag"})], [("find_product", {"q": "zed lamp"})]]),
            # item 1 searched twice: not item 2's words
            _run("Voucher", voucher, ["a", "b"], [[("find_product", {"q": "x bag"})], [("find_product", {"q": "x"})]])]
    path = tmp_path / "eval"
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (got,) = item_behaviour(path)
    assert got["two_searches"] == 3 and got["item2_copied"] == 1


def test_item_names_are_the_brands_and_a_search_without_the_brand_does_not_name_item_1(tmp_path):
    shop = "Find a shop selling these items: First, a Kovi dry dog bed. Second, an Jijogu slim jogger pants."
    assert item_names(shop) == ["kovi", "jijogu"]
    assert item_names("Find me a ripesar bass soundbar priced between 1324 and 2757 pesos.") == ["ripesar"]
    assert item_names("Show me something nice") == [None]
    query = "Find me a ripesar bass soundbar priced between 1324 and 2757 pesos."
    runs = [_run("Product", query, ["a"], [[("find_product", {"q": "Ripesar bass soundbar"})]]),
            # the word after the brand copied in its place (dev world 101's sft, session 30)
            _run("Product", query, ["a"], [[("find_product", {"q": "bass bass soundbar"})]]),
            # the brand only in the second search
            _run("Product", query, ["a", "b"], [[("find_product", {"q": "soundbar"})],
                                                [("find_product", {"q": "ripesar soundbar"})]]),
            _run("Product", query, ["a"], [[("recommend_product", {"product_ids": "1"})]])]
    path = tmp_path / "eval"
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (got,) = item_behaviour(path)
    assert got["runs"] == 4 and got["item1_named"] == 1


def test_item_behaviour_reads_calls_whose_parameters_are_not_an_object(tmp_path):
    shop = "Find a shop selling these items: First, a x. Second, a y."
    runs = [
        # parameters written as a JSON string (a tiny model's slip): no words searched, no products named
        _run("Shop", shop, ["a", "b", "c"], [[("find_product", '{"q": "x"}')], [("find_product", {"q": "y"})],
                                             [("recommend_product", '{"product_ids": "1,2"}')]]),
        _run("Shop", shop, ["a"], [[("find_product", None)]]),
    ]
    path = tmp_path / "eval"
    path.mkdir()
    (path / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    (got,) = item_behaviour(path)
    assert got["runs"] == 2 and got["two_searches"] == 1
    assert got["item1_named"] == 0, "the string's words are not read as a search"
    assert got["item2_copied"] == 1, "the second search is still the second"
    assert got["right_count"] == 0, "a recommendation naming nothing readable is not the right count"
