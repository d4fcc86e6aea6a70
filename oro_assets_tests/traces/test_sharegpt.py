"""ShareGPT / NeMo ``conversations`` rows normalise into the canonical schema the OpenAI rows give; what
cannot be read gets a reason code, never an exception of another kind."""

from __future__ import annotations

import hashlib
import json

import pytest
from chat_layouts import as_nemo, as_nemo_rendered, as_sharegpt

from oro_assets.reasons import ReasonCode
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.samples import openai_row
from oro_assets.traces.schema import Provenance, validate_row

PROV = Provenance("part-00000.jsonl", 1, "2026-01-02", hashlib.sha256(b"x").hexdigest())


def normalize(obj) -> dict:
    return normalize_record(obj, provenance=PROV)


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("layout", [as_sharegpt, as_nemo, as_nemo_rendered])
def test_the_same_dialogue_in_sharegpt_layouts_normalises_as_the_openai_row(seed, layout):
    row = openai_row(seed)
    assert any(len(m.get("tool_calls") or []) > 0 for m in row["messages"])
    want = normalize(row)
    got = normalize(layout(row))
    assert got["format"] == "sharegpt" and want["format"] == "openai_messages"
    assert validate_row(got) == []
    keys = ["messages", "steps", "query", "n_steps", "n_tool_calls"]
    if layout is not as_nemo_rendered:  # a rendered dialogue carries neither tools nor problem id
        keys += ["tools", "problem_id"]
    for key in keys:
        assert got[key] == want[key], key


def test_a_user_turn_with_text_beside_a_tool_response_stays_a_user_turn():
    row = {"conversations": [
        {"from": "human", "value": "q"},
        {"from": "gpt", "value": '<tool_call>{"name": "find_product", "arguments": {"q": "q"}}</tool_call>'},
        {"from": "human", "value": "Here: <tool_response>[]</tool_response>"}]}
    msgs = json.loads(normalize(row)["messages"])
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]


def test_a_small_nemo_row_reads_as_written():
    row = {"system": "Shop well.", "conversations": [
        {"from": "User", "value": "red shoes"},
        {"from": "Assistant", "value": "<think>Search first.</think>Looking."},
        {"from": "function_call", "value": '{"name": "find_product", "arguments": {"q": "red shoes"}}'},
        {"from": "function_call", "value": '{"name": "find_product", "parameters": {"q": "red boots"}}'},
        {"from": "observation", "value": '[{"product_id": "11"}]'},
        {"from": "observation", "value": '[{"product_id": "12"}]'},
        {"from": "observation", "value": "late result"},
        {"from": "Assistant", "value": "Done."}]}
    got = normalize(row)
    assert json.loads(got["messages"]) == [
        {"role": "system", "content": "Shop well."},
        {"role": "user", "content": "red shoes"},
        {"role": "assistant", "content": "Looking.", "reasoning_content": "Search first.", "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "find_product", "arguments": '{"q":"red shoes"}'}},
            {"id": "call_1_1", "type": "function", "function": {"name": "find_product", "arguments": '{"q":"red boots"}'}}]},
        {"role": "tool", "tool_call_id": "call_1_0", "name": "find_product", "content": '[{"product_id": "11"}]'},
        {"role": "tool", "tool_call_id": "call_1_1", "name": "find_product", "content": '[{"product_id": "12"}]'},
        {"role": "tool", "tool_call_id": "orphan_1_5", "name": "", "content": "late result"},
        {"role": "assistant", "content": "Done.", "reasoning_content": None}]
    assert got["query"] == "red shoes" and got["n_tool_calls"] == 2
    steps = json.loads(got["steps"])
    assert [c["result_product_ids"] for c in steps[0]["tool_calls"]] == [["11"], ["12"]]


def test_a_bare_list_of_turns_and_role_content_keys():
    turns = [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]
    assert json.loads(normalize(turns)["messages"]) == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello", "reasoning_content": None}]
    keyed = {"conversations": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    assert normalize(keyed)["messages"] == normalize(turns)["messages"]


def test_a_cut_tool_call_block_stays_a_call_with_its_raw_text():
    row = {"conversations": [
        {"from": "human", "value": "q"},
        {"from": "gpt", "value": '<tool_call>\n{"name": "recommend_product", "arguments": {"product_ids": "1'}]}
    msg = json.loads(normalize(row)["messages"])[1]
    assert msg["content"] == ""
    assert msg["tool_calls"][0]["function"] == {
        "name": "recommend_product", "arguments": '{"name": "recommend_product", "arguments": {"product_ids": "1'}


@pytest.mark.parametrize("turn, words", [
    ({"from": "narrator", "value": "x"}, ["conversations[1].from", "'narrator'"]),
    ({"from": None, "value": "x"}, ["conversations[1].from", "NoneType"]),
    ({"from": "human", "value": {"text": "x"}}, ["conversations[1].value", "dict"]),
    ("just text", ["conversations[1]", "str"]),
])
def test_an_unreadable_turn_is_a_schema_violation_naming_it(turn, words):
    row = {"conversations": [{"from": "human", "value": "q"}, turn, {"from": "gpt", "value": "a"}]}
    with pytest.raises(NormalizationError) as err:
        normalize(row)
    assert err.value.reason is ReasonCode.SCHEMA_VIOLATION and err.value.format.value == "sharegpt"
    assert all(w in err.value.detail for w in words), err.value.detail


@pytest.mark.parametrize("row, reason", [
    ({"conversations": None}, ReasonCode.EMPTY_DIALOGUE),
    ({"conversations": []}, ReasonCode.EMPTY_DIALOGUE),
    ({"conversations": [{"from": "human", "value": "q"}]}, ReasonCode.EMPTY_DIALOGUE),
    ({"conversations": "human: q"}, ReasonCode.SCHEMA_VIOLATION),
    ({"system": 3, "conversations": [{"from": "gpt", "value": "a"}]}, ReasonCode.SCHEMA_VIOLATION),
])
def test_empty_or_mistyped_conversations(row, reason):
    with pytest.raises(NormalizationError) as err:
        normalize(row)
    assert err.value.reason is reason
