"""ShareGPT / NeMo ``conversations`` rows normalise into the canonical schema the OpenAI rows give; what
cannot be read gets a reason code, never an exception of another kind."""

from __future__ import annotations

import hashlib
import json

import pytest

from oro_assets.reasons import ReasonCode
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.samples import openai_row
from oro_assets.traces.schema import Provenance, validate_row

PROV = Provenance("part-00000.jsonl", 1, "2026-01-02", hashlib.sha256(b"x").hexdigest())


def normalize(obj) -> dict:
    return normalize_record(obj, provenance=PROV)


def call_json(call: dict) -> str:
    return json.dumps({"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])})


def as_sharegpt(row: dict) -> dict:
    """ShareGPT with a system turn, human/gpt/tool, Qwen3 ``<tool_call>`` text and Hermes
    ``<tool_response>`` blocks (every result of a turn in one tool turn)."""
    conv: list[dict] = []
    for m in row["messages"]:
        if m["role"] == "system":
            conv.append({"from": "system", "value": m["content"]})
        elif m["role"] == "user":
            conv.append({"from": "human", "value": m["content"]})
        elif m["role"] == "assistant":
            think = f"<think>\n{m['reasoning_content']}\n</think>\n\n" if m.get("reasoning_content") else ""
            blocks = "".join(f"\n<tool_call>\n{call_json(c)}\n</tool_call>" for c in m["tool_calls"])
            conv.append({"from": "gpt", "value": think + m["content"] + blocks})
        elif conv[-1]["from"] == "tool":
            conv[-1]["value"] += f"\n<tool_response>\n{m['content']}\n</tool_response>"
        else:
            conv.append({"from": "tool", "value": f"<tool_response>\n{m['content']}\n</tool_response>"})
    return {"conversations": conv, "tools": row["tools"], "problem_id": row["problem_id"]}


def as_nemo(row: dict) -> dict:
    """NeMo: the system prompt as a field, User/Assistant turns, each call a ``function_call`` turn,
    each result an ``observation`` turn."""
    conv: list[dict] = []
    system = None
    for m in row["messages"]:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "user":
            conv.append({"from": "User", "value": m["content"]})
        elif m["role"] == "assistant":
            think = f"<think>{m['reasoning_content']}</think>" if m.get("reasoning_content") else ""
            conv.append({"from": "Assistant", "value": think + m["content"]})
            conv += [{"from": "function_call", "value": call_json(c)} for c in m["tool_calls"]]
        else:
            conv.append({"from": "observation", "value": m["content"]})
    return {"system": system, "conversations": conv, "mask": "User", "tools": row["tools"],
            "problem_id": row["problem_id"]}


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("layout", [as_sharegpt, as_nemo])
def test_the_same_dialogue_in_sharegpt_layouts_normalises_as_the_openai_row(seed, layout):
    row = openai_row(seed)
    assert any(len(m.get("tool_calls") or []) > 0 for m in row["messages"])
    want = normalize(row)
    got = normalize(layout(row))
    assert got["format"] == "sharegpt" and want["format"] == "openai_messages"
    assert validate_row(got) == []
    for key in ("messages", "steps", "tools", "problem_id", "query", "n_steps", "n_tool_calls"):
        assert got[key] == want[key], key


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
