"""KTO on the parent's own rollouts: which turns become examples, what a config that cannot contrast is told, and
a run whose weights move."""

import pytest
import torch

from oro_assets.training.profiles import with_overrides
from oro_assets.training.stages.common import default_tools
from oro_assets.training.stages.kto import config_error, labelled_turns, run_kto


def _replace_call(row: dict, tool: str, arguments: str, suffix: str) -> dict:
    """The same episode with its first call of ``tool`` given other ``arguments``."""
    messages = [dict(m) for m in row["messages"]]
    for m in messages:
        calls = m.get("tool_calls") or []
        if m["role"] == "assistant" and calls and calls[0]["function"]["name"] == tool:
            m["tool_calls"] = [{"id": calls[0].get("id", "x"), "type": "function",
                                "function": {"name": tool, "arguments": arguments}}]
            break
    return dict(row, id=row["id"] + suffix, messages=messages)


def _wrong_recommendation(row: dict) -> dict:
    """The same episode with its recommendation replaced: every turn but the last is shared with ``row``."""
    return _replace_call(row, "recommend_product", '{"product_ids": "0"}', "_wrong")


def _assistant_turns(row: dict) -> int:
    return sum(1 for m in row["messages"] if m["role"] == "assistant")


def _turns_before_recommending(row: dict) -> int:
    turns = 0
    for m in row["messages"]:
        if m["role"] == "assistant":
            if any(c["function"]["name"] == "recommend_product" for c in m.get("tool_calls") or []):
                return turns
            turns += 1
    raise AssertionError("the row never recommends")


def test_only_the_turn_that_decided_the_outcome_is_labelled(teacher_traj, small_profile):
    good = teacher_traj[0]
    bad = _wrong_recommendation(good)
    shared = _turns_before_recommending(good)
    assert shared >= 1, "the teacher searches before it recommends"
    decided = _assistant_turns(good) - shared  # the recommendation and every turn after it (terminate)
    examples, problems, ambiguous = labelled_turns({"P1": [(good, True), (bad, False)]}, small_profile.view,
                                                   default_tools(), contrastive_only=True)
    assert problems == ["P1"]
    assert ambiguous == shared, "the searches both rollouts made carry no label"
    assert sorted(e["label"] for e in examples) == [False] * decided + [True] * decided
    first = [e for e in examples if len(e["prompt"]) == min(len(x["prompt"]) for x in examples)]
    assert len(first) == 2 and all("recommend_product" in str(e["completion"]) for e in first), \
        "the first labelled turn is the recommendation, once for each outcome"


def test_problems_whose_rollouts_agree_give_no_contrast(teacher_traj, small_profile):
    a, b = teacher_traj[0], teacher_traj[1]
    group = {"P1": [(a, True), (a, True)], "P2": [(b, False), (_wrong_recommendation(b), False)]}
    examples, problems, _ = labelled_turns(group, small_profile.view, default_tools(), contrastive_only=True)
    assert examples == [] and problems == []
    # without the contrast rule every distinct (turn, label) counts once: a's turns once, b's turns plus the changed
    # recommendation and the turns after it
    examples, problems, ambiguous = labelled_turns(group, small_profile.view, default_tools(), contrastive_only=False)
    assert problems == ["P1", "P2"] and ambiguous == 0
    assert sum(e["label"] for e in examples) == _assistant_turns(a)
    assert sum(not e["label"] for e in examples) == 2 * _assistant_turns(b) - _turns_before_recommending(b)


@pytest.mark.parametrize(("overrides", "field"), [
    ({"on_policy_k": 1}, "on_policy_k=1"),
    ({"on_policy_k": 4, "temperature": 0.0}, "temperature=0.0"),
    ({"on_policy_k": 0, "curated_turns": False}, "curated_turns=False"),
])
def test_a_config_that_cannot_contrast_is_refused_at_start(small_profile, overrides, field, tmp_path):
    profile = with_overrides(small_profile, "kto", **overrides)
    assert field in config_error(profile.kto)
    with pytest.raises(ValueError, match=field):
        run_kto(profile, [], "no-parent-needed", tmp_path)


def test_on_policy_kto_trains_on_the_parents_rollouts(small_profile, base_ckpt, env, product_problems, tmp_path):
    from oro_assets.training import checkpoints as ck

    calls = []

    def alternate(problem, episode):  # 2 rollouts a problem, one labelled a success: every problem contrasts
        calls.append(problem["problem_id"])
        return len(calls) % 2 == 1

    # episode credit: the scorer's labels alone decide the contrast (the tiny policy's two rollouts may make the
    # same calls, which first-deviation credit would rightly leave unlabelled)
    profile = with_overrides(small_profile, "kto", on_policy_k=2, on_policy_problems=2, curated_turns=False,
                             max_new_tokens=24, max_steps_per_episode=2, learning_rate=1e-3, max_steps=2,
                             turn_credit="episode")
    result = run_kto(profile, [], base_ckpt, tmp_path, train_problems=product_problems, env=env,
                     scorer=alternate)
    m = result.metrics
    assert m["on_policy_rollouts"] == 4 and m["on_policy_successes"] == 2 and m["on_policy_mixed_problems"] == 2
    assert m["desirable"] > 0 and m["undesirable"] > 0
    assert set(ck.read_manifest_problems(result.path)) == {p["problem_id"] for p in product_problems[:2]}
    calls.clear()
    again = run_kto(profile, [], base_ckpt, tmp_path, train_problems=product_problems, env=env, scorer=alternate)
    assert again.reused and again.path == result.path and calls == [], "a reused checkpoint costs no rollouts"
    before, after = _weights(base_ckpt), _weights(result.path)
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before), "KTO on the rollouts moved the weights"
    # categories: only the named category's problems are rolled out
    voucher_only = with_overrides(profile, "kto", categories=("Voucher",))
    calls.clear()
    mixed = [*product_problems[:2], *[dict(p, problem_id=f"v{i}", category="Voucher") for i, p in
                                      enumerate(product_problems[2:4])]]
    run_kto(voucher_only, [], base_ckpt, tmp_path, train_problems=mixed, env=env, scorer=alternate)
    assert sorted(set(calls)) == ["v0", "v1"]


def _weights(path) -> dict:
    from pathlib import Path

    from safetensors.torch import load_file

    files = sorted(Path(path).glob("model/*.safetensors"))
    assert files, f"no weights under {path}"
    return {k: v for f in files for k, v in load_file(str(f)).items()}


def _other_search(row: dict) -> dict:
    """The same episode with its first search's words changed: it leaves ``row``'s path at its first turn."""
    return _replace_call(row, "find_product", '{"q": "other words"}', "_other")


def _reworded(row: dict) -> dict:
    """The same calls with other thinking text on every assistant turn: no turn is textually shared with ``row``."""
    messages = [dict(m, content=f"{m.get('content') or ''} (said otherwise)") if m["role"] == "assistant" else m
                for m in row["messages"]]
    return dict(row, id=row["id"] + "_reworded", messages=messages)


def test_first_deviation_credits_the_turn_whose_calls_no_success_made(teacher_traj, small_profile):
    """Rollouts are compared by what they do, not by their words: a failure that searched as the success did and
    then recommended another product gives its recommendation alone; one that searched other words gives its first
    search alone; the success's shared searches carry no label."""
    good = teacher_traj[0]
    shared = _turns_before_recommending(good)
    wrong = _reworded(_wrong_recommendation(good))
    astray = _reworded(_other_search(good))
    group = {"P1": [(good, True), (wrong, False), (astray, False)]}
    examples, _, _ = labelled_turns(group, small_profile.view, default_tools(), contrastive_only=True,
                                    turn_credit="first_deviation")
    bad = [e for e in examples if not e["label"]]
    assert len(bad) == 2
    assert any("recommend_product" in str(e["completion"]) and '"0"' in str(e["completion"]) for e in bad)
    assert any("other words" in str(e["completion"]) for e in bad)
    # the success's first search is shared with the wrong recommendation's rollout: no label; its turns from the
    # recommendation on are desirable
    good_turns = [e for e in examples if e["label"]]
    assert len(good_turns) == _assistant_turns(good) - shared
    assert "recommend_product" in str(min(good_turns, key=lambda e: len(e["prompt"]))["completion"])
    # with every turn labelled, the reworded failures' turns all count: nothing is textually shared
    episode, _, _ = labelled_turns(group, small_profile.view, default_tools(), contrastive_only=True)
    assert sum(not e["label"] for e in episode) == _assistant_turns(wrong) + _assistant_turns(astray)


def test_an_unknown_turn_credit_is_refused_naming_the_field(small_profile, tmp_path):
    profile = with_overrides(small_profile, "kto", turn_credit="last_turn")
    assert "turn_credit='last_turn'" in config_error(profile.kto)
    with pytest.raises(ValueError, match="turn_credit"):
        run_kto(profile, [], "no-parent-needed", tmp_path)


def test_recommendation_credit_labels_the_answers_alone(teacher_traj, small_profile):
    """A failure that searched other words and recommended as the success did: under 'recommendation' credit its
    search carries no label, its recommendation the failure's (the same call as the success's, other words)."""
    good = teacher_traj[0]
    astray = _reworded(_other_search(good))
    examples, _, _ = labelled_turns({"P1": [(good, True), (astray, False)]}, small_profile.view, default_tools(),
                                    contrastive_only=True, turn_credit="recommendation")
    assert sorted(e["label"] for e in examples) == [False, True]
    assert all("recommend_product" in str(e["completion"]) and "find_product" not in str(e["completion"])
               for e in examples)
