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
    if not any(w != 0 for w in (cfg.format_weight, cfg.match_weight, cfg.outcome_weight)):
        return "dr_grpo: format_weight, match_weight and outcome_weight are all 0, so every reward is 0"
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


def weights_fingerprint(model: Any) -> dict[str, tuple[float, float]]:
    """(sum, sum of squares) of every parameter: equal before and after training iff (almost surely) unchanged."""
    import torch

    with torch.no_grad():
        return {n: (float(p.detach().double().sum()), float(p.detach().double().square().sum()))
                for n, p in model.named_parameters()}


def weights_changed(before: dict[str, tuple[float, float]], model: Any) -> bool:
    """Whether training changed the model: a parameter of ``before`` differs, or a LoRA adapter (new, its B
    initialised to zero) is no longer zero."""
    after = weights_fingerprint(model)
    if any(after.get(n, v) != v for n, v in before.items()):
        return True
    return any(v[1] > 0 for n, v in after.items() if n not in before and "lora_B" in n)


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


def run_dr_grpo(profile: ModelProfile, rl_prompts: str | Path | Sequence[dict], parent: str | Path,
                out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, tools: Sequence[dict] | None = None,
                catalogue: Any = None, seed: int = 0, log: LogFn = print_log, force: bool = False) -> StageResult:
    """Dr. GRPO on per-step prompts; reward = format + tool-call match vs the teacher's next step + outcome
    (production-strict success of a final recommendation when ``catalogue`` is given, see ``rewards``)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from oro_assets.training.rewards import make_reward_fn

    cfg = profile.dr_grpo
    gen_batch = cfg.train.per_device_train_batch_size * cfg.train.gradient_accumulation_steps
    if (error := config_error(cfg, gen_batch)) is not None:
        raise ValueError(error)
    tools = list(tools) if tools is not None else default_tools()
    rows = list(load_rows(rl_prompts))
    random.Random(seed).shuffle(rows)
    if cfg.max_prompts is not None:
        rows = rows[: cfg.max_prompts]
    if not rows:
        raise DatasetError("dr_grpo: no rl_prompts rows")
    checkpoint = StageCheckpoint(profile, "dr_grpo", dataclasses.asdict(cfg), {"rl_prompts": rows_hash(rows)}, parent,
                                 out_root, tracking)

    def train(tmp: Path, run: Any) -> Trained:
        model, tok = load_for_training(profile, parent)
        if not tags_survive_decode(tok):
            raise ValueError(f"dr_grpo: the tokenizer of {parent} marks the <think>/<tool_call> tags special, so TRL's "
                             "completion decode drops them and every reward is 0 (rebuild the base: tiny_model)")
        before = weights_fingerprint(model)
        data = []
        for r in rows:
            prompt = r["prompt"] if not isinstance(r["prompt"], str) else jsonio.loads(r["prompt"])
            tn, spec = grpo_targets(prompt, r.get("teacher_next"), r.get("reward_spec"), profile.view)
            data.append({"prompt": grpo_prompt_text(tok, prompt, tools, profile.view), "teacher_next": tn,
                         "reward_spec": spec})
        reward_log: list[float] = []
        reward_fn = make_reward_fn(cfg.format_weight, cfg.match_weight, cfg.outcome_weight, sink=reward_log,
                                   catalogue=catalogue)
        base = base_args(profile, cfg.train, str(tmp / "trainer"), f"dr_grpo-{checkpoint.version}")
        args = GRPOConfig(**base, loss_type=cfg.loss_type, scale_rewards=cfg.scale_rewards, beta=cfg.beta,
                          num_generations=cfg.num_generations, max_completion_length=cfg.max_completion_length,
                          temperature=cfg.temperature, shuffle_dataset=False)
        engine = {}
        if cfg.rollout_engine:
            from oro_assets.agents.engine import grpo_rollout_func
            from oro_assets.agents.local_model import end_token_ids

            engine["rollout_func"] = grpo_rollout_func(tok, eos_ids=end_token_ids(tok), temperature=cfg.temperature,
                                                       max_new_tokens=cfg.max_completion_length, seed=seed)
        trained, metrics = fit(GRPOTrainer, profile=profile, model=model, run=run, log=log, args=args,
                               train_dataset=Dataset.from_list(data), processing_class=tok, reward_funcs=[reward_fn],
                               **engine)
        metrics.update(reward_summary(reward_log, cfg.num_generations, gen_batch))
        metrics["weights_changed"] = weights_changed(before, trained)
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
    return run_dr_grpo(ctx.profile, ctx.need("rl_prompts"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                       catalogue=ctx.optional_catalogue(), seed=ctx.seed, log=ctx.log, force=ctx.force)
