"""Evaluation assets: one ``eval_<stage>`` per checkpoint on the leak-guarded hold-out, and ``eval_report``."""

import multiprocessing
import os

import dagster as dg
from pydantic import Field

from oro_assets.defs.common import OWNER_ML, REPORT_FRESHNESS, code_version
from oro_assets.defs.resources import ModelProfileResource, TrackingResource, WarehouseResource
from oro_assets.evaluation.heldout import (
    DEFAULT_POOL,
    FINAL_REPORT_TAG,
    LockedPoolError,
    eval_problem_sample,
    evaluate_on_pool,
    load_eval_problems,
    registry_view,
)
from oro_assets.evaluation.report import (
    HOLDOUT_GREEDY_DIR,
    build_comparison_report,
    evaluate_checkpoint,
    results_table,
    run_leak_checks,
)
from oro_assets.evaluation.reuse import eval_fingerprint, evaluate_once, reuse_result
from oro_assets.training.chain import ARM_NAMES, CHAIN, CHECKPOINT_ASSETS
from oro_assets.training.checkpoints import current_checkpoint

EVAL_CODE_VERSION = code_version(evaluate_checkpoint, evaluate_on_pool, reuse_result)

EVAL_STAGES = tuple(stage.name for stage in CHAIN)


class EvalConfig(dg.Config):
    """Rollout settings. Defaults: n = 8 samples at T = 0.7 plus one greedy run per problem, on the dev pool."""

    n: int = 8
    temperature: float = 0.7
    max_problems: int = 75  # the paper's hold-out size (1 problem = 1.33 points); stratified by category
    max_new_tokens: int = 160
    batch_size: int = 72
    seed: int = 0
    # One more greedy run on every hold-out problem of these categories (not only the stratified sample): the Product
    # ASR with an interval narrow enough to compare stages (issue 18: >= 150 held-out Product problems).
    holdout_greedy_categories: list[str] = ["Product"]
    # dev: every screen, recipe choice and the main command; test: the locked pool, for the final report only
    pool: str = DEFAULT_POOL
    niceness: int = Field(default=10, ge=0, le=19, description=(
        "How far the step lowers its CPU priority (os.nice, 0-19) when it runs in a process of its own: the training "
        "stage beside it, on the critical path, gets the cores first. Changes no result (not in the fingerprint)."))

    def rollout_settings(self) -> dict:
        """The settings that decide the rollouts (the fingerprint's and the result's): all but ``niceness``."""
        return self.model_dump(exclude={"niceness"})


def yield_cores_to_training(niceness: int) -> int | None:
    """Lower this step's CPU priority by ``niceness`` when it runs in a process of its own (a multiprocess run:
    ``oro-assets main``, a UI launch), so that the training stage running beside it keeps both cores; its rollouts
    then use what the trainer leaves. An in-process run (``--max-concurrent 1``, tests) shares its process with the
    steps after it and is left as it is. Returns the new niceness, or None when nothing changed.

    Linux keeps a nice value per thread, inherited by threads created later: called before torch starts its
    threads, it covers the whole rollout.
    """
    if niceness <= 0 or multiprocessing.parent_process() is None:
        return None
    return os.nice(niceness)


def _round(value, digits: int = 4):
    """Floats (also inside lists and dicts) rounded for metadata; other values as they are."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {k: _round(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v, digits) for v in value]
    return value


def make_eval_asset(stage: str) -> dg.AssetsDefinition:
    checkpoint_asset = CHECKPOINT_ASSETS[stage]

    @dg.asset(
        name=f"eval_{stage}",
        group_name="evaluation",
        owners=[OWNER_ML],
        kinds={"pytorch", "python"},
        deps=[checkpoint_asset, "eval_problems", "problem_pool", "arena_world", "leak_clusters"],
        description=(
            f"Rolls out the `{checkpoint_asset}` checkpoint in the embedded arena on one held-out pool (dev by "
            "default; test only for the final report) "
            "(30-step loop limit, n samples at temperature > 0 plus one greedy run) and scores production-strict: "
            "ASR with a Wilson interval, per category and difficulty, pass@1/pass@k, ground-truth rate, rule and format "
            "scores, process metrics. Trajectories are written in the canonical schema."
        ),
        check_specs=[
            dg.AssetCheckSpec("eval_pool_only", asset=f"eval_{stage}", blocking=True,
                              description="Every evaluated problem is in the evaluated pool (dev or test) of the "
                                          "leak-cluster registry (blocking)."),
            dg.AssetCheckSpec("no_training_leak", asset=f"eval_{stage}", blocking=True,
                              description="No evaluated cluster or ground-truth id is in the checkpoint's training manifests; synthetic teacher problems are regenerated from the catalogue and checked by target, keywords and leak cluster, and one that cannot be fails (re-verified at eval time, blocking)."),
            dg.AssetCheckSpec("pass_at_k_monotone", asset=f"eval_{stage}",
                              description="pass@k does not decrease with k."),
        ],
        code_version=EVAL_CODE_VERSION,
    )
    def _eval(context: dg.AssetExecutionContext, config: EvalConfig, warehouse: WarehouseResource,
              model_profile: ModelProfileResource) -> dg.MaterializeResult:
        from oro_assets.arena.catalogue import Catalogue
        from oro_assets.evaluation.checks import check_pass_at_k_monotone
        from oro_assets.training.checkpoints import lineage_manifest, read_meta

        layout = warehouse.layout
        checkpoint = current_checkpoint(layout.checkpoints, stage)
        if (nice := yield_cores_to_training(config.niceness)) is not None:
            context.log.info(f"niceness {nice}: the training stage beside this evaluation gets the cores first")
        try:
            all_eval = load_eval_problems(layout.dataset("eval_problems", ".jsonl"), config.pool,
                                          final_report=context.run.tags.get(FINAL_REPORT_TAG) == "true",
                                          reader=f"eval_{stage}")
        except (FileNotFoundError, ValueError, LockedPoolError) as exc:
            raise dg.Failure(description=str(exc)) from None
        problems = eval_problem_sample(all_eval, config.max_problems, config.seed)
        cluster_map, pool_ids = registry_view(warehouse.registry(), config.pool)
        problems_by_id = {p["problem_id"]: p for p in warehouse.pool_problems()}
        manifest_problems = lineage_manifest(checkpoint)[1]
        # the catalogue regenerates the synthetic teacher problems (syn_*) of the manifest for the leak check
        catalogue = Catalogue.from_jsonl(layout.world_catalogue)
        checks = run_leak_checks(problems, eval_pool_ids=pool_ids, manifest_problems=manifest_problems,
                                 cluster_map=cluster_map, problems_by_id=problems_by_id, catalogue=catalogue)
        leak_results = [
            dg.AssetCheckResult(check_name="eval_pool_only", passed=not checks.get("eval_pool"),
                                metadata={"violations": dg.MetadataValue.json(checks.get("eval_pool", [])[:5]),
                                          "pool": config.pool}),
            dg.AssetCheckResult(check_name="no_training_leak", passed=not checks.get("no_training_leak"),
                                metadata={"violations": dg.MetadataValue.json(checks.get("no_training_leak", [])[:5]),
                                          "manifest_problems": len(manifest_problems),
                                          "synthetic_manifest_problems": sum(
                                              1 for i in manifest_problems if str(i).startswith("syn_"))}),
        ]
        if any(checks.values()):
            context.log.error(f"refusing to evaluate {checkpoint}: leak checks failed")
            return dg.MaterializeResult(
                metadata={"evaluated": False, "checkpoint": str(checkpoint)},
                check_results=[*leak_results, dg.AssetCheckResult(check_name="pass_at_k_monotone", passed=True,
                                                                  metadata={"skipped": "not evaluated"})],
            )
        holdout = [p for p in all_eval if p.get("category") in config.holdout_greedy_categories]
        fingerprint = eval_fingerprint(
            checkpoint, settings=config.rollout_settings(), problem_sets={"sample": problems, HOLDOUT_GREEDY_DIR: holdout},
            world_files=layout.world_files, code_version=EVAL_CODE_VERSION)
        leak_refs = dict(eval_pool_ids=pool_ids, cluster_map=cluster_map, problems_by_id=problems_by_id,
                         manifest_problems=manifest_problems)
        result, reused_from = evaluate_once(
            layout.eval_reports, stage, fingerprint,
            lambda out_dir: evaluate_on_pool(checkpoint, stage, config.pool, problems, holdout, catalogue, out_dir,
                                             config.rollout_settings(), leak_refs, log=context.log.info),
            checkpoint=checkpoint, checkpoint_version=read_meta(checkpoint).get("version"), checks=checks)
        if reused_from is not None:
            context.log.info(f"{checkpoint}: weights, view, problems, world and settings are those the evaluation in "
                             f"{reused_from} ran on, so its rollouts are reused, not repeated")
        m = result.metrics
        pass_k = m.get("pass_at_k", {})
        monotone = check_pass_at_k_monotone(pass_k)
        return dg.MaterializeResult(
            metadata={
                "checkpoint": dg.MetadataValue.path(str(checkpoint)),
                "problems": len(problems),
                "pool": config.pool,
                "result": dg.MetadataValue.md(results_table([stage], {stage: m})),
                "asr": _round(m.get("asr")),
                "asr_ci95": dg.MetadataValue.json(_round(m.get("asr_ci"))),
                "pass_at_k": dg.MetadataValue.json(_round(pass_k)),
                "asr_by_category": dg.MetadataValue.json({k: _round(v["asr"]) for k, v in m.get("by_category", {}).items()}),
                "holdout_greedy": dg.MetadataValue.json(_round(m.get("holdout_greedy", {}))),
                "asr_by_difficulty": dg.MetadataValue.json({k: _round(v["asr"]) for k, v in m.get("by_difficulty", {}).items()}),
                "outcomes": dg.MetadataValue.json(m.get("outcome_counts", {})),
                "process": dg.MetadataValue.json(_round(m.get("process", {}))),
                "items_by_category": dg.MetadataValue.json(_round(m.get("items_by_category", {}))),
                "trajectories": dg.MetadataValue.path(str(result.trajectories_path)),
                "profile": model_profile.profile,
                "eval_fingerprint": fingerprint[:16],
                "reused_from": dg.MetadataValue.text(str(reused_from) if reused_from is not None else "-"),
            },
            check_results=[*leak_results, dg.AssetCheckResult(check_name="pass_at_k_monotone", passed=not monotone,
                                                              metadata={"pass_at_k": dg.MetadataValue.json(pass_k)})],
        )

    return _eval


eval_assets = [make_eval_asset(stage) for stage in (*EVAL_STAGES, *ARM_NAMES)]


@dg.asset(
    group_name="evaluation",
    owners=[OWNER_ML],
    kinds={"python", "mlflow"},
    deps=[f"eval_{stage}" for stage in EVAL_STAGES],
    freshness_policy=REPORT_FRESHNESS,
    description=(
        "Side-by-side comparison of every stage (ASR with 95% intervals, per category, pass@1/pass@8, process metrics) "
        "with the paper's published numbers as reference rows marked 'not measured here'; PNG plots (ASR per stage, "
        "pass@k curves). Written to data/reports/ and logged to MLflow."
    ),
    code_version=code_version(build_comparison_report),
)
def eval_report(context: dg.AssetExecutionContext, warehouse: WarehouseResource,
                tracking: TrackingResource) -> dg.MaterializeResult:
    from oro_assets.evaluation.report import EvalResult, log_report_to_mlflow

    results = {}
    for stage in EVAL_STAGES:
        path = warehouse.layout.eval_result(stage)
        if path.exists():
            results[stage] = EvalResult.load(path)
    if not results:
        raise dg.Failure(description="no evaluated stage to report")
    pools = {stage: str(result.config.get("pool") or "unknown") for stage, result in results.items()}
    stated = (f"pool {next(iter(set(pools.values())))}" if len(set(pools.values())) == 1
              else "pools " + ", ".join(f"{s}: {p}" for s, p in pools.items()))
    report = build_comparison_report(results, warehouse.layout.reports, title=f"Evaluation report ({stated})")
    run_id = log_report_to_mlflow(report, tracking.tracking_uri, artifact_dir=tracking.artifact_root)
    context.log.info(f"report: {report.markdown_path}")
    return dg.MaterializeResult(metadata={**report_metadata(report, run_id), "pools": dg.MetadataValue.json(pools)})


def report_metadata(report, run_id: str | None) -> dict[str, dg.MetadataValue]:
    """``eval_report``'s metadata: the results table as Markdown (ASR overall and per category with
    95% intervals, pass@1, pass@8, rounded), the plots (inline in the report, and as paths), the
    report itself and where its files and MLflow run are."""
    meta: dict[str, dg.MetadataValue] = {
        "results": dg.MetadataValue.md(report.results_table),
        "report": dg.MetadataValue.md(report.markdown_with_inline_plots()),
        **{f"plot_{name}": dg.MetadataValue.path(str(path)) for name, path in report.plots.items()},
        "report_path": dg.MetadataValue.path(str(report.markdown_path)),
        "summary_path": dg.MetadataValue.path(str(report.summary_path)),
        "stages": dg.MetadataValue.json(list(report.stages)),
    }
    if report.results_path is not None:
        meta["results_path"] = dg.MetadataValue.path(str(report.results_path))
    if run_id is not None:
        meta["mlflow_run_id"] = dg.MetadataValue.text(str(run_id))
    return meta
