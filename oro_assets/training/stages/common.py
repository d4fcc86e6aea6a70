"""Plumbing every stage shares: TrainingArguments from a profile, loading the parent, LoRA, the
progress callback (log + MLflow), fitting a TRL trainer and summarising its history, and what a
stage gets from its caller (:class:`StageContext`)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from oro_assets.training import checkpoints as ck
from oro_assets.training.profiles import ModelProfile
from oro_assets.training.tracking import StageRun, Tracking

LogFn = Callable[[str], None]

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def print_log(msg: str) -> None:
    print(msg, flush=True)


def default_tools() -> list[dict]:
    """The arena's tool schemas (what every dataset row is rendered with unless it names its own)."""
    from oro_assets.arena.tools import TOOL_SCHEMAS

    return TOOL_SCHEMAS


@dataclasses.dataclass
class StageContext:
    """What a stage is run with: the profile, where checkpoints go, tracking, seed, logging, and the
    caller's parameters (dataset and problem paths, see ``training.pipes_entry``)."""

    profile: ModelProfile
    out_root: Path
    tracking: Tracking = dataclasses.field(default_factory=Tracking.disabled)
    seed: int = 0
    log: LogFn = print_log
    force: bool = False
    settings: Any = None
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def need(self, key: str) -> Any:
        value = self.params.get(key)
        if value in (None, ""):
            raise ValueError(f"stage {self.params.get('stage', '?')} needs {key!r}")
        return value

    def rows(self, key: str) -> list[dict]:
        from oro_assets.training.data import load_rows

        return load_rows(self.need(key))

    def optional_rows(self, key: str) -> list[dict]:
        return self.rows(key) if self.params.get(key) else []

    def catalogue(self) -> Any:
        from oro_assets.arena.catalogue import Catalogue

        return Catalogue.from_jsonl(self.need("catalogue"))

    def optional_catalogue(self) -> Any:
        return self.catalogue() if self.params.get("catalogue") else None

    def env(self) -> tuple[Any, Any]:
        from oro_assets.arena.env import InProcessEnv

        catalogue = self.catalogue()
        return InProcessEnv(catalogue), catalogue


def _quiet(trainer: Any) -> Any:
    """Drop transformers' stdout printer: progress goes through our callback (and Pipes) instead."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


# Steps' metrics held back before one MLflow write: a write to the SQLite store took 42 ms (median, 352 ms at worst)
# on the loaded 2-core box, against an SFT step of well under a second (measured 2026-12-04).
MLFLOW_FLUSH_STEPS = 50
MLFLOW_FLUSH_S = 30.0


def _progress_callback(stage_run: StageRun, log: LogFn, history: list[dict], t0: float):
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        """Each logged step to the log and the history at once; to MLflow in batches (every
        ``MLFLOW_FLUSH_STEPS`` steps or ``MLFLOW_FLUSH_S`` seconds, and at the end), with each step's own time."""

        def __init__(self) -> None:
            self.pending: list[tuple[dict, int, int]] = []
            self.flushed_at = time.perf_counter()

        def flush(self) -> None:
            if self.pending:
                stage_run.log_steps(self.pending)
                self.pending = []
            self.flushed_at = time.perf_counter()

        def on_train_end(self, args, state, control, **kwargs):
            self.flush()

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
            self.pending.append(({k: v for k, v in row.items() if k != "step"}, row["step"], int(time.time() * 1000)))
            if len(self.pending) >= MLFLOW_FLUSH_STEPS or time.perf_counter() - self.flushed_at >= MLFLOW_FLUSH_S:
                self.flush()
            extra = f" tokens/s={row['tokens_per_s']}" if "tokens_per_s" in row else ""
            log(f"step={row['step']} loss={row['loss']:.4f}{extra}")

    return Progress()


def base_args(profile: ModelProfile, train: Any, output_dir: str, run_name: str, *,
              length_grouped: bool = False) -> dict[str, Any]:
    """The TrainingArguments every TRL config of a stage starts from (the profile's TrainArgs).

    ``length_grouped``: batches of similar length (SFT stages of a profile with ``length_grouped``; KTO needs its
    own sequential order and GRPO its own sampler, so they keep their trainers' defaults)."""
    t = dataclasses.asdict(train)
    grouped = {"train_sampling_strategy": "group_by_length"} if length_grouped and profile.length_grouped else {}
    return {
        **grouped,
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
        # non-reentrant checkpointing: works with LoRA's frozen inputs and with inputs that need no grad
        "activation_checkpointing_kwargs": {"use_reentrant": False} if profile.gradient_checkpointing else None,
        "report_to": "none",  # MLflow logging is ours (tracking.py), with the run id reported back
        "save_strategy": "no",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "run_name": run_name,
    }


def apply_threads(profile: ModelProfile) -> None:
    """torch's intra-op threads for training (``profile.training_threads``)."""
    threads = profile.training_threads
    if threads:
        import torch

        torch.set_num_threads(threads)


def load_for_training(profile: ModelProfile, parent: str | Path) -> tuple[Any, Any]:
    """Model (trainable) + tokenizer of the parent checkpoint, a base path, or a hub id."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    apply_threads(profile)
    parent_path = Path(parent)
    if parent_path.exists():
        model, tok = ck.load_model_and_tokenizer(parent_path, dtype=profile.dtype, trainable=True)
        model.set_attn_implementation(attention_implementation())
    else:  # hub id (qwen3-4b profile with no local copy)
        tok = AutoTokenizer.from_pretrained(str(parent))
        model = AutoModelForCausalLM.from_pretrained(str(parent), dtype=getattr(torch, profile.dtype),
                                                     attn_implementation=attention_implementation())
    model.train()
    return model, tok


def attention_implementation() -> str:
    """FlashAttention-2 on a CUDA machine where ``flash_attn`` is installed, else PyTorch SDPA."""
    import importlib.util

    import torch

    if torch.cuda.is_available() and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def _peft_config(profile: ModelProfile, model: Any):
    if profile.lora is None or hasattr(model, "peft_config"):
        return None  # full fine-tune, or continuing an existing adapter
    from peft import LoraConfig

    return LoraConfig(r=profile.lora.r, lora_alpha=profile.lora.alpha, lora_dropout=profile.lora.dropout,
                      target_modules=profile.lora.target_modules, task_type="CAUSAL_LM")


def fit(trainer_cls: Any, *, profile: ModelProfile, model: Any, run: StageRun, log: LogFn,
        extrapolate: float = 1.0, **trainer_kwargs: Any) -> tuple[Any, dict[str, Any]]:
    """Train with progress streamed to the log and MLflow; return the trained model and summary metrics.

    ``extrapolate``: the trained weights are moved to ``start + extrapolate x (trained - start)`` before they are
    returned (:func:`extrapolate_weights`; 1.0 leaves them as trained)."""
    history: list[dict] = []
    t0 = time.perf_counter()
    progress = _progress_callback(run, log, history, t0)
    # under LoRA only the adapters train (and PEFT renames the base's parameters): fingerprinting the frozen base,
    # a whole 4B model in float64 on the GPU profile, would be work that can say nothing
    lora = profile.lora is not None
    before = {} if lora else weights_fingerprint(model)
    trainer = trainer_cls(model=model, peft_config=_peft_config(profile, model), callbacks=[progress],
                          **trainer_kwargs)
    start = trainable_snapshot(trainer.model) if extrapolate != 1.0 else None
    out = _quiet(trainer).train()
    progress.flush()
    metrics = summarise(history, time.perf_counter() - t0, out.global_step)
    if start is not None:
        metrics["extrapolated_norm"] = extrapolate_weights(trainer.model, start, extrapolate)
        log(f"weights extrapolated x{extrapolate:g} from the stage's start: the update's norm "
            f"{metrics['extrapolated_norm'][0]:.4g} -> {metrics['extrapolated_norm'][1]:.4g}")
    metrics["extrapolate"] = extrapolate
    metrics["weights_changed"] = weights_changed(before, trainer.model, adapters_only=lora)
    if not metrics["weights_changed"]:
        log("training left every weight as it was: this stage is a no-op")
    return trainer.model, metrics


def trainable_snapshot(model: Any) -> dict[str, Any]:
    """A copy of every trainable parameter (the adapters alone under LoRA), as the stage starts."""
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def extrapolate_weights(model: Any, start: dict[str, Any], alpha: float) -> tuple[float, float]:
    """Move each parameter of ``start`` to ``start + alpha x (now - start)`` in place (ExPO, Zheng et al. 2024: a
    short preference or RL stage's update, followed further along its own direction); returns the update's L2 norm
    before and after."""
    import torch

    before = after = 0.0
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, was in start.items():
            p = params[name]
            delta = p.detach() - was
            before += float(delta.double().square().sum())
            p.copy_(was + alpha * delta)
            after += float((p.detach() - was).double().square().sum())
    return before ** 0.5, after ** 0.5


def weights_fingerprint(model: Any, names: Callable[[str], bool] | None = None) -> dict[str, tuple[float, float]]:
    """(sum, sum of squares) of every parameter (of those ``names`` accepts): equal before and after training iff
    (almost surely) unchanged."""
    import torch

    with torch.no_grad():
        return {n: (float(p.detach().double().sum()), float(p.detach().double().square().sum()))
                for n, p in model.named_parameters() if names is None or names(n)}


def weights_changed(before: dict[str, tuple[float, float]], model: Any, adapters_only: bool = False) -> bool:
    """Whether training changed the model: a parameter of ``before`` differs, or a LoRA adapter (new, its B
    initialised to zero) is no longer zero. ``adapters_only``: read the adapters' B matrices alone (LoRA training)."""
    after = weights_fingerprint(model, (lambda n: "lora_B" in n) if adapters_only else None)
    if any(after.get(n, v) != v for n, v in before.items()):
        return True
    return any(v[1] > 0 for n, v in after.items() if n not in before and "lora_B" in n)


def summarise(history: list[dict], wall: float, steps: int) -> dict[str, Any]:
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


def row_problem_ids(rows: Any) -> list[str]:
    return sorted({str(r["problem_id"]) for r in rows if r.get("problem_id")})
