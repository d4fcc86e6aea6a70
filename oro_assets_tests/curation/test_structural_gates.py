"""Structural filter and gates: every reason code from a real record that triggers it."""

from __future__ import annotations

import curation_fixtures as F
import pytest

from oro_assets import jsonio
from oro_assets.curation.gates import coefficient, gate_traces
from oro_assets.curation.structural import (
    AGENTIC,
    LABELS,
    NO_INFERENCE,
    SUBTASK,
    SUBTASKS,
    label_structural,
    structural_filter,
)
from oro_assets.judge.rule import RuleJudge
from oro_assets.reasons import ReasonCode


def _run(raw: dict, judge=None):
    row = F.normalized(raw)
    filtered = structural_filter([row])
    kept, rejected, subtasks = filtered.kept, filtered.rejected, filtered.outputs[SUBTASKS]
    if rejected:
        return rejected[0], subtasks
    gated = gate_traces(kept, judge=judge)
    return (gated.rejected[0] if gated.rejected else None), subtasks


@pytest.mark.parametrize(
    ("builder", "reason", "stage"),
    [
        (F.no_inference, ReasonCode.NO_INFERENCE, "structural"),
        (F.subtask, ReasonCode.SUBTASK, "structural"),
        (F.no_tool_calls, ReasonCode.NO_TOOL_CALLS, "structural"),
        (F.unpaired, ReasonCode.UNPAIRED_TOOL_CALL, "gates"),
        (F.recommend_missing, ReasonCode.RECOMMEND_NOT_ONCE, "gates"),
        (F.recommend_twice, ReasonCode.RECOMMEND_NOT_ONCE, "gates"),
        (F.recommend_unparseable, ReasonCode.RECOMMEND_ARGS_UNPARSEABLE, "gates"),
        (F.over_budget, ReasonCode.OVER_TOKEN_BUDGET, "gates"),
        (F.think_then_stop, ReasonCode.THINK_THEN_STOP, "gates"),
        (F.ungrounded, ReasonCode.UNGROUNDED_RECOMMENDATION, "gates"),
        (F.low_reasoning, ReasonCode.REASONING_BELOW_THRESHOLD, "gates"),
    ],
)
def test_each_reason_from_a_real_record(builder, reason, stage):
    rejection, _ = _run(builder(), judge=RuleJudge())
    assert rejection is not None, f"{builder.__name__} was kept"
    assert rejection["reason"] == reason
    assert rejection["stage"] == stage
    assert rejection["detail"]


def test_judge_unavailable_is_rejected_not_scored_zero():
    judge = F.DownJudge()
    rejection, _ = _run(F.unscored(), judge=judge)
    assert judge.calls == 1
    assert rejection["reason"] == ReasonCode.JUDGE_UNAVAILABLE
    assert rejection["reasoning_score"] is None


def test_good_trace_is_kept_with_validator_score_and_judge_not_called():
    judge = F.DownJudge()
    row = F.normalized(F.good(1))
    filtered = structural_filter([row])
    kept, rejected = filtered.kept, filtered.rejected
    gated = gate_traces(kept, judge=judge)
    assert rejected == [] and gated.rejected == []
    out = gated.kept[0]
    assert judge.calls == 0
    assert out["reasoning_score"] == 0.7 and out["reasoning_source"] == "validator"
    recommended = jsonio.loads(out["recommended_ids"])
    assert len(recommended) == 1 and recommended[0].isdigit()


def test_rule_judge_scores_unscored_trace():
    row = F.normalized(F.unscored(14))
    filtered = structural_filter([row])
    kept = filtered.kept
    gated = gate_traces(kept, judge=RuleJudge(), threshold=0.1)
    assert gated.kept and gated.kept[0]["reasoning_source"] == "judge"
    assert gated.kept[0]["reasoning_score"] in (0.1, 0.3, 0.5, 0.7, 0.9)


def test_structural_evidence_per_step():
    label, ev = label_structural(F.normalized(F.good(1)))
    assert label == AGENTIC
    assert ev["carried_steps"] == ev["n_tool_steps"] >= 4
    assert all(s["verdict"] == "carried" for s in ev["steps"])
    label, ev = label_structural(F.normalized(F.subtask(3)))
    assert label == SUBTASK and ev["carried_steps"] == 0 and ev["n_inference"] >= 4
    label, ev = label_structural(F.normalized(F.no_inference(2)))
    assert label == NO_INFERENCE and ev["n_inference"] == 0


def test_query_copied_verbatim_and_regular_shape_mark_scripted_loop():
    query = "red cotton shirt under 300 pesos"
    rows_steps = []
    for n in range(1, 4):
        rows_steps.append(
            {
                "step": n,
                "think": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}_0",
                        "name": "find_product",
                        "arguments": jsonio.dumps({"q": query, "page": n}),
                    }
                ],
                # bodies ORO dropped (over 2,000 characters): only their length is left
                "inference": [
                    {
                        "completion_tokens": None,
                        "tool_call_names": [],
                        "tool_calls": [],
                        "content": "",
                        "status_code": 200,
                        "truncated": True,
                        "dropped": True,
                        "response_length": 3200,
                    }
                ],
                "search": [],
            }
        )
    row = {"trace_id": "tr_x", "format": "oro_envelope", "query": query, "steps": jsonio.dumps(rows_steps)}
    label, ev = label_structural(row)
    assert ev["query_copied_verbatim"] is True
    assert ev["step_shape_regularity"] == 1.0
    assert ev["dropped_steps"] == 3
    assert (label, ev["rule"]) == (SUBTASK, "dropped_verbatim_query")  # dropped bodies + a copied query
    row["query"] = "something else entirely"
    label, ev = label_structural(row)
    assert (label, ev["rule"]) == (AGENTIC, "dropped_consistent")  # the same bodies without a scripted signal
    for step in rows_steps:
        step["inference"][0]["response_length"] = 2001  # too short to hold the step's thinking and calls?
        step["think"] = "x" * 2500
    row["steps"] = jsonio.dumps(rows_steps)
    label, ev = label_structural(row)
    assert (label, ev["rule"]) == (SUBTASK, "against") and ev["against_steps"] == 3


def test_subtask_traces_are_kept_aside():
    rows = [F.normalized(F.subtask(3), line_no=1), F.normalized(F.good(1), line_no=2)]
    filtered = structural_filter(rows)
    kept, stats, subtasks, labels = filtered.kept, filtered.stats, filtered.outputs[SUBTASKS], filtered.outputs[LABELS]
    assert [r["trace_id"] for r in subtasks] == [rows[0]["trace_id"]]
    assert subtasks[0]["messages"] == rows[0]["messages"]
    assert [r["trace_id"] for r in kept] == [rows[1]["trace_id"]]
    assert stats["labels"] == {"agentic": 1, "subtask": 1}
    assert len(labels) == 2


def test_rollout_formats_without_proxy_evidence_are_not_no_inference():
    for raw in (F.shoppingbench_rollout(21), F.openai_row(22)):
        label, ev = label_structural(F.normalized(raw))
        assert label == AGENTIC and ev["proxy_evidence"] is False


def test_token_budget_uses_the_supplied_tokenizer():
    row = F.normalized(F.good(1))
    filtered = structural_filter([row])
    kept = filtered.kept
    calls = []

    def count_chars(text: str) -> int:
        calls.append(len(text))
        return len(text)

    gated = gate_traces(kept, count_tokens=count_chars, token_budget=1000)
    assert calls and calls[0] > 1000
    assert gated.rejected[0]["reason"] == ReasonCode.OVER_TOKEN_BUDGET
    assert gate_traces(kept, count_tokens=count_chars, token_budget=10**7).kept


def test_reasoning_coefficient_per_eval_run():
    assert coefficient(0.8) == 1.0 and coefficient(0.95) == 1.0
    assert coefficient(0.5) == pytest.approx(0.3 + 0.5 * 0.875)
    # seeds 1 and 8 share eval run "run-1": validator scores 0.7 and 0.3 -> q = 0.5
    rows = [F.normalized(F.good(1), line_no=1), F.normalized(F.low_reasoning(8), line_no=2)]
    filtered = structural_filter(rows)
    kept = filtered.kept
    stats = gate_traces(kept).stats
    run = stats["reasoning_coefficients"]["run-1"]
    assert run["n"] == 2 and run["mean_q"] == 0.5
    assert run["coeff"] == pytest.approx(0.7375)
    # a run whose judge calls mostly failed is invalid, not scored
    filtered = structural_filter([F.normalized(F.unscored(13))])
    kept = filtered.kept
    stats = gate_traces(kept, judge=F.DownJudge()).stats
    run = stats["reasoning_coefficients"]["run-6"]
    assert run["invalid"] is True and run["coeff"] is None
    assert stats["judge_failure_ratio"] == 1.0


def test_coefficient_covers_validator_scores_of_traces_the_structural_filter_sets_aside():
    from oro_assets.curation.gates import merge_gate_stats, ungated_run_scores

    # seeds 1 and 8 are in run-1 (validator scores 0.7 and 0.3); a sub-task trace of the same run
    # scored 0.1 by its validator never reaches the gates but is part of ORO's run mean
    kept_env, low_env = F.good(1), F.low_reasoning(8)
    sub = F.subtask(15)  # 15 % 7 == 1: run-1
    sub["reasoning"] = {"score": 0.1, "explanation": "Gate 1 failed", "model": "judge-1"}
    rows = [F.normalized(kept_env, line_no=1), F.normalized(low_env, line_no=2), F.normalized(sub, line_no=3)]
    filtered = structural_filter(rows)
    kept, rejected = filtered.kept, filtered.rejected
    assert [r["reason"] for r in rejected] == ["subtask"]
    gated = gate_traces(kept).stats
    assert gated["reasoning_coefficients"]["run-1"]["mean_q"] == 0.5  # the gates alone: (0.7 + 0.3) / 2
    kept_ids = {r["trace_id"] for r in kept}
    merged = merge_gate_stats([gated, ungated_run_scores([r for r in rows if r["trace_id"] not in kept_ids])])
    run = merged["reasoning_coefficients"]["run-1"]
    assert (run["n"], run["n_scored"]) == (3, 3)
    assert run["mean_q"] == round((0.7 + 0.3 + 0.1) / 3, 4)  # reported to 4 places
    assert run["coeff"] == pytest.approx(0.3 + (1.1 / 3) * 0.875, abs=1e-4)
    assert merged["seen"] == 2 and merged["kept"] == gated["kept"]  # the gate's own counts are unchanged


def test_gate_stats_merge_across_batches():
    from oro_assets.curation.gates import merge_gate_stats

    rows = [F.normalized(F.good(1), line_no=1), F.normalized(F.low_reasoning(8), line_no=2)]
    filtered = structural_filter(rows)
    kept = filtered.kept
    merged = merge_gate_stats([gate_traces(kept[:1]).stats, gate_traces(kept[1:]).stats])
    whole = gate_traces(kept).stats
    assert merged["reasoning_coefficients"] == whole["reasoning_coefficients"]
    assert (merged["seen"], merged["kept"], merged["rejected"]) == (2, 1, {"reasoning_below_threshold": 1})


def _unscored_variants(n: int) -> list[dict]:
    """``n`` distinct unscored traces that pass every rule gate, plus an unscored ungrounded one."""
    rows = []
    for i in range(n):
        env = F.unscored(100 + i)
        env["query"] = f"{env.get('query', '')} variant {i}"
        rows.append(F.normalized(env, line_no=i + 1))
    bad = F.ungrounded(11)
    del bad["reasoning"]
    rows.insert(3, F.normalized(bad, line_no=999))
    return rows


def test_the_llm_judge_runs_concurrently_only_on_rows_that_pass_the_rule_gates():
    """Over real HTTP (a local OpenAI-compatible stub that answers after 0.2 s): with concurrency 4
    the stub answers several requests at once, only unscored rows that passed the format and
    grounding gates are sent, and the result equals the one-at-a-time run."""
    from oro_assets.judge.llm import LLMJudge, LLMJudgeConfig
    from oro_assets.judge.testing import StubOpenAIServer, slow_reply, verdict_reply

    rows = _unscored_variants(12)
    results = {}
    for concurrency in (1, 4):
        with StubOpenAIServer(default=slow_reply(0.2, verdict_reply(0.9))) as server:
            judge = LLMJudge(LLMJudgeConfig(base_url=server.base_url, models=("judge-a",), timeout_s=5.0),
                             api_key="k", sleep=lambda s: None)
            out = gate_traces(rows, judge=judge, judge_concurrency=concurrency)
            assert len(server.requests) == 12  # the ungrounded row never reaches the judge
            assert judge.requests_made == 12
            results[concurrency] = (out, server.max_in_flight)
    (serial, one_at_a_time), (parallel, at_once) = results[1], results[4]
    assert one_at_a_time == 1 and 2 <= at_once <= 4
    assert parallel.kept == serial.kept and parallel.rejected == serial.rejected
    assert [r["reason"] for r in serial.rejected] == [ReasonCode.UNGROUNDED_RECOMMENDATION]
    assert {r["reasoning_source"] for r in serial.kept} == {"judge"} and len(serial.kept) == 12
    assert serial.stats["judge_calls"] == parallel.stats["judge_calls"] == 12


def _claimed_by_definition(step: dict) -> int:
    """What an answer must hold, written out as the structural filter defines it: the thinking as a JSON
    string, the calls ({name, parameters}) as JSON text that is itself a JSON string, and the body's overhead."""
    from oro_assets.curation.structural import MIN_BODY_OVERHEAD

    calls = []
    for c in step.get("tool_calls") or ():
        args = c.get("arguments")
        if isinstance(args, str):
            try:
                args = jsonio.loads(args)
            except jsonio.JSONDecodeError:
                args = None
        calls.append({"name": c.get("name"), "parameters": args if isinstance(args, dict) and args else {}})
    return (len(jsonio.stdlib_dumps(step.get("think") or "")) + len(jsonio.stdlib_dumps(jsonio.stdlib_dumps(calls)))
            + MIN_BODY_OVERHEAD)


@pytest.mark.parametrize("think", ["", "plain thinking", 'quotes " and \\ backslashes\n\ttabs\x01\x7f',
                                   "caf\u00e9 \u2014 \U0001f600 non-ASCII", 5])
@pytest.mark.parametrize("arguments", [
    '{"q": "red \\"shoes\\"", "page": 2}', '{"note": "caf\u00e9 \\\\ \\n \U0001f600", "n": 1.5e-05}',
    "not json {", None, {"product_ids": "p1,p2"}, '["a list"]', "{}"])
def test_claimed_length_is_the_defined_length(think, arguments):
    from oro_assets.curation.structural import _claimed_length

    step = {"think": think, "tool_calls": [{"name": "find_product", "arguments": arguments},
                                           {"name": "recommend_product", "arguments": '{"product_ids": "p9"}'}]}
    expected = _claimed_by_definition(step)
    assert _claimed_length(step) == expected
    assert _claimed_length(jsonio.loads(jsonio.dumps(step))) == expected  # again, from equal values


def test_dropped_body_verdict_turns_at_the_claimed_length():
    from oro_assets.curation.structural import _step_evidence

    step = {"step": 1, "think": 'compare "both" options\n', "tool_calls": [
        {"id": "call_1_0", "name": "find_product", "arguments": '{"q": "lamp \\u00e9"}'}]}
    need = _claimed_by_definition(step)

    def verdict(length: int) -> str:
        entry = {"dropped": True, "truncated": True, "response_length": length, "status_code": 200}
        return _step_evidence({**step, "inference": [entry]})["verdict"]

    assert verdict(need) == "dropped"
    assert verdict(need - 1) == "dropped_too_short"
