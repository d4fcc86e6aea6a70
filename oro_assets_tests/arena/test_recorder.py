"""ORO's recording rules (arena/recorder.py), checked against values worked out by hand from ORO's
code (ORO-AI/oro at a6b1cf3: proxy_client.RequestLog, agent_interface, sandbox_executor)."""

from __future__ import annotations

import json

from oro_assets.arena import recorder
from oro_assets.arena.answers import render_answer
from oro_assets.arena.catalogue import Catalogue
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.episode import SimClock, ToolCall, Turn, run_episode
from oro_assets.traces.calls import answer_calls, attribute_calls, canonical_arguments


def test_log_entry_keeps_small_bodies_and_drops_large_ones_whole():
    small = recorder.ProxyEvent("GET", "/search/find_product", 1000, 12.345, 200,
                                params={"q": "red+shirt", "page": 1, "shop_id": None}, body=[{"product_id": 7}])
    entry = recorder.log_entry(small)
    assert entry == {"kind": "summary", "method": "GET", "path": "/search/find_product", "timestamp": 1000,
                     "duration_ms": 12.3, "status_code": 200, "params": {"q": "red+shirt", "page": 1},
                     "response": [{"product_id": 7}]}
    big_body = [{"product_id": i, "title": "é" * 100} for i in range(10)]  # ensure_ascii: each é is 6 chars
    big = recorder.log_entry(recorder.ProxyEvent("GET", "/search/find_product", 5, 1.0, 200, params={"q": "x"},
                                                 body=big_body))
    assert "response" not in big and big["response_truncated"] is True
    assert big["response_length"] == len(json.dumps(big_body))
    assert big["result_product_ids"] == [str(i) for i in range(10)]
    inference = recorder.log_entry(recorder.ProxyEvent(
        "POST", recorder.INFERENCE_PATH, 9, 3800.0, 200,
        json_data={"model": "m", "temperature": 0.0, "messages": [{"role": "user"}], "stream": False},
        body={"choices": [{"message": {"content": "x" * 2100}}]}))
    assert inference["json_data"] == {"model": "m", "temperature": 0.0, "stream": False}
    assert "response" not in inference and "result_product_ids" not in inference
    failed = recorder.log_entry(recorder.ProxyEvent("POST", recorder.INFERENCE_PATH, 9, 10.0, None,
                                                    json_data={"model": "m"}))
    assert failed["status_code"] is None and "response" not in failed and "response_truncated" not in failed


def test_search_params_follow_the_reference_tools():
    assert recorder.search_params("find_product", {"q": "hosport waist bag", "sort": "default",
                                                   "service": "default,COD"}) == {
        "q": "hosport+waist+bag", "page": 1, "shop_id": None, "price": None, "service": "COD"}
    assert recorder.search_params("view_product_information", {"product_ids": "1,2"}) == {"product_ids": "1,2"}


def _step(n: int, ts: int) -> dict:
    return recorder.dialogue_step("t", [], "", "q", n, ts)


def test_bucketing_gives_each_call_to_the_last_step_stamped_at_or_before_it():
    dialogue = [_step(1, 100), _step(2, 200), _step(3, 300)]
    calls = [{"kind": "summary", "timestamp": ts, "id": ts} for ts in (50, 99, 100, 150, 200, 250, 301)]
    calls.append({"kind": "attempt", "timestamp": 120})
    recorder.bucket_calls(dialogue, calls)
    got = [[c["id"] for c in s["extra_info"].get("proxy_calls", [])] for s in dialogue]
    # before step 1 -> step 1; [100, 200) -> step 1; [200, 300) -> step 2; >= 300 -> step 3; attempts removed
    assert got == [[50, 99, 100, 150], [200, 250], [301]]


def test_envelope_completes_steps_and_a_dialogue_over_64_kib_times_out():
    steps = [recorder.dialogue_step("think", [{"name": "terminate", "parameters": {}, "tool_call_id": "x",
                                               "result": "done"}], "", "q", 1, 500)]
    del steps[0]["extra_info"]["timestamp"]
    env = recorder.format_envelope(problem_id="p", query="q", status="success", dialogue=steps, events=[],
                                   execution_time=4.5, inference_failure_count=0, inference_total=1, error=None,
                                   written_ms=777)
    assert env["status"] == "SUCCESS" and env["error"] is None
    assert env["dialogue"][0]["extra_info"] == {"step": 1, "query": "q", "timestamp": 777, "problem_id": "p",
                                                "execution_time": 4.5}
    huge = [recorder.dialogue_step("x" * 70_000, [], "", "q", 1, 1)]
    timed = recorder.format_envelope(problem_id="p", query="q", status="success", dialogue=huge, events=[],
                                     execution_time=10.0, inference_failure_count=0, inference_total=1, error=None)
    assert timed["status"] == "TIMED_OUT" and timed["dialogue"] is None
    assert timed["error"] == {"type": "TimeoutError", "message": "Execution exceeded timeout of 300.0s"}


def test_message_holds_only_non_empty_parts_and_content_uses_stdlib_json():
    step = recorder.dialogue_step("", [{"name": "find_product", "parameters": {"q": "a"}, "tool_call_id": "i",
                                        "result": []}], "ok", "q", 2, 9)
    assert set(step["completion"]["message"]) == {"tool_call", "response"}
    assert step["completion"]["content"] == ('<tool_call>[{"name": "find_product", "parameters": {"q": "a"}}]'
                                             "</tool_call>\n<response>ok</response>")


def _structured(think: str, calls: list[tuple[str, dict]]) -> dict:
    return {"id": "c1", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "", "reasoning_content": think,
        "tool_calls": [{"id": f"t{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                       for i, (n, a) in enumerate(calls)]}}], "usage": {"prompt_tokens": 1, "completion_tokens": 9}}


def test_answer_shapes_render_as_the_agents_parse_them():
    resp = _structured("compare", [("find_product", {"q": "red shirt"}), ("terminate", {"status": "success"})])
    text = render_answer(resp, "text_array")["choices"][0]["message"]
    assert text["content"] == ('<think>compare</think>\n<tool_call>[{"name": "find_product", "parameters": '
                               '{"q": "red shirt"}}, {"name": "terminate", "parameters": {"status": "success"}}]'
                               "</tool_call>")
    assert "tool_calls" not in text and "reasoning_content" not in text
    qwen = render_answer(resp, "qwen3_object", null_tool_calls=True)["choices"][0]["message"]
    assert qwen["content"] == ('<think>\ncompare\n</think>\n\n<tool_call>\n{"name": "find_product", "arguments": '
                               '{"q": "red shirt"}}\n</tool_call>\n<tool_call>\n{"name": "terminate", "arguments": '
                               '{"status": "success"}}\n</tool_call>')
    assert qwen["tool_calls"] is None
    for shape in ("text_array", "qwen3_object", "structured"):
        calls, got_shape, cut = answer_calls(render_answer(resp, shape)["choices"][0]["message"])
        assert got_shape == shape and not cut
        assert calls == [{"name": "find_product", "arguments": {"q": "red shirt"}},
                         {"name": "terminate", "arguments": {"status": "success"}}]


def test_answer_calls_reads_cut_and_odd_blocks_without_crashing():
    cut, shape, was_cut = answer_calls({"content": '<think>a</think><tool_call>[{"name": "find_product", "param'})
    assert cut == [{"name": "find_product", "arguments": None}] and was_cut and shape == "text_array"
    one, shape, _ = answer_calls({"content": '<tool_call>{"name": "recommend_product", "parameters": "1,2"}'
                                             "</tool_call>"})
    assert one == [{"name": "recommend_product", "arguments": "1,2"}]  # arguments that are not an object stay text
    assert answer_calls({"content": "yes"}) == ([], "none", False)
    assert answer_calls({"content": "<tool_call>[1, 2]</tool_call>"}) == ([], "text_array", True)
    assert answer_calls("not a message") == ([], "none", False)


def test_canonical_arguments_drop_defaults_and_decode_the_query():
    assert canonical_arguments({"q": "Red+Shirt", "page": 1, "sort": "default", "price": None}) == {"q": "red shirt"}
    assert canonical_arguments('{"q": "red  shirt", "page": 2}') == {"q": "red shirt", "page": "2"}
    assert canonical_arguments("product_ids=1") == "product_ids=1"


def test_attribution_follows_stamps_and_says_when_it_cannot():
    listed = [[{"timestamp": 90, "n": "a"}, {"timestamp": 150, "n": "b"}], [{"timestamp": 210, "n": "c"}], []]
    windows, note = attribute_calls([100, 200, 300], listed)
    assert [[c["n"] for c in w] for w in windows] == [["a"], ["b"], ["c"]] and "stamps" in note
    windows, note = attribute_calls([100, None, 300], listed)
    assert "missing or not integer" in note
    windows, note = attribute_calls([300, 200, 100], listed)
    assert "out of order" in note
    windows, note = attribute_calls([100, 200, 300], [[{"timestamp": 5, "n": "a"}], [], []], run_started_ms=50)
    assert "before the run began" in note and windows[0][0]["n"] == "a"


PRODUCTS = [{"product_id": "101", "shop_id": "s1", "title": "Red Cotton Shirt", "price": 45.0, "service": [],
             "sold_count": 1, "sku_options": {}, "attributes": {}}]


class _Script:
    name = "script"

    def __init__(self, turns):
        self.turns = list(turns)

    def act(self, view, messages, tools):
        return self.turns.pop(0)


def test_auto_recommend_fallback_is_a_code_made_step_without_inference():
    problem = {"problem_id": "p", "query": "a red shirt"}
    turns = [Turn("search", [ToolCall("find_product", {"q": "red shirt"})],
                  inference=[_structured("search", [("find_product", {"q": "red shirt"})])]),
             Turn("hmm, let me think more", [])]
    ep = run_episode(_Script(turns), problem, InProcessEnv(Catalogue(PRODUCTS)), clock=SimClock(0),
                     answer_shape="text_array", auto_recommend=True)
    last = ep.steps[-1]
    assert last.code_made and last.think == "Auto-recommending best available candidates." and not last.events
    assert [c.name for c in last.calls] == ["recommend_product"] and last.calls[0].arguments == {"product_ids": "101"}
    dialogue = ep.to_oro_dialogue()
    assert dialogue[-1]["completion"]["message"]["think"] == "Auto-recommending best available candidates."
    assert "response" not in dialogue[-1]["completion"]["message"]
