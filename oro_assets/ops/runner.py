"""Run jobs of the code location in-process against the persistent local instance."""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from oro_assets.arena.problems import CATEGORIES
from oro_assets.evaluation.heldout import LOCKED_POOL
from oro_assets.ops.instance import get_instance
from oro_assets.settings import Settings
from oro_assets.training.chain import ARMS, CHAIN

if TYPE_CHECKING:
    import dagster as dg

PARTITION_FORMAT = "YYYY-MM-DD"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class RunArgumentError(ValueError):
    """A job name, partition or date range the code location does not accept. The message is one line
    that names what is accepted; the CLI prints it and exits 2 before launching anything."""


def latest_partition(today: dt.date | None = None) -> str:
    """The newest complete daily partition: yesterday (UTC)."""
    today = today or dt.datetime.now(dt.UTC).date()
    return (today - dt.timedelta(days=1)).isoformat()


def parse_day(value: str, option: str = "date") -> dt.date:
    """``value`` as a calendar date written exactly YYYY-MM-DD, else RunArgumentError naming ``option``."""
    try:
        if not _DATE.fullmatch(value):
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        raise RunArgumentError(f"{option} {value!r} is not a date in {PARTITION_FORMAT} format") from None


def date_range(start: str, end: str) -> list[str]:
    """Every day from ``start`` to ``end`` inclusive; RunArgumentError when a date is malformed or start > end."""
    first, last = parse_day(start, "--start"), parse_day(end, "--end")
    if last < first:
        raise RunArgumentError(f"backfill range is empty: --start {start} is after --end {end}; accepted: start <= end")
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


def _definitions() -> dg.Definitions:
    """The code location, loaded once per configuration (validation and every run of a backfill share it)."""
    return _load_definitions(tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_CONFIG_PREFIXES))))


_CONFIG_PREFIXES = ("ORO_", "MLFLOW_", "OPENAI_")  # what the settings (and so the resources) read


@functools.lru_cache(maxsize=4)
def _load_definitions(_config: tuple[tuple[str, str], ...]) -> dg.Definitions:
    from oro_assets.definitions import defs as load_defs

    return load_defs()


def job_names() -> list[str]:
    """The jobs of the code location a user can run (Dagster's implicit ``__ASSET_JOB`` left out)."""
    repo = _definitions().get_repository_def()
    return sorted(job.name for job in repo.get_all_jobs() if not job.name.startswith("__"))


def resolve_job(job_name: str) -> dg.JobDefinition:
    """The job called ``job_name``; RunArgumentError listing the valid jobs otherwise."""
    names = job_names()
    if job_name not in names:
        raise RunArgumentError(f"unknown job {job_name!r}; accepted: {', '.join(names)}")
    return _definitions().resolve_job_def(job_name)


def partition_bounds(job: dg.JobDefinition) -> tuple[str | None, str | None] | None:
    """First and last partition of a partitioned job (ORO_PARTITIONS_START .. yesterday, UTC); None if unpartitioned."""
    partitions = job.partitions_def
    if partitions is None:
        return None
    return partitions.get_first_partition_key(), partitions.get_last_partition_key()


def check_partitions(job: dg.JobDefinition, days: list[str], option: str = "--partition") -> None:
    """RunArgumentError unless every day of ``days`` is a partition of ``job`` (format, then range).

    An unpartitioned job accepts no partition, and a partitioned one needs one.
    """
    bounds = partition_bounds(job)
    if bounds is None:
        if days:
            raise RunArgumentError(f"{job.name} is not partitioned; accepted: no {option}")
        return
    first, last = bounds
    if first is None or last is None:
        raise RunArgumentError(f"{job.name} has no partition yet: ORO_PARTITIONS_START is after yesterday (UTC)")
    accepted = f"{PARTITION_FORMAT} from {first} (ORO_PARTITIONS_START) to {last} (yesterday, UTC)"
    if not days:
        raise RunArgumentError(f"{job.name} is partitioned and needs {option}; accepted: {accepted}")
    for day in days:
        try:
            parse_day(day, option)
        except RunArgumentError as exc:
            raise RunArgumentError(f"{exc}; accepted: {accepted}") from None
        if not first <= day <= last:  # ISO dates order as strings
            raise RunArgumentError(f"{option} {day} is not a partition of {job.name}; accepted: {accepted}")


#: The sft warm-up of a smoke run: a warm-up of a step or two forms no copy, so its target is one no loss is above
#: (else the stage fails, WarmupStalledError); a target needs an extra epoch allowed, even one that never runs (and
#: qwen3-4b's sft allows none). The main job's smoke run and the ablation's both use it.
SMOKE_WARMUP = {"copy_drill_target_loss": 1e9, "copy_drill_extra_epochs": 1}

# Per training asset: TrainingConfig fields (stage-config overrides) of a smoke run.
_SMOKE_STAGES = {  # stage of training.chain.CHAIN -> its smoke overrides
    # 60 copy steps instead of 1,600: the same build, 2 of the smoke run's minutes less (a smoke base copies nothing)
    "base": {"copy_pretrain_steps": 60},
    "sft": {"max_steps": 3, "max_examples": 16, "copy_drills": 32, **SMOKE_WARMUP},
    "rejection_sft": {"max_steps": 2, "k": 2, "max_problems": 2},
    "teacher_sft": {"max_steps": 2, "max_problems": 4, "option_drills": 8},
    # the smoke base solves nothing, so its own rollouts never contrast: the curated turns give both classes
    "kto": {"max_steps": 2, "max_examples": 8, "on_policy_k": 2, "on_policy_problems": 2, "curated_turns": True},
    "dr_grpo": {"max_steps": 1},
}
SMOKE_STAGE_OVERRIDES = {stage.asset: _SMOKE_STAGES.get(stage.name, {}) for stage in CHAIN}
EVAL_ASSETS = tuple(f"eval_{stage.name}" for stage in CHAIN)
# the comparison arms (training.chain.ARMS): an arm is smoked as the stage whose config it trains with
ARM_SMOKE_OVERRIDES = {arm.asset: _SMOKE_STAGES.get(arm.config_stage, {}) for arm in ARMS}
ARM_EVAL_ASSETS = tuple(f"eval_{arm.name}" for arm in ARMS)
#: the job of a final-report run: the main job and the comparison arms
FINAL_REPORT_JOB = "final_report_job"


def final_report_run_config(run_config: dict | None, *, with_arms: bool = False) -> dict:
    """``run_config`` with every evaluation on the locked test pool (a run that also carries FINAL_REPORT_TAG);
    ``with_arms``: the arms' evaluations too (the run's job has them).

    The report's greedy run covers every held-out problem of every category (unless ``run_config`` says otherwise,
    as a smoke run does): the stratified sample holds 25 Shop and 25 Voucher problems a world, too few to tell a
    category's rare success from none (issue 30: Shop above 0 with an interval that excludes 0)."""
    config = {"ops": {name: {"config": dict(op.get("config", {}))}
                      for name, op in ((run_config or {}).get("ops") or {}).items()}}
    for name in EVAL_ASSETS + (ARM_EVAL_ASSETS if with_arms else ()):
        op = config["ops"].setdefault(name, {"config": {}})["config"]
        op["pool"] = LOCKED_POOL
        op.setdefault("holdout_greedy_categories", list(CATEGORIES))
    return config


def training_assets(*, with_arms: bool = False) -> tuple[str, ...]:
    """The training assets of the main job (and of the comparison arms)."""
    return tuple(stage.asset for stage in CHAIN) + (tuple(arm.asset for arm in ARMS) if with_arms else ())


def with_training_seed(run_config: dict | None, assets: Sequence[str], seed: int) -> dict:
    """``run_config`` with every asset of ``assets`` (training stages or arms) trained at ``seed``: a training-seed
    replicate of those stages (their sampling and trainers; see ``training.profiles.with_training_seed``)."""
    config = {"ops": {name: {"config": dict(op.get("config", {}))}
                      for name, op in ((run_config or {}).get("ops") or {}).items()}}
    for name in assets:
        config["ops"].setdefault(name, {"config": {}})["config"]["seed"] = seed
    return config


def smoke_run_config(*, with_arms: bool = False) -> dict:
    """Tiny training/evaluation settings for smoke runs (fresh-clone test, UI tests): the same code path, minutes less.
    ``with_arms``: the comparison arms' assets too (a final-report run)."""
    stages = {**SMOKE_STAGE_OVERRIDES, **(ARM_SMOKE_OVERRIDES if with_arms else {})}
    ops: dict = {name: {"config": dict(over)} for name, over in stages.items()}
    ops.update({name: {"config": {"n": 2, "max_problems": 4, "batch_size": 8, "max_new_tokens": 96,
                                  "holdout_greedy_categories": []}}
                for name in EVAL_ASSETS + (ARM_EVAL_ASSETS if with_arms else ())})
    return {"ops": ops}


# Step processes fork from a server that imported these once (Dagster spawns a fresh interpreter per step by
# default: 5-7 s between one step's end and the next one's start on an idle 2-core machine, 8-9 s under load,
# against 3 s forked; the training chain has seven such gaps). The code a run executes is then the code on disk when it started.
# torch and the Qwen3 model class too: every evaluation and every checkpoint's reload check imported them afresh,
# 7-8 s a step (smoke main: evaluations 11-13 s -> 3-4.5 s, the whole run 292 s -> 234 s, measured side by side).
FORKSERVER_PRELOAD = ["dagster", "oro_assets.definitions", __name__, "torch", "transformers.models.qwen3.modeling_qwen3"]


def multiprocess_execution_config(max_concurrent: int) -> dict:
    """Run config of Dagster's multiprocess executor: ``max_concurrent`` step processes forked from the preloaded
    server (the ``execution`` key of any job's run config, e.g. ``dagster asset materialize --config-json``); the
    code location's executor (``defs/ops/executor.py``) adds the limit of one training step at a time."""
    return {"execution": {"config": {"multiprocess": {
        "max_concurrent": max_concurrent, "start_method": {"forkserver": {"preload_modules": FORKSERVER_PRELOAD}}}}}}


#: The environment the step server (multiprocessing's forkserver, one a process) was started with by ``run_job``.
_step_server_env: dict[str, str] | None = None


def step_server_for_this_environment() -> bool:
    """Make the step server fit this run; True when one had to be stopped (the run's executor starts a fresh one).

    Step processes fork from one server a Python process keeps, and see the environment (and the code) of the run
    that started it, not the one now asking. A second multiprocess run in the same process (a notebook, a test) with
    another ``ORO_DATA_DIR`` would then have its steps write into the first run's data root. So a server started with
    another environment, or by something other than this function, is stopped first."""
    global _step_server_env
    from multiprocessing import forkserver

    env = dict(os.environ)
    server = forkserver._forkserver
    stopped = False
    if getattr(server, "_forkserver_pid", None) is not None and env != _step_server_env:
        server._stop()
        stopped = True
    _step_server_env = env
    return stopped


def job_for_reconstruction(job_name: str) -> dg.JobDefinition:
    """The job a multiprocess run's step processes rebuild (``dg.build_reconstructable_job`` target)."""
    return resolve_job(job_name)


def run_job(
    settings: Settings,
    job_name: str,
    *,
    partition: str | None = None,
    run_config: dict | None = None,
    tags: dict[str, str] | None = None,
    log: Callable[[str], None] = print,
    max_concurrent: int = 1,
) -> bool:
    """Run ``job_name`` against the local instance; True when it succeeded.

    ``max_concurrent`` 1 executes every step in this process, one after another. Above 1 the run uses
    Dagster's multiprocess executor, as a run launched from the UI does: steps whose inputs are ready run
    side by side (an evaluation beside the next training stage), each in its own process.
    """
    if max_concurrent < 1:
        raise RunArgumentError(f"max_concurrent must be 1 or more, got {max_concurrent}")
    job = resolve_job(job_name)
    instance = get_instance(settings)
    started = time.monotonic()
    if max_concurrent == 1:
        result = job.execute_in_process(
            instance=instance,
            partition_key=partition,
            run_config=run_config or {},
            tags=tags or {},
            raise_on_error=False,
        )
    else:
        import dagster as dg

        recon = dg.build_reconstructable_job(__name__, job_for_reconstruction.__name__, reconstructable_args=(job_name,))
        config = {**(run_config or {}), **multiprocess_execution_config(max_concurrent)}
        run_tags = {**(tags or {}), **({"dagster/partition": partition} if partition else {})}
        if step_server_for_this_environment():
            log("the step server an earlier run in this process started saw another environment: restarted")
        result = dg.execute_job(recon, instance, run_config=config, tags=run_tags, raise_on_error=False)
    elapsed = time.monotonic() - started
    status = "succeeded" if result.success else "FAILED"
    where = f" [{partition}]" if partition else ""
    log(f"{job_name}{where} {status} in {elapsed:.0f}s (run {result.run_id})")
    if not result.success:
        for event in result.all_events:
            if event.is_failure and event.event_specific_data is not None:
                error = getattr(event.event_specific_data, "error", None)
                while error is not None and error.cause is not None:  # the innermost error says what went wrong
                    error = error.cause
                if error is not None:
                    log(f"  {event.step_key}: {error.message.strip().splitlines()[0]}")
    return result.success
