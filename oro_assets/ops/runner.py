"""Run jobs of the code location in-process against the persistent local instance."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from oro_assets.ops.instance import get_instance
from oro_assets.settings import Settings


def latest_partition(today: dt.date | None = None) -> str:
    """The newest complete daily partition: yesterday (UTC)."""
    today = today or dt.datetime.now(dt.UTC).date()
    return (today - dt.timedelta(days=1)).isoformat()


def date_range(start: str, end: str) -> list[str]:
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    if last < first:
        raise ValueError(f"backfill range is empty: {start} > {end}")
    return [(first + dt.timedelta(days=i)).isoformat() for i in range((last - first).days + 1)]


SMOKE_STAGE_OVERRIDES = {
    "base_model": {},
    "sft_checkpoint": {"max_steps": 3, "max_examples": 16, "copy_drills": 32},
    "rejection_sft_checkpoint": {"max_steps": 2, "k": 2, "max_problems": 2},
    "teacher_sft_checkpoint": {"max_steps": 2, "max_problems": 4},
    "kto_checkpoint": {"max_steps": 2, "max_examples": 8},
    "dr_grpo_checkpoint": {"max_steps": 1},
}
EVAL_ASSETS = ("eval_base", "eval_sft", "eval_rejection_sft", "eval_teacher_sft", "eval_kto", "eval_dr_grpo")


def smoke_run_config() -> dict:
    """Tiny training/evaluation settings for smoke runs (fresh-clone test, UI tests): the same code path, minutes less."""
    from oro_assets import jsonio

    ops: dict = {name: {"config": {"overrides_json": jsonio.dumps(over)}} for name, over in SMOKE_STAGE_OVERRIDES.items()}
    ops.update({name: {"config": {"n": 2, "max_problems": 4, "batch_size": 8, "max_new_tokens": 96}} for name in EVAL_ASSETS})
    return {"ops": ops}


def run_job(
    settings: Settings,
    job_name: str,
    *,
    partition: str | None = None,
    run_config: dict | None = None,
    tags: dict[str, str] | None = None,
    log: Callable[[str], None] = print,
) -> bool:
    from oro_assets.definitions import defs as load_defs

    instance = get_instance(settings)
    job = load_defs().resolve_job_def(job_name)
    started = time.monotonic()
    result = job.execute_in_process(
        instance=instance,
        partition_key=partition,
        run_config=run_config or {},
        tags=tags or {},
        raise_on_error=False,
    )
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
