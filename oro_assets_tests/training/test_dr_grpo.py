"""Dr. GRPO learns: on a toy policy the mean teacher-anchored reward rises over training; configs that cannot
give a group reward variance are refused at start (issue 30)."""

from __future__ import annotations

import json

import pytest

from oro_assets.training.profiles import with_overrides
from oro_assets.training.stages import run_dr_grpo, run_sft

QUERY = [{"role": "user", "content": "Find me a red cotton shirt priced between 100 and 300 pesos."}]
RIGHT = {"name": "find_product", "arguments": json.dumps({"q": "red cotton shirt", "price": "100-300"})}
WRONG = {"name": "terminate", "arguments": json.dumps({"status": "failure"})}
TEACHER_NEXT = {"think": "search.", "tool_calls": [{"type": "function", "function": RIGHT}]}
TEMPERATURE = 0.7


def _row(i: int, fn: dict, think: str) -> dict:
    msgs = QUERY + [{"role": "assistant", "content": "", "reasoning_content": think,
                     "tool_calls": [{"id": "c", "type": "function", "function": fn}]}]
    return {"id": f"toy{i}", "messages": msgs, "tools": "[]", "problem_id": "toy_problem"}


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _sampled_reward(path, n: int = 48) -> float:
    """Mean reward of ``n`` completions sampled at the training temperature, scored here (not by the stage)."""
    from oro_assets.training.checkpoints import load_policy
    from oro_assets.training.rewards import step_reward
    from oro_assets.training.views import view_messages

    policy = load_policy(path, temperature=TEMPERATURE, max_new_tokens=64, seed=5).inner
    prompt = policy.render_prompt(view_messages(QUERY, "compact"), [])
    texts = [t for t, *_ in policy.generate_texts([prompt] * n)]
    return _mean([step_reward(t, json.dumps(TEACHER_NEXT), "{}") for t in texts])


@pytest.fixture(scope="module")
def toy_policy(small_profile, base_ckpt, tmp_path_factory):
    """A policy that answers the request half the time with the teacher's search (reward 2: format 1 + match 1)
    and half the time gives up (reward 1: format 1, another tool); the rest is broken text (reward 0-0.5)."""
    rows = [_row(i, RIGHT if i % 2 else WRONG, "search." if i % 2 else "give up.") for i in range(8)]
    p = with_overrides(small_profile, "sft", max_steps=150, learning_rate=5e-3, per_device_train_batch_size=4)
    return run_sft(p, rows, base_ckpt, tmp_path_factory.mktemp("toy"), log=lambda m: None)


def test_dr_grpo_raises_the_mean_reward_of_a_toy_policy(small_profile, toy_policy, tmp_path):
    """Fails when completions are decoded without their tags (every reward 0, every group tied, no gradient)."""
    profile = with_overrides(small_profile, "dr_grpo", reward_level="step", format_weight=1.0, match_weight=1.0,
                             outcome_weight=1.0, max_steps=16, per_device_train_batch_size=16,
                             num_generations=16, learning_rate=1e-3, warmup_ratio=0.0, lr_scheduler_type="constant",
                             max_completion_length=64, max_prompts=1, temperature=TEMPERATURE)
    rl = [{"id": "rl0", "problem_id": "toy_problem", "prompt": QUERY, "teacher_next": TEACHER_NEXT,
           "reward_spec": "{}", "step": 1}]
    res = run_dr_grpo(profile, rl, toy_policy.path, tmp_path, tools=[], log=lambda m: None)
    m = res.metrics
    assert m["groups"] == 16 and len(m["reward_by_step"]) == 16
    assert m["groups_with_reward_variance_share"] >= 0.5, m
    assert not res.learned_nothing and m["weights_changed"] is True
    assert min(m["reward_by_step"]) > 0, "completions are parsed with their tags (a tagless decode scores 0)"
    # The rise is measured outside the stage, on fresh samples of the parent and of the trained policy: the
    # stage's own per-step means (16 completions each) swing by +-0.3 step to step, so their first and last
    # quarters do not separate reliably in 16 steps (measured over seeds 0-2: -0.05..+0.23), while 96 fresh
    # samples do (parent 1.50; trained 1.73 / 1.83 / 1.77).
    before, after = _sampled_reward(toy_policy.path, n=96), _sampled_reward(res.path, n=96)
    assert after > before + 0.15, (before, after)


@pytest.mark.parametrize(("field", "value"), [("num_generations", 1), ("temperature", 0.0)])
def test_a_config_without_reward_variance_is_refused_at_start(small_profile, base_ckpt, tmp_path, field, value):
    overrides = {field: value, "per_device_train_batch_size": 4, "reward_level": "step"}
    profile = with_overrides(small_profile, "dr_grpo", **overrides)
    rl = [{"id": "rl0", "problem_id": "p", "prompt": QUERY, "teacher_next": TEACHER_NEXT, "reward_spec": "{}",
           "step": 1}]
    with pytest.raises(ValueError) as err:
        run_dr_grpo(profile, rl, base_ckpt, tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"dr_grpo: {field}={value}")
    assert not (tmp_path / "out").exists(), "refused before any checkpoint directory is made"


def test_a_tokenizer_that_drops_the_tags_is_refused(small_profile, base_ckpt, tmp_path):
    """A checkpoint whose tokenizer marks <tool_call> special (the tiny tokenizer before issue 30) cannot be rewarded."""
    import shutil

    old = tmp_path / "old_base"
    shutil.copytree(base_ckpt, old)
    tok_json = old / "model" / "tokenizer.json"
    spec = json.loads(tok_json.read_text())
    for added in spec["added_tokens"]:
        if added["content"] in ("<think>", "</think>", "<tool_call>", "</tool_call>"):
            added["special"] = True
    tok_json.write_text(json.dumps(spec))
    cfg_json = old / "model" / "tokenizer_config.json"
    cfg = json.loads(cfg_json.read_text())
    for added in (cfg.get("added_tokens_decoder") or {}).values():
        if added["content"] in ("<think>", "</think>", "<tool_call>", "</tool_call>"):
            added["special"] = True
    cfg_json.write_text(json.dumps(cfg))
    rl = [{"id": "rl0", "problem_id": "p", "prompt": QUERY, "teacher_next": TEACHER_NEXT, "reward_spec": "{}",
           "step": 1}]
    with pytest.raises(ValueError, match="marks the <think>/<tool_call> tags special"):
        run_dr_grpo(with_overrides(small_profile, "dr_grpo", reward_level="step"), rl, old, tmp_path / "out")
