"""Speed of one tiny-profile SFT step: TRL's fused LM-head loss against the label-position loss, same run.

The tiny profile trains on one CPU thread with assistant-only loss. TRL's fused LM head, off-Triton,
scores every position of the padded batch against the whole vocabulary; ``label_position_loss`` scores
only the labelled ones (``oro_assets/training/stages/label_position_loss.py``). Both trainers here get
the same base model (the tiny profile's full-size architecture, no copy pre-training), the same teacher
rows on an arena world and the same step budget, and are timed in the same process, alternating
``--repeats`` times. Reported: seconds a step (median over repeats), labelled share of positions, the
ratio fused / label-position, and each run's losses (they should agree to float precision).

    .venv/bin/python benchmarks/sft_step.py [--steps 12] [--repeats 2] [--json /tmp/sft_step.json]

``stages``: one training stage of a main run's data dir, run by two copies of the package (``old`` and ``new``,
each a folder holding ``oro_assets``, e.g. ``git archive <commit> oro_assets | tar -x -C /tmp/old``) in fresh
processes, alternating, on the same inputs (read only) and short step counts (``--set``; recipe values are the
profile's otherwise). Reported: each stage's train wall (checkpoint ``wall_time_s``, trainer build included; the
base: its copy pre-training), old / new medians, and how far apart the two runs' per-step losses and final weights
are. Copy pre-training's losses come from its per-step list, every other stage's from its checkpoint history.

    .venv/bin/python benchmarks/sft_step.py stages --data <data dir> --old /tmp/old --new /tmp/new --stage kto \
        --set max_steps=6 [--parent <checkpoint dir>] [--repeats 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

if sys.argv[1:2] != ["_run_stage"]:  # a stage run imports the package copy its PYTHONPATH names
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import print_result, run_fresh  # noqa: E402


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "stages":
        return stages_ab(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "_run_stage":
        return _run_stage(*sys.argv[2:])
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


# The parent a stage starts from when --parent is not given: its chain parent's current checkpoint in the data dir.
_PARENTS = {"sft": "base", "rejection_sft": "sft", "teacher_sft": "rejection_sft", "kto": "teacher_sft",
            "dr_grpo": "kto"}


def _stage_params(stage: str, data: Path, out: Path, overrides: dict, parent: str | None) -> dict:
    from oro_assets.training.checkpoints import current_checkpoint

    ck, wh = data / "checkpoints", data / "warehouse"
    params = {"stage": stage, "profile": "tiny", "out_root": str(out / "ck"), "tracking_uri": f"sqlite:///{out}/mlflow.db",
              "artifact_dir": str(out / "artifacts"), "catalogue": str(data / "arena" / "catalogue.jsonl"),
              "problems": str(ck / "_inputs" / "train_problems.jsonl"), "sft_rows": str(wh / "sft_dataset.parquet"),
              "kto_rows": str(wh / "kto_dataset.parquet"), "rl_prompts": str(wh / "rl_prompts.parquet"),
              "eval_problems": str(ck / "_inputs" / "eval_problems.jsonl"), "seed": 0, "force": True,
              "overrides": overrides}
    if stage in _PARENTS:
        params["parent"] = parent or str(current_checkpoint(ck, _PARENTS[stage]))
    return params


def _run_stage(params_json: str) -> None:
    """One stage in this process (the package on PYTHONPATH); prints ``RESULT <json>``."""
    from oro_assets.training import tiny_model
    from oro_assets.training.pipes_entry import run_stage

    params = json.loads(params_json)
    copy: dict = {}
    original = tiny_model.copy_pretrain

    def timed_copy_pretrain(*args, **kwargs):
        t0 = time.perf_counter()
        losses = original(*args, **kwargs)
        copy.update(wall=time.perf_counter() - t0, losses=losses)
        return losses

    tiny_model.copy_pretrain = timed_copy_pretrain
    run_stage(params, log=lambda m: None)
    out: dict = {}
    for metrics_path in sorted(Path(params["out_root"]).glob("*/*/metrics.json")):
        metrics = json.loads(metrics_path.read_text())
        out[metrics_path.parent.parent.name] = {"losses": [h["loss"] for h in metrics.get("history", [])],
                                                "wall_s": metrics.get("wall_time_s"), "dir": str(metrics_path.parent)}
    if copy:
        out["base"] = {**out.get("base", {}), "losses": copy["losses"], "wall_s": round(copy["wall"], 2)}
    print_result(out)


def _weights(checkpoint: str) -> dict:
    from safetensors.torch import load_file

    return load_file(str(Path(checkpoint) / "model" / "model.safetensors"))


def stages_ab(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="sft_step.py stages")
    ap.add_argument("--data", type=Path, required=True, help="a main run's data dir (read only)")
    ap.add_argument("--old", type=Path, required=True)
    ap.add_argument("--new", type=Path, required=True)
    ap.add_argument("--stage", required=True, choices=["base", *_PARENTS])
    ap.add_argument("--set", action="append", default=[], help="override KEY=VALUE (JSON value), e.g. max_steps=6")
    ap.add_argument("--parent", default=None)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    overrides = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    env = {**os.environ, "TQDM_DISABLE": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="stages_ab.") as tmp:
        for rep in range(args.repeats):
            for name in (("old", "new") if rep % 2 == 0 else ("new", "old")):
                out = Path(tmp) / f"{name}{rep}"
                out.mkdir()
                params = _stage_params(args.stage, args.data.resolve(), out, overrides, args.parent)
                runs[name].append(run_fresh([__file__, "_run_stage", json.dumps(params)], f"{name} run",
                                            env={**env, "PYTHONPATH": str(trees[name])}, cwd=tmp))
                print(name, rep, {k: v["wall_s"] for k, v in runs[name][-1].items()}, flush=True)
            if rep == 0:  # the first pair's weights, before their temporary dirs go
                weight_diff = {}
                for stage, result in runs["old"][0].items():
                    if "dir" in result:
                        old_w, new_w = _weights(result["dir"]), _weights(runs["new"][0][stage]["dir"])
                        weight_diff[stage] = max(float((old_w[k] - new_w[k]).abs().max()) for k in old_w)
        shutil.rmtree(tmp, ignore_errors=True)
    report: dict = {"stage": args.stage, "overrides": overrides, "repeats": args.repeats, "old": str(trees["old"]),
                    "new": str(trees["new"]), "stages": {}}
    for stage in runs["old"][0]:
        old_s = [r[stage]["wall_s"] for r in runs["old"]]
        new_s = [r[stage]["wall_s"] for r in runs["new"]]
        old_l, new_l = runs["old"][0][stage]["losses"], runs["new"][0][stage]["losses"]
        report["stages"][stage] = {
            "old_s": old_s, "new_s": new_s, "old_over_new": round(statistics.median(old_s) / statistics.median(new_s), 3),
            "steps": [len(old_l), len(new_l)],
            "max_rel_loss_diff": max((abs(a - b) / max(abs(a), 1e-12) for a, b in zip(old_l, new_l, strict=True)),
                                     default=None),
            "final_weights_max_abs_diff": weight_diff.get(stage)}
    print(json.dumps(report["stages"], indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
