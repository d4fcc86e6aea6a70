"""Schedules, sensors and freshness: the platform runs itself.

- ``daily_curation_schedule``: at ``ORO_SCHEDULE_HOUR`` UTC, curate yesterday's partition.
- ``firehose_sensor``: when ``ORO_FIREHOSE_DIR`` is set, start a run for each day folder that
  appears (or whose files change) under it.
- ``retrain_sensor``: off by default; with ``ORO_RETRAIN_MIN_NEW_ROWS`` > 0 it launches the
  training job once that many new SFT rows have arrived since the last SFT checkpoint.
- Freshness: time-window policies on curated assets/datasets/report, plus partition-aware
  freshness checks on the daily curated assets.
"""


import datetime as dt
import hashlib

import dagster as dg

from oro_assets import jsonio
from oro_assets.defs.ops.jobs import curation_job, training_job
from oro_assets.defs.resources import FirehoseSource, RetrainPolicy, WarehouseResource
from oro_assets.settings import schedule_hour
from oro_assets.training.checkpoints import new_sft_rows_since_last_checkpoint

# The schedule's cron is part of its definition: only ORO_SCHEDULE_HOUR is read when the location loads.
_SCHEDULE_HOUR = schedule_hour()

daily_curation_schedule = dg.build_schedule_from_partitioned_job(
    curation_job,
    hour_of_day=_SCHEDULE_HOUR,
    name="daily_curation_schedule",
    description="Curate yesterday's partition every day (hour set by ORO_SCHEDULE_HOUR, UTC).",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)


def _day_fingerprints(root: str) -> dict[str, str]:
    """day -> hash of (name, size, mtime) of the day's part files - the files the reader reads
    (``iter_partition_files``: JSONL, gzipped JSONL and Parquet parts) - for every YYYY-MM-DD folder under root."""
    import fsspec

    from oro_assets.traces.reader import iter_partition_files

    fs, path = fsspec.core.url_to_fs(root)
    days: dict[str, str] = {}
    for entry in sorted(fs.ls(path, detail=False)):
        name = entry.rstrip("/").rsplit("/", 1)[-1]
        try:
            dt.date.fromisoformat(name)
        except ValueError:
            continue
        parts = {fs._strip_protocol(f) for f in iter_partition_files(root, name)}
        files = sorted((f for f in fs.ls(entry, detail=True) if fs._strip_protocol(f["name"]) in parts),
                       key=lambda f: f["name"])
        if not files:
            continue
        digest = hashlib.sha256()
        for f in files:
            digest.update(f"{f['name']}|{f.get('size')}|{f.get('mtime') or f.get('LastModified') or ''}".encode())
        days[name] = digest.hexdigest()[:16]
    return days


@dg.sensor(
    job=curation_job,
    minimum_interval_seconds=300,
    description="Starts curation_job for each new (or changed) day folder under ORO_FIREHOSE_DIR "
                "(skips while the embedded simulator is the firehose).",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def firehose_sensor(context: dg.SensorEvaluationContext, firehose: FirehoseSource):
    if firehose.embedded:
        return dg.SkipReason("ORO_FIREHOSE_DIR is not set: the embedded simulator feeds the daily schedule instead")
    root = firehose.root()
    seen: dict[str, str] = jsonio.loads(context.cursor) if context.cursor else {}
    current = _day_fingerprints(root)
    partition_keys = set(curation_job.partitions_def.get_partition_keys()) if curation_job.partitions_def else None
    requests = [
        dg.RunRequest(run_key=f"{day}:{fp}", partition_key=day, tags={"oro/trigger": "firehose-sensor"})
        for day, fp in sorted(current.items())
        if seen.get(day) != fp and (partition_keys is None or day in partition_keys)
    ]
    context.update_cursor(jsonio.canonical_dumps(current))
    return requests or dg.SkipReason(f"no new day folders under {root}")


@dg.sensor(
    job=training_job,
    minimum_interval_seconds=3600,
    description="Retrains when ORO_RETRAIN_MIN_NEW_ROWS new curated SFT rows have arrived (off when 0, the default).",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def retrain_sensor(context: dg.SensorEvaluationContext, warehouse: WarehouseResource, retrain: RetrainPolicy):
    if retrain.min_new_rows <= 0:
        return dg.SkipReason("automatic retraining is off (ORO_RETRAIN_MIN_NEW_ROWS=0)")
    current, trained = new_sft_rows_since_last_checkpoint(warehouse.layout)
    if current - trained < retrain.min_new_rows:
        return dg.SkipReason(f"{current - trained} new SFT rows < {retrain.min_new_rows}")
    return dg.RunRequest(run_key=f"sft-rows-{current}", tags={"oro/trigger": "retrain-sensor"})


partition_freshness_checks = dg.build_time_partition_freshness_checks(
    assets=["curated_traces", "trace_ledger"],
    deadline_cron=f"0 {(_SCHEDULE_HOUR + 4) % 24} * * *",
    timezone="UTC",
)


@dg.definitions
def automation() -> dg.Definitions:
    return dg.Definitions(
        schedules=[daily_curation_schedule],
        sensors=[firehose_sensor, retrain_sensor],
        asset_checks=list(partition_freshness_checks),
    )
