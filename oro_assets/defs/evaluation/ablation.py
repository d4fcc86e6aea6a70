"""The ``curation_ablation`` asset (its own job): what each curation stage is worth, measured by
training the same tiny recipe on each stage's cut of the train pool (``evaluation.ablation``)."""

import base64
from pathlib import Path

import dagster as dg
from pydantic import Field

from oro_assets import jsonio
from oro_assets.defs.arena.assets import world_paths
from oro_assets.defs.common import OWNER_ML, code_version
from oro_assets.defs.curation.assets import pool_problems
from oro_assets.defs.resources import (
    FirehoseSource,
    ModelProfileResource,
    TrackingResource,
    WarehouseResource,
)
from oro_assets.defs.training.checkpoints import current_checkpoint
from oro_assets.evaluation.ablation import ARM_COLUMNS, ARM_NAMES, Fate, build_arms, run_ablation
from oro_assets.storage import iter_parquet_batches


class AblationConfig(dg.Config):
    partitions: list[str] = Field(default_factory=list, description=(
        "Days whose traces make up the arms; empty: every day with a trace ledger."))
    seeds: list[int] = Field(default_factory=lambda: [0, 1], description="Training seeds (each draws its own rows).")
    max_rows: int | None = Field(default=None, description="Rows per arm (default: the smallest arm's size).")
    max_steps: int | None = Field(default=None, description="SFT steps per arm (default: the profile's).")
    copy_drills: int | None = Field(default=None, description="Copy-drill warm-up rows, shared by every arm (default: the profile's).")
    eval_problems: int = Field(default=150, description="Eval-pool problems of the category scored (greedy).")
    category: str = Field(default="Product", description="Problem category scored.")
    arms: list[str] = Field(default_factory=lambda: list(ARM_NAMES), description="Arms trained, in order.")
    trained_shapes_only: bool = Field(default=True, description=(
        "Draw each arm's N rows from the row shapes the profile's SFT trains (tiny: Product); off: from every row."))


def _fates(wh, partitions: list[str]) -> dict[str, Fate]:
    fates: dict[str, Fate] = {}
    for partition in partitions:
        table = wh.read("trace_ledger", partition).select(["trace_id", "fate", "stage", "reason"])
        for row in table.to_pylist():
            if row["trace_id"]:
                fates[row["trace_id"]] = Fate(row["fate"] == "kept", row["stage"], row["reason"])
    return fates


def _truth_kinds(firehose_root: str, partitions: list[str]) -> dict[str, str]:
    """raw_sha256 -> miner kind from the embedded simulator's truth files (absent for real dumps)."""
    kinds: dict[str, str] = {}
    for partition in partitions:
        path = Path(firehose_root) / "_truth" / f"{partition}.jsonl"
        if path.exists():
            for line in path.read_bytes().splitlines():
                row = jsonio.loads(line)
                kinds.setdefault(row["raw_sha256"], str(row.get("policy_kind") or "unknown"))
    return kinds


@dg.asset(
    group_name="evaluation",
    owners=[OWNER_ML],
    kinds={"pytorch", "mlflow"},
    deps=["trace_ledger", "normalized_traces", "leak_clusters", "problem_pool", "eval_problems", "base_model"],
    description=(
        "Curation ablation: the same tiny SFT recipe (same N rows, steps, tokenizer, view, base, seeds) trained on the "
        "train pool as it stands after each curation stage - raw, + success, + structural, + format/grounding gates, "
        "+ reasoning gate, full curated corpus - and scored greedily on the same eval-pool problems: ASR per arm "
        "with 95% intervals over seeds, a plot, MLflow runs, and each arm's make-up by miner kind."
    ),
    code_version=code_version(build_arms, run_ablation),
)
def curation_ablation(context: dg.AssetExecutionContext, config: AblationConfig, warehouse: WarehouseResource,
                      firehose: FirehoseSource, tracking: TrackingResource,
                      model_profile: ModelProfileResource) -> dg.MaterializeResult:
    from types import SimpleNamespace

    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.curation.clusters import ASSIGNED, Registry, problem_key
    from oro_assets.curation.datasets import strict_success_fn
    from oro_assets.curation.split import ProblemIndex
    from oro_assets.defs.evaluation.assets import _load_eval_problems, _registry_view, eval_problem_sample
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.tracking import Tracking

    wh = warehouse.warehouse
    ledger_days = set(wh.partitions("trace_ledger"))
    partitions = sorted(config.partitions) or sorted(ledger_days)
    missing = [p for p in partitions if p not in ledger_days]
    if not partitions or missing:
        raise dg.Failure(description=f"no trace ledger for {missing or 'any day'}: materialise curation_job first")
    unknown_arms = sorted(set(config.arms) - set(ARM_NAMES))
    if unknown_arms:
        raise dg.Failure(description=f"unknown arms {unknown_arms}; accepted: {', '.join(ARM_NAMES)}")
    problems = pool_problems(wh)
    index = ProblemIndex(problems)
    registry = Registry.load(warehouse.state_dir)
    catalogue = Catalogue.from_jsonl(world_paths(Path(warehouse.data_dir))[1])
    strict = strict_success_fn({problem_key(p): p for p in problems}, catalogue)
    kinds = _truth_kinds(firehose.root(), partitions)

    def keyed(row: dict) -> str:
        return problem_key(index.resolve(row)[0])

    def pool_of(row: dict) -> str | None:
        member = registry.lookup(keyed(row))
        return member.get("pool") if member and member.get("status") == ASSIGNED else None

    def normalized():
        # streamed, and only what the arms, the pool, the outcome and the make-up read: never a day as dicts
        for partition in partitions:
            for batch in iter_parquet_batches(wh.path("normalized_traces", partition), 2000, ARM_COLUMNS):
                yield from batch.to_pylist()

    arms = build_arms(normalized(), _fates(wh, partitions), pool_of,
                      lambda row: strict({**row, "problem_key": keyed(row)}),
                      lambda row: kinds.get(str(row.get("raw_sha256")), "unknown"))
    context.log.info(f"arm sizes {arms.sizes()}, not in any arm {dict(arms.skipped)}")

    profile = get_profile(model_profile.profile, SimpleNamespace(qwen3_4b_path=model_profile.qwen3_4b_path))
    overrides = {k: v for k, v in (("max_steps", config.max_steps), ("copy_drills", config.copy_drills)) if v is not None}
    if overrides:
        profile = with_overrides(profile, "sft", **overrides)
    cluster_map, pool_ids = _registry_view(warehouse.state_dir)
    eval_all = [p for p in _load_eval_problems(wh) if p.get("category", "Product") == config.category]
    eval_set = eval_problem_sample(eval_all, config.eval_problems, 0)
    base = current_checkpoint(warehouse.checkpoints_dir, "base")
    result = run_ablation(
        arms, base_checkpoint=base, profile=profile, eval_problems=eval_set, catalogue=catalogue,
        out_root=warehouse.checkpoints_dir / "ablation", seeds=config.seeds, max_rows=config.max_rows,
        category=config.category, arm_names=config.arms, trained_shapes_only=config.trained_shapes_only,
        tracking=Tracking(tracking.tracking_uri, tracking.artifact_root),
        eval_kwargs={"eval_pool_ids": pool_ids, "cluster_map": cluster_map,
                     "problems_by_id": {p["problem_id"]: p for p in problems}},
        log=context.log.info,
    )
    out_dir = warehouse.reports_dir / "ablation"
    plot = result.plot(out_dir / "curation_ablation.png")
    report = {**result.to_json(), "partitions": partitions, "eval_problems": len(eval_set)}
    (out_dir / "curation_ablation.json").write_bytes(jsonio.dumps_bytes(report))
    table = result.markdown()
    findings = "\n".join(f"- {line}" for line in result.findings())
    md = (f"{table}\n\n{findings}\n\n![ablation](data:image/png;base64,"
          f"{base64.b64encode(plot.read_bytes()).decode()})")
    (out_dir / "curation_ablation.md").write_text(f"{table}\n\n{findings}\n\n![ablation](curation_ablation.png)\n")
    run_id = _log_to_mlflow(tracking, out_dir, report)
    return dg.MaterializeResult(metadata={
        "results": dg.MetadataValue.md(md),
        "rows_per_arm": result.n_rows,
        "arm_sizes": dg.MetadataValue.json(arms.sizes()),
        "eval_problems": len(eval_set),
        "partitions": dg.MetadataValue.json(partitions),
        "plot": dg.MetadataValue.path(str(plot)),
        **({"mlflow_run_id": run_id} if run_id else {}),
    })


def _log_to_mlflow(tracking: TrackingResource, out_dir: Path, report: dict) -> str | None:
    from oro_assets.training.tracking import StageRun, Tracking

    run = StageRun(Tracking(tracking.tracking_uri, tracking.artifact_root), "curation_ablation",
                   jsonio.content_hash(report)[:16], {"n_rows": report["n_rows"], "seeds": report["seeds"]})
    for s in report["summary"]:
        run.log_metrics({f"{s['arm']}_asr_mean": s["asr_mean"], f"{s['arm']}_ci_low": s["ci_low"],
                         f"{s['arm']}_ci_high": s["ci_high"]}, step=0)
    for name in ("curation_ablation.json", "curation_ablation.md", "curation_ablation.png"):
        run.log_artifact(out_dir / name)
    run.finish("FINISHED")
    return run.info.get("run_id")


curation_ablation_job = dg.define_asset_job(
    "curation_ablation_job", selection=[curation_ablation],
    description="Train the same tiny recipe on each curation stage's cut of the train pool and compare (not part of "
                "the main command; needs curation_job's days, the datasets and base_model).",
)


@dg.definitions
def ablation_definitions() -> dg.Definitions:
    return dg.Definitions(assets=[curation_ablation], jobs=[curation_ablation_job])
