"""The stage table over unseen worlds: each world is a simulator seed nobody developed the recipe on, run by the
README's main command on its own date from a fresh data dir (issue 30: a figure counts only on problems nobody
tuned on).

    .venv/bin/python benchmarks/days.py --run --seeds 201 202 203 --dates 2026-11-30 2026-11-29 2026-11-28 \
        --root /tmp/oro-worlds
    .venv/bin/python benchmarks/days.py --seeds 201 202 203 --dates 2026-11-30 2026-11-29 2026-11-28 \
        --root /tmp/oro-worlds            # table only, from runs already there

Training seeds: ``--train-seeds 0 1 2`` reads (and with ``--run`` trains) each world at several training seeds, so
the interval counts training-seed variance too (bootstrap over worlds, training runs, then problems). Seed 0 is the
world's own run; seed T of the whole chain (``oro-assets main --train-seed T``) lives in
``<root>/seed<S>-<D>/train-seed<T>/data``. With ``--restage STAGE`` a seed T retrains only ``STAGE`` and the stages
below it, on a copy of the seed-0 data dir (``benchmarks/restage.py STAGE --seed T``), in
``<root>/seed<S>-<D>/<STAGE>-seed<T>/data``: the stages above it are then one shared run, and the table says so.

    .venv/bin/python benchmarks/days.py --run --restage dr_grpo --train-seeds 1 2 --seeds 201 202 203 \
        --dates 2026-11-30 2026-11-29 2026-11-28 --root /tmp/oro-worlds     # then read with --train-seeds 0 1 2

``--restage STAGE ... --only`` retrains the named stages alone (e.g. ``scaffold sft``: the sft stage and its scaffold
arm, each from the base), in ``<root>/seed<S>-<D>/<STAGE>-...-only-seed<T>/data``; the table then holds those stages
alone, so a change is read only between stages that were retrained together (sft over the scaffold at every seed).

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
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from report import tree_env  # noqa: E402

from oro_assets.evaluation.worlds import load_world, markdown, stage_table  # noqa: E402
from oro_assets.machine import machine_signature  # noqa: E402

# Seeds whose worlds were looked at while the recipe was chosen: 15 (the default world, every screen up to
# 2026-12-02) and 101 (the screens of 2026-12-03). A figure on them is a development figure, not a result.
DEVELOPMENT_SEEDS = frozenset({15, 101})


def world_dir(root: Path, seed: int, day: str) -> Path:
    return root / f"seed{seed}-{day}"


def restage_label(stages: list[str] | None, only: bool = False) -> str | None:
    """The name of a restaged replicate's dir (before ``-seed<T>``): the stages, and ``only`` when the stages below
    them were not retrained; None for whole-chain replicates."""
    if not stages:
        return None
    return "-".join(stages) + ("-only" if only else "")


def run_dir(root: Path, seed: int, day: str, train_seed: int = 0, restaged: str | None = None) -> Path:
    """Where one training run of a world lives: the world's own dir at training seed 0, a sub-dir for another
    (``<label>-seed<T>`` for a replicate of some stages only: :func:`restage_label`)."""
    world = world_dir(root, seed, day)
    if train_seed == 0:
        return world
    return world / (f"{restaged}-seed{train_seed}" if restaged else f"train-seed{train_seed}")


def _env(data: Path, seed: int) -> dict:
    return {**tree_env(ROOT), "ORO_DATA_DIR": str(data), "ORO_SIM_SEED": str(seed), "TQDM_DISABLE": "1",
            "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run_logged(cmd: list[str], env: dict, log_path: Path, what: str) -> float:
    started = time.monotonic()
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed (exit {proc.returncode}); see {log_path}")
    return time.monotonic() - started


def run_world(seed: int, day: str, root: Path, extra: list[str], train_seed: int = 0) -> float:
    """The main command on a fresh data dir (every stage at ``train_seed``); its wall time."""
    data = run_dir(root, seed, day, train_seed) / "data"
    shutil.rmtree(data.parent, ignore_errors=True)  # at seed 0, the world's replicates too: they were built on it
    data.mkdir(parents=True)
    cmd = [str(ROOT / ".venv" / "bin" / "oro-assets"), "main", "--date", day, "--final-report",
           "--train-seed", str(train_seed), *extra]
    return _run_logged(cmd, _env(data, seed), data.parent / "main.log",
                       f"seed {seed}, main --date {day} --train-seed {train_seed}")


def restage_world(seed: int, day: str, root: Path, stages: list[str], train_seed: int, only: bool = False) -> float:
    """A replicate of ``stages`` (and the stages below them, unless ``only``) at ``train_seed``, on a copy of the
    world's seed-0 data dir (the other stages are the seed-0 run's); its wall time."""
    source = run_dir(root, seed, day) / "data"
    if not (source / "checkpoints").exists():
        raise SystemExit(f"seed {seed} on {day}: no training-seed-0 run in {source} to restage from (run it first)")
    target = run_dir(root, seed, day, train_seed, restaged=restage_label(stages, only))
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copytree(source, target / "data", symlinks=True)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "restage.py"), *stages, "--final-report", "--seed",
           str(train_seed), *(["--only"] if only else [])]
    return _run_logged(cmd, _env(target / "data", seed), target / "restage.log",
                       f"seed {seed} on {day}: restage {' '.join(stages)} --seed {train_seed}")


def checkpoint_versions(data: Path) -> dict:
    """Each stage's current checkpoint version and input hashes in a world's data dir: two runs of a world
    trained from the same inputs exactly when these agree."""
    from oro_assets.training.chain import ARM_NAMES, STAGE_NAMES
    from oro_assets.training.checkpoints import current_checkpoint, read_meta

    out = {}
    for stage in (*STAGE_NAMES, *ARM_NAMES):
        try:
            path = current_checkpoint(data / "checkpoints", stage)
            meta = read_meta(path)
        except FileNotFoundError:
            continue
        out[stage] = {k: meta.get(k) for k in ("version", "parent_version", "code_version", "datasets")}
        # the machine that trained it (None: trained before checkpoints recorded it)
        out[stage]["trained_on"] = (meta.get("trained_on") or {}).get("key")
        metrics = Path(path) / "metrics.json"
        # whether the stage's training moved its parent's weights (None: trained before it was recorded)
        out[stage]["weights_changed"] = (json.loads(metrics.read_text()).get("weights_changed")
                                         if metrics.exists() else None)
    return out


def training_machines_note(versions: dict[str, dict]) -> str:
    """What trained the table's checkpoints (``versions``: run name -> :func:`checkpoint_versions`): one machine, or
    which run trained on which, since another CPU type trains other weights from the same inputs; empty when no
    checkpoint recorded its machine."""
    by_run = {run: sorted({v["trained_on"] for v in stages.values() if v.get("trained_on")})
              for run, stages in versions.items()}
    machines = sorted({m for ms in by_run.values() for m in ms})
    if not machines:
        return ""
    if len(machines) == 1:
        return f"Trained on one machine: {machines[0]}.\n\n"
    runs = "; ".join(f"{run}: {', '.join(ms) or 'not recorded'}" for run, ms in sorted(by_run.items()))
    return (f"Trained on {len(machines)} machines (another CPU type trains other weights from the same inputs, as a "
            f"training seed does): {runs}.\n\n")


def shared_stages(root: Path, worlds: list[tuple[int, str]], train_seeds: list[int],
                  restaged: str | None = None) -> list[str]:
    """The stages whose checkpoint is the same in every training run of every world (one run, not replicates)."""
    if len(train_seeds) < 2:
        return []
    versions = [checkpoint_versions(run_dir(root, s, d, t, restaged) / "data") for s, d in worlds for t in train_seeds]
    stages = set.intersection(*(set(v) for v in versions)) if versions else set()
    return sorted((st for st in stages if all(
        v[st]["version"] == versions[i - i % len(train_seeds)][st]["version"] for i, v in enumerate(versions))),
        key=lambda st: list(versions[0]).index(st))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", nargs="+", type=int, required=True, help="simulator seeds, one world each")
    ap.add_argument("--dates", nargs="+", required=True, help="one date per seed (each world runs on its own day)")
    ap.add_argument("--root", type=Path, default=Path("/tmp/oro-worlds"))
    ap.add_argument("--run", action="store_true", help="run the main command for each world first (fresh data dirs)")
    ap.add_argument("--allow-development-seeds", action="store_true",
                    help=f"accept seeds the recipe was developed on ({sorted(DEVELOPMENT_SEEDS)}): a development figure")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "worlds.json")
    ap.add_argument("--train-seeds", nargs="+", type=int, default=[0],
                    help="training seeds of each world (default 0): the table's interval counts their spread")
    ap.add_argument("--restage", metavar="STAGE", nargs="+",
                    help="the seeds other than 0 retrain these stages and the stages below them only, on a copy of the "
                         "seed-0 run (with --run: train them; without: read them)")
    ap.add_argument("--only", action="store_true",
                    help="with --restage: retrain the named stages alone (e.g. scaffold sft); the table holds them alone")
    ap.add_argument("main_args", nargs="*", help="extra arguments for oro-assets main (after --)")
    args = ap.parse_args()
    if len(args.seeds) != len(args.dates):
        ap.error(f"one date per seed: {len(args.seeds)} seeds, {len(args.dates)} dates")
    if len(set(args.train_seeds)) != len(args.train_seeds) or min(args.train_seeds) < 0:
        ap.error(f"--train-seeds must be distinct and 0 or more, got {args.train_seeds}")
    if args.only and not args.restage:
        ap.error("--only needs --restage STAGE ...")
    if args.restage is not None:
        from oro_assets.training.chain import ARM_NAMES, STAGE_NAMES

        unknown = [st for st in args.restage if st not in STAGE_NAMES + ARM_NAMES]
        if unknown:
            ap.error(f"--restage {' '.join(unknown)}: not a stage; accepted: {', '.join(STAGE_NAMES + ARM_NAMES)}")
    restaged = restage_label(args.restage, args.only)
    seen = DEVELOPMENT_SEEDS & set(args.seeds)
    if seen and not args.allow_development_seeds:
        ap.error(f"seeds {sorted(seen)} were used while developing the recipe: choose unseen seeds "
                 "(or pass --allow-development-seeds for a development figure)")
    worlds = list(zip(args.seeds, args.dates, strict=True))
    walls = {}
    if args.run:
        for seed, day in worlds:
            for t in args.train_seeds:
                name = str(run_dir(args.root, seed, day, t, restaged).relative_to(args.root))
                if args.restage is not None and t != 0:
                    walls[name] = round(restage_world(seed, day, args.root, args.restage, t, args.only), 1)
                else:
                    walls[name] = round(run_world(seed, day, args.root, args.main_args, t), 1)
                print(f"{name}: finished in {walls[name]:.0f}s", flush=True)

    shared_all = shared_stages(args.root, worlds, args.train_seeds, restaged)

    def runs_of(seed: int, day: str, category: str | None) -> dict:
        runs, first = {}, None
        for t in args.train_seeds:
            data = run_dir(args.root, seed, day, t, restaged) / "data"
            if not (data / "reports").exists():
                raise SystemExit(f"seed {seed} on {day}, training seed {t}: no evaluated run in {data}")
            stages = load_world(data, f"seed{seed}-{day}", category)
            if first is None:
                first = stages
            else:  # a stage trained once for every run is read from the first run, whose evaluation of it may be newer
                stages = {**stages, **{k: first[k] for k in shared_all if k in first}}
            # an --only replicate retrained the named stages alone: the others are the seed-0 run's, not replicates
            runs[f"train-seed{t}"] = {k: v for k, v in stages.items() if k in args.restage} if args.only else stages
        return runs

    def table(category: str | None) -> list[dict]:
        return stage_table({f"seed{s}-{d}": runs_of(s, d, category) for s, d in worlds})

    product, overall = table("Product"), table(None)
    by_category = {category: table(category) for category in ("Shop", "Voucher")}
    shared = [st for st in shared_all if not args.only or st in args.restage]
    note = ("" if len(args.train_seeds) == 1 else
            f"Training seeds {', '.join(map(str, args.train_seeds))} per world"
            + (f"; one shared run of {', '.join(shared)} (the seeds retrained only the stages below)" if shared else "")
            + (f"; the table holds only {', '.join(args.restage)}, retrained alone at every seed" if args.only else "")
            + ".\n\n")
    versions = {f"seed{s}-{d}/train-seed{t}": checkpoint_versions(run_dir(args.root, s, d, t, restaged) / "data")
                for s, d in worlds for t in args.train_seeds}
    note += training_machines_note(versions)
    md = note + "\n\n".join([markdown(product, "Product, greedy, every held-out Product problem"),
                       markdown(overall, "All categories (the paper's metric), the stratified sample"),
                       *(markdown(rows, f"{category}, greedy, every held-out {category} problem where the stage's "
                                        "evaluation ran them all (a final report does), else its share of the "
                                        "stratified sample (n per world)")
                         for category, rows in by_category.items())])
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"worlds": [{"seed": s, "date": d, "checkpoints": {
                                        f"train-seed{t}": versions[f"seed{s}-{d}/train-seed{t}"]
                                        for t in args.train_seeds}} for s, d in worlds],
                                    "train_seeds": args.train_seeds, "stages_with_one_shared_run": shared,
                                    "machine": machine_signature(), "main_wall_s": walls,
                                    "development_seeds": sorted(DEVELOPMENT_SEEDS), "product": product,
                                    "all_categories": overall, "by_category": by_category}, indent=2, sort_keys=True))
    args.out.with_suffix(".md").write_text(md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
