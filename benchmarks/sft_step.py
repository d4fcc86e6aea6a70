"""Speed of one tiny-profile SFT step: TRL's fused LM-head loss against the label-position loss, same run.

The tiny profile trains on one CPU thread with assistant-only loss. TRL's fused LM head, off-Triton,
scores every position of the padded batch against the whole vocabulary; ``label_position_loss`` scores
only the labelled ones (``oro_assets/training/stages/label_position_loss.py``). Both trainers here get
the same base model (the tiny profile's full-size architecture, no copy pre-training), the same teacher
rows on an arena world and the same step budget, and are timed in the same process, alternating
``--repeats`` times. Reported: seconds a step (median over repeats), labelled share of positions, the
ratio fused / label-position, and each run's losses (they should agree to float precision).

    .venv/bin/python benchmarks/sft_step.py [--steps 12] [--repeats 2] [--json /tmp/sft_step.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--problems", type=int, default=300)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    import torch

    from oro_assets.arena.env import InProcessEnv
    from oro_assets.arena.generator import build_world
    from oro_assets.arena.policies.agentic import TeacherPolicy
    from oro_assets.arena.tools import TOOL_SCHEMAS
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages import build_sft_trainer_for_inspection, default_scorer, teacher_rows
    from oro_assets.training.tiny_model import build_base_checkpoint

    torch.set_num_threads(1)
    world = build_world(5, n_problems=args.problems, n_products=4000)
    env = InProcessEnv(world.catalogue)
    products = [p for p in world.problems if p["category"] == "Product"]
    rows, _ = teacher_rows(TeacherPolicy({p["problem_id"]: p for p in world.problems}), products, env,
                           default_scorer(world.catalogue), TOOL_SCHEMAS)
    profile = get_profile("tiny")
    profile = dataclasses.replace(profile, arch=dataclasses.replace(profile.arch, copy_pretrain_steps=0))
    profile = with_overrides(profile, "sft", max_steps=args.steps)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = build_base_checkpoint(profile, Path(tmp) / "ckpt", world.catalogue, world.problems, seed=0)
        for rep in range(args.repeats):
            for name, flag in (("fused", False), ("label_position", True)):
                trainer = build_sft_trainer_for_inspection(dataclasses.replace(profile, label_position_loss=flag),
                                                           rows, base, Path(tmp) / f"{name}{rep}")
                trainer.args.max_steps = args.steps
                batch = next(iter(trainer.get_train_dataloader()))
                labelled = float((batch["labels"] != -100).float().mean())
                t0 = time.perf_counter()
                out = trainer.train()
                wall = time.perf_counter() - t0
                losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
                r = results.setdefault(name, {"step_s": [], "losses": losses, "labelled_share": labelled})
                r["step_s"].append(wall / max(out.global_step, 1))
    for r in results.values():
        r["step_s_median"] = statistics.median(r["step_s"])
    ratio = results["fused"]["step_s_median"] / results["label_position"]["step_s_median"]
    report = {"steps": args.steps, "repeats": args.repeats, "rows": len(rows), "results": results,
              "fused_over_label_position": round(ratio, 2),
              "max_loss_diff": max(abs(a - b) for a, b in zip(results["fused"]["losses"],
                                                              results["label_position"]["losses"], strict=True))}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
