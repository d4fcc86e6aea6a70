"""The five post-training stages (reference §6), each a function producing a checkpoint.

``run_<stage>(profile, <datasets...>, parent_checkpoint, out_root, tracking, ...) -> StageResult``

* sft            SFTTrainer, assistant-only loss, on the curated SFT rows.
* rejection_sft  k rollouts per train problem at T=0.9 with the parent (G's LocalModelPolicy through the
                 arena episode loop), keep production-strict success, mix 50/50 with the SFT corpus.
* teacher_sft    continued SFT on a teacher's successful trajectories on train problems (voucher upsampled).
* kto            KTOTrainer, desirable/undesirable = production-strict success, weights balanced.
* dr_grpo        GRPOTrainer(loss_type="dr_grpo", scale_rewards="none", beta=0) on rl_prompts with a
                 teacher-anchored per-step reward (rewards.py); reports ``learned_nothing`` when no group
                 ever had varying rewards.

Every stage writes ``<out_root>/<stage>/<version>/`` (checkpoints.py) where ``version`` hashes the
input datasets, the resolved config and the parent version, so an unchanged stage is reused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from oro_assets.training import checkpoints as ck
from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import (
    DatasetError,
    kto_examples,
    load_rows,
    normalise_messages,
    rows_hash,
    sft_example,
)
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.tracking import StageRun, Tracking
from oro_assets.training.views import compact_messages, view_messages, view_tools

LogFn = Callable[[str], None]

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def _default_tools() -> list[dict]:
    from oro_assets.arena.tools import TOOL_SCHEMAS

    return TOOL_SCHEMAS


def _print_log(msg: str) -> None:
    print(msg, flush=True)


# ----------------------------------------------------------------------------------------------
# shared training plumbing


def _quiet(trainer: Any) -> Any:
    """Drop transformers' stdout printer: progress goes through our callback (and Pipes) instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


def _progress_callback(stage_run: StageRun, log: LogFn, history: list[dict], t0: float):
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs:
                return
            elapsed = time.perf_counter() - t0
            row = {"step": int(state.global_step), "loss": float(logs["loss"]), "elapsed_s": round(elapsed, 3)}
            for key in ("num_tokens", "learning_rate", "grad_norm", "reward", "reward_std", "frac_reward_zero_std",
                        "rewards/teacher_step_reward/mean", "kl"):
                if key in logs and isinstance(logs[key], (int, float)):
                    row[key.replace("/", "_")] = float(logs[key])
            if "num_tokens" in row and elapsed > 0:
                row["tokens_per_s"] = round(row["num_tokens"] / elapsed, 1)
            history.append(row)
            stage_run.log_metrics({k: v for k, v in row.items() if k != "step"}, step=row["step"])
            extra = f" tokens/s={row['tokens_per_s']}" if "tokens_per_s" in row else ""
            log(f"step={row['step']} loss={row['loss']:.4f}{extra}")

    return Progress()


def _base_args(profile: ModelProfile, train: Any, output_dir: str, extra_run_name: str) -> dict[str, Any]:
    t = dataclasses.asdict(train)
    args = {
        "output_dir": output_dir,
        "learning_rate": t["learning_rate"],
        "num_train_epochs": t["num_train_epochs"],
        "max_steps": t["max_steps"],
        "per_device_train_batch_size": t["per_device_train_batch_size"],
        "gradient_accumulation_steps": t["gradient_accumulation_steps"],
        "lr_scheduler_type": t["lr_scheduler_type"],
        "warmup_steps": t["warmup_ratio"],  # transformers 5: a float < 1 is a ratio of total steps
        "weight_decay": t["weight_decay"],
        "max_grad_norm": t["max_grad_norm"],
        "logging_steps": t["logging_steps"],
        "seed": t["seed"],
        "data_seed": t["seed"],
        "bf16": profile.bf16,
        "use_cpu": profile.use_cpu,
        "activation_checkpointing": profile.gradient_checkpointing,
        "report_to": "none",  # MLflow logging is ours (tracking.py), with the run id reported back
        "save_strategy": "no",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "run_name": extra_run_name,
    }
    return args


def _load_for_training(profile: ModelProfile, parent: str | Path):
    """Model (trainable) + tokenizer of the parent checkpoint, a base path, or a hub id."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    apply_threads(profile)
    parent_path = Path(parent)
    if parent_path.exists():
        model, tok = ck.load_model_and_tokenizer(parent_path, dtype=profile.dtype, trainable=True)
    else:  # hub id (qwen3-4b profile with no local copy)
        tok = AutoTokenizer.from_pretrained(str(parent))
        model = AutoModelForCausalLM.from_pretrained(str(parent), dtype=getattr(torch, profile.dtype))
    model.train()
    return model, tok


def apply_threads(profile: ModelProfile) -> None:
    if profile.torch_threads:
        import torch

        torch.set_num_threads(profile.torch_threads)


def _peft_config(profile: ModelProfile, model: Any):
    if profile.lora is None or hasattr(model, "peft_config"):
        return None  # full fine-tune, or continuing an existing adapter
    from peft import LoraConfig

    return LoraConfig(r=profile.lora.r, lora_alpha=profile.lora.alpha, lora_dropout=profile.lora.dropout,
                      target_modules=profile.lora.target_modules, task_type="CAUSAL_LM")


class _StageWriter:
    """Temporary checkpoint dir + MLflow run; ``commit`` writes metadata and moves it into place."""

    def __init__(self, profile: ModelProfile, stage: str, config: dict, dataset_hashes: dict[str, str],
                 parent: str | Path, out_root: str | Path, tracking: Tracking) -> None:
        self.profile, self.stage = profile, stage
        self.parent = str(parent)
        self.parent_version = ck.checkpoint_version(parent) if Path(parent).exists() else str(parent)
        self.config = {"profile": profile.name, "stage": stage, "stage_config": config, "view": profile.view,
                       "dtype": profile.dtype, "lora": dataclasses.asdict(profile.lora) if profile.lora else None}
        self.version = ck.stage_version(dataset_hashes, self.config, self.parent_version)
        self.dataset_hashes = dataset_hashes
        self.final = ck.checkpoint_dir(out_root, stage, self.version)
        self.tracking = tracking
        self.run: StageRun | None = None
        self.tmp: Path | None = None

    def existing(self) -> StageResult | None:
        metrics_p = self.final / "metrics.json"
        if not metrics_p.exists() or not (self.final / "model").exists():
            return None
        metrics = json.loads(metrics_p.read_text())
        run = json.loads((self.final / "mlflow_run.json").read_text()) if (self.final / "mlflow_run.json").exists() else {}
        return StageResult(self.stage, self.version, self.final, metrics, int(metrics.get("n_examples", 0)), run,
                           bool(metrics.get("learned_nothing", False)), reused=True)

    def start(self) -> Path:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.version}.", dir=self.final.parent))
        self.run = StageRun(self.tracking, self.stage, self.version, {**self.config, "parent": self.parent,
                                                                       "datasets": self.dataset_hashes})
        return self.tmp

    def commit(self, model: Any, tokenizer: Any, metrics: dict, example_ids: Sequence[str],
               problem_ids: Sequence[str], learned_nothing: bool = False) -> StageResult:
        assert self.tmp is not None and self.run is not None
        model_dir = self.tmp / "model"
        model.save_pretrained(model_dir)
        tokenizer.save_pretrained(model_dir)
        metrics = {**metrics, "n_examples": len(example_ids), "learned_nothing": learned_nothing}
        ck.write_json(self.tmp / "config.json", self.config)
        ck.write_json(self.tmp / "metrics.json", metrics)
        ck.write_manifest(self.tmp, example_ids, problem_ids)
        ck.write_json(self.tmp / ck.META_FILE, {
            "stage": self.stage, "version": self.version, "parent_version": self.parent_version,
            "parent_path": self.parent if Path(self.parent).exists() else None, "profile": self.profile.name,
            "view": self.profile.view, "dtype": self.profile.dtype, "datasets": self.dataset_hashes,
        })
        try:
            for name in ("config.json", "manifest.jsonl", "manifest_problems.json", "metrics.json"):
                self.run.log_artifact(self.tmp / name)
            self.run.log_metrics({k: v for k, v in metrics.items() if isinstance(v, (int, float))
                                  and not isinstance(v, bool)}, step=int(metrics.get("steps", 0)))
            self.run.register(self.final, self.stage, self.version, self.profile.name)
            self.run.finish("FINISHED")
        except Exception:
            self.run.finish("FAILED")
            raise
        ck.write_json(self.tmp / "mlflow_run.json", self.run.info)
        for junk in ("runs",):
            shutil.rmtree(self.tmp / junk, ignore_errors=True)
        ck.finalize_dir(self.tmp, self.final)
        return StageResult(self.stage, self.version, self.final, metrics, len(example_ids), self.run.info,
                           learned_nothing)

    def abort(self) -> None:
        if self.run is not None:
            self.run.finish("FAILED")
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _fit(trainer_cls: Any, *, profile: ModelProfile, model: Any, writer: Any, log: LogFn,
         **trainer_kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """Train with progress streamed to the log and MLflow; return the trained model and summary metrics."""
    history: list[dict] = []
    t0 = time.perf_counter()
    trainer = trainer_cls(model=model, peft_config=_peft_config(profile, model),
                          callbacks=[_progress_callback(writer.run, log, history, t0)], **trainer_kwargs)
    out = _quiet(trainer).train()
    return trainer.model, _summarise(history, time.perf_counter() - t0, out.global_step)


def _summarise(history: list[dict], wall: float, steps: int) -> dict[str, Any]:
    losses = [h["loss"] for h in history]
    tokens = max((h.get("num_tokens", 0.0) for h in history), default=0.0)
    return {
        "history": history,
        "loss_first": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "steps": steps,
        "tokens": int(tokens),
        "wall_time_s": round(wall, 2),
        "tokens_per_s": round(tokens / wall, 1) if wall > 0 else None,
    }


def _sft_train(profile: ModelProfile, stage: str, cfg: Any, examples: list[dict], problem_ids: Sequence[str],
               dataset_hashes: dict[str, str], parent: str | Path, out_root: str | Path, tracking: Tracking,
               log: LogFn, extra_metrics: dict | None = None, force: bool = False) -> StageResult:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if not examples:
        raise DatasetError(f"{stage}: no training examples")
    writer = _StageWriter(profile, stage, dataclasses.asdict(cfg), dataset_hashes, parent, out_root, tracking)
    if not force and (done := writer.existing()) is not None:
        log(f"{stage}: version {writer.version} already exists, reused")
        return done
    tmp = writer.start()
    try:
        model, tok = _load_for_training(profile, parent)
        ds = Dataset.from_list([{"messages": e["messages"], "tools": e["tools"]} for e in examples])
        args = SFTConfig(**_base_args(profile, cfg.train, str(tmp / "trainer"), f"{stage}-{writer.version}"),
                         max_length=cfg.max_length, assistant_only_loss=getattr(cfg, "assistant_only_loss", True),
                         dataset_num_proc=None)
        trained, metrics = _fit(SFTTrainer, profile=profile, model=model, writer=writer, log=log, args=args,
                               train_dataset=ds, processing_class=tok)
        metrics.update(extra_metrics or {})
        shutil.rmtree(tmp / "trainer", ignore_errors=True)
        return writer.commit(trained, tok, metrics, [e["id"] for e in examples], problem_ids)
    except BaseException:
        writer.abort()
        raise


def build_sft_trainer_for_inspection(profile: ModelProfile, rows: Sequence[dict], parent: str | Path,
                                     output_dir: str | Path, max_length: int | None = None):
    """The SFTTrainer ``run_sft`` would build (for tests that inspect masks), without training."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    cfg = profile.sft
    examples = [sft_example(r, profile.view, _default_tools_safe()) for r in rows]
    model, tok = _load_for_training(profile, parent)
    ds = Dataset.from_list([{"messages": e["messages"], "tools": e["tools"]} for e in examples])
    args = SFTConfig(**_base_args(profile, cfg.train, str(output_dir), "inspect"),
                     max_length=max_length or cfg.max_length, assistant_only_loss=True)
    return SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)


def _default_tools_safe() -> list[dict]:
    try:
        return _default_tools()
    except ImportError:
        return []


def _row_problem_ids(rows: Sequence[dict]) -> list[str]:
    return sorted({str(r["problem_id"]) for r in rows if r.get("problem_id")})


# ----------------------------------------------------------------------------------------------
# stage 1: SFT


def _copy_drills(catalogue: Any, n: int, seed: int, tools: Sequence[dict]) -> list[dict]:
    from oro_assets.arena.episode import SYSTEM_PROMPT
    from oro_assets.training.corpus import copy_drill_rows

    if catalogue is None:
        raise ValueError("copy drills need the catalogue")
    return copy_drill_rows(catalogue, n, seed, SYSTEM_PROMPT, tools)


def run_sft(profile: ModelProfile, sft_rows: str | Path | Sequence[dict], parent: str | Path,
            out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, catalogue: Any = None,
            seed: int = 0, log: LogFn = _print_log, force: bool = False) -> StageResult:
    """LoRA SFT (qwen3-4b) / full fine-tune (tiny) on the curated SFT rows, assistant-only loss.

    With ``profile.sft.copy_drills > 0`` and a ``catalogue``, a copy-drill warm-up phase runs first
    (its checkpoint is ``<out_root>/sft_warmup/<version>``, the parent of the SFT checkpoint).
    """
    rows = load_rows(sft_rows)
    cfg = profile.sft
    if cfg.max_examples is not None:
        rows = rows[: cfg.max_examples]
    if cfg.copy_drills > 0 and catalogue is not None:
        drills = _copy_drills(catalogue, cfg.copy_drills, seed, _default_tools_safe())
        warm_cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, num_train_epochs=cfg.copy_drill_epochs,
                                                                      max_steps=-1))
        warm = _sft_train(profile, "sft_warmup", warm_cfg, [sft_example(r, profile.view) for r in drills], [],
                          {"copy_drills": rows_hash(drills)}, parent, out_root, tracking, log, force=force)
        parent = warm.path
    examples = [sft_example(r, profile.view, _default_tools_safe()) for r in rows]
    return _sft_train(profile, "sft", cfg, examples, _row_problem_ids(rows), {"sft": rows_hash(rows)}, parent,
                      out_root, tracking, log, force=force)


# ----------------------------------------------------------------------------------------------
# rollouts with a checkpoint (shared by rejection SFT; evaluation uses the same loader + loop)


def default_scorer(catalogue: Any) -> Callable[[dict, Any], bool]:
    """Production-strict success of an episode's last recommendation (arena scorer)."""
    from oro_assets.arena.scoring import score_trace

    def score(problem: dict, episode: Any) -> bool:
        if episode.status != "success":
            return False
        return bool(score_trace(problem, episode.recommended_ids(), catalogue).success)

    return score


def episode_row(episode: Any, tools: Sequence[dict], source: str, problem_id: str, sample: int) -> dict:
    from oro_assets import jsonio

    messages = normalise_messages(episode.to_messages())
    rid = f"{source}_{problem_id}_{sample}_{jsonio.content_hash(messages)[:10]}"
    return {"id": rid, "messages": messages, "tools": json.dumps(list(tools), ensure_ascii=False),
            "source": source, "problem_id": problem_id}


def run_rejection_sft(profile: ModelProfile, sft_rows: str | Path | Sequence[dict], train_problems: Sequence[dict],
                      env: Any, parent: str | Path, out_root: str | Path, tracking: Tracking = Tracking.disabled(),
                      *, scorer: Callable[[dict, Any], bool] | None = None, catalogue: Any = None,
                      tools: Sequence[dict] | None = None, seed: int = 0, log: LogFn = _print_log,
                      force: bool = False) -> StageResult:
    """k rollouts per train problem with the parent at T=0.9 (top_p 0.95); keep successes; mix with SFT rows."""
    from oro_assets.agents.rollout import rollout_many

    cfg = profile.rejection_sft
    tools = list(tools) if tools is not None else _default_tools()
    if scorer is None:
        if catalogue is None:
            catalogue = getattr(env, "catalogue", None)
        if catalogue is None:
            raise ValueError("run_rejection_sft needs a scorer or a catalogue to score rollouts")
        scorer = default_scorer(catalogue)
    problems = list(train_problems)[: cfg.max_problems] if cfg.max_problems else list(train_problems)
    apply_threads(profile)
    policy = ck.load_policy(parent, temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens,
                            seed=seed, dtype=profile.dtype)
    t0 = time.perf_counter()
    rollouts = rollout_many(policy, problems, env, n=cfg.k, max_steps=cfg.max_steps_per_episode,
                            batch_size=max(1, min(32, len(problems) * cfg.k)))
    kept = []
    solved: set[str] = set()
    for r in rollouts:
        if scorer(r.problem, r.episode):
            kept.append(episode_row(r.episode, tools, "rejection", r.problem_id, r.sample))
            solved.add(r.problem_id)
    rollout_s = time.perf_counter() - t0
    log(f"rejection_sft: {len(kept)}/{len(rollouts)} rollouts kept ({len(solved)}/{len(problems)} problems) "
        f"in {rollout_s:.1f}s")
    sft = load_rows(sft_rows)
    rng = random.Random(seed)
    n_sft = max(1, round(len(kept) * (1 - cfg.mix_ratio) / cfg.mix_ratio)) if kept else min(len(sft), 64)
    sft_sample = rng.sample(sft, min(n_sft, len(sft))) if sft else []
    mix = kept + sft_sample
    rng.shuffle(mix)
    if not mix:
        raise DatasetError("rejection_sft: no kept rollouts and no SFT rows to train on")
    examples = [sft_example(r, profile.view, tools) for r in mix]
    extra = {"rollouts": len(rollouts), "rollouts_kept": len(kept), "problems": len(problems),
             "problems_solved": len(solved), "rollout_wall_time_s": round(rollout_s, 2),
             "rollout_success_rate": len(kept) / len(rollouts) if rollouts else 0.0}
    hashes = {"sft": rows_hash(sft), "rollouts": rows_hash(kept),
              "problems": rows_hash([{"id": p["problem_id"]} for p in problems])}
    problem_ids = sorted({str(p["problem_id"]) for p in problems} | set(_row_problem_ids(sft_sample)))
    return _sft_train(profile, "rejection_sft", cfg, examples, problem_ids, hashes, parent, out_root, tracking, log,
                      extra_metrics=extra, force=force)


# ----------------------------------------------------------------------------------------------
# stage 3: continued teacher SFT


def default_teacher(settings: Any, problems: Sequence[dict]) -> Any:
    """OpenAI-compatible teacher when ``settings.teacher_base_url`` is set, else the arena's scripted teacher."""
    if settings is not None and getattr(settings, "teacher_base_url", None):
        from oro_assets.agents.openai_policy import OpenAIPolicy
        from oro_assets.settings import api_key

        return OpenAIPolicy(settings.teacher_base_url, settings.teacher_model or "teacher", api_key(),
                            temperature=0.0, name="teacher-endpoint")
    from oro_assets.arena.policies.agentic import TeacherPolicy

    return TeacherPolicy({p["problem_id"]: p for p in problems})


def teacher_rows(teacher: Any, problems: Sequence[dict], env: Any, scorer: Callable[[dict, Any], bool],
                 tools: Sequence[dict], *, max_steps: int = 30) -> tuple[list[dict], int]:
    """The teacher's successful trajectories on ``problems`` as dataset rows (+ number of episodes run)."""
    from oro_assets.agents.rollout import rollout_many

    rollouts = rollout_many(teacher, list(problems), env, n=1, max_steps=max_steps)
    rows = []
    for r in rollouts:
        if scorer(r.problem, r.episode):
            row = episode_row(r.episode, tools, "teacher", r.problem_id, 0)
            row["category"] = r.problem.get("category") or "Product"
            rows.append(row)
    return rows, len(rollouts)


def run_teacher_sft(profile: ModelProfile, train_problems: Sequence[dict], env: Any, parent: str | Path,
                    out_root: str | Path, tracking: Tracking = Tracking.disabled(), *, teacher: Any = None,
                    settings: Any = None, scorer: Callable[[dict, Any], bool] | None = None, catalogue: Any = None,
                    tools: Sequence[dict] | None = None, exclude_product_ids: Sequence[str] = (), seed: int = 0,
                    log: LogFn = _print_log, force: bool = False) -> StageResult:
    """Continued SFT on the teacher's successful trajectories on train problems; voucher rows upsampled.

    ``exclude_product_ids`` (the eval pool's ground-truth ids) are never targets of the synthetic
    problems added when ``profile.teacher_sft.synthetic_problems > 0``.
    """
    cfg = profile.teacher_sft
    tools = list(tools) if tools is not None else _default_tools()
    problems = [p for p in train_problems if cfg.categories is None or p.get("category") in cfg.categories]
    if cfg.max_problems:
        problems = problems[: cfg.max_problems]
    catalogue = catalogue if catalogue is not None else getattr(env, "catalogue", None)
    if cfg.synthetic_problems > 0:
        if catalogue is None:
            raise ValueError("synthetic teacher problems need the catalogue")
        from oro_assets.training.corpus import synthetic_product_problems

        if not exclude_product_ids:
            log("teacher_sft: WARNING no eval ground-truth ids given; synthetic problems exclude only train targets")
        excluded = set(map(str, exclude_product_ids))
        problems = problems + synthetic_product_problems(catalogue, cfg.synthetic_problems, seed, excluded)
    if scorer is None:
        if catalogue is None:
            raise ValueError("run_teacher_sft needs a scorer or a catalogue")
        scorer = default_scorer(catalogue)
    teacher = teacher if teacher is not None else default_teacher(settings, problems)
    t0 = time.perf_counter()
    rows, n_eps = teacher_rows(teacher, problems, env, scorer, tools)
    log(f"teacher_sft: teacher solved {len(rows)}/{n_eps} train problems in {time.perf_counter() - t0:.1f}s")
    train_rows: list[dict] = []
    for r in rows:
        times = cfg.voucher_upsample if r.get("category") == "Voucher" else 1
        train_rows.extend([r] * (times * max(1, cfg.repeats)))
    hashes = {"teacher_rows": rows_hash(rows)}
    if cfg.copy_drills > 0:
        drills = _copy_drills(catalogue, cfg.copy_drills, seed + 1, tools)
        train_rows.extend(drills)
        hashes["copy_drills"] = rows_hash(drills)
    random.Random(seed).shuffle(train_rows)
    examples = [sft_example(r, profile.view, tools) for r in train_rows]
    extra = {"teacher": getattr(teacher, "name", "teacher"), "teacher_episodes": n_eps,
             "teacher_successes": len(rows), "voucher_rows": sum(1 for r in rows if r.get("category") == "Voucher"),
             "copy_drills": cfg.copy_drills}
    return _sft_train(profile, "teacher_sft", cfg, examples, sorted({r["problem_id"] for r in rows}),
                      hashes, parent, out_root, tracking, log, extra_metrics=extra, force=force)


# ----------------------------------------------------------------------------------------------
# stage 4: KTO


def balanced_kto_weights(n_desirable: int, n_undesirable: int) -> tuple[float, float]:
    """(desirable_weight, undesirable_weight) so that d*n_D / (u*n_U) lies in TRL's [1, 4/3] band."""
    if n_desirable == 0 or n_undesirable == 0:
        return 1.0, 1.0
    if n_desirable >= n_undesirable:
        return 1.0, min(n_desirable / n_undesirable, 100.0)  # ratio = 1
    return min(n_undesirable / n_desirable, 100.0), 1.0


def run_kto(profile: ModelProfile, kto_rows: str | Path | Sequence[dict], parent: str | Path, out_root: str | Path,
            tracking: Tracking = Tracking.disabled(), *, seed: int = 0, log: LogFn = _print_log,
            force: bool = False) -> StageResult:
    """KTO (β from the profile, 0.02 by default) on per-turn examples labelled by production-strict success."""
    from datasets import Dataset
    from trl import KTOConfig, KTOTrainer

    cfg = profile.kto
    rows = load_rows(kto_rows)
    examples: list[dict] = []
    for r in rows:
        examples.extend(kto_examples(r, profile.view, _default_tools_safe()))
    random.Random(seed).shuffle(examples)
    if cfg.max_examples is not None:
        # keep both classes: interleave desirable and undesirable before truncating
        pos = [e for e in examples if e["label"]]
        neg = [e for e in examples if not e["label"]]
        mixed: list[dict] = []
        for i in range(max(len(pos), len(neg))):
            mixed.extend(x[i] for x in (pos, neg) if i < len(x))
        examples = mixed[: cfg.max_examples]
    if len(examples) < 2:
        raise DatasetError("kto: need at least 2 examples")
    n_d = sum(1 for e in examples if e["label"])
    n_u = len(examples) - n_d
    d_w, u_w = balanced_kto_weights(n_d, n_u)
    writer = _StageWriter(profile, "kto", {**dataclasses.asdict(cfg), "desirable_weight": d_w,
                                           "undesirable_weight": u_w}, {"kto": rows_hash(rows)}, parent, out_root,
                          tracking)
    if not force and (done := writer.existing()) is not None:
        return done
    tmp = writer.start()
    try:
        model, tok = _load_for_training(profile, parent)
        ds = Dataset.from_list([{k: e[k] for k in ("prompt", "completion", "label", "tools")} for e in examples])
        base = _base_args(profile, cfg.train, str(tmp / "trainer"), f"kto-{writer.version}")
        base["per_device_train_batch_size"] = max(2, base["per_device_train_batch_size"])  # KTO needs > 1
        args = KTOConfig(**base, beta=cfg.beta, desirable_weight=d_w, undesirable_weight=u_w,
                         max_length=cfg.max_length)
        trained, metrics = _fit(KTOTrainer, profile=profile, model=model, writer=writer, log=log, args=args,
                               train_dataset=ds, processing_class=tok)
        metrics.update({"desirable": n_d, "undesirable": n_u, "desirable_weight": d_w, "undesirable_weight": u_w})
        shutil.rmtree(tmp / "trainer", ignore_errors=True)
        ids = list(dict.fromkeys(e["id"] for e in examples))
        return writer.commit(trained, tok, metrics, ids, _row_problem_ids(rows))
    except BaseException:
        writer.abort()
        raise


# ----------------------------------------------------------------------------------------------
# stage 5: Dr. GRPO


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
                catalogue: Any = None, seed: int = 0, log: LogFn = _print_log, force: bool = False) -> StageResult:
    """Dr. GRPO on per-step prompts; reward = format + tool-call match vs the teacher's next step + outcome
    (production-strict success of a final recommendation when ``catalogue`` is given, see ``rewards``)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from oro_assets.training.rewards import make_reward_fn

    cfg = profile.dr_grpo
    tools = list(tools) if tools is not None else _default_tools_safe()
    rows = load_rows(rl_prompts)
    rng = random.Random(seed)
    rows = list(rows)
    rng.shuffle(rows)
    if cfg.max_prompts is not None:
        rows = rows[: cfg.max_prompts]
    if not rows:
        raise DatasetError("dr_grpo: no rl_prompts rows")
    writer = _StageWriter(profile, "dr_grpo", dataclasses.asdict(cfg), {"rl_prompts": rows_hash(rows)}, parent,
                          out_root, tracking)
    if not force and (done := writer.existing()) is not None:
        return done
    tmp = writer.start()
    try:
        model, tok = _load_for_training(profile, parent)
        data = []
        for r in rows:
            prompt = r["prompt"] if not isinstance(r["prompt"], str) else json.loads(r["prompt"])
            tn, spec = grpo_targets(prompt, r.get("teacher_next"), r.get("reward_spec"), profile.view)
            data.append({"prompt": grpo_prompt_text(tok, prompt, tools, profile.view), "teacher_next": tn,
                         "reward_spec": spec})
        ds = Dataset.from_list(data)
        reward_log: list[float] = []
        reward_fn = make_reward_fn(cfg.format_weight, cfg.match_weight, cfg.outcome_weight, sink=reward_log,
                                   catalogue=catalogue)
        base = _base_args(profile, cfg.train, str(tmp / "trainer"), f"dr_grpo-{writer.version}")
        gen_batch = base["per_device_train_batch_size"] * base["gradient_accumulation_steps"]
        if gen_batch % cfg.num_generations:
            raise ValueError(f"dr_grpo: num_generations={cfg.num_generations} must divide the generation batch "
                             f"{gen_batch}")
        args = GRPOConfig(**base, loss_type=cfg.loss_type, scale_rewards=cfg.scale_rewards, beta=cfg.beta,
                          num_generations=cfg.num_generations, max_completion_length=cfg.max_completion_length,
                          temperature=cfg.temperature, shuffle_dataset=False)
        trained, metrics = _fit(GRPOTrainer, profile=profile, model=model, writer=writer, log=log, args=args,
                               train_dataset=ds, processing_class=tok, reward_funcs=[reward_fn])
        groups = [reward_log[i:i + cfg.num_generations] for i in range(0, len(reward_log), cfg.num_generations)]
        varying = sum(1 for g in groups if len(g) > 1 and max(g) - min(g) > 1e-9)
        learned_nothing = varying == 0
        if learned_nothing:
            log("dr_grpo: LEARNED NOTHING - rewards never varied within a group (zero advantage, zero loss)")
        metrics.update({"groups": len(groups), "groups_with_reward_variance": varying,
                        "reward_mean": sum(reward_log) / len(reward_log) if reward_log else None})
        if metrics["final_loss"] is not None and not math.isfinite(metrics["final_loss"]):
            log("dr_grpo: non-finite loss")
        shutil.rmtree(tmp / "trainer", ignore_errors=True)
        return writer.commit(trained, tok, metrics, [str(r["id"]) for r in rows], _row_problem_ids(rows),
                             learned_nothing=learned_nothing)
    except BaseException:
        writer.abort()
        raise


STAGE_FUNCTIONS = {
    "sft": run_sft,
    "rejection_sft": run_rejection_sft,
    "teacher_sft": run_teacher_sft,
    "kto": run_kto,
    "dr_grpo": run_dr_grpo,
}
