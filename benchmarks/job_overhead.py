"""Where the Dagster ``curation_job``'s CPU goes beyond the steps' own work (issue 33): one cold day, decomposed.

``job_vs_chain.py`` gives the job's CPU over the chain's. This says what the difference is made of. The job runs
in process (``asset_memory.measured_curation_job``) on a fresh data root where ``arena_job`` built the world and
the world's tiny tokenizer is already built (production builds it once per world), judge cache cold. A few of
the project's and Dagster's functions are wrapped to add up the process's CPU seconds (every thread's: Arrow
decodes on its own threads) spent inside them, each counted once, in the innermost wrapped function:

* ``ingest: read, normalise``: the ingest step's read (the reader, the parse, the normaliser, the Arrow batches);
* ``ingest: Parquet writes``: its normalised and quarantine files (``storage.RowGroups``);
* ``steps: process``: every step's ``process`` on its batches (what the chain does too), less its writes;
* ``steps: Parquet writes``: the tables the later steps write (``PartitionWriter.write``);
* ``steps: Parquet reads``: each later step reading its input back (``WarehouseStore.batches``, ``table``);
* ``steps: to_pylist``: those batches made Python rows (the rest of the steps' ``read``);
* ``dagster: events``: the run's events into the instance (``DagsterInstance.handle_new_event``);
* ``dagster: asset metadata``: the materialisations' metadata (``parquet_metadata``, ``partition_version``,
  the DuckDB views);
* ``rest``: everything else (Dagster's planning and step machinery, imports on first use, the steps' ``begin`` and
  ``finish``).

    python benchmarks/job_overhead.py --traces 20000 --json /tmp/job_overhead_20k.json
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from asset_memory import _env, measured_curation_job  # noqa: E402
from curation_chain import day_root, generate  # noqa: E402
from job_vs_chain import job_data, preimport, run_spawned  # noqa: E402
from report import emit  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Tally:
    """CPU seconds by label, each second counted in the innermost wrapped call it was spent in."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[float] = []  # per open call: CPU seconds its wrapped callees took

    def _enter(self) -> float:
        self._stack.append(0.0)
        return _cpu()

    def _leave(self, label: str, start: float) -> None:
        spent = _cpu() - start
        inner = self._stack.pop()
        self.seconds[label] += spent - inner
        if self._stack:
            self._stack[-1] += spent

    def wrap(self, owner: object, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def wrapped(*args, **kwargs):
            start = self._enter()
            try:
                return fn(*args, **kwargs)
            finally:
                self._leave(label, start)

        setattr(owner, name, wrapped)

    def wrap_iter(self, owner: object, name: str, label: str) -> None:
        """A generator function: the CPU of producing each item (the consumer's work between items is not counted)."""
        fn = getattr(owner, name)

        def wrapped(*args, **kwargs):
            it = fn(*args, **kwargs)
            while True:
                start = self._enter()
                try:
                    item = next(it)
                except StopIteration:
                    return
                finally:
                    self._leave(label, start)
                yield item

        setattr(owner, name, wrapped)


def _instrument(tally: Tally) -> None:
    from dagster._core.instance import DagsterInstance

    import oro_assets.defs.curation.assets as curation_assets
    from oro_assets import storage
    from oro_assets.curation import step, store
    from oro_assets.curation.steps.gates import GateStep
    from oro_assets.curation.steps.ingest import IngestStep

    tally.wrap_iter(IngestStep, "read", "ingest: read, normalise")
    tally.wrap(storage.RowGroups, "write", "ingest: Parquet writes")
    tally.wrap(storage.RowGroups, "close", "ingest: Parquet writes")
    tally.wrap(step._Running, "process", "steps: process")
    tally.wrap(store.PartitionWriter, "write", "steps: Parquet writes")
    tally.wrap_iter(store.WarehouseStore, "batches", "steps: Parquet reads")
    tally.wrap(store.WarehouseStore, "table", "steps: Parquet reads")
    for cls in (step.Step, GateStep):  # the later steps' reads: the Parquet part is counted by ``batches``
        tally.wrap_iter(cls, "read", "steps: to_pylist")
    tally.wrap(DagsterInstance, "handle_new_event", "dagster: events")
    for name in ("parquet_metadata", "partition_version"):
        tally.wrap(curation_assets, name, "dagster: asset metadata")
    tally.wrap(storage.Warehouse, "refresh_duckdb_views", "dagster: asset metadata")


def _child(data_dir: str, firehose: str, send) -> None:
    os.environ.update(_env(Path(data_dir), Path(firehose), 1))
    preimport()
    tally = Tally()
    _instrument(tally)
    result, wall, cpu, _samples, _windows = measured_curation_job()
    parts = {k: round(v, 2) for k, v in sorted(tally.seconds.items())}
    parts["rest"] = round(cpu - sum(tally.seconds.values()), 2)
    send.send({"success": result.success, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cpu_parts_s": parts})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--later-share", type=float, default=0.0)
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    generate(Path(args.cache), args.traces, args.seed, plain=False, later_share=args.later_share)
    firehose = day_root(Path(args.cache), args.traces, args.seed, args.later_share)
    data_dir = job_data(firehose, "job-overhead-data")
    run = run_spawned(_child, data_dir, firehose)
    shutil.rmtree(data_dir, ignore_errors=True)
    if not run["success"]:
        raise SystemExit("curation_job failed")
    n = args.traces
    run["cpu_us_per_record"] = {k: round(1e6 * v / n, 1) for k, v in run["cpu_parts_s"].items()}
    emit({"traces": n, "seed": args.seed, "later_share": args.later_share, "cpus": os.cpu_count(),
          "loadavg_1m": round(os.getloadavg()[0], 2), **run}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
