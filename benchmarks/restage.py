"""Retrain one stage of a world's chain (and the stages below it) from the checkpoints already in its data dir,
then evaluate them and rewrite the report, as ``oro-assets main [--final-report]`` would, without retraining the
stages above it.

    ORO_DATA_DIR=<world>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/restage.py dr_grpo --final-report \
        [--seed 1] [--only]
    ORO_DATA_DIR=<world>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/restage.py scaffold sft --only \
        --final-report --seed 1      # the sft stage and its scaffold arm alone, at another training seed
    ORO_DATA_DIR=<world>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/restage.py kto dr_grpo --final-report \
        --evaluate-only              # evaluate the current checkpoints again (the report's problems changed)
    ORO_DATA_DIR=<fresh dir>/data ORO_SIM_SEED=<seed> .venv/bin/python benchmarks/restage.py base sft rejection_sft \
        --only --final-report --day 2026-11-30   # a world's chain up to rejection re-SFT alone, from nothing

Every stage of the chain re-versions when shared code changes (a stage's version covers the code it imports), so
after a change to one stage ``main`` retrains the whole chain; this runs the subset of ``main_job`` (or
``final_report_job``) made of ``stage``, its descendants, their evaluations and ``eval_report``, on the same
instance, with the same run config and tags. The parents' checkpoints are the ones already materialised: the
figures are those of the chain as it was trained, with the new stage on top - say so where they are reported.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import dagster as dg

# this tree's package, not the checkout the venv's editable install points at (a clone measures its own code)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    from oro_assets.evaluation.heldout import FINAL_REPORT_TAG
    from oro_assets.ops import runner
    from oro_assets.settings import load_settings
    from oro_assets.training.chain import ARM_NAMES, descendants, stage_named

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("stages", nargs="+", metavar="stage", help="stages (or arms) of training.chain.CHAIN / ARMS")
    p.add_argument("--final-report", action="store_true", help="evaluate on the locked test pool (final report)")
    p.add_argument("--seed", type=int, default=0,
                   help="training seed of the retrained stages (0: the main command's; others: a training-seed replicate)")
    p.add_argument("--only", action="store_true",
                   help="retrain the named stages alone (with their evaluations and the report), not the stages "
                        "below them")
    p.add_argument("--day", metavar="YYYY-MM-DD",
                   help="also materialise that day's assets upstream of the named stages that are not training stages "
                        "(world, curation, datasets), so a fresh data dir can be restaged: e.g. `base sft rejection_sft "
                        "--only --final-report --day 2026-11-30` trains a world's chain up to rejection re-SFT alone")
    p.add_argument("--evaluate-only", action="store_true",
                   help="train nothing: evaluate the named stages' current checkpoints again (and rewrite the report), "
                        "e.g. after a change to the final report's problems")
    args = p.parse_args(argv)
    if args.evaluate_only and args.seed:
        p.error("--evaluate-only trains nothing: a training --seed does not apply")
    for name in args.stages:
        try:
            stage_named(name)
        except ValueError as exc:
            p.error(str(exc))
    arms = [n for n in args.stages if n in ARM_NAMES]
    if arms and not args.final_report:
        p.error(f"{', '.join(arms)}: an arm is trained by a final-report run only (add --final-report)")
    names = list(dict.fromkeys(args.stages if args.only or args.evaluate_only else
                               [n for name in args.stages for n in (name, *descendants(name))]))
    keys = {dg.AssetKey(f"eval_{n}") for n in names}
    if not args.evaluate_only:
        keys |= {dg.AssetKey(stage_named(n).asset) for n in names}
    keys.add(dg.AssetKey("eval_report"))
    settings = load_settings()
    job = runner.resolve_job(runner.FINAL_REPORT_JOB if args.final_report else "main_job")
    if args.day:
        keys |= day_inputs(job, keys - {dg.AssetKey("eval_report")})
    tags = {"oro/trigger": "restage"}
    run_config = None
    if args.final_report:
        run_config = runner.final_report_run_config(None, with_arms=any(n in ARM_NAMES for n in names))
        run_config["ops"] = {k: v for k, v in run_config["ops"].items() if dg.AssetKey(k) in keys}
        tags[FINAL_REPORT_TAG] = "true"
    if args.seed:
        run_config = runner.with_training_seed(run_config, [stage_named(n).asset for n in names], args.seed)
    started = time.monotonic()
    result = job.get_subset(asset_selection=keys).execute_in_process(
        instance=runner.get_instance(settings), run_config=run_config, tags=tags, partition_key=args.day,
        raise_on_error=False)
    print(f"{'evaluate' if args.evaluate_only else 'restage'} {', '.join(names)}: "
          f"{'success' if result.success else 'FAILED'} in "
          f"{time.monotonic() - started:.0f}s; report: {settings.reports_dir / 'eval_report.md'}")
    return 0 if result.success else 1


def day_inputs(job: dg.JobDefinition, keys: set[dg.AssetKey]) -> set[dg.AssetKey]:
    """The assets upstream of ``keys`` in ``job`` that are neither a stage's (or arm's) checkpoint nor an evaluation:
    the world, the day's curation and the datasets the named stages read."""
    from oro_assets.training.chain import ARM_NAMES, STAGE_NAMES, stage_named

    names = (*STAGE_NAMES, *ARM_NAMES)
    stages_and_evaluations = ({dg.AssetKey(stage_named(n).asset) for n in names}
                              | {dg.AssetKey(f"eval_{n}") for n in names} | {dg.AssetKey("eval_report")})
    upstream = dg.AssetSelection.assets(*keys).upstream().resolve(job.asset_layer.asset_graph)
    return upstream - keys - stages_and_evaluations


if __name__ == "__main__":
    sys.exit(main())
