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
    ViewPolicy,
    compact_find_result,
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


def test_compact_find_result_puts_id_after_fields():
    text = compact_find_result(json.dumps(HITS))
    assert text.splitlines() == ["1. title: Zesenu Tank Top | price: 663 | id: 111222",
                                 "2. title: Filerur Tank Top | price: 435.5 | id: 333444"]
    assert compact_find_result("[]") == "no results"


def test_compact_think_names_candidates_by_rank_and_is_idempotent():
    think = "111222: price 663 in 386-911 yes; words yes\n999999: price 1 no; words no\nChoose 111222."
    out = compact_think(think, ["111222", "333444"])
    assert out == "1: price yes; words yes\nChoose 1."
    assert compact_think(out, ["111222", "333444"]) == out


def test_view_messages_full_is_identity_and_compact_rewrites():
    r = row()
    assert view_messages(r["messages"], "full") == r["messages"]
    compact = view_messages(r["messages"], "compact")
    assert compact[0]["content"] == COMPACT_SYSTEM_PROMPT
    assert compact[3]["content"].startswith("1. title: Zesenu Tank Top")
    assert compact[4]["reasoning_content"].endswith("Choose 1.")
    assert r["messages"][0]["content"] == "long system prompt"  # input untouched


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


def test_view_policy_transforms_what_the_inner_policy_sees():
    seen = {}

    class Inner:
        name = "inner"

        def act(self, problem_view, messages, tools):
            seen["messages"], seen["tools"] = messages, tools
            return "turn"

    pol = ViewPolicy(Inner(), "compact")
    assert pol.name == "inner"
    assert pol.act({"problem_id": "p", "query": "q"}, row()["messages"], [{"type": "function"}]) == "turn"
    assert seen["tools"] == [] and seen["messages"][0]["content"] == COMPACT_SYSTEM_PROMPT
