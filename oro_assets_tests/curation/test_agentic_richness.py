"""ORO's agentic_richness (ORO-AI/oro src/analytics/agentic_richness.py) beside the structural label,
and the ORO_MIN_AGENTIC_RICHNESS gate. Expected values are worked by hand from ORO's rule: per step
list, the latest inference answer's named tools are pending; a catalogue dispatch counts when it is
the first pending tool, and takes the first pending tool off either way."""

from __future__ import annotations

import pytest

from oro_assets import jsonio
from oro_assets.arena import recorder
from oro_assets.curation.gates import gate_traces
from oro_assets.curation.structural import LABELS, label_structural, structural_filter
from oro_assets.reasons import ReasonCode
from oro_assets.traces.calls import oro_agentic_richness
from oro_assets.traces.samples import oro_run
from oro_assets_tests.curation.curation_fixtures import normalized

INF = "/inference/chat/completions"


def _answer(content: str = "", tool_calls: list | None = None, body: bool = True) -> dict:
    call = {"kind": "summary", "method": "POST", "path": INF, "timestamp": 1, "status_code": 200}
    if body:
        call["response"] = {"choices": [{"message": {"content": content, "tool_calls": tool_calls}}]}
    else:
        call.update(response_truncated=True, response_length=4321)
    return call


def _dispatch(tool: str, path: str | None = None) -> dict:
    return {"kind": "summary", "method": "GET", "path": path or f"/search/{tool}", "timestamp": 2, "status_code": 200}


def _native(*names: str) -> list[dict]:
    return [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}} for i, n in enumerate(names)]


def test_a_dispatch_counts_when_the_latest_answer_named_it_next():
    tags = '<think>x</think>\n<tool_call>[{"name": "find_product", "parameters": {"q": "a"}}]</tool_call>'
    qwen = '<tool_call>\n{"name": "view_product_information", "arguments": {}}\n</tool_call>'
    listed = [[_answer(tags), _dispatch("find_product")],
              [_answer(tool_calls=_native("find_product", "view_product_information")),
               _dispatch("find_product"), _dispatch("view_product_information")],
              [_answer(qwen), _dispatch("view_product_information", "/search/view_product_information/?x=1")]]
    r = oro_agentic_richness(listed)
    assert (r["emitted"], r["dispatches"], r["agentic_richness"]) == (4, 4, 1.0)
    assert r["by_tool"] == {"find_product": 2, "view_product_information": 2}


def test_order_tool_keys_and_non_catalogue_names_follow_oros_rule():
    # named [view, find], dispatched find then view: each compared with the head of the list -> 0 of 2
    swapped = [[_answer(tool_calls=_native("view_product_information", "find_product")),
                _dispatch("find_product"), _dispatch("view_product_information")]]
    assert oro_agentic_richness(swapped)["agentic_richness"] == 0.0
    # a name under "tool" counts; recommend_product is named first but never dispatched, so it blocks
    keyed = [[_answer('<tool_call>{"tool": "find_product"}</tool_call>'), _dispatch("find_product")],
             [_answer('<tool_call>[{"name": "recommend_product"}, {"name": "find_product"}]</tool_call>'),
              _dispatch("find_product")]]
    r = oro_agentic_richness(keyed)
    assert (r["emitted"], r["dispatches"], r["misses"]) == (1, 2, {"not_named": 1})
    # an attempt entry, an entry without kind and the inference itself are not dispatches
    other = [[{**_dispatch("find_product"), "kind": "attempt"}, {"path": "/search/find_product"}, _answer("x")]]
    assert oro_agentic_richness(other) == {"agentic_richness": None, "emitted": 0, "dispatches": 0,
                                           "by_tool": {}, "misses": {}}


def test_richness_is_blind_to_dropped_bodies_and_to_the_step_lists():
    r = oro_agentic_richness([[_answer(body=False), _dispatch("find_product")]])
    assert (r["agentic_richness"], r["misses"]) == (0.0, {"dropped_body": 1})
    # the answer sits on the list before its dispatch: nothing is pending on the next list
    split = [[_answer(tool_calls=_native("find_product"))], [_dispatch("find_product")]]
    assert oro_agentic_richness(split)["misses"] == {"no_answer_in_step": 1}
    failed = [[{"kind": "summary", "path": INF, "status_code": None}, _dispatch("find_product")]]
    assert oro_agentic_richness(failed)["misses"] == {"no_body": 1}


def test_structural_labels_carry_richness_era_and_why_they_disagree():
    later = normalized(oro_run(51, shape="structured", era=recorder.ERA_LATER), line_no=1)
    old = normalized(oro_run(51, shape="structured"), line_no=2)
    subtask = normalized(oro_run(52, subtask=True, era=recorder.ERA_LATER), line_no=3)
    scripted = normalized(oro_run(53, inference=False), line_no=4)
    dropped = oro_run(51, shape="structured")  # the same run, its answers' bodies dropped by a6b1cf3
    for step in dropped["dialogue"]:
        for call in step["extra_info"].get("proxy_calls", []):
            if "/inference/" in call["path"] and "response" in call:
                call["response_length"] = len(recorder.oro_json(call.pop("response")))
                call["response_truncated"] = True
    dropped_row = normalized(dropped, line_no=5)
    result = structural_filter([later, old, subtask, scripted, dropped_row])
    by_id = {r["trace_id"]: r for r in result.outputs[LABELS]}
    got = [(by_id[r["trace_id"]]["label"], by_id[r["trace_id"]]["agentic_richness"], by_id[r["trace_id"]]["recorder_era"])
           for r in (later, old, subtask, scripted)]
    assert got == [("agentic", 1.0, "later"), ("agentic", 1.0, "a6b1cf3"), ("subtask", 0.0, "later"),
                   ("no_inference", 0.0, "a6b1cf3")]
    row = by_id[dropped_row["trace_id"]]
    assert row["label"] == "agentic" and row["agentic_richness"] == 0.0  # ORO cannot read a dropped body
    evidence = jsonio.loads(row["evidence"])
    assert "whose body ORO dropped" in evidence["richness_note"]
    assert "richness_note" not in jsonio.loads(by_id[later["trace_id"]]["evidence"])


def test_the_richness_gate_is_off_by_default_and_rejects_below_the_minimum():
    good = normalized(oro_run(61, shape="text_array", era=recorder.ERA_LATER), line_no=1)
    dropped = oro_run(61, shape="text_array")
    for step in dropped["dialogue"]:
        for call in step["extra_info"].get("proxy_calls", []):
            if "/inference/" in call["path"] and "response" in call:
                call["response_length"] = len(recorder.oro_json(call.pop("response")))
                call["response_truncated"] = True
    blind = normalized(dropped, line_no=2)
    openai = normalized({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "",
                         "tool_calls": [{"id": "a", "type": "function", "function": {
                             "name": "recommend_product", "arguments": '{"product_ids": "1"}'}}]},
                         {"role": "tool", "tool_call_id": "a", "content": "ok"}]}, line_no=3)
    assert label_structural(blind)[0] == "agentic"
    rows = [good, blind, openai]
    off = gate_traces(rows, judge=None, threshold=0.0)
    assert ReasonCode.LOW_AGENTIC_RICHNESS.value not in off.stats["rejected"]
    on = gate_traces(rows, judge=None, threshold=0.0, min_agentic_richness=0.5)
    reasons = {r["trace_id"]: r["reason"] for r in on.rejected}
    assert reasons[blind["trace_id"]] == ReasonCode.LOW_AGENTIC_RICHNESS.value
    assert "dropped_body" in next(r["detail"] for r in on.rejected if r["trace_id"] == blind["trace_id"])
    assert reasons.get(good["trace_id"]) != ReasonCode.LOW_AGENTIC_RICHNESS.value
    assert reasons.get(openai["trace_id"]) != ReasonCode.LOW_AGENTIC_RICHNESS.value  # not computable: passes


def test_the_setting_reaches_the_gates_through_the_judge_resource(monkeypatch, tmp_path):
    from oro_assets.defs.judge.resources import judge_resource_from_settings
    from oro_assets.settings import SettingsError, load_settings

    monkeypatch.setenv("ORO_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ORO_MIN_AGENTIC_RICHNESS", raising=False)
    assert load_settings().min_agentic_richness is None
    assert judge_resource_from_settings(load_settings()).min_agentic_richness < 0
    monkeypatch.setenv("ORO_MIN_AGENTIC_RICHNESS", "0.6")
    assert judge_resource_from_settings(load_settings()).min_agentic_richness == 0.6
    monkeypatch.setenv("ORO_MIN_AGENTIC_RICHNESS", "off")
    assert load_settings().min_agentic_richness is None
    for bad in ("1.5", "high"):
        monkeypatch.setenv("ORO_MIN_AGENTIC_RICHNESS", bad)
        with pytest.raises(SettingsError, match="ORO_MIN_AGENTIC_RICHNESS"):
            load_settings()


def test_a_partition_curated_with_the_minimum_records_the_reason_in_the_ledger():
    from oro_assets.curation.clusters import Registry
    from oro_assets.curation.pipeline import curate_partition
    from oro_assets.judge.rule import RuleJudge

    dropped = oro_run(71, shape="qwen3_object")
    for step in dropped["dialogue"]:
        for call in step["extra_info"].get("proxy_calls", []):
            if "/inference/" in call["path"] and "response" in call:
                call["response_length"] = len(recorder.oro_json(call.pop("response")))
                call["response_truncated"] = True
    rows = [normalized(dropped, line_no=1), normalized(oro_run(72, era=recorder.ERA_LATER), line_no=2)]
    out = curate_partition(rows, [], Registry(), judge=RuleJudge(), partition="2026-01-01", min_agentic_richness=0.5)
    fates = {r["line_no"]: (r["fate"], r["reason"]) for r in out.trace_ledger}
    assert fates[1] == ("rejected", ReasonCode.LOW_AGENTIC_RICHNESS.value)
    assert fates[2][1] != ReasonCode.LOW_AGENTIC_RICHNESS.value
