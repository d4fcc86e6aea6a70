"""Whether the sft warm-up's first steps train bit for bit alike run after run: alone, and beside other trainings.

Each run retrains the first ``--steps`` steps of the data dir's warm-up (``stages.sft.warmup_plan``: the same drills,
vocabulary and parent as the chain's, on a schedule cut to those steps) in a fresh process, and records every step's
loss and gradient norm at full precision. ``--beside N`` runs N more copies at the same time (load, as when a chain
runs beside restages). Prints, per run, the first step whose loss or gradient norm differs from the first run's (or
``identical``); exit status 1 when any run differs.

    ORO_DATA_DIR=<world>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/repeat_steps.py --steps 80 --runs 2
    ORO_DATA_DIR=<world>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/repeat_steps.py --steps 80 --runs 1 --beside 2
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def history(steps: int, seed: int) -> list[list[float]]:
    """[loss, grad_norm] of each of the warm-up's first ``steps`` steps, trained here into a scratch dir."""
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.settings import load_settings
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.profiles import get_profile
    from oro_assets.training.stages.sft import curated_sft_rows, train_sft, warmup_plan
    from oro_assets.training.tracking import Tracking

    settings = load_settings()
    layout = settings.layout
    profile = get_profile(settings.model_profile, settings)
    _, _, vocab = curated_sft_rows(profile, layout.dataset("sft_dataset", ".jsonl"))
    cfg, examples, hashes = warmup_plan(profile, Catalogue.from_jsonl(layout.world_catalogue), seed)
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=steps))
    with tempfile.TemporaryDirectory(prefix="repeat_steps.") as out:
        result = train_sft(profile, "sft_warmup", cfg, examples, [], hashes,
                           current_checkpoint(layout.checkpoints, "base"), out, Tracking.disabled(),
                           lambda *a, **k: None, force=True, vocab_texts=vocab)
    return [[h["loss"], h["grad_norm"]] for h in result.metrics["history"]]


def first_difference(a: list[list[float]], b: list[list[float]]) -> int | None:
    """The first step (1-based) at which ``b`` differs from ``a`` in loss or gradient norm, or None."""
    for step, (x, y) in enumerate(zip(a, b, strict=True), start=1):
        if x != y:
            return step
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--runs", type=int, default=2, help="runs compared with the first, one after the other")
    ap.add_argument("--beside", type=int, default=0, help="copies trained at the same time as each run")
    ap.add_argument("--seed", type=int, default=0, help="training seed")
    ap.add_argument("--one", metavar="OUT", help=argparse.SUPPRESS)  # a single run's history to OUT (a child)
    args = ap.parse_args(argv)
    if args.one:
        Path(args.one).write_text(json.dumps(history(args.steps, args.seed)))
        return 0
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    def start(out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, __file__, "--steps", str(args.steps), "--seed", str(args.seed),
                                 "--one", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    with tempfile.TemporaryDirectory(prefix="repeat_steps.") as tmp:
        histories = []
        for run in range(args.runs + 1):  # run 0: the reference, alone
            procs = [start(Path(tmp, f"run{run}_{i}.json")) for i in range(1 + (args.beside if run else 0))]
            if any(p.wait() != 0 for p in procs):
                raise SystemExit(f"run {run}: a training process failed")
            histories += [json.loads(Path(tmp, f"run{run}_{i}.json").read_text()) for i in range(len(procs))]
    ref, differing = histories[0], 0
    print(f"reference: {len(ref)} steps, last loss {ref[-1][0]!r}, step 1 grad norm {ref[0][1]!r}")
    for i, h in enumerate(histories[1:], start=1):
        step = first_difference(ref, h)
        differing += step is not None
        print(f"run {i}: " + ("identical" if step is None else f"differs from step {step} "
                                                               f"(loss {h[step - 1][0]!r}, grad norm {h[step - 1][1]!r})"))
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
