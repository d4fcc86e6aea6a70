"""Dr. GRPO over whole arena episodes (``reward_level="episode"``): a group is ``num_generations`` episodes of one
train problem, run by the rollout engine on the model being trained, rewarded by how the episode ended.

TRL's ``rollout_func`` hands back, per episode, its first prompt as ``prompt_ids`` and everything after it as
``completion_ids`` - the model's turns and, between them, the tool results and template tokens - with
``env_mask`` 1 on the tokens the model sampled and 0 on the rest, so the loss trains the model's own turns only.
The sequence is the one the model last saw (the engine keeps each episode's KV cache across its turns); a token the
chat template re-rendered differently from what was sampled is masked out.

Reward (production-strict, from the arena's scorer): ``outcome_weight`` x success + ``rule_weight`` x ORO's
rule-based score of the last recommendation (the share of its fields that match, partial credit; with
``rule_every_item`` only when the recommendation names as many products as the request asks) +
``format_weight`` x the episode ended with a recommendation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oro_assets.agents.engine import episode_seed


def episode_reward(problem: dict, episode: Any, catalogue: Any, *, outcome_weight: float, rule_weight: float,
                   format_weight: float, rule_every_item: bool = False) -> tuple[float, bool]:
    """(reward, success) of one finished episode."""
    from oro_assets.training.stages.rollouts import episode_score

    score = episode_score(problem, episode, catalogue)
    if score is None:
        return 0.0, False
    rule = float(score.rule)
    if rule_every_item and len(score.recommended) < len(score.items):  # ids deduplicated by the scorer
        rule = 0.0
    reward = outcome_weight * float(score.success) + rule_weight * rule + format_weight
    return reward, bool(score.success)


def episode_dataset(problems: Sequence[dict]) -> list[dict]:
    """One training row per problem: the prompt is the problem id (the rollout function renders the episode)."""
    return [{"id": f"episode_{p['problem_id']}", "prompt": str(p["problem_id"]), "problem_id": str(p["problem_id"])}
            for p in problems]


def _groups(prompts: Sequence[str]) -> list[tuple[str, int]]:
    """(problem id, count) of each run of equal prompts, in order (TRL repeats a prompt num_generations times)."""
    runs: list[tuple[str, int]] = []
    for p in prompts:
        if runs and runs[-1][0] == p:
            runs[-1] = (p, runs[-1][1] + 1)
        else:
            runs.append((p, 1))
    return runs


def episode_rollout_func(problems: Sequence[dict], env: Any, catalogue: Any, tokenizer: Any, *, view: str,
                         temperature: float, top_p: float, max_new_tokens: int, max_steps: int,
                         outcome_weight: float, rule_weight: float, format_weight: float, seed: int = 0,
                         sink: list[dict] | None = None, rule_every_item: bool = False) -> Callable[[list, Any], dict[str, Any]]:
    """TRL ``GRPOTrainer(rollout_func=...)`` running whole episodes (see the module doc). ``sink`` receives one
    ``{"problem_id", "reward", "success", "model_tokens"}`` per episode."""
    from oro_assets.agents.local_model import LocalModelPolicy
    from oro_assets.agents.rollout import rollout_many
    from oro_assets.training.views import ViewPolicy

    by_id = {str(p["problem_id"]): p for p in problems}
    calls = iter(range(1 << 62))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def rollout_func(prompts: list, trainer: Any) -> dict[str, Any]:
        runs = _groups([str(p) for p in prompts])
        if len({n for _, n in runs}) != 1:
            raise ValueError(f"dr_grpo: the trainer's prompts come in unequal groups {[n for _, n in runs]}")
        unknown = [pid for pid, _ in runs if pid not in by_id]
        if unknown:
            raise ValueError(f"dr_grpo: prompts that are not train problem ids: {unknown[:3]}")
        group = runs[0][1]
        accelerator = getattr(trainer, "accelerator", None)
        model = accelerator.unwrap_model(trainer.model) if accelerator is not None else trainer.model
        step, call = getattr(getattr(trainer, "state", None), "global_step", 0), next(calls)
        policy = ViewPolicy(LocalModelPolicy(model, tokenizer, temperature=temperature, top_p=top_p,
                                             max_new_tokens=max_new_tokens,
                                             seed=episode_seed(seed, f"dr_grpo/{step}/{call}"), name="dr_grpo"),
                            view)
        chosen = [by_id[pid] for pid, _ in runs]
        traces: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
        was_training = model.training
        model.eval()  # checkpointed layers drop the cache in training mode
        try:
            rollouts = rollout_many(policy, chosen, env, n=group, max_steps=max_steps, traces=traces)
        finally:
            model.train(was_training)
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "episode_reward": [],
                                "episode_success": []}
        for k, r in enumerate(rollouts):  # ordered by (problem, sample): the trainer's order
            ids, mask = traces.get((k // group, r.sample), ([], []))
            first = mask.index(1) if 1 in mask else len(ids)
            prompt, completion, env_mask = ids[:first], ids[first:], mask[first:]
            if not prompt or not completion:  # ended before the model sampled anything: nothing to train
                prompt, completion, env_mask = prompt or [pad], [pad], [0]
            reward, success = episode_reward(r.problem, r.episode, catalogue, outcome_weight=outcome_weight,
                                             rule_weight=rule_weight, format_weight=format_weight,
                                             rule_every_item=rule_every_item)
            out["prompt_ids"].append(prompt)
            out["completion_ids"].append(completion)
            out["env_mask"].append(env_mask)
            out["episode_reward"].append(reward)
            out["episode_success"].append(success)
            if sink is not None:
                sink.append({"problem_id": r.problem_id, "reward": reward, "success": success,
                             "model_tokens": sum(env_mask)})
        out["logprobs"] = None
        return out

    return rollout_func


def episode_reward_fn(sink: list[float] | None = None) -> Callable[..., list[float]]:
    """The reward function TRL calls: the rewards the rollout function computed (its ``episode_reward`` field)."""

    def episode(prompts: list, completions: list, episode_reward: list[float] | None = None,
                **_: Any) -> list[float]:
        if episode_reward is None or len(episode_reward) != len(completions):
            raise ValueError("dr_grpo: episode rewards missing (the episode rollout function was not used)")
        rewards = [float(x) for x in episode_reward]
        if sink is not None:
            sink.extend(rewards)
        return rewards

    episode.__name__ = "episode_reward"
    return episode
