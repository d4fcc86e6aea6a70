"""Peak memory of the Dagster curation job, per asset, on simulated days of two sizes (issue 5).

``curation_chain.py`` measures the domain chain; this measures what users run: the real
``curation_job`` (ingest → normalise → structural → gates → dedup → split → ledger, with the asset
checks and the metadata every asset attaches) on one partition, in a fresh data root where
``arena_job`` has built the problem pool and the leak-cluster registry. The job runs in a child
process (``execute_in_process`` on the project's Dagster instance, as ``oro-assets materialize``
does) while a thread samples the process's RSS every 50 ms; the run's step start/end events then
give each asset's peak.

The figure that matters is the ratio of peak RSS between the larger and the smaller day: each
asset streams its partition, so a stage that holds the day shows up as a ratio near the ratio of
the day sizes. Judge: the default rule judge with a cold cache (every unscored trace is judged).

    python benchmarks/asset_memory.py                       # 20,000 and 100,000 traces
    python benchmarks/asset_memory.py --traces 100000 1000000 --json /tmp/asset_memory.json
    python benchmarks/asset_memory.py --traces 20000 100000 --with-chain --json benchmarks/results/asset_memory.json

``--with-chain`` first runs the same day through the pipeline's steps in memory (``curation_chain.chain``:
the one runner, fused, same batches), cold like the job (fresh judge cache, the tiny tokenizer built
from scratch, since the job's gates count tokens with it too), and reports the job's wall time over
the chain's (``job_vs_chain_wall``) and its CPU seconds over the chain's (``job_vs_chain_cpu``): what
materialising as assets costs over computing the same rows. CPU seconds are the measured process's and
its reaped children's (``resource.getrusage``: the tokenizer build, ingest workers), taken around
``execute_in_process`` for the job and around the chain call for the chain; on a shared machine the CPU
ratio is the one to read. A child that dies without a result raises with its exit code.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from curation_chain import DATE, generate  # noqa: E402
from ingest_throughput import receive_result  # noqa: E402
from report import emit  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _env(data_dir: Path, firehose: Path, ingest_workers: int = 1) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORO_", "DAGSTER_", "MLFLOW_"))}
    env.update({"ORO_DATA_DIR": str(data_dir), "ORO_FIREHOSE_DIR": str(firehose), "ORO_PARTITIONS_START": "2026-01-01",
                "DAGSTER_DISABLE_TELEMETRY": "1", "ORO_INGEST_WORKERS": str(ingest_workers)})
    return env


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def _cpu_s() -> float:
    """CPU seconds of this process and its reaped children (the tokenizer build, ingest workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class RssSampler:
    """This process's RSS every 50 ms, from a thread, while the block runs: ``samples`` of (time, MiB)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._done = threading.Event()

    def __enter__(self) -> RssSampler:
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def _sample(self) -> None:
        while not self._done.is_set():
            self.samples.append((time.time(), _rss_mib()))
            time.sleep(0.05)


def measured_curation_job() -> tuple[Any, float, float, list[tuple[float, float]], dict[str, tuple[float, float]]]:
    """``curation_job`` of the day run in this process under an RSS sampler: (result, wall s, CPU s, RSS samples,
    each step's (start, end))."""
    from oro_assets.definitions import defs
    from oro_assets.ops.instance import get_instance
    from oro_assets.settings import load_settings

    instance = get_instance(load_settings())
    job = defs().resolve_job_def("curation_job")
    with RssSampler() as rss:
        t0, c0 = time.perf_counter(), _cpu_s()
        result = job.execute_in_process(instance=instance, partition_key=DATE, raise_on_error=False)
        wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    return result, wall, cpu, rss.samples, step_windows(instance, result.run_id)


def _run_curation(data_dir: str, firehose: str, ingest_workers: int, send) -> None:
    """Child: the curation job in-process with an RSS sampler; sends per-step wall time and peak
    (with ``ingest_workers`` > 1 the ingest workers' own memory is not in the figure)."""
    os.environ.update(_env(Path(data_dir), Path(firehose), ingest_workers))
    result, wall, cpu, samples, windows = measured_curation_job()
    per_step = {}
    for key, (start, end) in windows.items():
        window = [r for ts, r in samples if start <= ts <= end]
        per_step[key] = {"wall_s": round(end - start, 1), "peak_rss_mib": round(max(window, default=0), 1)}
    send.send({"success": result.success, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "peak_rss_mib": round(max((r for _, r in samples), default=0), 1), "steps": per_step})


def step_windows(instance, run_id: str) -> dict[str, tuple[float, float]]:
    """Each step of a Dagster run -> (start, end) wall-clock timestamps from its events, in start order (a step
    still running ends now)."""
    steps: dict[str, dict[str, float]] = {}
    for record in instance.get_records_for_run(run_id).records:
        event = record.event_log_entry
        kind = event.dagster_event.event_type_value if event.dagster_event else None
        if kind in ("STEP_START", "STEP_SUCCESS", "STEP_FAILURE"):
            steps.setdefault(event.step_key, {})[kind] = event.timestamp
    return {key: (t.get("STEP_START", 0), t.get("STEP_SUCCESS") or t.get("STEP_FAILURE") or time.time())
            for key, t in sorted(steps.items(), key=lambda kv: kv[1].get("STEP_START", 0))}


def measure_chain(firehose: Path) -> dict:
    """The same day through the pipeline's steps in memory (``curation_chain.chain``), cold like the job:
    a fresh judge cache, the tiny tokenizer built from scratch, the gz parts the job reads."""
    from curation_chain import chain, profile_counter
    from ingest_throughput import measure_in_child

    work = firehose / "chain-work"
    shutil.rmtree(work, ignore_errors=True)
    files = sorted(str(p) for p in (firehose / DATE).glob("part-*.jsonl.gz"))
    run = measure_in_child(lambda: chain(files, work, count_tokens=lambda: profile_counter(firehose, work / "tok")))
    shutil.rmtree(work, ignore_errors=True)
    return {k: run[k] for k in ("wall_s", "cpu_s", "peak_rss_mib", "records", "kept", "judge_computed")}


def measure(cache: Path, n: int, seed: int, ingest_workers: int = 1, with_chain: bool = False) -> dict:
    generate(cache, n, seed, plain=False)
    firehose = cache / f"s{seed}_n{n}"
    chain_run = measure_chain(firehose) if with_chain else None
    data_dir = firehose / "asset-memory-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "oro_assets.cli", "materialize", "--job", "arena_job"],
                   env=_env(data_dir, firehose), cwd=REPO, capture_output=True, text=True, check=True)
    recv, send = multiprocessing.get_context("spawn").Pipe(duplex=False)
    child = multiprocessing.get_context("spawn").Process(target=_run_curation, args=(str(data_dir), str(firehose), ingest_workers, send))
    child.start()
    send.close()
    try:
        run = receive_result(recv, child, None)  # raises with the exit code if the child dies
    finally:
        child.join()
    if not run["success"]:
        raise SystemExit(f"curation_job failed on the {n}-trace day (data kept in {data_dir})")
    import pyarrow.parquet as pq

    ledger = pq.read_table(data_dir / "warehouse" / "trace_ledger" / f"{DATE}.parquet", columns=["fate"])
    shutil.rmtree(data_dir, ignore_errors=True)
    out = {"traces": n, "ingest_workers": ingest_workers, "records_per_s_wall": round(n / run["wall_s"]),
           "ledger_rows": ledger.num_rows, "kept": ledger.column("fate").to_pylist().count("kept"), **run}
    if chain_run is not None:
        out["chain"] = chain_run
        out["job_vs_chain_wall"] = round(run["wall_s"] / chain_run["wall_s"], 2)
        out["job_vs_chain_cpu"] = round(run["cpu_s"] / chain_run["cpu_s"], 2)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, nargs=2, default=[20000, 100000], metavar=("SMALL", "LARGE"))
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--ingest-workers", type=int, default=1, help="ORO_INGEST_WORKERS for the job (default 1)")
    ap.add_argument("--with-chain", action="store_true",
                    help="also run the same day through the pipeline's steps in memory, cold, and report job / chain wall")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    small, large = (measure(Path(args.cache), n, args.seed, args.ingest_workers, args.with_chain) for n in args.traces)
    report = {
        "cpus": os.cpu_count(), "runs": [small, large],
        "ratios": {
            "day_size": round(large["traces"] / small["traces"], 1),
            "peak_rss": round(large["peak_rss_mib"] / small["peak_rss_mib"], 2),
            "peak_rss_by_step": {k: round(v["peak_rss_mib"] / small["steps"][k]["peak_rss_mib"], 2)
                                 for k, v in large["steps"].items() if small["steps"].get(k, {}).get("peak_rss_mib")},
            "throughput": round(large["records_per_s_wall"] / small["records_per_s_wall"], 2),
        },
    }
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
