"""Dr. GRPO over whole episodes (``reward_level="episode"``): the engine's episode traces mask exactly the sampled
tokens, and on a toy policy that solves one problem about half the time the stage raises its success rate on fresh
episodes sampled outside the stage (issue 30)."""

from __future__ import annotations

import pytest

from oro_assets.training.profiles import with_overrides
from oro_assets.training.stages import default_scorer, run_dr_grpo, run_sft

TEMPERATURE = 0.7


def _success_rate(path, problem, env, catalogue, n: int) -> float:
    """Share of ``n`` fresh episodes (sampled at the training temperature, other seeds) that succeed, scored here."""
    from oro_assets.agents.rollout import rollout_many
    from oro_assets.training.checkpoints import load_policy

    policy = load_policy(path, temperature=TEMPERATURE, max_new_tokens=96, seed=12345)
    rollouts = rollout_many(policy, [problem], env, n=n, max_steps=6)
    score = default_scorer(catalogue)
    return sum(score(r.problem, r.episode) for r in rollouts) / n


def _give_up_row(row: dict, i: int) -> dict:
    """The teacher's episode cut after the request: the model terminates at once (scores 0)."""
    msgs = [m for m in row["messages"] if m["role"] in ("system", "user")][:2]
    msgs.append({"role": "assistant", "content": "", "reasoning_content": "give up.",
                 "tool_calls": [{"id": "c0", "type": "function",
                                 "function": {"name": "terminate", "arguments": '{"status": "failure"}'}}]})
    return {**row, "id": f"giveup{i}", "messages": msgs}


@pytest.fixture(scope="module")
def toy(small_profile, base_ckpt, teacher_traj, tmp_path_factory):
    """One problem the teacher solved; a policy trained on its episode and on giving up, half and half."""
    row = teacher_traj[0]
    rows = [dict(row, id=f"win{i}") if i % 2 else _give_up_row(row, i) for i in range(8)]
    p = with_overrides(small_profile, "sft", max_steps=200, learning_rate=5e-3, per_device_train_batch_size=4,
                       max_length=1024)
    return row["problem_id"], run_sft(p, rows, base_ckpt, tmp_path_factory.mktemp("toy_ep"), log=lambda m: None)


def test_episode_traces_mask_exactly_the_sampled_tokens(toy, world, env):
    from oro_assets.agents.rollout import rollout_many
    from oro_assets.training.checkpoints import load_policy

    problem_id, ckpt = toy
    problem = next(p for p in world.problems if p["problem_id"] == problem_id)
    policy = load_policy(ckpt.path, temperature=TEMPERATURE, max_new_tokens=96, seed=1)
    traces: dict = {}
    rollouts = rollout_many(policy, [problem], env, n=4, max_steps=6, traces=traces)
    assert set(traces) == {(0, s) for s in range(4)}
    tok = policy.inner.tokenizer
    for r in rollouts:
        ids, mask = traces[(0, r.sample)]
        assert len(ids) == len(mask) and mask[0] == 0 and mask[-1] == 1
        turns = [m for m in r.episode.to_messages() if m["role"] == "assistant"]
        # one run of sampled tokens per model turn, each ending in the turn's end token
        runs = sum(1 for i, m in enumerate(mask) if m == 1 and (i == 0 or mask[i - 1] == 0))
        assert runs == len(turns) >= 1
        assert ids[-1] in {tok.convert_tokens_to_ids("<|im_end|>"), tok.eos_token_id}
        # what is not sampled holds the tool results the episode saw
        unmasked = tok.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
        assert "<tool_response>" in unmasked or len(turns) == 1


def test_dr_grpo_on_episodes_raises_the_success_rate_of_a_toy_policy(small_profile, toy, world, env, tmp_path):
    """Fails when the stage learns nothing: success on 48 fresh episodes outside the stage must rise."""
    problem_id, ckpt = toy
    problem = next(p for p in world.problems if p["problem_id"] == problem_id)
    before = _success_rate(ckpt.path, problem, env, world.catalogue, 48)
    assert 0.1 <= before <= 0.9, f"the toy policy must sometimes succeed and sometimes not, got {before}"
    profile = with_overrides(small_profile, "dr_grpo", reward_level="episode", max_steps=12,
                             per_device_train_batch_size=16, num_generations=16, learning_rate=3e-4,
                             warmup_ratio=0.0, lr_scheduler_type="constant", max_completion_length=96,
                             max_prompts=1, temperature=TEMPERATURE, max_steps_per_episode=6,
                             outcome_weight=1.0, rule_weight=0.0, format_weight=0.0)
    res = run_dr_grpo(profile, None, ckpt.path, tmp_path, train_problems=[problem], env=env,
                      catalogue=world.catalogue, log=lambda m: None)
    m = res.metrics
    assert m["episodes"] == 12 * 16 and m["groups"] == 12
    assert m["groups_with_reward_variance_share"] >= 0.5 and m["weights_changed"]
    after = _success_rate(res.path, problem, env, world.catalogue, 48)
    assert after > before + 0.1, (before, after, m["reward_by_step"])


def test_episode_level_needs_problems_and_an_env(small_profile, base_ckpt, tmp_path):
    profile = with_overrides(small_profile, "dr_grpo", reward_level="episode")
    with pytest.raises(ValueError, match="needs train_problems"):
        run_dr_grpo(profile, None, base_ckpt.path if hasattr(base_ckpt, "path") else base_ckpt, tmp_path,
                    log=lambda m: None)


def test_an_unknown_reward_level_is_refused(small_profile, base_ckpt, tmp_path):
    profile = with_overrides(small_profile, "dr_grpo", reward_level="trajectory")
    with pytest.raises(ValueError, match="reward_level='trajectory'"):
        run_dr_grpo(profile, [], base_ckpt, tmp_path, log=lambda m: None)


class _Answered:
    """An episode that ended recommending ``ids`` (what ``episode_score`` reads of an episode)."""

    status = "success"

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids

    def recommended_ids(self) -> list[str]:
        return self.ids


def test_rule_every_item_withholds_partial_credit_from_an_answer_short_of_the_asked_count():
    from oro_assets.training.stages.grpo_episodes import episode_reward

    problem = {"problem_id": "p", "category": "Shop", "query": "a kettle and a mug from one shop",
               "reward": [{"product_id": "kettle-1", "title": ["kettle"]}, {"product_id": "mug-2", "title": ["mug"]}]}
    weights = {"outcome_weight": 1.0, "rule_weight": 0.5, "format_weight": 0.0}
    # ORO's rule score: item 1 exact (1.0), item 2 missing (0.0) -> 0.5; half of it is the partial credit
    assert episode_reward(problem, _Answered(["kettle-1"]), {}, **weights) == (0.25, False)
    assert episode_reward(problem, _Answered(["kettle-1"]), {}, **weights, rule_every_item=True) == (0.0, False)
    # the same product twice is still one product (the scorer deduplicates the ids)
    assert episode_reward(problem, _Answered(["kettle-1", "kettle-1"]), {}, **weights, rule_every_item=True) == (
        0.0, False)
    # both products named: the rule credit stays, with or without the option
    both = episode_reward(problem, _Answered(["kettle-1", "mug-2"]), {}, **weights, rule_every_item=True)
    assert both == episode_reward(problem, _Answered(["kettle-1", "mug-2"]), {}, **weights)
    assert both[0] == 0.5  # rule 1.0 x 0.5; not a success: the catalogue has neither product's shop
