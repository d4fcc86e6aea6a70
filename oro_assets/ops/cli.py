"""Subcommands that operate the platform: main, materialize, backfill, ui, config."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time

from oro_assets.machine import machine_signature
from oro_assets.settings import ENV_VARS, load_settings


def _usage_error(command: str, exc: Exception) -> int:
    """One line on stderr, exit 2: how every subcommand answers an argument it does not accept."""
    print(f"oro-assets {command}: {exc}", file=sys.stderr)
    return 2


def _cmd_main(args: argparse.Namespace) -> int:
    from oro_assets.evaluation.heldout import FINAL_REPORT_TAG
    from oro_assets.ops import runner

    if args.traces is not None and args.traces < 1:
        return _usage_error("main", f"--traces must be 1 or more, got {args.traces}")
    if args.max_concurrent < 1:
        return _usage_error("main", f"--max-concurrent must be 1 or more, got {args.max_concurrent}")
    if args.train_seed < 0:
        return _usage_error("main", f"--train-seed must be 0 or more, got {args.train_seed}")
    if args.traces:
        os.environ["ORO_SIM_TRACES_PER_DAY"] = str(args.traces)
    settings = load_settings()
    partition = args.date or runner.latest_partition()
    job = "curation_job" if args.curation_only else "main_job"
    with_arms = bool(args.final_report and not args.curation_only and _profile_has_scaffold(settings))
    if with_arms:
        job = runner.FINAL_REPORT_JOB
    try:
        runner.check_partitions(runner.resolve_job(job), [partition], "--date")
    except runner.RunArgumentError as exc:
        return _usage_error("main", exc)
    started = time.monotonic()
    print(f"oro-assets main: partition {partition}, data root {settings.data_dir}, profile {settings.model_profile}")
    run_config = runner.smoke_run_config(with_arms=with_arms) if args.smoke and not args.curation_only else None
    tags = {"oro/trigger": "cli-main"}
    if args.final_report:
        run_config = runner.final_report_run_config(run_config, with_arms=with_arms)
        tags[FINAL_REPORT_TAG] = "true"
        print("oro-assets main: final report: every evaluation reads the locked test pool"
              + ("; the scaffold arm is trained and evaluated beside the chain" if with_arms else
                 "; no scaffold arm (the profile's sft recipe has no drills)"))
    if args.train_seed and not args.curation_only:
        run_config = runner.with_training_seed(run_config, runner.training_assets(with_arms=with_arms), args.train_seed)
        tags["oro/train_seed"] = str(args.train_seed)
    ok = runner.run_job(settings, job, partition=partition, run_config=run_config, tags=tags,
                        max_concurrent=args.max_concurrent)
    print(f"\nfinished in {time.monotonic() - started:.0f}s: {'success' if ok else 'FAILED'}")
    # another CPU type trains other weights from the same inputs and runs at another speed: say which ran this
    print(f"  machine:              {machine_signature(with_torch=False)['key']}")
    print(f"  warehouse (Parquet):  {settings.warehouse_dir}")
    print(f"  SQL over every asset: duckdb {settings.duckdb_path}")
    print(f"  datasets (JSONL):     {settings.warehouse_dir}/{{sft_dataset,kto_dataset,rl_prompts,eval_problems}}.jsonl")
    print(f"  checkpoints:          {settings.checkpoints_dir}")
    print(f"  evaluation report:    {settings.reports_dir / 'eval_report.md'}")
    print(f"  MLflow:               mlflow ui --backend-store-uri {settings.mlflow_tracking_uri}")
    print("  Dagster UI:           .venv/bin/oro-assets ui   (http://127.0.0.1:3000)")
    print("  lineage of a record:  .venv/bin/oro-assets lineage <example-or-trace-id>")
    return 0 if ok else 1


def _profile_has_scaffold(settings) -> bool:
    """Whether the profile's sft recipe has a scaffold to train without curated rows (the ``scaffold`` arm)."""
    from oro_assets.training.profiles import get_profile

    return get_profile(settings.model_profile, settings).sft.mixed_drills > 0


def _cmd_materialize(args: argparse.Namespace) -> int:
    from oro_assets.evaluation.heldout import FINAL_REPORT_TAG, LOCKED_POOL
    from oro_assets.ops import runner

    settings = load_settings()
    try:
        runner.check_partitions(runner.resolve_job(args.job), [args.partition] if args.partition is not None else [])
    except runner.RunArgumentError as exc:
        return _usage_error("materialize", exc)
    run_config, tags = None, None
    if args.final_report:
        if args.job != "arms_job":
            return _usage_error("materialize", f"--final-report is for arms_job (main: oro-assets main --final-report), "
                                               f"got --job {args.job}")
        run_config = {"ops": {name: {"config": {"pool": LOCKED_POOL}} for name in runner.ARM_EVAL_ASSETS}}
        tags = {FINAL_REPORT_TAG: "true"}
    return 0 if runner.run_job(settings, args.job, partition=args.partition, run_config=run_config, tags=tags) else 1


def _cmd_ablation(args: argparse.Namespace) -> int:
    from oro_assets.ops import runner

    settings = load_settings()
    config: dict = {"seeds": args.seeds, "eval_problems": args.eval_problems}
    for key in ("max_rows", "max_steps", "copy_drills"):
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    if args.days:
        config["partitions"] = args.days
    if args.smoke:
        config = {**config, "seeds": [0], "max_rows": 8, "max_steps": 2, "copy_drills": 16, "eval_problems": 4,
                  "arms": ["raw", "curated"], "trained_shapes_only": False, **runner.SMOKE_WARMUP}
    bad = [n for n in ("max_rows", "max_steps", "eval_problems") if config.get(n) is not None and config[n] < 1]
    if bad:
        return _usage_error("ablation", f"--{bad[0].replace('_', '-')} must be 1 or more")
    started = time.monotonic()
    ok = runner.run_job(settings, "curation_ablation_job", run_config={"ops": {"curation_ablation": {"config": config}}},
                        tags={"oro/trigger": "cli-ablation"})
    print(f"\nfinished in {time.monotonic() - started:.0f}s: {'success' if ok else 'FAILED'}")
    print(f"  ablation report: {settings.reports_dir / 'ablation' / 'curation_ablation.md'}")
    return 0 if ok else 1


def _cmd_backfill(args: argparse.Namespace) -> int:
    from oro_assets.ops import runner

    settings = load_settings()
    try:
        job = runner.resolve_job(args.job)
        if job.partitions_def is None:
            partitioned = [name for name in runner.job_names() if runner.resolve_job(name).partitions_def is not None]
            raise runner.RunArgumentError(f"{args.job} is not partitioned; accepted: {', '.join(partitioned)}")
        runner.check_partitions(job, [args.start], "--start")
        runner.check_partitions(job, [args.end], "--end")
        days = runner.date_range(args.start, args.end)
    except runner.RunArgumentError as exc:
        return _usage_error("backfill", exc)
    failures = 0
    for day in days:
        ok = runner.run_job(settings, args.job, partition=day, tags={"oro/trigger": "cli-backfill"})
        failures += not ok
    print(f"backfill {args.start}..{args.end}: {failures} failed partition(s)")
    return 1 if failures else 0


def _cmd_ui(args: argparse.Namespace) -> int:
    from oro_assets.ops.instance import REPO_ROOT, ensure_dagster_home

    settings = load_settings()
    ensure_dagster_home(settings)
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(REPO_ROOT / "workspace.yaml"), "-h", args.host, "-p", str(args.port)]
    print(" ".join(cmd))
    return subprocess.call(cmd, cwd=REPO_ROOT)


def _cmd_config(args: argparse.Namespace) -> int:
    settings = load_settings()
    for field in dataclasses.fields(settings):
        if field.name != "extra":
            print(f"{field.name:22s} {getattr(settings, field.name)}")
    print("\nvariables:", ", ".join(ENV_VARS))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("main", help="materialise every asset for one day on the configured source (the README's first command)")
    p.add_argument("--date", help="partition YYYY-MM-DD (default: yesterday, UTC)")
    p.add_argument("--traces", type=int, help="traces the embedded simulator writes for the day (overrides ORO_SIM_TRACES_PER_DAY)")
    p.add_argument("--curation-only", action="store_true", help="stop after the curation assets (no training/evaluation)")
    p.add_argument("--smoke", action="store_true", help="a few training steps and a 4-problem evaluation: checks the whole path quickly")
    p.add_argument("--train-seed", type=int, default=0,
                   help="seed of every training stage (default 0): another seed trains a training-seed replicate of the chain")
    p.add_argument("--final-report", action="store_true",
                   help="evaluate every stage on the locked test pool (the figures a report quotes); "
                        "default: the dev pool, which every screen and recipe choice reads")
    p.add_argument("--max-concurrent", type=int, default=2,
                   help="steps run side by side in their own processes (default 2: each evaluation beside the next "
                        "training stage; 1 runs every step in this process, one after another)")
    p.set_defaults(func=_cmd_main, needs_settings=False)

    p = subparsers.add_parser("materialize", help="run one job of the code location in-process")
    p.add_argument("--job", default="curation_job", help="arena_job | curation_job | datasets_job | training_job | evaluation_job | main_job | final_report_job | arms_job | curation_ablation_job")
    p.add_argument("--partition", help="YYYY-MM-DD, from ORO_PARTITIONS_START to yesterday (UTC); partitioned jobs (curation_job, main_job) only")
    p.add_argument("--final-report", action="store_true",
                   help="arms_job only: evaluate the arms on the locked test pool, as `main --final-report` does")
    p.set_defaults(func=_cmd_materialize)

    p = subparsers.add_parser("backfill", help="materialise a date range, one run per day, in order")
    p.add_argument("--start", required=True, help="first day, YYYY-MM-DD (from ORO_PARTITIONS_START)")
    p.add_argument("--end", required=True, help="last day, YYYY-MM-DD (at most yesterday, UTC; start <= end)")
    p.add_argument("--job", default="curation_job", help="a partitioned job: curation_job | main_job")
    p.set_defaults(func=_cmd_backfill)

    p = subparsers.add_parser("ablation", help="curation_ablation_job: the same tiny recipe on each curation stage's "
                              "cut of the train pool (run main or a backfill first)")
    p.add_argument("--days", nargs="+", help="days whose traces make up the arms (default: every curated day)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1], help="training seeds (default: 0 1)")
    p.add_argument("--max-rows", type=int, help="rows per arm (default: the smallest arm's size)")
    p.add_argument("--max-steps", type=int, help="SFT steps per arm (default: the profile's)")
    p.add_argument("--copy-drills", type=int, help="copy-drill warm-up rows (default: the profile's)")
    p.add_argument("--eval-problems", type=int, default=150, help="eval-pool Product problems scored (default: 150)")
    p.add_argument("--smoke", action="store_true", help="two arms, one seed, a few steps: checks the path quickly")
    p.set_defaults(func=_cmd_ablation)

    p = subparsers.add_parser("ui", help="start the Dagster web UI on 127.0.0.1 against the local instance")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=3000)
    p.set_defaults(func=_cmd_ui)

    p = subparsers.add_parser("config", help="print the resolved configuration")
    p.set_defaults(func=_cmd_config)
