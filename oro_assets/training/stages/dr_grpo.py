"""Stage 5, Dr. GRPO (TRL ``GRPOTrainer`` with ``loss_type="dr_grpo"``, ``scale_rewards="none"``,
``beta=0``) on per-step prompts with a teacher-anchored reward (``training.rewards``).

A group whose completions all score the same has zero advantage and gives no gradient, so the stage
refuses at start a config under which no group can vary (one generation, temperature 0, all reward
weights 0) and a tokenizer whose decode drops the tool-call tags (TRL decodes completions with
``skip_special_tokens=True``), and reports the share of groups with reward variance, the mean reward
by step (first vs last quarter), whether the weights changed, and ``learned_nothing`` when no group varied."""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oro_assets import jsonio
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import DatasetError, load_rows, normalise_messages, rows_hash
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.stages.common import (
    LogFn,
    StageContext,
    base_args,
    default_tools,
    fit,
    load_for_training,
    print_log,
    row_problem_ids,
)
from oro_assets.training.stages.lifecycle import StageCheckpoint, Trained
from oro_assets.training.tracking import Tracking
from oro_assets.training.views import compact_messages, view_messages, view_tools


def grpo_prompt_text(tokenizer: Any, prompt_messages: Sequence[dict], tools: Sequence[dict], view: str) -> str:
    """The generation prompt exactly as the rollout policy renders it (G's LocalModelPolicy + view)."""
    from oro_assets.agents.local_model import to_template_messages

    msgs = to_template_messages(view_messages(normalise_messages(prompt_messages), view))
    return tokenizer.apply_chat_template(msgs, tools=view_tools(tools, view) or None, add_generation_prompt=True,
                                         tokenize=False)


def grpo_targets(prompt_messages: Sequence[dict], teacher_next: Any, reward_spec: Any, view: str) -> tuple[str, str]:
    """The teacher's next step and the reward spec (JSON) as the model writes them under ``view``.

    The compact view names products by handles, so the teacher's ``product_ids`` and the ground-truth
    ids are mapped the same way the prompt's products were.
    """
    from oro_assets.training.rewards import teacher_calls

    handles = None if view == "full" else compact_messages(normalise_messages(prompt_messages))[1]
    to_model = (lambda args: args) if handles is None else handles.to_handles
    tn = jsonio.loads(teacher_next) if isinstance(teacher_next, str) and teacher_next.strip() else teacher_next
    if isinstance(tn, dict):
        calls = [{"type": "function", "function": {"name": name, "arguments": jsonio.stdlib_dumps(to_model(args))}}
                 for name, args in teacher_calls(tn)]
        tn = {**tn, "tool_calls": calls}
    spec = jsonio.loads(reward_spec) if isinstance(reward_spec, str) and reward_spec.strip() else (reward_spec or {})
    if isinstance(spec, dict) and handles is not None:
        for key in ("ground_truth_ids", "gt_ids"):
            if isinstance(spec.get(key), list):
                spec = {**spec, key: to_model({"product_ids": [str(x) for x in spec[key]]})["product_ids"]}
        if handles.by_handle:
            spec = {**spec, "id_map": dict(handles.by_handle)}  # for production-strict scoring of handles
    return jsonio.stdlib_dumps(tn), jsonio.stdlib_dumps(spec)


def config_error(cfg: Any, gen_batch: int) -> str | None:
    """One line naming the field of a Dr. GRPO config under which no group can have reward variance (None if fine)."""
    if cfg.num_generations < 2:
        return (f"dr_grpo: num_generations={cfg.num_generations} gives each prompt one completion, so no group has "
                "reward variance and nothing is learnt (needs >= 2)")
    if not cfg.temperature > 0:
        return (f"dr_grpo: temperature={cfg.temperature} samples the same completion num_generations times, so no "
                "group has reward variance (needs > 0)")
    if cfg.reward_level not in ("step", "episode"):
        return f"dr_grpo: reward_level={cfg.reward_level!r} is not one of step, episode"
    weights = ("format_weight", "match_weight", "outcome_weight") if cfg.reward_level == "step" else (
        "format_weight", "rule_weight", "outcome_weight")
    if not any(getattr(cfg, w) != 0 for w in weights):
        return f"dr_grpo: {', '.join(weights)} are all 0, so every reward is 0"
    if gen_batch % cfg.num_generations:
        return (f"dr_grpo: num_generations={cfg.num_generations} must divide the generation batch {gen_batch} "
                "(per_device_train_batch_size x gradient_accumulation_steps)")
    return None


def tags_survive_decode(tokenizer: Any) -> bool:
    """True when a ``skip_special_tokens=True`` decode (TRL's, for every completion) keeps the Qwen3 tags."""
    from oro_assets.agents.toolcall import THINK_CLOSE, THINK_OPEN, TOOL_CLOSE, TOOL_OPEN

    text = f"{THINK_OPEN}\n{THINK_CLOSE}\n\n{TOOL_OPEN}\n{TOOL_CLOSE}"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return tokenizer.decode(ids, skip_special_tokens=True) == text


def reward_summary(rewards: Sequence[float], num_generations: int, per_step: int) -> dict[str, Any]:
    """Group and per-step statistics of the rewards in the order TRL scored them (``per_step`` completions a
    step, ``num_generations`` consecutive completions a group)."""
    groups = [rewards[i:i + num_generations] for i in range(0, len(rewards), num_generations)]
    varying = sum(1 for g in groups if len(g) > 1 and max(g) - min(g) > 1e-9)
    by_step = [sum(c) / len(c) for c in (rewards[i:i + per_step] for i in range(0, len(rewards), per_step))]
    quarter = max(1, len(by_step) // 4)

    def mean(xs: Sequence[float]) -> float | None:
        return round(sum(xs) / len(xs), 4) if xs else None

    return {"groups": len(groups), "groups_with_reward_variance": varying,
            "groups_with_reward_variance_share": round(varying / len(groups), 4) if groups else 0.0,
            "reward_mean": mean(rewards), "reward_by_step": [round(x, 4) for x in by_step],
            "reward_mean_first": mean(by_step[:quarter]), "reward_mean_last": mean(by_step[-quarter:])}


def episode_summary(episodes: Sequence[dict], per_step: int) -> dict[str, Any]:
    """Success of the stage's own training episodes: overall and first vs last quarter of its steps."""
    by_step = [episodes[i:i + per_step] for i in range(0, len(episodes), per_step)]
    quarter = max(1, len(by_step) // 4)

    def share(steps: Sequence[Sequence[dict]]) -> float | None:
        eps = [e for s in steps for e in s]
        return round(sum(e["success"] for e in eps) / len(eps), 4) if eps else None

    return {"episodes": len(episodes), "episode_success": share(by_step),
            "episode_success_first": share(by_step[:quarter]), "episode_success_last": share(by_step[-quarter:]),
            "episode_model_tokens_mean": round(sum(e["model_tokens"] for e in episodes) / len(episodes), 1)
            if episodes else None}


def grpo_trainer_class(profile: ModelProfile) -> type:
    """TRL's ``GRPOTrainer``, or its label-position-head subclass where the profile asks for it."""
    if profile.label_position_loss:
        from oro_assets.training.stages.label_position_loss import label_position_grpo_trainer

        return label_position_grpo_trainer()
    from trl import GRPOTrainer

    return GRPOTrainer


def run_dr_grpo(profile: ModelProfile, rl_prompts: str | Path | Sequence[dict] | None, parent: str | Path,
                out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, tools: Sequence[dict] | None = None,
                catalogue: Any = None, train_problems: Sequence[dict] | None = None, env: Any = None, seed: int = 0,
                log: LogFn = print_log, force: bool = False) -> StageResult:
    """Dr. GRPO. ``reward_level`` step: per-step prompts (``rl_prompts``), reward = format + tool-call match vs the
    teacher's next step + outcome (production-strict success of a final recommendation when ``catalogue`` is
    given, see ``rewards``). episode: whole episodes of ``train_problems`` in ``env`` (``grpo_episodes``)."""
    from datasets import Dataset
    from trl import GRPOConfig

    cfg = profile.dr_grpo
    gen_batch = cfg.train.per_device_train_batch_size * cfg.train.gradient_accumulation_steps
    if (error := config_error(cfg, gen_batch)) is not None:
        raise ValueError(error)
    episodes = cfg.reward_level == "episode"
    tools = list(tools) if tools is not None else default_tools()
    if episodes:
        from oro_assets.training.stages.grpo_episodes import episode_dataset
        from oro_assets.training.stages.rollouts import of_categories

        if env is None or catalogue is None or train_problems is None:
            raise ValueError("dr_grpo: reward_level 'episode' needs train_problems, an env and the catalogue")
        rows = episode_dataset(of_categories(train_problems, cfg.categories))
    else:
        if rl_prompts is None:
            raise ValueError("dr_grpo: reward_level 'step' needs rl_prompts")
        rows = list(load_rows(rl_prompts))
    random.Random(seed).shuffle(rows)
    if cfg.max_prompts is not None:
        rows = rows[: cfg.max_prompts]
    if not rows:
        raise DatasetError(f"dr_grpo: no {'train problems' if episodes else 'rl_prompts rows'}")
    checkpoint = StageCheckpoint(profile, "dr_grpo", dataclasses.asdict(cfg),
                                 {"problems" if episodes else "rl_prompts": rows_hash(rows)}, parent, out_root,
                                 tracking)

    def train(tmp: Path, run: Any) -> Trained:
        model, tok = load_for_training(profile, parent)
        if not episodes and not tags_survive_decode(tok):
            raise ValueError(f"dr_grpo: the tokenizer of {parent} marks the <think>/<tool_call> tags special, so TRL's "
                             "completion decode drops them and every reward is 0 (rebuild the base: tiny_model)")
        reward_log: list[float] = []
        episode_log: list[dict] = []
        base = base_args(profile, cfg.train, str(tmp / "trainer"), f"dr_grpo-{checkpoint.version}")
        args = GRPOConfig(**base, loss_type=cfg.loss_type, scale_rewards=cfg.scale_rewards, beta=cfg.beta,
                          num_generations=cfg.num_generations, max_completion_length=cfg.max_completion_length,
                          temperature=cfg.temperature, shuffle_dataset=False)
        engine = {}
        if episodes:
            from oro_assets.training.stages.grpo_episodes import episode_reward_fn, episode_rollout_func

            data = rows
            reward_fn = episode_reward_fn(sink=reward_log)
            engine["rollout_func"] = episode_rollout_func(
                train_problems, env, catalogue, tok, view=profile.view, temperature=cfg.temperature, top_p=1.0,
                max_new_tokens=cfg.max_completion_length, max_steps=cfg.max_steps_per_episode,
                outcome_weight=cfg.outcome_weight, rule_weight=cfg.rule_weight, format_weight=cfg.format_weight,
                seed=seed, sink=episode_log, rule_every_item=cfg.rule_every_item)
        else:
            from oro_assets.training.rewards import make_reward_fn

            data = []
            for r in rows:
                prompt = r["prompt"] if not isinstance(r["prompt"], str) else jsonio.loads(r["prompt"])
                tn, spec = grpo_targets(prompt, r.get("teacher_next"), r.get("reward_spec"), profile.view)
                data.append({"prompt": grpo_prompt_text(tok, prompt, tools, profile.view), "teacher_next": tn,
                             "reward_spec": spec})
            reward_fn = make_reward_fn(cfg.format_weight, cfg.match_weight, cfg.outcome_weight, sink=reward_log,
                                       catalogue=catalogue)
        if cfg.rollout_engine and not episodes:
            from oro_assets.agents.engine import grpo_rollout_func
            from oro_assets.agents.local_model import end_token_ids

            engine["rollout_func"] = grpo_rollout_func(tok, eos_ids=end_token_ids(tok), temperature=cfg.temperature,
                                                       max_new_tokens=cfg.max_completion_length, seed=seed)
        trained, metrics = fit(grpo_trainer_class(profile), profile=profile, model=model, run=run, log=log, args=args,
                               extrapolate=cfg.extrapolate,
                               train_dataset=Dataset.from_list(data), processing_class=tok, reward_funcs=[reward_fn],
                               **engine)
        metrics.update(reward_summary(reward_log, cfg.num_generations, gen_batch))
        if episodes:
            metrics.update(episode_summary(episode_log, gen_batch))
        learned_nothing = metrics["groups_with_reward_variance"] == 0
        if learned_nothing:
            log("dr_grpo: LEARNED NOTHING - rewards never varied within a group (zero advantage, zero loss)")
        log(f"dr_grpo: {metrics['groups_with_reward_variance']}/{metrics['groups']} groups with reward variance; "
            f"reward {metrics['reward_mean_first']} (first quarter of steps) -> {metrics['reward_mean_last']} (last); "
            f"weights changed: {metrics['weights_changed']}")
        if metrics["final_loss"] is not None and not math.isfinite(metrics["final_loss"]):
            log("dr_grpo: non-finite loss")
        return Trained(trained, tok, metrics, [str(r["id"]) for r in rows], row_problem_ids(rows),
                       learned_nothing=learned_nothing)

    return checkpoint.run_once(train, force=force, log=log)


def from_params(ctx: StageContext) -> StageResult:
    if ctx.profile.dr_grpo.reward_level == "episode":
        env, catalogue = ctx.env()
        return run_dr_grpo(ctx.profile, None, ctx.need("parent"), ctx.out_root, ctx.tracking, catalogue=catalogue,
                           train_problems=ctx.rows("problems"), env=env, seed=ctx.seed, log=ctx.log, force=ctx.force)
    return run_dr_grpo(ctx.profile, ctx.need("rl_prompts"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                       catalogue=ctx.optional_catalogue(), seed=ctx.seed, log=ctx.log, force=ctx.force)
