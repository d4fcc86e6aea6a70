"""Which checkpoint directory each training asset last produced (the ``current.json`` pointer per stage)."""

from pathlib import Path

from oro_assets import jsonio
from oro_assets.storage import write_json

# evaluation stage name -> checkpoint asset
CHECKPOINT_ASSETS: dict[str, str] = {
    "base": "base_model",
    "sft": "sft_checkpoint",
    "rejection_sft": "rejection_sft_checkpoint",
    "teacher_sft": "teacher_sft_checkpoint",
    "kto": "kto_checkpoint",
    "dr_grpo": "dr_grpo_checkpoint",
}


def pointer_path(checkpoints_dir: Path, stage: str) -> Path:
    return Path(checkpoints_dir) / stage / "current.json"


def set_current_checkpoint(checkpoints_dir: Path, stage: str, path: Path, version: str) -> None:
    write_json({"stage": stage, "version": version, "path": str(path)}, pointer_path(checkpoints_dir, stage))


def current_checkpoint(checkpoints_dir: Path, stage: str) -> Path:
    pointer = pointer_path(checkpoints_dir, stage)
    if not pointer.exists():
        raise FileNotFoundError(f"no {stage} checkpoint yet: materialise {CHECKPOINT_ASSETS[stage]} first")
    return Path(jsonio.loads(pointer.read_bytes())["path"])
