"""Stage 5, Dr. GRPO (TRL ``GRPOTrainer`` with ``loss_type="dr_grpo"``, ``scale_rewards="none"``,
``beta=0``) on per-step prompts with a teacher-anchored reward (``training.rewards``); reports
``learned_nothing`` when no group ever had varying rewards (zero advantage, zero gradient)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
    tn = json.loads(teacher_next) if isinstance(teacher_next, str) and teacher_next.strip() else teacher_next
    if isinstance(tn, dict):
        calls = [{"type": "function", "function": {"name": name, "arguments": json.dumps(to_model(args))}}
                 for name, args in teacher_calls(tn)]
        tn = {**tn, "tool_calls": calls}
    spec = json.loads(reward_spec) if isinstance(reward_spec, str) and reward_spec.strip() else (reward_spec or {})
    if isinstance(spec, dict) and handles is not None:
        for key in ("ground_truth_ids", "gt_ids"):
            if isinstance(spec.get(key), list):
                spec = {**spec, key: to_model({"product_ids": [str(x) for x in spec[key]]})["product_ids"]}
        if handles.by_handle:
            spec = {**spec, "id_map": dict(handles.by_handle)}  # for production-strict scoring of handles
    return json.dumps(tn), json.dumps(spec)


def run_dr_grpo(profile: ModelProfile, rl_prompts: str | Path | Sequence[dict], parent: str | Path,
                out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, tools: Sequence[dict] | None = None,
                catalogue: Any = None, seed: int = 0, log: LogFn = print_log, force: bool = False) -> StageResult:
    """Dr. GRPO on per-step prompts; reward = format + tool-call match vs the teacher's next step + outcome
    (production-strict success of a final recommendation when ``catalogue`` is given, see ``rewards``)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from oro_assets.training.rewards import make_reward_fn

    cfg = profile.dr_grpo
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
        data = []
        for r in rows:
            prompt = r["prompt"] if not isinstance(r["prompt"], str) else json.loads(r["prompt"])
            tn, spec = grpo_targets(prompt, r.get("teacher_next"), r.get("reward_spec"), profile.view)
            data.append({"prompt": grpo_prompt_text(tok, prompt, tools, profile.view), "teacher_next": tn,
                         "reward_spec": spec})
        reward_log: list[float] = []
        reward_fn = make_reward_fn(cfg.format_weight, cfg.match_weight, cfg.outcome_weight, sink=reward_log,
                                   catalogue=catalogue)
        base = base_args(profile, cfg.train, str(tmp / "trainer"), f"dr_grpo-{checkpoint.version}")
        gen_batch = base["per_device_train_batch_size"] * base["gradient_accumulation_steps"]
        if gen_batch % cfg.num_generations:
            raise ValueError(f"dr_grpo: num_generations={cfg.num_generations} must divide the generation batch "
                             f"{gen_batch}")
        args = GRPOConfig(**base, loss_type=cfg.loss_type, scale_rewards=cfg.scale_rewards, beta=cfg.beta,
                          num_generations=cfg.num_generations, max_completion_length=cfg.max_completion_length,
                          temperature=cfg.temperature, shuffle_dataset=False)
        trained, metrics = fit(GRPOTrainer, profile=profile, model=model, run=run, log=log, args=args,
                               train_dataset=Dataset.from_list(data), processing_class=tok, reward_funcs=[reward_fn])
        groups = [reward_log[i:i + cfg.num_generations] for i in range(0, len(reward_log), cfg.num_generations)]
        varying = sum(1 for g in groups if len(g) > 1 and max(g) - min(g) > 1e-9)
        learned_nothing = varying == 0
        if learned_nothing:
            log("dr_grpo: LEARNED NOTHING - rewards never varied within a group (zero advantage, zero loss)")
        metrics.update({"groups": len(groups), "groups_with_reward_variance": varying,
                        "reward_mean": sum(reward_log) / len(reward_log) if reward_log else None})
        if metrics["final_loss"] is not None and not math.isfinite(metrics["final_loss"]):
            log("dr_grpo: non-finite loss")
        return Trained(trained, tok, metrics, [str(r["id"]) for r in rows], row_problem_ids(rows),
                       learned_nothing=learned_nothing)

    return checkpoint.run_once(train, force=force, log=log)


def from_params(ctx: StageContext) -> StageResult:
    return run_dr_grpo(ctx.profile, ctx.need("rl_prompts"), ctx.need("parent"), ctx.out_root, ctx.tracking,
                       catalogue=ctx.optional_catalogue(), seed=ctx.seed, log=ctx.log, force=ctx.force)
