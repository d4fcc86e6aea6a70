"""Run one training stage out of process: ``python -m oro_assets.training.pipes_entry``.

Under Dagster Pipes (``PipesSubprocessClient`` locally, ``PipesK8sClient`` on a GPU pod) the
parameters come as Pipes extras and progress (step, loss, tokens/s) streams to the Dagster logs
through ``pipes.log.info``; the result is reported with ``report_asset_materialization``.
Without Pipes the same parameters come from ``--params JSON`` (or ``--params-file``) and the
result is printed as one JSON line - that is how tests run it.

Parameters (extras or JSON)::

    stage:        a stage of ``training.chain.CHAIN`` (base | sft | rejection_sft | teacher_sft | kto | dr_grpo)
                  or an arm of ``training.chain.ARMS`` (scaffold)
    profile:      tiny | qwen3-4b          overrides: {field: value} for the stage config (optional)
    parent:       parent checkpoint path (not for base)
    out_root:     checkpoints root (data/checkpoints)
    tracking_uri, artifact_dir: MLflow (optional; absent = no MLflow)
    sft_rows | kto_rows | rl_prompts:  dataset files (.parquet / .jsonl)
    problems:     train problems (.jsonl)       catalogue: catalogue.jsonl (base, rejection_sft, teacher_sft;
                  sft: enables the tiny profile's copy-drill warm-up)
    exclude_product_ids: eval ground-truth ids    eval_problems: eval-pool problems (.jsonl)
                  (teacher_sft: the synthetic problems are decontaminated against both)
    seed:         int: the stage's sampling and, past its config's own, its trainer's seed (a training-seed replicate)
    qwen3_4b_path, teacher_base_url, teacher_model: from the asset's model_profile resource
                  (absent: read from the environment)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from oro_assets import jsonio

_SETTINGS_PARAMS = ("qwen3_4b_path", "teacher_base_url", "teacher_model")


def _stage_settings(params: dict) -> Any:
    """The settings a stage reads (the 4B weights path, the teacher endpoint): from ``params`` when the
    caller (the Dagster asset, from its resources) passes them, else from the environment."""
    import dataclasses
    from types import SimpleNamespace

    from oro_assets.settings import QWEN3_4B_DEFAULT, load_settings

    given = {k: (params[k] or None) for k in _SETTINGS_PARAMS if k in params}
    if given.get("qwen3_4b_path") is None:
        given.pop("qwen3_4b_path", None)
    try:
        settings = load_settings()
    except Exception:  # a bad unrelated variable must not stop a stage that is told what it needs
        if params.get("profile") == "qwen3-4b" and "qwen3_4b_path" not in given:
            raise
        return SimpleNamespace(**{"qwen3_4b_path": QWEN3_4B_DEFAULT, "teacher_base_url": None,
                                  "teacher_model": None, **given})
    return dataclasses.replace(settings, **given)


def run_stage(params: dict, log=print) -> dict:
    """Run the stage described by ``params``; returns the materialisation metadata (JSON-able)."""
    from oro_assets.training.chain import stage_named
    from oro_assets.training.stages.common import StageContext
    from oro_assets.training.tracking import Tracking

    declared = stage_named(str(params.get("stage")))  # an unknown name fails here, naming the chain's stages
    settings = _stage_settings(params)
    ctx = StageContext(profile=stage_profile(params, settings), out_root=Path(params["out_root"]),
                       tracking=Tracking(params.get("tracking_uri"), params.get("artifact_dir")),
                       seed=int(params.get("seed", 0)), log=log, force=bool(params.get("force", False)),
                       settings=settings, params=params)
    return declared.load_run()(ctx).summary()


def stage_profile(params: dict, settings: Any = None) -> Any:
    """The profile a stage runs with: the named profile, the run's overrides of the stage's config, and the run's
    seed past the config's own trainer seed (a training-seed replicate; seed 0 keeps the profile's)."""
    from oro_assets.training.chain import stage_named
    from oro_assets.training.profiles import get_profile, with_overrides, with_training_seed

    stage = stage_named(str(params.get("stage"))).config_stage
    profile = get_profile(params.get("profile", "tiny"), settings)
    if params.get("overrides"):
        profile = with_overrides(profile, stage, **params["overrides"])
    return with_training_seed(profile, stage, int(params.get("seed", 0)))


def _metadata_for_dagster(summary: dict) -> dict:
    md: dict[str, Any] = {k: v for k, v in summary.items() if v is not None and not isinstance(v, (dict, list))}
    if summary.get("mlflow_run_id"):
        md["mlflow_run_id"] = summary["mlflow_run_id"]
    return md


def main(argv: list[str] | None = None) -> int:
    import os

    from dagster_pipes import DAGSTER_PIPES_CONTEXT_ENV_VAR, open_dagster_pipes

    if DAGSTER_PIPES_CONTEXT_ENV_VAR in os.environ:
        with open_dagster_pipes() as pipes:
            params = dict(pipes.extras)
            summary = run_stage(params, log=pipes.log.info)
            pipes.report_asset_materialization(metadata=_metadata_for_dagster(summary))
        return 0
    ap = argparse.ArgumentParser(prog="python -m oro_assets.training.pipes_entry")
    ap.add_argument("--params", help="stage parameters as a JSON object")
    ap.add_argument("--params-file", help="file holding the JSON object")
    args = ap.parse_args(argv)
    if not args.params and not args.params_file:
        ap.error("give --params or --params-file (or run under Dagster Pipes)")
    params = jsonio.loads(args.params if args.params else Path(args.params_file).read_text())
    summary = run_stage(params, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(jsonio.stdlib_dumps(summary, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
