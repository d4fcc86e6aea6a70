"""The stage table over unseen worlds: each world is a simulator seed nobody developed the recipe on, run by the
README's main command on its own date from a fresh data dir (issue 30: a figure counts only on problems nobody
tuned on).

    .venv/bin/python benchmarks/days.py --run --seeds 201 202 203 --dates 2026-11-30 2026-11-29 2026-11-28 \
        --root /tmp/oro-worlds
    .venv/bin/python benchmarks/days.py --seeds 201 202 203 --dates 2026-11-30 2026-11-29 2026-11-28 \
        --root /tmp/oro-worlds            # table only, from runs already there

With ``--run`` each world runs ``oro-assets main --date D --final-report`` (every stage evaluated on the locked
``test`` pool) with ``ORO_SIM_SEED=S`` and
``ORO_DATA_DIR=<root>/seed<S>-<D>/data`` (removed first); its wall time is recorded. The table (mean over
worlds, a two-stage bootstrap interval over worlds and problems, each stage's paired change over the stage
before, pass@1 and pass@8) is printed for Product and for all categories and written to ``--out`` (JSON)
and beside it as Markdown. Seeds the recipe was developed or screened on are refused (``DEVELOPMENT_SEEDS``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oro_assets.evaluation.worlds import load_world, markdown, stage_table  # noqa: E402

# Seeds whose worlds were looked at while the recipe was chosen: 15 (the default world, every screen up to
# 2026-12-02) and 101 (the screens of 2026-12-03). A figure on them is a development figure, not a result.
DEVELOPMENT_SEEDS = frozenset({15, 101})


def world_dir(root: Path, seed: int, day: str) -> Path:
    return root / f"seed{seed}-{day}"


def run_world(seed: int, day: str, root: Path, extra: list[str]) -> float:
    data = world_dir(root, seed, day) / "data"
    shutil.rmtree(data.parent, ignore_errors=True)
    data.mkdir(parents=True)
    env = {**os.environ, "ORO_DATA_DIR": str(data), "ORO_SIM_SEED": str(seed), "TQDM_DISABLE": "1",
           "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    started = time.monotonic()
    with open(data.parent / "main.log", "w") as log:
        proc = subprocess.run([str(ROOT / ".venv" / "bin" / "oro-assets"), "main", "--date", day, "--final-report", *extra],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"seed {seed}, main --date {day} failed (exit {proc.returncode}); see {data.parent / 'main.log'}")
    return wall


def machine() -> dict:
    """What ran the worlds: the same code on another CPU can train other weights (float rounding of its kernels)."""
    import platform

    import torch

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version()}


def checkpoint_versions(data: Path) -> dict:
    """Each stage's current checkpoint version and input hashes in a world's data dir: two runs of a world
    trained from the same inputs exactly when these agree."""
    from oro_assets.training.chain import ARM_NAMES, STAGE_NAMES
    from oro_assets.training.checkpoints import current_checkpoint, read_meta

    out = {}
    for stage in (*STAGE_NAMES, *ARM_NAMES):
        try:
            meta = read_meta(current_checkpoint(data / "checkpoints", stage))
        except FileNotFoundError:
            continue
        out[stage] = {k: meta.get(k) for k in ("version", "parent_version", "code_version", "datasets")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", nargs="+", type=int, required=True, help="simulator seeds, one world each")
    ap.add_argument("--dates", nargs="+", required=True, help="one date per seed (each world runs on its own day)")
    ap.add_argument("--root", type=Path, default=Path("/tmp/oro-worlds"))
    ap.add_argument("--run", action="store_true", help="run the main command for each world first (fresh data dirs)")
    ap.add_argument("--allow-development-seeds", action="store_true",
                    help=f"accept seeds the recipe was developed on ({sorted(DEVELOPMENT_SEEDS)}): a development figure")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "worlds.json")
    ap.add_argument("main_args", nargs="*", help="extra arguments for oro-assets main (after --)")
    args = ap.parse_args()
    if len(args.seeds) != len(args.dates):
        ap.error(f"one date per seed: {len(args.seeds)} seeds, {len(args.dates)} dates")
    seen = DEVELOPMENT_SEEDS & set(args.seeds)
    if seen and not args.allow_development_seeds:
        ap.error(f"seeds {sorted(seen)} were used while developing the recipe: choose unseen seeds "
                 "(or pass --allow-development-seeds for a development figure)")
    worlds = list(zip(args.seeds, args.dates, strict=True))
    walls = {}
    if args.run:
        for seed, day in worlds:
            walls[f"seed{seed}-{day}"] = round(run_world(seed, day, args.root, args.main_args), 1)
            print(f"seed {seed} on {day}: main finished in {walls[f'seed{seed}-{day}']:.0f}s", flush=True)

    def table(category: str | None) -> list[dict]:
        return stage_table({f"seed{s}-{d}": load_world(world_dir(args.root, s, d) / "data",
                                                       f"seed{s}-{d}", category) for s, d in worlds})

    product, overall = table("Product"), table(None)
    by_category = {category: table(category) for category in ("Shop", "Voucher")}
    md = "\n\n".join([markdown(product, "Product, greedy, every held-out Product problem"),
                       markdown(overall, "All categories (the paper's metric), the stratified sample"),
                       *(markdown(rows, f"{category}, greedy, its share of the stratified sample")
                         for category, rows in by_category.items())])
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"worlds": [{"seed": s, "date": d, "checkpoints": checkpoint_versions(
                                        world_dir(args.root, s, d) / "data")} for s, d in worlds],
                                    "machine": machine(), "main_wall_s": walls,
                                    "development_seeds": sorted(DEVELOPMENT_SEEDS), "product": product,
                                    "all_categories": overall, "by_category": by_category}, indent=2, sort_keys=True))
    args.out.with_suffix(".md").write_text(md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
