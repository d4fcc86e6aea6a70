"""The episode loop: message/dialogue rendering, ORO ids, stopping rules, time and truncation."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.episode import (
    SimClock,
    ToolCall,
    Turn,
    oro_tool_call_id,
    run_episode,
)

PRODUCTS = [
    {"product_id": "101", "shop_id": "s1", "title": "Red Cotton Shirt", "price": 45.0, "service": ["COD"],
     "sold_count": 10, "sku_options": {"1": {"size": "m"}}, "attributes": {"material": ["cotton"]}},
    {"product_id": "102", "shop_id": "s2", "title": "Red Silk Shirt", "price": 90.0, "service": [],
     "sold_count": 5, "sku_options": {}, "attributes": {}},
    {"product_id": "103", "shop_id": "s1", "title": "Blue Denim Jeans", "price": 60.0, "service": ["official"],
     "sold_count": 7, "sku_options": {}, "attributes": {}},
]
PROBLEM = {"problem_id": "pb1", "query": "a red shirt under 50", "category": "Product",
           "reward": {"product_id": "101", "title": ["Red Cotton Shirt"], "price": [{"less than": [None, 50]}]}}


class Script:
    """A policy that plays a fixed list of turns (and records what it was shown)."""

    name = "script"

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)
        self.seen: list[list[dict]] = []

    def act(self, problem_view: dict, messages: list[dict], tools: list[dict]) -> Turn:
        assert set(problem_view) == {"problem_id", "query"}
        self.seen.append([dict(m) for m in messages])
        if not self.turns:
            raise RuntimeError("script exhausted")
        return self.turns.pop(0)


def _env() -> InProcessEnv:
    return InProcessEnv(Catalogue([dict(p) for p in PRODUCTS]))


def _full_script() -> list[Turn]:
    resp = {"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 40, "total_tokens": 50}}
    return [
        Turn("look for red shirts", [ToolCall("find_product", {"q": "red shirt"})], inference=[resp]),
        Turn("101 is 45, 102 is 90", [ToolCall("recommend_product", {"product_ids": " 101, 101 ,102"})]),
        Turn("done", [ToolCall("terminate", {"status": "success"})]),
        Turn("never reached", [ToolCall("terminate", {"status": "success"})]),
    ]


def test_oro_tool_call_id_matches_hand_computation():
    params = {"q": "red shirt"}
    raw = base64.urlsafe_b64encode(hashlib.md5(b"find_product\n{'q': 'red shirt'}").digest()).decode()
    expected = raw.replace("=", "").replace("+", "").replace("/", "")[:8]
    assert oro_tool_call_id("find_product", params) == expected
    assert len(expected) == 8
    # identical calls collide on purpose (ORO ids are not unique in a dialogue)
    assert oro_tool_call_id("find_product", {"q": "red shirt"}) == expected


def test_episode_messages_and_stop_on_terminate():
    policy = Script(_full_script())
    ep = run_episode(policy, PROBLEM, _env(), clock=SimClock(1_000_000))
    assert ep.status == "success" and ep.error is None
    assert len(ep.steps) == 3  # the 4th turn is never requested
    msgs = ep.to_messages()
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "tool"]
    assert msgs[1]["content"] == "a red shirt under 50"
    call = msgs[2]["tool_calls"][0]
    assert call["id"] == "call_1_0" and call["type"] == "function"
    assert json.loads(call["function"]["arguments"]) == {"q": "red shirt"}
    assert msgs[2]["reasoning_content"] == "look for red shirts"
    assert msgs[3]["tool_call_id"] == "call_1_0" and msgs[3]["name"] == "find_product"
    found = json.loads(msgs[3]["content"])
    assert {r["product_id"] for r in found} == {"101", "102"}  # BM25 hits for "red shirt"
    assert msgs[4]["tool_calls"][0]["id"] == "call_2_0"
    # the policy saw the conversation grow: 2 messages first, then 4, then 6
    assert [len(s) for s in policy.seen] == [2, 4, 6]
    assert ep.recommended_ids() == ["101", "102"]


def test_oro_dialogue_shape_and_harness_content():
    ep = run_episode(Script(_full_script()), PROBLEM, _env(), clock=SimClock(1_000_000))
    dialogue = ep.to_oro_dialogue()
    first = dialogue[0]
    # agent_interface.format_content: stdlib json.dumps (", " and ": "), tags only for non-empty parts
    assert first["completion"]["content"] == (
        '<think>look for red shirts</think>\n<tool_call>[{"name": "find_product", "parameters": {"q": "red shirt"}}]'
        "</tool_call>"
    )
    assert dialogue[2]["completion"]["content"].endswith("</tool_call>")
    msg = first["completion"]["message"]
    assert msg["think"] == "look for red shirts"
    assert msg["tool_call"][0]["tool_call_id"] == oro_tool_call_id("find_product", {"q": "red shirt"})
    assert isinstance(msg["tool_call"][0]["result"], list)
    info = first["extra_info"]
    assert list(info)[:4] == ["step", "query", "timestamp", "problem_id"]
    assert info["step"] == 1 and info["problem_id"] == "pb1" and info["query"] == PROBLEM["query"]
    assert info["execution_time"] == ep.execution_time  # on the first step only
    assert all("execution_time" not in s["extra_info"] for s in dialogue[1:])
    paths = [p["path"] for p in info["proxy_calls"]]
    assert paths == ["/inference/chat/completions", "/search/find_product"]
    assert info["proxy_calls"][0]["json_data"] == {"model": "unknown", "temperature": 0.0, "stream": False}
    search = info["proxy_calls"][1]
    assert search["method"] == "GET" and search["params"] == {"q": "red+shirt", "page": 1}
    assert "json_data" not in search
    stamps = [s["extra_info"]["timestamp"] for s in dialogue]
    assert stamps == sorted(stamps) and stamps[0] > 1_000_000
    for p in info["proxy_calls"]:  # a call's timestamp is its end: before the step that made it is stamped
        assert 1_000_000 < p["timestamp"] <= stamps[0]
    # recommend / terminate make no proxy call: a step without calls has no proxy_calls key at all
    assert "proxy_calls" not in dialogue[1]["extra_info"] and "proxy_calls" not in dialogue[2]["extra_info"]


def test_episode_is_deterministic_with_sim_clock():
    a = run_episode(Script(_full_script()), PROBLEM, _env(), clock=SimClock(5))
    b = run_episode(Script(_full_script()), PROBLEM, _env(), clock=SimClock(5))
    assert json.dumps(a.to_oro_dialogue()) == json.dumps(b.to_oro_dialogue())
    assert a.execution_time == b.execution_time > 0


def test_crash_timeout_and_no_calls():
    crash = run_episode(Script([]), PROBLEM, _env(), clock=SimClock(0))
    assert crash.status == "failed"
    assert crash.error == {"type": "RuntimeError", "message": "script exhausted"}
    assert crash.steps == []

    stall = Turn("thinking hard", [ToolCall("find_product", {"q": "shirt"})], meta={"stall_ms": 301_000})
    slow = run_episode(Script([stall, *_full_script()]), PROBLEM, _env(), clock=SimClock(0), timeout_s=300)
    assert slow.status == "timed_out" and slow.error["type"] == "TimeoutError"
    assert len(slow.steps) == 1

    stop = run_episode(Script([Turn("I think the answer is 101", [])]), PROBLEM, _env(), clock=SimClock(0))
    assert stop.status == "success" and len(stop.steps) == 1 and stop.recommended_ids() == []

    loop = [Turn("again", [ToolCall("find_product", {"q": "shirt"})]) for _ in range(10)]
    capped = run_episode(Script(loop), PROBLEM, _env(), clock=SimClock(0), max_steps=4)
    assert len(capped.steps) == 4


def test_unparseable_and_bad_calls_become_error_results():
    bad = ToolCall("recommend_product", {}, raw_arguments="product_ids=101")
    ep = run_episode(Script([Turn("x", [bad]), Turn("y", [ToolCall("nope", {})])]), PROBLEM, _env(),
                     clock=SimClock(0), max_steps=2)
    assert ep.recommended_ids() == []  # unparseable recommend arguments recommend nothing
    msgs = ep.to_messages()
    assert msgs[2]["tool_calls"][0]["function"]["arguments"] == "product_ids=101"
    assert json.loads(msgs[3]["content"]).startswith("Error")
    assert ep.to_oro_dialogue()[0]["completion"]["message"]["tool_call"][0]["parameters"] == "product_ids=101"
    assert json.loads(msgs[5]["content"]).startswith("Error")  # unknown tool


def test_retries_inside_a_request_leave_one_summary_and_failed_requests_their_own():
    resp = {"id": "c", "choices": [], "usage": {"completion_tokens": 5}}
    turn = Turn("t", [ToolCall("terminate", {"status": "success"})], inference=[resp],
                meta={"retries": [429], "failed_calls": [502]})
    ep = run_episode(Script([turn]), PROBLEM, _env(), clock=SimClock(0))
    calls = ep.to_oro_dialogue()[0]["extra_info"]["proxy_calls"]
    # attempt entries are removed before the envelope is written; a failed request keeps no body
    assert [(c["kind"], c["status_code"], "response" in c) for c in calls] == [("summary", 502, False),
                                                                               ("summary", 200, True)]
    assert ep.inference_failure_count == 1 and ep.inference_total == 2


@pytest.mark.parametrize(("value", "ids"), [(None, []), ("", []), (5, ["5"]), (["a1", "a2, a1"], ["a1", "a2"]),
                                           ({"x": 1}, [])])
def test_recommended_ids_are_what_the_tool_accepted(value, ids):
    # the same ORO id parsing as the scorer: a number or a list the tool accepts is recorded, not lost
    ep = run_episode(Script([Turn("r", [ToolCall("recommend_product", {"product_ids": value})])]), PROBLEM,
                     _env(), clock=SimClock(0), max_steps=1)
    assert ep.recommended_ids() == ids


def test_terminate_needs_a_valid_status_and_a_refused_one_does_not_end_the_episode():
    bad = Turn("t", [ToolCall("terminate", {"status": "maybe"})])
    good = Turn("t", [ToolCall("terminate", {"status": "failure"})])
    ep = run_episode(Script([bad, good]), PROBLEM, _env(), clock=SimClock(0), max_steps=5)
    results = [c.result for s in ep.steps for c in s.calls]
    assert results[0].startswith("Error: terminate needs status") and len(ep.steps) == 2
