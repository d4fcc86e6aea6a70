"""Checkpoint layout ``<root>/<stage>/<version>/`` and loading a checkpoint back as a policy.

A directory holds ``model/`` (weights or LoRA adapter + tokenizer, loadable with transformers /
peft), ``config.json`` (the resolved stage config), ``metrics.json`` (loss per step, tokens, wall time, final loss), ``manifest.jsonl`` (one example id
per line), ``manifest_problems.json``, ``mlflow_run.json`` and ``oro_checkpoint.json`` (stage,
version, parent, profile, view - what a loader needs to rebuild the policy).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oro_assets import jsonio

META_FILE = "oro_checkpoint.json"


@dataclass
class StageResult:
    stage: str
    version: str
    path: Path
    metrics: dict[str, Any]
    n_examples: int
    mlflow_run: dict[str, Any] = field(default_factory=dict)
    learned_nothing: bool = False
    reused: bool = False  # the version already existed (same inputs, config and parent)

    def summary(self) -> dict[str, Any]:
        return {
            "stage": self.stage, "version": self.version, "path": str(self.path), "n_examples": self.n_examples,
            "final_loss": self.metrics.get("final_loss"), "tokens": self.metrics.get("tokens"),
            "wall_time_s": self.metrics.get("wall_time_s"), "learned_nothing": self.learned_nothing,
            "mlflow_run_id": self.mlflow_run.get("run_id"), "mlflow_uri": self.mlflow_run.get("uri"),
            "reused": self.reused,
            # whether the stage could learn at all (Dr. GRPO; absent for the other stages)
            **{k: self.metrics[k] for k in ("groups_with_reward_variance_share", "reward_mean_first",
                                            "reward_mean_last", "weights_changed") if k in self.metrics},
        }


def stage_version(dataset_hashes: dict[str, str], config: dict, parent_version: str | None) -> str:
    """Content hash of (input dataset hashes, resolved config, parent checkpoint version)."""
    return jsonio.content_hash({"datasets": dataset_hashes, "config": config, "parent": parent_version})[:16]


def checkpoint_dir(root: str | Path, stage: str, version: str) -> Path:
    return Path(root) / stage / version


def pointer_path(checkpoints_dir: str | Path, stage: str) -> Path:
    """``<checkpoints>/<stage>/current.json``: which checkpoint the stage's asset last produced."""
    return Path(checkpoints_dir) / stage / "current.json"


def set_current_checkpoint(checkpoints_dir: str | Path, stage: str, path: Path, version: str) -> None:
    pointer = pointer_path(checkpoints_dir, stage)
    pointer.parent.mkdir(parents=True, exist_ok=True)
    write_json(pointer, {"stage": stage, "version": version, "path": str(path)})


def current_checkpoint(checkpoints_dir: str | Path, stage: str) -> Path:
    """The checkpoint directory ``stage``'s asset last produced; a clear error naming the asset when none."""
    pointer = pointer_path(checkpoints_dir, stage)
    if not pointer.exists():
        from oro_assets.training.chain import CHECKPOINT_ASSETS

        raise FileNotFoundError(f"no {stage} checkpoint yet: materialise {CHECKPOINT_ASSETS.get(stage, stage)} first")
    return Path(jsonio.loads(pointer.read_bytes())["path"])


def read_meta(path: str | Path) -> dict:
    p = Path(path) / META_FILE
    if not p.exists():
        return {"stage": "base", "version": Path(path).name, "view": None}
    return jsonio.loads_lenient(p.read_text())


def checkpoint_version(path: str | Path | None) -> str | None:
    if path is None:
        return None
    return read_meta(path).get("version")


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(jsonio.dumps_pretty(obj))
    os.replace(tmp, path)


def write_manifest(path: Path, example_ids: Iterable[str], problem_ids: Iterable[str]) -> None:
    ids = list(example_ids)
    tmp = path / ".manifest.jsonl.tmp"
    with tmp.open("w") as fh:
        for i in ids:
            fh.write(jsonio.stdlib_dumps(str(i)) + "\n")
    os.replace(tmp, path / "manifest.jsonl")
    write_json(path / "manifest_problems.json", sorted(set(map(str, problem_ids))))


def read_manifest(path: str | Path) -> list[str]:
    p = Path(path) / "manifest.jsonl"
    return [jsonio.loads(line) for line in p.read_text().splitlines() if line.strip()]


def read_manifest_problems(path: str | Path) -> list[str]:
    p = Path(path) / "manifest_problems.json"
    return jsonio.loads(p.read_text()) if p.exists() else []


def lineage_manifest(path: str | Path) -> tuple[list[str], list[str]]:
    """Example ids and problem ids of this checkpoint and all its ancestors (what the model saw)."""
    examples: list[str] = []
    problems: set[str] = set()
    seen: set[str] = set()
    cur: Path | None = Path(path)
    while cur is not None and (cur / "manifest.jsonl").exists() and str(cur) not in seen:
        seen.add(str(cur))
        examples.extend(read_manifest(cur))
        problems.update(read_manifest_problems(cur))
        parent = read_meta(cur).get("parent_path")
        cur = Path(parent) if parent else None
    return examples, sorted(problems)


def finalize_dir(tmp: Path, final: Path) -> None:
    """Move a fully written temporary checkpoint into place (an existing version is replaced)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def model_path(path: str | Path) -> Path:
    """The loadable model folder of a checkpoint (``<ckpt>/model``), or ``path`` itself if it is one."""
    path = Path(path)
    return path / "model" if (path / "model").is_dir() else path


def load_model_and_tokenizer(path: str | Path, *, dtype: str = "float32", device: str | None = None,
                             trainable: bool = False):
    """Load a checkpoint (full weights or a LoRA adapter over its base) and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = model_path(path)
    torch_dtype = getattr(torch, dtype)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if (path / "adapter_config.json").exists():
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(path, dtype=torch_dtype, is_trainable=trainable)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    if device:
        model = model.to(device)
    if not trainable:
        model.eval()
    return model, tokenizer


def _known_profile(profile_name: str | None) -> Any:
    """The model profile a checkpoint's metadata names, or None (a base model, an unknown name)."""
    from oro_assets.settings import MODEL_PROFILES
    from oro_assets.training.profiles import get_profile

    return get_profile(profile_name, None) if profile_name in MODEL_PROFILES else None


def rollout_device(profile_name: str | None) -> str | None:
    """Where a checkpoint rolls out when the caller names no device: on the GPU for a profile that trains on one
    (``use_cpu`` false) when CUDA is there, else on the CPU (None). Without it the qwen3-4b profile's rejection
    sampling and evaluations ran the 4B policy on the CPU of a GPU machine."""
    profile = _known_profile(profile_name)
    if profile is None or profile.use_cpu:
        return None
    import torch

    return "cuda" if torch.cuda.is_available() else None


def _apply_profile_threads(profile_name: str | None) -> None:
    """Roll out with the thread count the profile trains with: the same float reduction order on a
    2-core CI box and a 16-core workstation, so greedy decoding gives the same tokens on both."""
    profile = _known_profile(profile_name)
    if profile is not None and profile.torch_threads:
        import torch

        torch.set_num_threads(profile.torch_threads)


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A checkpoint's model and tokenizer loaded once for rollouts, and its meta: several policies (other settings,
    one set of weights) without a load each, e.g. the asset checks that each roll a trained stage out."""

    model: Any
    tokenizer: Any
    meta: dict

    def policy(self, *, temperature: float = 0.0, top_p: float = 1.0, max_new_tokens: int = 256, seed: int = 0,
               name: str | None = None):
        """The checkpoint as an arena Policy in its profile's view (:func:`load_policy` without the load)."""
        from oro_assets.agents.local_model import LocalModelPolicy
        from oro_assets.training.views import ViewPolicy

        inner = LocalModelPolicy(self.model, self.tokenizer, temperature=temperature, top_p=top_p,
                                 max_new_tokens=max_new_tokens, seed=seed,
                                 name=name or f"{self.meta.get('stage', 'model')}@T{temperature:g}")
        return ViewPolicy(inner, self.meta.get("view") or "full")


def load_checkpoint(path: str | Path, *, dtype: str | None = None, device: str | None = None) -> LoadedCheckpoint:
    """The checkpoint's weights and tokenizer on its profile's rollout device and threads."""
    meta = read_meta(path)
    _apply_profile_threads(meta.get("profile"))
    model, tokenizer = load_model_and_tokenizer(path, dtype=dtype or meta.get("dtype") or "float32",
                                                device=device or rollout_device(meta.get("profile")))
    return LoadedCheckpoint(model, tokenizer, meta)


def load_policy(path: str | Path, *, temperature: float = 0.0, top_p: float = 1.0, max_new_tokens: int = 256,
                seed: int = 0, name: str | None = None, dtype: str | None = None, device: str | None = None):
    """A checkpoint as an arena Policy: G's ``LocalModelPolicy`` wrapped in the profile's view.

    Evaluation must load checkpoints through this function so the model sees the same view
    (compact tool schemas / results for the tiny profile) as in training.
    """
    return load_checkpoint(path, dtype=dtype, device=device).policy(
        temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, seed=seed, name=name)


def new_sft_rows_since_last_checkpoint(layout: Any) -> tuple[int, int]:
    """(rows in the current sft_dataset, rows the newest SFT checkpoint trained on) under a ``DataLayout``."""
    import pyarrow.parquet as pq

    dataset = layout.dataset("sft_dataset")
    current = pq.ParquetFile(dataset).metadata.num_rows if dataset.exists() else 0
    trained = 0
    manifests = sorted((Path(layout.checkpoints) / "sft").glob("*/manifest.jsonl"), key=lambda p: p.stat().st_mtime)
    if manifests:
        with open(manifests[-1], "rb") as fh:
            trained = sum(1 for _ in fh)
    return current, trained
