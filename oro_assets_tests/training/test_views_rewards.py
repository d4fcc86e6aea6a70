"""Compact view, dataset conversion, rewards, KTO weights and version hashing (no training)."""

from __future__ import annotations

import json

import pytest

from oro_assets.training.checkpoints import stage_version
from oro_assets.training.data import DatasetError, kto_examples, sft_example, tojson_arguments
from oro_assets.training.rewards import call_match, step_reward
from oro_assets.training.stages import balanced_kto_weights
from oro_assets.training.views import (
    COMPACT_SYSTEM_PROMPT,
    Handles,
    ViewPolicy,
    compact_find_result,
    compact_info_result,
    compact_think,
    view_messages,
)

HITS = [
    {"title": "Zesenu Tank Top", "price": 663.0, "service": ["COD"], "sold_count": 5, "shop_id": "9", "product_id": "111222"},
    {"title": "Filerur Tank Top", "price": 435.5, "service": [], "sold_count": 1, "shop_id": "8", "product_id": "333444"},
]


def row(rid="r1", label=None):
    msgs = [
        {"role": "system", "content": "long system prompt"},
        {"role": "user", "content": "Find me a zesenu tank top priced between 386 and 911 pesos."},
        {"role": "assistant", "content": "", "reasoning_content": "Search.", "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "find_product",
                                                                 "arguments": '{"q":"zesenu tank top","price":"386-911"}'}}]},
        {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product", "content": json.dumps(HITS)},
        {"role": "assistant", "content": "", "reasoning_content": "111222: price 663 in 386-911 yes; words yes\n"
                                                                  "333444: price 435 in 386-911 yes; words no\nChoose 111222.",
         "tool_calls": [{"id": "call_2_0", "type": "function",
                         "function": {"name": "recommend_product", "arguments": '{"product_ids":"111222"}'}}]},
    ]
    r = {"id": rid, "messages": msgs, "tools": json.dumps([{"type": "function", "function": {"name": "x"}}]),
         "source": "test"}
    if label is not None:
        r["label"] = label
    return r


def test_compact_find_result_names_hits_by_handle():
    handles = Handles()
    text = compact_find_result(json.dumps(HITS), handles)
    assert text.splitlines() == ["1. title: Zesenu Tank Top | price: 663 | service: cod | shop: 1",
                                 "2. title: Filerur Tank Top | price: 435.5 | service: none | shop: 2"]
    assert handles.by_id == {"111222": "1", "333444": "2"}
    assert handles.shop_by_id == {"9": "1", "8": "2"}
    # a later search continues the numbering; a product seen before keeps its handle
    again = compact_find_result(json.dumps([HITS[1], dict(HITS[0], product_id="555666")]), handles)
    assert [line.split(".")[0] for line in again.splitlines()] == ["2", "3"]
    assert compact_find_result("[]") == "no results"
    assert compact_find_result("not json") == "not json"
    # a hit without a shop shows none (and takes no shop handle)
    assert compact_find_result(json.dumps([{"title": "T", "price": 1, "product_id": "5"}])) == (
        "1. title: T | price: 1 | service: none")


def test_shop_searches_name_the_shop_by_its_handle_both_ways():
    """A Shop request's later item is searched within the first item's shop: the model sees and writes the
    shop's handle; the arena receives the real shop id."""
    r = row()
    r["messages"].insert(5, {"role": "assistant", "content": "", "reasoning_content": "Item 2.", "tool_calls": [
        {"id": "call_3_0", "type": "function", "function": {
            "name": "find_product", "arguments": '{"q": "filerur tank top", "shop_id": "8"}'}}]})
    compact = view_messages(r["messages"], "compact")
    assert json.loads(compact[5]["tool_calls"][0]["function"]["arguments"]) == {"q": "filerur tank top",
                                                                                "shop_id": "2"}
    handles = Handles()
    compact_find_result(json.dumps(HITS), handles)
    assert handles.to_ids({"q": "x", "shop_id": "2"}) == {"q": "x", "shop_id": "8"}
    assert handles.to_ids({"q": "x", "shop_id": "5"}) == {"q": "x", "shop_id": "5"}  # never shown: unchanged
    assert handles.to_handles({"q": "x", "shop_id": "9", "product_ids": "333444"}) == {
        "q": "x", "shop_id": "1", "product_ids": "2"}


def test_compact_info_result_shows_options_and_attributes():
    handles = Handles()
    handles.add("111222")
    product = {"product_id": "111222", "title": "t", "description": "long " * 200,
               "sku_options": {"1": {"color_family": "Black"}, "2": {"color_family": "Black"}, "3": {"size": "XL"}},
               "attributes": {"material": ["cotton", "lycra"]}}
    assert compact_info_result(json.dumps([product]), handles) == (
        "1. options: color_family black; size xl | attributes: material cotton, lycra")
    bare = compact_info_result(json.dumps([{"product_id": "9"}]), handles)
    assert bare == "2. options: none | attributes: none"


def test_compact_think_uses_handles_and_is_idempotent():
    handles = Handles()
    handles.add("111222")
    handles.add("333444")
    think = ("Item 1: need size. View 111222, 333444.\n111222: price 663 in 386-911 yes; words yes\n"
             "999999: price 1 no; words no\nChoose 111222.")
    out = compact_think(think, handles)
    assert out == "Item 1: need size. View 1, 2.\n1: price yes; words yes\nChoose 1."
    assert compact_think(out, handles) == out


def test_view_messages_full_is_identity_and_compact_rewrites():
    r = row()
    assert view_messages(r["messages"], "full") == r["messages"]
    compact = view_messages(r["messages"], "compact")
    assert compact[0]["content"] == COMPACT_SYSTEM_PROMPT
    assert compact[3]["content"].startswith("1. title: Zesenu Tank Top")
    assert compact[4]["reasoning_content"].endswith("Choose 1.")
    assert json.loads(compact[4]["tool_calls"][0]["function"]["arguments"]) == {"product_ids": "1"}
    assert r["messages"][0]["content"] == "long system prompt"  # input untouched
    assert "111222" in r["messages"][4]["tool_calls"][0]["function"]["arguments"]


def test_sft_example_normalises_arguments_like_tojson():
    ex = sft_example(row(), "full")
    call = ex["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert call == '{"q": "zesenu tank top", "price": "386-911"}'  # json.dumps spacing, as tojson renders dicts
    assert set(ex["messages"][1]) == {"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"}
    assert json.loads(sft_example(row(), "compact")["tools"]) == []
    assert tojson_arguments("not json") == "not json"


def test_bad_rows_fail_clearly():
    with pytest.raises(DatasetError, match="r9"):
        sft_example({"id": "r9", "messages": "{not json", "tools": "[]"}, "full")
    with pytest.raises(DatasetError, match="no assistant"):
        sft_example({"id": "r8", "messages": [{"role": "user", "content": "hi"}], "tools": "[]"}, "full")
    with pytest.raises(DatasetError, match="boolean label"):
        kto_examples(row("r7"), "full")


def test_kto_examples_one_per_assistant_turn():
    exs = kto_examples(row("k1", label=True), "compact")
    assert [len(e["prompt"]) for e in exs] == [2, 4]
    assert all(e["label"] is True and e["completion"][0]["role"] == "assistant" for e in exs)


def test_balanced_kto_weights_follow_trl_band():
    d, u = balanced_kto_weights(10, 40)
    assert (d, u) == (4.0, 1.0)
    d, u = balanced_kto_weights(30, 10)
    assert (d, u) == (1.0, 3.0)
    for nd, nu in [(10, 40), (30, 10), (7, 7)]:
        d, u = balanced_kto_weights(nd, nu)
        assert 1.0 <= d * nd / (u * nu) <= 4 / 3


def test_step_reward_components():
    teacher = {"think": "", "tool_calls": [{"name": "find_product", "arguments": {"q": "red shirt", "price": "1-9"}}]}
    perfect = '<think>\nok\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "red shirt", "price": "1-9"}}\n</tool_call>'
    assert step_reward(perfect, json.dumps(teacher), "{}") == pytest.approx(2.0)  # format 1 + match 1
    half = '<think>\nok\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": {"q": "red shirt"}}\n</tool_call>'
    # name 1, keys 1/2, values 1/2 -> match 2/3
    assert step_reward(half, teacher, None) == pytest.approx(1.0 + 2 / 3)
    assert step_reward("no call at all", teacher, None) == 0.0
    rec_teacher = {"tool_calls": [{"function": {"name": "recommend_product", "arguments": '{"product_ids": "7"}'}}]}
    rec = '<think>\nx\n</think>\n\n<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "7"}}\n</tool_call>'
    assert step_reward(rec, rec_teacher, json.dumps({"ground_truth_ids": ["7"]})) == pytest.approx(3.0)
    assert call_match([], []) == 0.0


def test_version_changes_with_inputs_config_and_parent():
    v = stage_version({"sft": "a"}, {"lr": 1}, "p")
    assert v == stage_version({"sft": "a"}, {"lr": 1}, "p")
    assert len({v, stage_version({"sft": "b"}, {"lr": 1}, "p"), stage_version({"sft": "a"}, {"lr": 2}, "p"),
                stage_version({"sft": "a"}, {"lr": 1}, "q")}) == 4


def test_view_policy_transforms_what_the_inner_policy_sees_and_maps_handles_back():
    from oro_assets.arena.episode import ToolCall, Turn

    seen = {}

    class Inner:
        name = "inner"

        def act(self, problem_view, messages, tools):
            seen["messages"], seen["tools"] = messages, tools
            return Turn(think="Choose 2.", tool_calls=[
                ToolCall("recommend_product", {"product_ids": "2"}),
                ToolCall("view_product_information", {"product_ids": "1, 7"}),  # 7 was never shown
                ToolCall("find_product", {"q": "2"}),
                ToolCall("find_product", {"q": "top", "shop_id": "2"})])

    pol = ViewPolicy(Inner(), "compact")
    assert pol.name == "inner"
    turn = pol.act({"problem_id": "p", "query": "q"}, row()["messages"][:4], [{"type": "function"}])
    assert seen["tools"] == [] and seen["messages"][0]["content"] == COMPACT_SYSTEM_PROMPT
    assert [c.arguments for c in turn.tool_calls] == [
        {"product_ids": "333444"}, {"product_ids": "111222,7"}, {"q": "2"}, {"q": "top", "shop_id": "8"}]
    full = ViewPolicy(Inner(), "full").act({}, row()["messages"][:4], [{"type": "function"}])
    assert full.tool_calls[0].arguments == {"product_ids": "2"}


def test_grpo_targets_follow_the_prompt_handles():
    from oro_assets.training.stages import grpo_targets

    r = row()
    prompt, step = r["messages"][:4], r["messages"][4]
    tn = {"think": step["reasoning_content"], "tool_calls": step["tool_calls"]}
    got_tn, got_spec = grpo_targets(prompt, json.dumps(tn), json.dumps({"ground_truth_ids": ["111222"]}), "compact")
    assert json.loads(json.loads(got_tn)["tool_calls"][0]["function"]["arguments"]) == {"product_ids": "1"}
    assert json.loads(got_spec)["ground_truth_ids"] == ["1"]
    assert json.loads(got_spec)["id_map"]["1"] == "111222"  # handles map back for production-strict scoring
    rec = '<think>\nx\n</think>\n\n<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "1"}}\n</tool_call>'
    assert step_reward(rec, got_tn, got_spec) == pytest.approx(3.0)
    full_tn, full_spec = grpo_targets(prompt, tn, {"ground_truth_ids": ["111222"]}, "full")
    assert json.loads(full_spec) == {"ground_truth_ids": ["111222"]}


def _catalogue():
    from oro_assets.arena.catalogue import Catalogue

    def product(pid, shop, title, price):
        return {"product_id": pid, "shop_id": shop, "brand": "", "category": "A > B > C", "title": title,
                "short_description": "", "description": "", "specification": "", "price": float(price),
                "sold_count": 0, "sku_options": {}, "attributes": {}, "service": []}

    return Catalogue([product("100", "S1", "Green Tea Tin", 50), product("200", "S1", "Green Tea Tin", 80),
                      product("300", "S2", "Green Tea Tin", 60), product("400", "S1", "Black Coffee Bag", 40)])


def _recommend(ids: str) -> str:
    return ('<think>\nx\n</think>\n\n<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "'
            + ids + '"}}\n</tool_call>')


def test_outcome_is_production_strict_success_when_the_catalogue_is_given():
    from oro_assets.arena.problems import scoring_spec

    teacher = {"tool_calls": [{"name": "recommend_product", "arguments": {"product_ids": "100"}}]}
    # ground truth 100; 200 is another product meeting every constraint (title, price < 90)
    product = scoring_spec({"problem_id": "p", "query": "green tea", "category": "Product",
                            "reward": {"product_id": "100", "title": ["Green Tea Tin"], "price": [{"less than": [None, 90]}]}})
    cat = _catalogue()
    # completion identical to the teacher: format 1 + match 1 + outcome 1
    assert step_reward(_recommend("100"), teacher, json.dumps(product), catalogue=cat) == pytest.approx(3.0)
    # not the ground-truth id but rule 2/2 -> success -> outcome 1 (match: name 1, keys 1, value 0 -> 2/3)
    assert step_reward(_recommend("200"), teacher, json.dumps(product), catalogue=cat) == pytest.approx(1 + 2 / 3 + 1)
    # without the catalogue only the exact ids count
    assert step_reward(_recommend("200"), teacher, json.dumps(product)) == pytest.approx(1 + 2 / 3)
    # Shop: both items right by title but from two shops -> not a success
    shop = scoring_spec({"problem_id": "s", "query": "q", "category": "Shop", "reward": [
        {"product_id": "100", "title": ["Green Tea Tin"]}, {"product_id": "400", "title": ["Black Coffee Bag"]}]})
    shop_teacher = {"tool_calls": [{"name": "recommend_product", "arguments": {"product_ids": "100,400"}}]}
    assert step_reward(_recommend("300,400"), shop_teacher, shop, catalogue=cat) == pytest.approx(1 + 2 / 3)
    assert step_reward(_recommend("200,400"), shop_teacher, shop, catalogue=cat) == pytest.approx(1 + 2 / 3 + 1)


def test_outcome_reads_an_older_bare_reward_for_its_ids():
    teacher = {"tool_calls": [{"name": "recommend_product", "arguments": {"product_ids": "100"}}]}
    bare = json.dumps({"product_id": "100", "title": ["Green Tea Tin"]})
    assert step_reward(_recommend("100"), teacher, bare) == pytest.approx(3.0)
    assert step_reward(_recommend("100"), teacher, json.dumps([{"product_id": "100"}])) == pytest.approx(3.0)
