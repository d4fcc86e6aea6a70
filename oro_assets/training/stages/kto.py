"""Stage 4, KTO (TRL ``KTOTrainer``): per-turn examples labelled desirable / undesirable by
production-strict success, class weights balanced into TRL's recommended band."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oro_assets.training.checkpoints import StageResult
from oro_assets.training.data import DatasetError, kto_examples, load_rows, rows_hash
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


def balanced_kto_weights(n_desirable: int, n_undesirable: int) -> tuple[float, float]:
    """(desirable_weight, undesirable_weight) so that d*n_D / (u*n_U) lies in TRL's [1, 4/3] band."""
    if n_desirable == 0 or n_undesirable == 0:
        return 1.0, 1.0
    if n_desirable >= n_undesirable:
        return 1.0, min(n_desirable / n_undesirable, 100.0)  # ratio = 1
    return min(n_undesirable / n_desirable, 100.0), 1.0


def _interleave_classes(examples: list[dict], limit: int) -> list[dict]:
    """At most ``limit`` examples, desirable and undesirable alternating, so a cut keeps both classes."""
    pos = [e for e in examples if e["label"]]
    neg = [e for e in examples if not e["label"]]
    mixed: list[dict] = []
    for i in range(max(len(pos), len(neg))):
        mixed.extend(x[i] for x in (pos, neg) if i < len(x))
    return mixed[:limit]


def kto_trainer_class(profile: ModelProfile) -> type:
    """TRL's ``KTOTrainer``, or its label-position-head subclass where the profile asks for it."""
    if profile.label_position_loss:
        from oro_assets.training.stages.label_position_loss import label_position_kto_trainer

        return label_position_kto_trainer()
    from trl import KTOTrainer

    return KTOTrainer


def run_kto(profile: ModelProfile, kto_rows: str | Path | Sequence[dict], parent: str | Path, out_root: str | Path,
            tracking: Tracking = Tracking.disabled(), *, seed: int = 0, log: LogFn = print_log,
            force: bool = False) -> StageResult:
    """KTO (β from the profile, 0.02 by default) on per-turn examples labelled by production-strict success."""
    from datasets import Dataset
    from trl import KTOConfig

    cfg = profile.kto
    rows = load_rows(kto_rows)
    examples: list[dict] = []
    for r in rows:
        examples.extend(kto_examples(r, profile.view, default_tools()))
    random.Random(seed).shuffle(examples)
    if cfg.max_examples is not None:
        examples = _interleave_classes(examples, cfg.max_examples)
    if len(examples) < 2:
        raise DatasetError("kto: need at least 2 examples")
    n_d = sum(1 for e in examples if e["label"])
    n_u = len(examples) - n_d
    d_w, u_w = balanced_kto_weights(n_d, n_u)
    checkpoint = StageCheckpoint(profile, "kto", {**dataclasses.asdict(cfg), "desirable_weight": d_w,
                                                  "undesirable_weight": u_w}, {"kto": rows_hash(rows)}, parent,
                                 out_root, tracking)

    def train(tmp: Path, run: Any) -> Trained:
        model, tok = load_for_training(profile, parent)
        ds = Dataset.from_list([{k: e[k] for k in ("prompt", "completion", "label", "tools")} for e in examples])
        base = base_args(profile, cfg.train, str(tmp / "trainer"), f"kto-{checkpoint.version}")
        base["per_device_train_batch_size"] = max(2, base["per_device_train_batch_size"])  # KTO needs > 1
        args = KTOConfig(**base, beta=cfg.beta, desirable_weight=d_w, undesirable_weight=u_w,
                         max_length=cfg.max_length)
        trained, metrics = fit(kto_trainer_class(profile), profile=profile, model=model, run=run, log=log, args=args,
                               train_dataset=ds, processing_class=tok)
        metrics.update({"desirable": n_d, "undesirable": n_u, "desirable_weight": d_w, "undesirable_weight": u_w})
        ids = list(dict.fromkeys(e["id"] for e in examples))
        return Trained(trained, tok, metrics, ids, row_problem_ids(rows))

    return checkpoint.run_once(train, force=force, log=log)


def from_params(ctx: StageContext) -> StageResult:
    return run_kto(ctx.profile, ctx.need("kto_rows"), ctx.need("parent"), ctx.out_root, ctx.tracking, seed=ctx.seed,
                   log=ctx.log, force=ctx.force)
