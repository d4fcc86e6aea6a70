"""The scripted miner population: each kind shows the evidence it is designed to show."""

from __future__ import annotations

import json
import re

import pytest

from oro_assets.arena.env import InProcessEnv
from oro_assets.arena.episode import SimClock, run_episode
from oro_assets.arena.generator import build_world
from oro_assets.arena.policies.agentic import TeacherPolicy
from oro_assets.arena.population import DEFAULT_SHARES, KIND_INFO, KindSampler, build_miners, make_policy
from oro_assets.arena.scoring import score_trace


@pytest.fixture(scope="module")
def world():
    return build_world(3, 90, 3000)


@pytest.fixture(scope="module")
def env(world):
    return InProcessEnv(world.catalogue)


def _play(kind, problem, env, seed=1, skill=0.9, model="qwen3-32b"):
    policy = make_policy(kind, problem, skill=skill, seed=seed, model=model)
    return policy, run_episode(policy, problem, env, clock=SimClock(1_767_225_600_000))


def _inference(ep):
    """(step, answered inference request as a log entry) pairs; structured answers (the default shape)."""
    out = []
    for s in ep.steps:
        for e in s.events:
            if e.path == "/inference/chat/completions" and e.body is not None:
                out.append((s, {"path": e.path, "response": e.body}))
    return out


def test_shares_sum_to_one_and_every_kind_has_info():
    assert abs(sum(DEFAULT_SHARES.values()) - 1.0) < 1e-9
    assert set(DEFAULT_SHARES) <= set(KIND_INFO)
    subtask = sum(v for k, v in DEFAULT_SHARES.items() if k.startswith("subtask_"))
    broken = sum(v for k, v in DEFAULT_SHARES.items() if k.startswith("broken_"))
    assert subtask == pytest.approx(0.40) and broken == pytest.approx(0.12)
    assert subtask == max(subtask, broken, DEFAULT_SHARES["teacher"])  # skewed toward sub-task traces


def test_kind_sampler_hits_shares():
    import random

    sampler = KindSampler(DEFAULT_SHARES)
    rng = random.Random(0)
    n = 20000
    counts: dict[str, int] = {}
    for _ in range(n):
        k = sampler.draw(rng.random())
        counts[k] = counts.get(k, 0) + 1
    for k, share in DEFAULT_SHARES.items():
        sd = (share * (1 - share) / n) ** 0.5
        assert abs(counts.get(k, 0) / n - share) < 4 * sd + 1e-9, k


def test_miners_cover_every_kind():
    miners = build_miners(15, DEFAULT_SHARES, 40)
    assert set(miners) == set(DEFAULT_SHARES)
    hotkeys = [m.hotkey for ms in miners.values() for m in ms]
    assert len(hotkeys) == len(set(hotkeys)) >= 40
    assert all(h.startswith("5") and len(h) == 48 for h in hotkeys)


def test_teacher_solves_generated_problems(world, env):
    solved = 0
    for j, p in enumerate(world.problems[:60]):
        _, ep = _play("teacher", p, env, seed=j)
        solved += score_trace(p, ep.recommended_ids(), world.catalogue).success
    assert solved / 60 >= 0.9


def test_teacher_text_is_regular_and_copies_query(world, env):
    p = next(p for p in world.problems if p["category"] == "Product" and isinstance(p["reward"], dict)
             and p["reward"].get("price"))
    _, ep = _play("teacher", p, env)
    first = ep.steps[0]
    q = first.calls[0].arguments["q"]
    assert all(w in p["query"].lower() for w in q.split())
    assert "price" in first.calls[0].arguments
    decide = next(s for s in ep.steps if any(c.name == "recommend_product" for c in s.calls))
    lines = decide.think.splitlines()
    assert re.fullmatch(r"\d+: price \S+ in \S+ (yes|no); words (yes|no); service (yes|no).*", lines[0])
    assert lines[-1].startswith("Choose ")


def test_teacher_policy_wrapper_for_eval_loops(world, env):
    problems = {p["problem_id"]: p for p in world.problems[:5]}
    pol = TeacherPolicy(problems)
    for p in problems.values():
        ep = run_episode(pol, p, env, clock=SimClock(0))
        assert ep.steps[-1].calls[-1].name == "terminate"


@pytest.mark.parametrize("kind", ["agentic_compare", "agentic_datum", "agentic_vague", "agentic_restate", "teacher"])
def test_agentic_inference_carries_the_steps_calls(world, env, kind):
    for j, p in enumerate(world.problems[:8]):
        _, ep = _play(kind, p, env, seed=j)
        inf = _inference(ep)
        assert len(inf) == len(ep.steps)
        for step, proxy in inf:
            resp = proxy["response"]
            msg = resp["choices"][0]["message"]
            assert [tc["function"]["name"] for tc in msg["tool_calls"]] == [c.name for c in step.calls]
        assert max(p["response"]["usage"]["completion_tokens"] for _, p in inf) >= 30


def test_designed_thinking_per_gate(world, env):
    multi_id = re.compile(r"\b\d{6,}\b")
    for j, p in enumerate(world.problems[:20]):
        pol, ep = _play("agentic_vague", p, env, seed=j)
        assert pol.designed_gate == 0.5
        assert all(not re.search(r"\d", s.think) for s in ep.steps)  # no specific datum at all
        pol, ep = _play("agentic_restate", p, env, seed=j)
        assert pol.designed_gate == 0.3
        assert all(p["query"].strip() in s.think for s in ep.steps)  # only ever restates the request
        assert all(not multi_id.search(s.think) for s in ep.steps)
        pol, ep = _play("agentic_datum", p, env, seed=j)
        assert all(len(set(multi_id.findall(s.think))) <= 1 for s in ep.steps)  # never two candidates at once
        pol, ep = _play("agentic_compare", p, env, seed=j)
        if pol.designed_gate == 0.9:
            assert any(len(set(multi_id.findall(s.think))) >= 2 and " is the better choice" in s.think
                       for s in ep.steps)


def test_subtask_harness_copies_query_and_model_never_emits_calls(world, env):
    for variant, gate in (("subtask_label", 0.1), ("subtask_narrate", 0.3)):
        for j, p in enumerate(world.problems[:10]):
            pol, ep = _play(variant, p, env, seed=j, model="qwen3-8b")  # not a reasoning model
            assert pol.structural == "subtask" and pol.designed_gate == gate
            assert _play(variant, p, env, seed=j, model="qwen3-32b")[0].designed_gate == 0.3
            assert ep.steps[0].calls[0].name == "find_product"
            assert ep.steps[0].calls[0].arguments["q"] == p["query"]  # copied verbatim by code
            inf = _inference(ep)
            assert inf, "the harness still calls the model"
            tokens = []
            for _, proxy in inf:
                msg = proxy["response"]["choices"][0]["message"]
                assert "tool_calls" not in msg
                tokens.append(proxy["response"]["usage"]["completion_tokens"])
            # labels stay under the judge's 30-token inference floor; narrations clear it
            assert max(tokens) < 30 if variant == "subtask_label" else max(tokens) >= 30


def test_regex_agent_has_no_inference(world, env):
    for j, p in enumerate(world.problems[:10]):
        pol, ep = _play("regex", p, env, seed=j)
        assert pol.structural == "no_inference"
        assert all(e.path.startswith("/search/") for s in ep.steps for e in s.events)
        assert ep.inference_total == 0
        assert ep.steps[-1].calls[-1].name == "terminate"


def test_shortcut_recommends_ids_never_seen(world, env):
    for j, p in enumerate(world.problems[:20]):
        _, ep = _play("shortcut", p, env, seed=j)
        gt = [str(r["product_id"]) for r in ([p["reward"]] if isinstance(p["reward"], dict) else p["reward"])]
        assert ep.recommended_ids() == gt
        assert all(p["query"].strip() in s.think for s in ep.steps)
        shown = json.dumps([c.result for s in ep.steps for c in s.calls if c.name != "recommend_product"])
        assert not any(g in shown for g in gt)


def test_broken_runs_show_their_defect(world, env):
    p = world.problems[0]
    _, ep = _play("broken_timeout", p, env)
    assert ep.status == "timed_out"
    _, ep = _play("broken_crash", p, env)
    assert ep.status == "failed" and ep.error["type"] == "RuntimeError"
    _, ep = _play("broken_two_recommends", p, env)
    assert sum(c.name == "recommend_product" for s in ep.steps for c in s.calls) == 2
    _, ep = _play("broken_bad_recommend_args", p, env)
    rec = [c for s in ep.steps for c in s.calls if c.name == "recommend_product"]
    assert len(rec) == 1 and rec[0].raw_arguments is not None
    with pytest.raises(json.JSONDecodeError):
        parsed = json.loads(rec[0].raw_arguments)
        if not isinstance(parsed, dict):  # pragma: no cover - every variant is invalid JSON
            raise json.JSONDecodeError("not an object", "", 0)
    _, ep = _play("broken_think_then_stop", p, env)
    assert ep.steps[-1].calls == [] and ep.steps[-1].think
    assert not any(c.name == "recommend_product" for s in ep.steps for c in s.calls)


def test_teacher_plays_the_real_oro_suites():
    """The teacher (used for teacher-SFT) solves the real ORO suites in a catalogue built around them."""
    from oro_assets.arena.generator import build_catalogue_for_problems
    from oro_assets.arena.policies.agentic import teacher_episode
    from oro_assets.arena.problems import embedded_problem_files, load_problems

    problems = load_problems([f for f in embedded_problem_files() if "suite" in f.name])
    assert len(problems) == 90
    catalogue = build_catalogue_for_problems(problems, 15, n_background=500)
    env = InProcessEnv(catalogue)
    solved = {"Product": 0, "Shop": 0, "Voucher": 0}
    for p in problems:
        ep = teacher_episode(p, env)
        solved[p["category"]] += score_trace(p, ep.recommended_ids(), catalogue).success
    assert sum(solved.values()) / 90 >= 0.9, solved
    assert min(solved.values()) >= 8, solved  # every category, not just the easy one


def test_decision_thinking_names_the_choice_after_its_evidence(world, env):
    """Issue 18: a miner's decision step cites the evidence (prices, title, the rejected candidate's reason)
    before it names the product it chooses; the chosen id first appears in the step's last clause."""
    decisions = 0
    for j, p in enumerate(world.problems[:40]):
        for kind in ("agentic_datum", "agentic_compare"):
            pol, ep = _play(kind, p, env, seed=j)
            for s in ep.steps:
                rec = [c for c in s.calls if c.name == "recommend_product"]
                m = re.search(r"(?:so I will choose product|, so) (\d{6,})(?: is the better choice)?\.\s*$", s.think)
                if not rec or m is None:
                    continue
                chosen = m.group(1)
                decisions += 1
                head = s.think[: m.start()]
                assert re.search(r"\d", head), s.think  # a price / datum comes first
                if not head.startswith("Comparing "):  # one candidate cited: the choice is named only at the end
                    assert chosen not in head, s.think
                    assert head.startswith("The title '"), s.think
    assert decisions >= 20
    compare_first = []
    for j, p in enumerate(world.problems[:40]):
        pol, ep = _play("agentic_compare", p, env, seed=j)
        for s in ep.steps:
            m = re.match(r"Comparing (\d{6,}) .* so (\d{6,}) is the better choice\.$", s.think, re.S)
            if m:
                compare_first.append(m.group(1) == m.group(2))
    assert compare_first and not all(compare_first)  # the chosen one is not simply named first every time


def test_ordinal_clause_quotes_each_item_of_a_request_that_lists_them_by_ordinals():
    from oro_assets.arena.policies.base import ordinal_clause

    query = ("I'm looking for a shop that offers all of these: First,\na ragen stretch jogger pants under 838 pesos.\n"
             "Second,\na dule hydrating moisturizer priced between 234 and 386 pesos.\nThird,\na filocox large "
             "capacity pencil case priced between 48 and 124 pesos.")
    assert [ordinal_clause(query, n) for n in (1, 2, 3, 4)] == [
        "First, a ragen stretch jogger pants under 838 pesos",
        "Second, a dule hydrating moisturizer priced between 234 and 386 pesos",
        "Third, a filocox large capacity pencil case priced between 48 and 124 pesos", None]
    assert ordinal_clause("Which store has all of the following: First, a red cap. Second, a mug?", 2) == \
        "Second, a mug"
    assert ordinal_clause("Find a shop offering both a cadet hat and a bucket hat.", 1) is None
    assert ordinal_clause(query, 2, ["moisturizer", "dule"]) == "Second, a dule hydrating moisturizer"


def test_the_quoting_teacher_starts_each_shop_items_plan_with_the_requests_clause(world, env):
    from oro_assets.arena.policies.agentic import teacher
    from oro_assets.arena.policies.base import ordinal_clause

    shop = [p for p in world.problems if p["category"] == "Shop"][:5]
    product = next(p for p in world.problems if p["category"] == "Product")
    assert shop
    for p in shop:
        plain = run_episode(teacher(p, 1), p, env, clock=SimClock(0))
        quoted = run_episode(teacher(p, 1, quote_items=True), p, env, clock=SimClock(0))
        assert quoted.recommended_ids() == plain.recommended_ids(), "quoting changes the words, not the play"
        plans = [line for s in quoted.steps for line in s.think.splitlines() if line.startswith("Item ")]
        plans = [line for line in plans if "words" in line]
        items = len(p["reward"])
        assert [line.split(":")[0] for line in plans][:items] == [f"Item {n}" for n in range(1, items + 1)]
        for n, line in enumerate(plans[:items], start=1):
            keys = line.split("; words ")[1].split(";")[0].split()
            clause = ordinal_clause(p["query"], n, keys)
            assert line.startswith(f"Item {n}: {clause}; words ")
            assert clause.split()[-1].lower() in keys, "the quote stops at the item's last key word"
            assert " ".join(clause.split()[2:]) in " ".join(p["query"].split())
        assert not any("First," in s.think for s in plain.steps)
    other = run_episode(teacher(product, 1, quote_items=True), product, env, clock=SimClock(0))
    again = run_episode(teacher(product, 1), product, env, clock=SimClock(0))
    assert [s.think for s in other.steps] == [s.think for s in again.steps], "only Shop requests are quoted"


def test_the_counting_teacher_numbers_each_item_of_a_multi_item_request(world, env):
    from oro_assets.arena.policies.agentic import teacher

    multi = [p for p in world.problems if p["category"] == "Shop"][:4]
    multi += [p for p in world.problems if p["category"] == "Voucher" and len(p["reward"]) > 1][:3]
    product = next(p for p in world.problems if p["category"] == "Product")
    assert len(multi) == 7
    for p in multi:
        plain = run_episode(teacher(p, 1), p, env, clock=SimClock(0))
        counted = run_episode(teacher(p, 1, count_items=True), p, env, clock=SimClock(0))
        assert counted.recommended_ids() == plain.recommended_ids(), "counting changes the words, not the play"
        items = len(p["reward"])
        labels = [line.split(":")[0] for s in counted.steps for line in s.think.splitlines()
                  if line.startswith("Item ")]
        assert labels and all(label.endswith(f" of {items}") for label in labels), labels
        firsts = [label for label in labels if label.startswith("Item ")]
        assert firsts[0] == f"Item 1 of {items}" and f"Item {items} of {items}" in firsts
        as_plain = [s.think.replace(f" of {items}:", ":") for s in counted.steps]
        assert as_plain == [s.think for s in plain.steps], "only the items' labels change"
    single = run_episode(teacher(product, 1, count_items=True), product, env, clock=SimClock(0))
    again = run_episode(teacher(product, 1), product, env, clock=SimClock(0))
    assert [s.think for s in single.steps] == [s.think for s in again.steps], "one product: no count"


def _without_listing(think: str) -> str:
    return "\n".join(line for line in think.splitlines() if not line.startswith(("Items: ", "Then ")))


def test_the_listing_teacher_names_its_items_first_and_copies_the_next_after_each_choice(world, env):
    from oro_assets.arena.policies.agentic import teacher

    multi = [p for p in world.problems if p["category"] == "Shop"][:4]
    multi += [p for p in world.problems if p["category"] == "Voucher" and len(p["reward"]) > 1][:3]
    products = [p for p in world.problems if p["category"] == "Product"][:3]
    assert len(multi) == 7 and len(products) == 3
    for p in multi + products:
        plain = run_episode(teacher(p, 1), p, env, clock=SimClock(0))
        listed = run_episode(teacher(p, 1, list_items=True), p, env, clock=SimClock(0))
        assert listed.recommended_ids() == plain.recommended_ids(), "the listing changes the words, not the play"
        assert [_without_listing(s.think) for s in listed.steps] == [s.think for s in plain.steps]
        lines = [line for s in listed.steps for line in s.think.splitlines()]
        # the words each item's plan searches, in order: the items line names their first words, then "end"
        planned = [m.group(1) for line in lines if (m := re.match(r"Item \d+: words (\S+)", line))]
        assert len(planned) == (len(p["reward"]) if isinstance(p["reward"], list) else 1)
        assert lines[0] == f"Items: {', '.join([*planned, 'end'])}.", lines[0]
        assert sum(line.startswith("Items: ") for line in lines) == 1
        thens = [line for line in lines if line.startswith("Then ")]
        assert thens == [f"Then {w}." for w in [*planned[1:], "end"]], thens
        for n, line in enumerate(lines):
            if line.startswith("Choose "):
                assert lines[n + 1].startswith("Then "), "each choice is followed by the next item's word"
