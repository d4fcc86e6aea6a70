"""Issue 33 (session 21): the normaliser's fast paths give what the general ones give.

Expected values are written out by hand from the documented rules (traces/calls.py, normalize.py)."""

from __future__ import annotations

import orjson

from oro_assets.traces.calls import attribute_calls
from oro_assets.traces.formats import inference_evidence
from oro_assets.traces.normalize import normalize_record
from oro_assets.traces.schema import Provenance

PROV = Provenance("part-0.jsonl", 1, "2026-03-01", "ab" * 32)


def _names(windows):
    return [[c["n"] for c in w] for w in windows]


def test_calls_listed_out_of_time_order_are_sorted_within_their_step():
    listed = [[{"timestamp": 95, "n": "late"}, {"timestamp": 60, "n": "early"}, {"n": "unstamped"}],
              [{"timestamp": 150, "n": "b"}], [{"timestamp": 250, "n": "d"}, {"timestamp": 205, "n": "c"}]]
    windows, note = attribute_calls([100, 200, 300], listed)
    # an unstamped call sorts as time 0: first in its own step
    assert _names(windows) == [["unstamped", "early", "late"], ["b"], ["c", "d"]]
    assert note == "calls attributed by step stamps; 1 call(s) without an integer timestamp left on their listed step"


def test_calls_in_time_order_keep_their_order_and_equal_stamps_stay_stable():
    listed = [[{"timestamp": 50, "n": "a"}, {"timestamp": 50, "n": "b"}, {"timestamp": 400, "n": "z"}], []]
    windows, note = attribute_calls([100, 200], listed)
    assert _names(windows) == [["a", "b"], ["z"]]
    assert note == ("calls attributed by step stamps; 1 call(s) ended after the last step's stamp "
                    "(given to the last step)")
    # a bool is not a stamp
    windows, note = attribute_calls([100, 200], [[{"timestamp": True, "n": "t"}], [{"timestamp": 150, "n": "u"}]])
    assert _names(windows) == [["t"], ["u"]] and "1 call(s) without an integer timestamp" in note


def test_an_inference_call_without_a_body_gives_empty_evidence():
    call = {"kind": "summary", "path": "/inference/chat/completions", "timestamp": 7, "status_code": 200,
            "response_truncated": True, "response_length": 2778}
    assert inference_evidence(call) == {
        "completion_tokens": None, "tool_call_names": [], "tool_calls": [], "answer_shape": "none", "cut": False,
        "content": "", "status_code": 200, "truncated": True, "dropped": True, "response_length": 2778,
        "timestamp": 7}
    # a null body is not a dropped one; out-of-range numbers are not kept
    call = {"path": "/inference", "response": None, "status_code": 2**64, "response_length": -1, "timestamp": "x"}
    assert inference_evidence(call) == {
        "completion_tokens": None, "tool_call_names": [], "tool_calls": [], "answer_shape": "none", "cut": False,
        "content": "", "status_code": None, "truncated": False, "dropped": False, "response_length": None,
        "timestamp": None}


def test_oro_step_calls_take_parameters_arguments_and_results_as_written():
    step = {"completion": {"message": {"think": "t", "tool_call": [
        {"name": "find_product", "parameters": {"q": "shirt"}, "result": [{"product_id": "7", "title": "S"}]},
        {"name": "view_product_information", "arguments": '{"product_ids": "7"}', "result": "plain text"},
        {"name": "terminate", "parameters": None},
        {"name": "recommend_product", "parameters": "not json", "result": {"product_id": 9}},
    ]}}, "extra_info": {"timestamp": 10}}
    row = normalize_record({"dialogue": [step]}, provenance=PROV)
    messages = orjson.loads(row["messages"])
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "tool"]
    calls = messages[0]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_1_0", "call_1_1", "call_1_2", "call_1_3"]
    assert [c["function"]["arguments"] for c in calls] == ['{"q":"shirt"}', '{"product_ids":"7"}', "{}", "not json"]
    assert [(m["tool_call_id"], m["content"]) for m in messages[1:]] == [
        ("call_1_0", '[{"product_id":"7","title":"S"}]'), ("call_1_1", "plain text"),
        ("call_1_3", '{"product_id":9}')]
    ev = orjson.loads(row["steps"])[0]["tool_calls"]
    assert [e["result_product_ids"] for e in ev] == [["7"], [], [], ["9"]]
    assert row["n_tool_calls"] == 4
