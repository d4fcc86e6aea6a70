"""End to end through the real arena (env, tools, episode loop, scorer) with a scripted language model.

The ScriptedLM searches the reward title, then recommends per problem: A succeeds only on its
first sampled run, B always recommends an id no tool ever returned, C always succeeds. With
n = 4 sampled runs + 1 greedy run (the greedy run comes after the samples):
  A: c = 1 of 4, greedy fails; B: c = 0, greedy fails; C: c = 4, greedy succeeds.
Hand-computed: ASR (greedy) = 1/3; pass@1 = (1/4 + 0 + 1)/3; pass@2 = (1/2 + 0 + 1)/3
(A: 1 - C(3,2)/C(4,2) = 1/2); pass@4 = 2/3; hallucination rate = 5/15.
"""

import json
import re
from pathlib import Path

import pytest

from oro_assets import jsonio
from oro_assets.agents.local_model import LocalModelPolicy
from oro_assets.agents.toolcall import render_assistant_text
from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.scoring import score_trace
from oro_assets.evaluation.checks import LeakError
from oro_assets.evaluation.report import LeakRefs, evaluate_policy, evaluate_scripted
from oro_assets.evaluation.rollout import EvalSettings
from oro_assets_tests.tiny_lm import ScriptedLM, build_tokenizer


def _plan(problems, catalogue):
    env = InProcessEnv(catalogue)
    plan = {}
    for label, p in zip("ABC", problems, strict=True):
        title = p["reward"]["title"][0]
        hits = [h["product_id"] for h in env.find_product(title)]
        gt = p["reward"]["product_id"]
        assert gt in hits, "setup: the ground truth must be findable by its title"
        wrong = next(h for h in hits if h != gt and not score_trace(p, [h], catalogue).success)
        plan[p["query"].lower()] = {"label": label, "title": title, "gt": gt, "wrong": wrong, "count": 0}
    return plan


def _responder(plan):
    def respond(prompt: str) -> str:
        query = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", prompt, re.S)[0]
        entry = plan[query.lower()]  # the word-level tokenizer lower-cases
        convo = prompt.split("</tools>")[-1]
        if "<tool_response>" not in convo:
            return render_assistant_text("search the title", [("find_product", {"q": entry["title"]})])
        if '"recommend_product"' not in convo:
            n = entry["count"]
            entry["count"] += 1
            ok = {"A": n < 1, "B": False, "C": True}[entry["label"]]
            pid = "12345678" if entry["label"] == "B" else (entry["gt"] if ok else entry["wrong"])
            return render_assistant_text(f"choose {pid}", [("recommend_product", {"product_ids": pid})])
        return '<tool_call>\n{"name": "terminate", "arguments": {"status": "success"}}\n</tool_call>'
    return respond


@pytest.fixture(scope="module")
def scripted_policy(world, product_problems):
    corpus = [jsonio.dumps(p) for p in world.catalogue.products] + [p["query"] for p in product_problems]
    corpus += [f"{i:02d}" for i in range(100)]
    tok = build_tokenizer(corpus)
    plan = _plan(product_problems, world.catalogue)
    return LocalModelPolicy(ScriptedLM(tok, _responder(plan)), tok, max_new_tokens=400), plan


def test_evaluate_policy_metrics_and_trajectories(world, product_problems, scripted_policy, tmp_path):
    policy, plan = scripted_policy
    result = evaluate_policy(policy, product_problems, world.catalogue, stage="sft", n=4, temperature=0.7,
                             out_dir=tmp_path / "sft", eval_pool_ids=[p["problem_id"] for p in product_problems],
                             manifest_problems=[], cluster_map={})
    m = result.metrics
    assert m["asr_basis"] == "greedy"
    assert m["asr"] == pytest.approx(1 / 3)
    assert m["pass_at_k"]["1"] == pytest.approx((0.25 + 0 + 1) / 3)
    assert m["pass_at_k"]["2"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert m["pass_at_k"]["4"] == pytest.approx(2 / 3)
    assert m["gt_rate"] == pytest.approx(1 / 3)
    assert m["process"]["hallucination_rate"] == pytest.approx(5 / 15)
    assert m["process"]["mean_steps"] == 3 and m["process"]["mean_tool_calls"] == 3
    assert m["by_category"] == {"Product": m["by_category"]["Product"]} and m["by_category"]["Product"]["n_problems"] == 3
    assert result.checks == {"eval_pool": [], "no_training_leak": [], "pass_at_k_monotone": []}
    by_label = {plan[r["query"].lower()]["label"]: r for r in result.rows}
    assert (by_label["A"]["n"], by_label["A"]["c"], by_label["A"]["greedy_success"]) == (4, 1, False)
    assert (by_label["C"]["n"], by_label["C"]["c"], by_label["C"]["greedy_success"]) == (4, 4, True)

    samples = [json.loads(line) for line in Path(result.samples_path).read_text().splitlines()]
    envelopes = [json.loads(line) for line in Path(result.trajectories_path).read_text().splitlines()]
    assert len(samples) == len(envelopes) == 15
    assert sum(s["success"] for s in samples) == 1 + 4 + 1
    first = samples[0]
    assert {m_["role"] for m_ in first["messages"]} == {"system", "user", "assistant", "tool"}
    assert all(set(m_) == {"role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name"}
               for m_ in first["messages"])
    call = [m_ for m_ in first["messages"] if m_["role"] == "assistant"][0]["tool_calls"][0]
    assert isinstance(call["function"]["arguments"], str)  # stored form: JSON string
    assert isinstance(json.loads(first["tools"]), list)
    env0 = envelopes[0]
    assert env0["score"]["success"] == samples[0]["success"]
    assert env0["dialogue"][0]["extra_info"]["proxy_calls"][0]["path"] == "/inference/chat/completions"
    assert len({s["id"] for s in samples}) == 15


def test_trajectories_flow_back_through_ingest(world, product_problems, scripted_policy, tmp_path):
    from oro_assets.traces.normalize import normalize_record
    from oro_assets.traces.schema import validate_row

    policy, _ = scripted_policy
    result = evaluate_policy(policy, product_problems[:1], world.catalogue, stage="kto", n=1, temperature=0.7,
                             out_dir=tmp_path)
    for n, line in enumerate(Path(result.trajectories_path).read_bytes().splitlines(), start=1):
        row = normalize_record(jsonio.loads(line), provenance={"partition": "2026-01-01", "source_file": "eval",
                                                              "line_no": n, "raw_sha256": f"{n:064d}"})
        assert row["format"] == "oro_envelope"
        assert validate_row(row) == []
        assert row["n_tool_calls"] == 3


def test_leak_refused_before_any_rollout(world, product_problems):
    class Exploding:
        name = "never"

        def act(self, *a):
            raise AssertionError("must not roll out a leaked evaluation")

    gt_twin = dict(product_problems[1], problem_id="train-twin")  # same ground-truth id, new problem id
    with pytest.raises(LeakError) as err:
        evaluate_policy(Exploding(), product_problems, world.catalogue, stage="sft", settings=EvalSettings(n=1),
                        leak=LeakRefs(manifest_problems=[gt_twin], cluster_map={}))
    assert err.value.violations[0]["train_problem_id"] == "train-twin"
    with pytest.raises(LeakError, match="not in the eval pool"):
        evaluate_policy(Exploding(), product_problems, world.catalogue, stage="sft", n=1,
                        eval_pool_ids=[product_problems[0]["problem_id"]])
    # a misspelt argument is refused by name
    with pytest.raises(TypeError, match="unknown evaluation arguments: \\['manifest'\\]"):
        evaluate_policy(Exploding(), product_problems, world.catalogue, stage="sft", manifest=[gt_twin])


def test_grouped_settings_equal_the_flat_arguments(world, product_problems):
    grouped = evaluate_scripted("teacher", product_problems, world.catalogue, n=2,
                                settings=EvalSettings(max_steps=3, ks=(1, 2)), leak=LeakRefs(enforce=False))
    flat = evaluate_scripted("teacher", product_problems, world.catalogue, n=2, max_steps=3, ks=(1, 2),
                             enforce_checks=False)
    assert grouped.config == flat.config and grouped.config["max_steps"] == 3
    assert grouped.metrics == flat.metrics and set(grouped.metrics["pass_at_k"]) == {"1", "2"}


def test_scripted_baseline_through_the_same_path(world, tmp_path):
    problems = world.problems[:6]
    teacher = evaluate_scripted("teacher", problems, world.catalogue, n=2, out_dir=tmp_path / "t")
    broken = evaluate_scripted("regex", problems, world.catalogue, n=2, out_dir=tmp_path / "r")
    assert teacher.metrics["n_samples"] == 6 * 2
    assert teacher.metrics["asr_basis"] == "mean_over_samples"
    assert teacher.metrics["asr"] >= 0.8  # the strongest scripted agent solves (nearly) everything
    assert teacher.metrics["process"]["hallucination_rate"] == 0.0
    assert broken.metrics["asr"] < teacher.metrics["asr"]
    assert teacher.policy_name == "scripted:teacher"


def test_runs_that_time_out_earn_no_success_ground_truth_or_rule(world):
    from oro_assets.arena.episode import SimClock
    from oro_assets.evaluation.report import evaluate_scripted

    problems = [p for p in world.problems if p["category"] == "Product"][:3]
    finished = evaluate_scripted("teacher", problems, world.catalogue, n=1, clock_factory=lambda: SimClock(0))
    assert finished.metrics["gt_rate"] > 0  # the teacher finds the ground truth when it has the time
    # a simulated clock and a 3 s limit: the teacher recommends, then runs out of time before it terminates
    late = evaluate_scripted("teacher", problems, world.catalogue, n=1, clock_factory=lambda: SimClock(0), timeout_s=3.0)
    m = late.metrics
    assert m["status_counts"] == {"timed_out": 3}
    assert (m["asr"], m["gt_rate"], m["mean_rule"]) == (0.0, 0.0, 0.0)


def test_the_eval_pool_check_reads_the_registry_not_the_dataset_it_checks(tmp_path):
    from oro_assets.curation.clusters import Registry
    from oro_assets.evaluation.checks import check_eval_pool
    from oro_assets.evaluation.heldout import registry_view

    registry = Registry()
    problems = [{"problem_id": f"p{i}", "query": f"distinct gadget {i} model {i * 7}", "reward": {"product_id": str(i)}}
                for i in range(60)]
    registry.assign(problems)
    registry.save(tmp_path)
    pools = {k: m["pool"] for k, m in registry.members.items()}
    cluster_map, ids = registry_view(Registry.load(tmp_path), "dev")
    _, test_ids = registry_view(Registry.load(tmp_path), "test")
    assert ids and test_ids and all(pools[i] == "eval" for i in ids + test_ids)
    assert not set(ids) & set(test_ids)  # the dev evaluation may not read a test problem
    assert cluster_map == {k: m["cluster_id"] for k, m in registry.members.items() if m.get("cluster_id")}
    train = next(p for p in problems if pools[p["problem_id"]] == "train")
    # an eval_problems dataset that (stale or edited) holds a train problem fails the check
    assert check_eval_pool([train], ids) and not check_eval_pool([{"problem_id": ids[0]}], ids)
    assert check_eval_pool([{"problem_id": test_ids[0]}], ids)


def test_a_run_without_any_tool_call_is_named_no_tool_call_not_success(world, product_problems, tmp_path):
    from oro_assets.arena.episode import Turn

    class Chatty:
        """Answers in prose and never calls a tool (what an untrained model often does)."""

        name = "chatty"

        def act(self, problem_view, messages, tools):
            return Turn(think="", tool_calls=[], response="I think the red one is nice.")

    result = evaluate_policy(Chatty(), product_problems, world.catalogue, stage="base", n=2, greedy=True,
                             out_dir=tmp_path)
    m = result.metrics
    assert m["outcome_counts"] == {"no_tool_call": 3 * 3}
    samples = [json.loads(line) for line in Path(result.samples_path).read_text().splitlines()]
    assert {s["outcome"] for s in samples} == {"no_tool_call"} and not any(s["success"] for s in samples)
    envelopes = [json.loads(line) for line in Path(result.trajectories_path).read_text().splitlines()]
    assert {e["eval_outcome"] for e in envelopes} == {"no_tool_call"}
    # a run that searched and recommended is named for that
    scripted = evaluate_scripted("teacher", product_problems, world.catalogue, n=1)
    assert scripted.metrics["outcome_counts"] == {"recommended": 3}
