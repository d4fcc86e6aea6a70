"""Format detection and normalisation of hand-written records of the four raw formats (reference §2)."""

from __future__ import annotations

import copy
import hashlib

import orjson
import pytest

from oro_assets.reasons import ReasonCode
from oro_assets.traces import samples
from oro_assets.traces.formats import Format, detect_format
from oro_assets.traces.normalize import NormalizationError, normalize_record
from oro_assets.traces.schema import Provenance, validate_row

PROV = Provenance(source_file="mem://part-00000.jsonl", line_no=7, partition="2026-01-03", raw_sha256="ab" * 32)

FIND_RESULT = [
    {"product_id": "1001", "shop_id": "77", "title": "Red Running Shoes", "price": 39.9, "service": ["COD"],
     "sold_count": 120},
    {"product_id": "1002", "shop_id": "78", "title": "Red Trail Shoes", "price": 59.0, "service": [],
     "sold_count": 3},
]
VIEW_RESULT = [{"product_id": "1001", "short_description": "shoe", "sku_options": {"1": {"size": "42"}},
                "attributes": {"color": ["red"]}}]

# An inference body as the proxy logs it: the model itself emitted the find_product call.
INFERENCE_1 = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "x", "type": "function",
                        "function": {"name": "find_product", "arguments": "{\"q\": \"red shoes\"}"}}]}}],
    "usage": {"prompt_tokens": 900, "completion_tokens": 57, "total_tokens": 957},
}


def oro_steps() -> list[dict]:
    """Three ORO steps: search (twice, identical calls -> colliding ids), view, recommend + terminate."""
    return [
        {"completion": {"reasoning_content": "", "content": "<think>look for red shoes</think>\n<tool_call>..</tool_call>",
                        "message": {"think": "look for red shoes",
                                    "tool_call": [
                                        {"name": "find_product", "parameters": {"q": "red shoes"},
                                         "tool_call_id": "AAAAAAAA", "result": FIND_RESULT},
                                        {"name": "find_product", "parameters": {"q": "red shoes"},
                                         "tool_call_id": "AAAAAAAA", "result": FIND_RESULT}],
                                    "response": ""}},
         "extra_info": {"step": 1, "query": "red running shoes under 50", "timestamp": 1767400000000,
                        "problem_id": "p-1", "proxy_calls": [
                            {"kind": "attempt", "method": "POST", "path": "/inference/chat/completions",
                             "timestamp": 1767399999000, "status_code": 502},
                            {"kind": "summary", "method": "POST", "path": "/inference/chat/completions",
                             "timestamp": 1767399999500, "duration_ms": 800.0, "status_code": 200,
                             "json_data": {"model": "qwen3"}, "response": INFERENCE_1},
                            {"kind": "summary", "method": "POST", "path": "/search/find_product",
                             "timestamp": 1767399999900, "status_code": 200, "json_data": {"q": "red shoes"},
                             "response": '[{"product_id": "1001", "shop_id": "77", "tit', "response_truncated": True,
                             "response_length": 4100, "result_product_ids": ["1001", "1002"]}]}},
        # parameters as a JSON string; thinking only in completion.reasoning_content
        {"completion": {"reasoning_content": "1001 costs 39.9, check it", "content": "",
                        "message": {"think": "", "tool_call": [
                            {"name": "view_product_information", "parameters": "{\"product_ids\": \"1001\"}",
                             "tool_call_id": "BBBBBBBB", "result": VIEW_RESULT}], "response": ""}},
         "extra_info": {"step": 2, "timestamp": 1767400005000, "proxy_calls": [
             {"kind": "summary", "path": "/inference/chat/completions", "status_code": 200,
              "response": '{"id":"c2","choices":[{"index":0,"message":{"role":"assistant","content":"view it",'
                          '"tool_calls":[{"id":"y","type":"function","function":{"name":"view_product_inf',
              "response_truncated": True, "response_length": 2950}]}},
        # thinking only as <think> in content; recommend has no result (unpaired); missing timestamp
        {"completion": {"content": "<think>1001 is red and under 50</think>\n<tool_call>[]</tool_call>",
                        "message": {"tool_call": [
                            {"name": "recommend_product", "parameters": {"product_ids": "1001"},
                             "tool_call_id": "CCCCCCCC"},
                            {"name": "terminate", "parameters": {"status": "success"}, "tool_call_id": "DDDDDDDD",
                             "result": "terminated"}], "response": "I recommend 1001."}},
         "extra_info": {"step": 3, "timestamp": "soon", "proxy_calls": []}},
    ]


def envelope() -> dict:
    return {"problem_id": "p-1", "status": "success", "execution_time": 12.5, "inference_failure_count": 1,
            "inference_total": 3, "error": None, "dialogue": oro_steps(), "miner_hotkey": "5Fabc",
            "eval_run_id": "run-9", "query": "red running shoes under 50",
            "score": {"gt": 1.0, "rule": 1.0, "format": 1.0, "success": True},
            "reasoning": {"score": 0.7, "explanation": "Gate 4 failed", "model": "judge"}}


def norm(obj, **kw):
    return normalize_record(obj, provenance=kw.get("provenance", PROV))


def parsed(row):
    return orjson.loads(row["messages"]), orjson.loads(row["steps"])


def test_detect_each_format():
    assert detect_format(envelope()) is Format.ORO_ENVELOPE
    assert detect_format(oro_steps()) is Format.DIALOGUE_ONLY
    assert detect_format(samples.shoppingbench_rollout(1)) is Format.SHOPPINGBENCH_ROLLOUT
    assert detect_format({"steps": samples.shoppingbench_rollout(1)}) is Format.SHOPPINGBENCH_ROLLOUT
    assert detect_format(samples.openai_row(1)) is Format.OPENAI_MESSAGES
    for junk in (3, "x", None, {"foo": 1}, [1, 2], [{"foo": 1}]):
        assert detect_format(junk) is None


def test_oro_envelope_canonical_messages():
    row = norm(envelope())
    assert validate_row(row) == []
    assert (row["format"], row["problem_id"], row["query"], row["status"]) == (
        "oro_envelope", "p-1", "red running shoes under 50", "success")
    assert row["trace_id"] == "tr_" + "ab" * 12
    assert (row["source_file"], row["line_no"], row["partition"]) == ("mem://part-00000.jsonl", 7, "2026-01-03")
    msgs, _ = parsed(row)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool"]
    a1 = msgs[1]
    assert a1["reasoning_content"] == "look for red shoes"
    # colliding ORO ids are rewritten to unique ones and each result pairs with its own call
    assert [tc["id"] for tc in a1["tool_calls"]] == ["call_1_0", "call_1_1"]
    assert a1["tool_calls"][0]["function"] == {"name": "find_product", "arguments": '{"q":"red shoes"}'}
    assert [m["tool_call_id"] for m in msgs[2:4]] == ["call_1_0", "call_1_1"]
    assert orjson.loads(msgs[2]["content"]) == FIND_RESULT
    a2 = msgs[4]
    assert a2["reasoning_content"] == "1001 costs 39.9, check it"
    assert a2["tool_calls"][0]["function"]["arguments"] == '{"product_ids":"1001"}'  # string params, one form
    a3 = msgs[6]
    assert a3["reasoning_content"] == "1001 is red and under 50"
    assert a3["content"] == "I recommend 1001."
    # the recommend call has no result: no tool message answers call_3_0 (unpaired stays visible)
    assert [tc["id"] for tc in a3["tool_calls"]] == ["call_3_0", "call_3_1"]
    assert msgs[7] == {"role": "tool", "tool_call_id": "call_3_1", "name": "terminate", "content": "terminated"}
    assert row["n_steps"] == 3 and row["n_tool_calls"] == 5
    meta = orjson.loads(row["meta"])
    assert meta["miner_hotkey"] == "5Fabc" and meta["reasoning"]["score"] == 0.7 and meta["inference_total"] == 3
    assert row["error"] is None


def test_oro_step_evidence():
    _, steps = parsed(norm(envelope()))
    s1, s2, s3 = steps
    assert (s1["step"], s1["timestamp"], s3["timestamp"]) == (1, 1767400000000, None)
    # the attempt (retry) is skipped; the summary's usage and tool-call names are kept
    keys = ("completion_tokens", "tool_call_names", "tool_calls", "answer_shape", "content", "status_code",
            "truncated", "dropped")
    assert [{k: e[k] for k in keys} for e in s1["inference"]] == [
        {"completion_tokens": 57, "tool_call_names": ["find_product"], "answer_shape": "structured",
         "tool_calls": [{"name": "find_product", "arguments": {"q": "red shoes"}}], "content": "",
         "status_code": 200, "truncated": False, "dropped": False}]
    assert [{k: e[k] for k in ("path", "params", "result_product_ids")} for e in s1["search"]] == [
        {"path": "/search/find_product", "params": {"q": "red shoes"}, "result_product_ids": ["1001", "1002"]}]
    # step 3 has no stamp: the calls stay on the steps that list them, and the evidence says why
    assert "missing or not integer" in s1["attribution"]
    assert s1["tool_calls"][0]["result_product_ids"] == ["1001", "1002"]
    # truncated inference body: names and content recovered from the text, tokens unknown
    inf2 = s2["inference"][0]
    assert inf2["truncated"] is True and inf2["completion_tokens"] is None
    assert inf2["content"] == "view it"
    assert inf2["tool_call_names"] == ["view_product_inf"]  # cut mid-name, kept as seen
    assert s2["tool_calls"][0]["result_product_ids"] == ["1001"]
    assert s3["tool_calls"][0] == {"id": "call_3_0", "name": "recommend_product",
                                   "arguments": '{"product_ids":"1001"}', "result_product_ids": []}
    assert s3["inference"] == [] and s3["search"] == []


@pytest.mark.parametrize(("body", "flag", "expected"), [
    # a complete body sent as JSON text parses like an object body
    ('{"usage": {"completion_tokens": 41}, "choices": [{"message": {"content": "ok", "tool_calls": '
     '[{"function": {"name": "find_product"}}]}}]}', False, (41, ["find_product"], "ok", False)),
    # text that does not parse, although not marked truncated, is scanned and marked truncated
    ('{"usage": {"completion_tokens": 12}, "choices": [{"message": {"content": "cut', False,
     (12, [], "cut", True)),
    # a body marked truncated is scanned even when it would parse
    ('{"usage": {"completion_tokens": 9}}', True, (9, [], "", True)),
    # JSON null is a parsed body with no evidence in it, not a truncated one
    ("null", False, (None, [], "", False)),
])
def test_inference_body_text_is_parsed_or_scanned(body, flag, expected):
    from oro_assets.traces.formats import inference_evidence

    call = {"kind": "summary", "path": "/inference/chat/completions", "status_code": 200, "response": body}
    if flag:
        call["response_truncated"] = True
    ev = inference_evidence(call)
    assert (ev["completion_tokens"], ev["tool_call_names"], ev["content"], ev["truncated"]) == expected


def test_dialogue_only_takes_ids_from_steps():
    row = norm(oro_steps())
    assert row["format"] == "dialogue_only"
    assert (row["problem_id"], row["query"], row["status"], row["meta"]) == (
        "p-1", "red running shoes under 50", None, "{}")
    assert validate_row(row) == []
    envelope_row = norm(envelope())
    assert row["messages"] == envelope_row["messages"] and row["steps"] == envelope_row["steps"]


def test_shoppingbench_rollout_pairs_obs_by_id_in_order():
    steps = [{
        "prompt": [{"role": "system", "content": "You shop."}, {"role": "user", "content": "blue mug"}],
        "completion": {"message": {"think": "search twice", "response": "",
                                   "tool_call": [{"name": "find_product", "parameters": {"q": "mug"}, "tool_call_id": "Z"},
                                                 {"name": "find_product", "parameters": {"q": "mug"}, "tool_call_id": "Z"},
                                                 {"name": "view_product_information", "parameters": {"product_ids": "5"},
                                                  "tool_call_id": "V"}],
                                   "obs": [{"tool_call_id": "Z", "results": [{"product_id": "5"}]},
                                           {"tool_call_id": "Z", "results": [{"product_id": "6"}]},
                                           {"tool_call_id": "Q", "results": "stray"}]}},
        "extra_info": {"step": 1, "timestamp": 5},
    }]
    row = norm(steps)
    assert row["format"] == "shoppingbench_rollout" and row["query"] == "blue mug"
    msgs, ev = parsed(row)
    assert msgs[0] == {"role": "system", "content": "You shop."}
    assert msgs[1] == {"role": "user", "content": "blue mug"}
    tools = [m for m in msgs if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [
        ("call_1_0", '[{"product_id":"5"}]'), ("call_1_1", '[{"product_id":"6"}]'), ("orphan_1_0", "stray")]
    # the view call got no observation: unpaired; the stray observation is an orphan tool message
    assert [c["result_product_ids"] for c in ev[0]["tool_calls"]] == [["5"], ["6"], []]
    assert validate_row(row) == []


def test_openai_row_ids_rewritten_and_thinking_split():
    row_in = {
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "green tea"}]},
            {"role": "assistant", "content": "<think>search it</think>ok",
             "tool_calls": [{"id": "dup", "type": "function", "function": {"name": "find_product", "arguments": {"q": "tea"}}},
                            {"id": "dup", "type": "function", "function": {"name": "find_product", "arguments": "{\"q\":\"tea\"}"}}]},
            {"role": "tool", "tool_call_id": "dup", "content": "[{\"product_id\": \"9\"}]"},
            {"role": "tool", "tool_call_id": "dup", "name": "find_product", "content": [{"product_id": "10"}]},
            {"role": "tool", "tool_call_id": "nobody", "content": "lost"},
            {"role": "assistant", "content": "done", "reasoning_content": "pick 9"},
        ],
        "problem_id": "p-9",
    }
    row = norm(row_in)
    assert row["format"] == "openai_messages" and row["query"] == "green tea" and row["problem_id"] == "p-9"
    msgs, ev = parsed(row)
    assert msgs[2]["reasoning_content"] == "search it" and msgs[2]["content"] == "ok"
    assert [tc["function"]["arguments"] for tc in msgs[2]["tool_calls"]] == ['{"q":"tea"}', '{"q":"tea"}']
    assert [(m["tool_call_id"], m["name"]) for m in msgs[3:6]] == [
        ("call_1_0", "find_product"), ("call_1_1", "find_product"), ("orphan_1_5", "")]
    assert msgs[4]["content"] == '[{"product_id":"10"}]'
    assert msgs[6] == {"role": "assistant", "content": "done", "reasoning_content": "pick 9"}
    assert [c["result_product_ids"] for c in ev[0]["tool_calls"]] == [["9"], ["10"]]
    assert orjson.loads(row["tools"])[0]["function"]["name"] == "find_product"  # arena defaults
    assert validate_row(row) == []


def test_openai_tool_content_parts_are_joined_and_their_ids_seen():
    ids = '[{"product_id": "2957902842"}, {"product_id": "77"}]'
    row = norm({"messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "find_product", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": ids[:20]}, {"type": "text", "text": ids[20:]}]},
        {"role": "assistant", "content": "done"}]})
    msgs, ev = parsed(row)
    assert msgs[2]["content"] == ids
    assert ev[0]["tool_calls"][0]["result_product_ids"] == ["2957902842", "77"]


def test_truncated_body_cut_mid_escape_keeps_the_rest_decoded():
    from oro_assets.traces.formats import inference_evidence

    for cut in ("\\u00", "\\ud83d", "\\"):
        body = '{"choices": [{"message": {"content": "line1\\nline2 ' + cut
        ev = inference_evidence({"path": "/inference/chat/completions", "response": body, "response_truncated": True})
        assert ev["content"] == "line1\nline2 " and ev["truncated"]


def test_harness_content_only_step_is_parsed():
    steps = [{"completion": {"content": '<think>hmm</think>\n<tool_call>[{"name": "find_product", '
                                        '"parameters": {"q": "x"}}]</tool_call>\nfree text'},
              "extra_info": {"step": 1, "query": "x"}}]
    msgs, _ = parsed(norm(steps))
    assert msgs[1]["reasoning_content"] == "hmm" and msgs[1]["content"] == "free text"
    assert msgs[1]["tool_calls"][0]["function"] == {"name": "find_product", "arguments": '{"q":"x"}'}


def test_unparseable_arguments_kept_verbatim():
    steps = oro_steps()
    steps[2]["completion"]["message"]["tool_call"][0]["parameters"] = "{product_ids: 1001"
    msgs, _ = parsed(norm(steps))
    assert msgs[6]["tool_calls"][0]["function"]["arguments"] == "{product_ids: 1001"


@pytest.mark.parametrize(("obj", "reason"), [
    ({"hello": "world"}, ReasonCode.UNKNOWN_FORMAT),
    (42, ReasonCode.UNKNOWN_FORMAT),
    ([1, 2, 3], ReasonCode.UNKNOWN_FORMAT),
    ({"problem_id": "p", "status": "failed", "dialogue": None}, ReasonCode.EMPTY_DIALOGUE),
    ({"problem_id": "p", "dialogue": []}, ReasonCode.EMPTY_DIALOGUE),
    ([], ReasonCode.EMPTY_DIALOGUE),
    ({"messages": [{"role": "user", "content": "q"}]}, ReasonCode.EMPTY_DIALOGUE),
    ({"problem_id": "p", "dialogue": "not a list"}, ReasonCode.SCHEMA_VIOLATION),
    ({"problem_id": 5, "dialogue": oro_steps()}, ReasonCode.SCHEMA_VIOLATION),
    ({"messages": [{"role": "wizard", "content": "x"}]}, ReasonCode.SCHEMA_VIOLATION),
    ({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": 3}}]}]}, ReasonCode.SCHEMA_VIOLATION),
])
def test_typed_errors(obj, reason):
    with pytest.raises(NormalizationError) as info:
        norm(obj)
    assert info.value.reason is reason
    assert info.value.detail


@pytest.mark.parametrize("mutate", [
    lambda s: s[1].__setitem__("completion", {"message": "a string where an object belongs"}),
    lambda s: s[0]["completion"]["message"]["tool_call"][0].__setitem__("name", None),
    lambda s: s[0]["extra_info"].__setitem__("proxy_calls", {"not": "a list"}),
    lambda s: s[0]["completion"]["message"].__setitem__("think", ["list"]),
    lambda s: s.__setitem__(1, "step as a string"),
])
def test_wrong_types_are_schema_violations(mutate):
    steps = oro_steps()
    mutate(steps)
    with pytest.raises(NormalizationError) as info:
        norm(steps)
    assert info.value.reason is ReasonCode.SCHEMA_VIOLATION and info.value.format is Format.DIALOGUE_ONLY


def test_deep_result_nesting_is_a_schema_violation_not_a_crash():
    deep: object = "x"
    for _ in range(400):  # orjson parses up to 1024 levels but encodes only 254
        deep = [deep]
    steps = oro_steps()
    steps[0]["completion"]["message"]["tool_call"][0]["result"] = deep
    with pytest.raises(NormalizationError) as info:
        norm(steps)
    assert info.value.reason is ReasonCode.SCHEMA_VIOLATION


def test_normalisation_does_not_mutate_input():
    env = envelope()
    before = copy.deepcopy(env)
    norm(env)
    assert env == before


@pytest.mark.parametrize("builder", [samples.oro_envelope, samples.oro_dialogue, samples.shoppingbench_rollout,
                                     samples.openai_row])
def test_sample_builders_normalise_and_validate(builder):
    for seed in range(5):
        raw = orjson.dumps(builder(seed))
        prov = Provenance("f.jsonl", seed + 1, "2026-01-01", hashlib.sha256(raw).hexdigest())
        row = normalize_record(orjson.loads(raw), provenance=prov)
        assert validate_row(row) == []
        assert row["query"] and row["n_tool_calls"] >= 4


def test_parsed_out_matches_json_columns():
    out: dict = {}
    row = normalize_record(envelope(), provenance=PROV, parsed_out=out)
    assert out["messages"] == orjson.loads(row["messages"]) and out["steps"] == orjson.loads(row["steps"])
