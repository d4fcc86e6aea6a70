"""The Dagster ``curation_job`` against the same day through the chain in memory: CPU, peak RSS, ledger (issue 33).

Issue 33's target: the job stays within 1.2x the chain's CPU on the same day. ``asset_memory.py --with-chain``
measures both once, on days of the a6b1cf3 recorder only, with the chain's imports (transformers among them)
counted in the chain and not in the job. Here, on one day of either recorder era (``--later-share``):

* ``chain``: ``curation_chain.chain`` over the day's gz parts (the pipeline's steps fused in memory, the one
  runner, same batches), cold judge cache, the format gate counting tokens with the world's tiny tokenizer as the
  job's gates do;
* ``job``: ``curation_job`` executed in process (``execute_in_process`` on the project's instance, as
  ``oro-assets materialize`` does) on that partition of a fresh data root where ``arena_job`` has built
  the problem pool and the leak-cluster registry (not timed); cold judge cache; every asset written to
  Parquet and read back by the next, the asset checks and the metadata.

Both import the same modules before their clock starts (the project's curation, judge, ingest and
token-count modules, pyarrow, transformers), so neither pays imports the other does not. The world's tiny
tokenizer (the format gate's token counter) is built before any clock starts, once for the chain and once in
each job's data dir: production builds it once per world and keeps it (``state/tokenizers``), so a day's
curation does not pay it. ``--cold-tokenizer`` builds it inside every run instead, as sessions up to 39
measured (a fixed ~5-6 CPU-seconds in both, which flatters the ratio on a small day). CPU seconds are
each measured process's and its reaped children's (``resource.getrusage``). Runs
alternate (chain, job, job, chain, ...) ``--repeats`` times each; the report gives every run, the minimum
CPU of each and ``job_vs_chain_cpu`` (min over min), each alternated pair's own ratio (``job_vs_chain_cpu_pairs``,
run within the same minutes) and their median (``job_vs_chain_cpu_median``, the figure the target reads: the
machine's speed drifts by tens of percent between minutes, so two minima from different minutes read the drift), and checks that the job's ``trace_ledger`` is the
chain's ledger byte for byte (``curation_chain.ledger_bytes``: same fates, stages, reasons, details) but for the
split's pool and cluster, which differ by design: the job splits by ``arena_job``'s leak-cluster registry and
problem pool, the chain by a fresh registry.

    python benchmarks/job_vs_chain.py --traces 100000 --json /tmp/jvc_100k.json
    python benchmarks/job_vs_chain.py --traces 100000 --later-share 1 --json /tmp/jvc_100k_later.json
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from asset_memory import REPO, _env, measured_curation_job  # noqa: E402
from curation_chain import DATE, day_root, generate, ledger_bytes  # noqa: E402
from ingest_throughput import measure_in_child, receive_result  # noqa: E402
from report import emit  # noqa: E402


def preimport() -> None:
    """What both runs import before their clock starts."""
    import pyarrow as pa
    import transformers  # noqa: F401  (the tiny tokenizer's counter)

    from oro_assets.curation import dedup, gates, pipeline, split, structural  # noqa: F401
    from oro_assets.judge import cache, rule  # noqa: F401
    from oro_assets.traces.ingest import iter_normalized  # noqa: F401
    from oro_assets.traces.schema import default_tools_json
    from oro_assets.training import token_count  # noqa: F401

    default_tools_json()
    pa.Table.from_pylist([{"a": 1}], schema=pa.schema([("a", pa.int64())]))


def verdict_digest(data: bytes) -> str:
    """sha256 of ledger lines (``ledger_bytes``) with the split's ``detail`` and ``pool`` blanked."""
    import orjson

    h = hashlib.sha256()
    for line in data.splitlines():
        row = orjson.loads(line)
        if row["stage"] == "split":
            row["detail"] = row["pool"] = None
        h.update(orjson.dumps(row) + b"\n")
    return h.hexdigest()


def run_chain(firehose: Path, cold_tokenizer: bool) -> dict:
    """The day through the chain in memory, cold judge cache, in a forked child (``cold_tokenizer``: the tokenizer
    built inside the run; else the one built before)."""
    from curation_chain import chain, profile_counter

    work = firehose / "jvc-chain-work"
    shutil.rmtree(work, ignore_errors=True)
    tokenizers = work / "tok" if cold_tokenizer else firehose / "jvc-tokenizers"
    files = sorted(str(p) for p in (firehose / DATE).glob("part-*.jsonl.gz"))
    out = firehose / "jvc-chain-ledger.jsonl"
    run = measure_in_child(lambda: chain(files, work, count_tokens=lambda: profile_counter(firehose, tokenizers),
                                         ledger_out=out))
    shutil.rmtree(work, ignore_errors=True)
    return {**{k: run[k] for k in ("wall_s", "cpu_s", "peak_rss_mib", "records", "kept", "judge_computed")},
            "verdicts_sha256": verdict_digest(out.read_bytes())}


def _job_child(data_dir: str, firehose: str, send) -> None:
    """Spawned child: ``curation_job`` in process, an RSS sampler beside it; sends wall, CPU, peak RSS."""
    os.environ.update(_env(Path(data_dir), Path(firehose), 1))
    preimport()
    result, wall, cpu, samples, windows = measured_curation_job()
    step_peaks = {}  # each step's peak RSS, from the run's step events
    for key, (start, end) in windows.items():
        step_peaks[key] = round(max((r for ts, r in samples if start <= ts <= end), default=0), 1)
    send.send({"success": result.success, "wall_s": wall, "cpu_s": cpu,
               "peak_rss_mib": max(max((r for _, r in samples), default=0),
                                   resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               "step_peak_rss_mib": step_peaks})


def job_data(firehose: Path, name: str, cold_tokenizer: bool = False) -> Path:
    """A fresh data root with ``arena_job``'s problem pool and leak-cluster registry, and (unless
    ``cold_tokenizer``) the world's tiny tokenizer already built, as a data dir holds it after its first day."""
    data_dir = firehose / name
    shutil.rmtree(data_dir, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "oro_assets.cli", "materialize", "--job", "arena_job"],
                   env=_env(data_dir, firehose), cwd=REPO, capture_output=True, text=True, check=True)
    if not cold_tokenizer:
        from oro_assets.layout import DataLayout
        from oro_assets.training.profiles import get_profile
        from oro_assets.training.token_count import profile_token_counter

        layout = DataLayout(data_dir)
        counter, why = profile_token_counter(get_profile("tiny"), layout.world_catalogue, layout.world_problems,
                                             cache_dir=layout.state_layout.tokenizers)
        if counter is None:
            raise SystemExit(f"no tiny tokenizer for {data_dir}: {why}")
    return data_dir


def run_spawned(target, data_dir: Path, firehose: Path) -> dict:
    """``target(data_dir, firehose, send)`` in a spawned child (a fresh interpreter: nothing imported or warmed by
    this one); returns what it sent."""
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=target, args=(str(data_dir), str(firehose), send))
    child.start()
    send.close()
    try:
        return receive_result(recv, child, None)
    finally:
        child.join()


def run_job(firehose: Path, cold_tokenizer: bool) -> dict:
    data_dir = job_data(firehose, "jvc-job-data", cold_tokenizer)
    run = run_spawned(_job_child, data_dir, firehose)
    if not run["success"]:
        raise SystemExit(f"curation_job failed (data kept in {data_dir})")
    import pyarrow.parquet as pq

    ledger = pq.read_table(data_dir / "warehouse" / "trace_ledger" / f"{DATE}.parquet")
    shutil.rmtree(data_dir, ignore_errors=True)
    return {**run, "records": ledger.num_rows, "kept": ledger.column("fate").to_pylist().count("kept"),
            "verdicts_sha256": verdict_digest(ledger_bytes(ledger))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--later-share", type=float, default=0.0,
                    help="share of ORO records from ORO's later recorder (default 0: a6b1cf3 only)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each, alternating (default 2: chain job job chain)")
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--cold-tokenizer", action="store_true",
                    help="build the world's tiny tokenizer inside every run (default: once, before the clocks)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    generate(Path(args.cache), args.traces, args.seed, plain=False, later_share=args.later_share)
    firehose = day_root(Path(args.cache), args.traces, args.seed, args.later_share)
    preimport()  # the chain's children are forked after this
    if not args.cold_tokenizer:
        from curation_chain import profile_counter

        profile_counter(firehose, firehose / "jvc-tokenizers")
    arms = {"chain": run_chain, "job": run_job}
    runs: dict[str, list[dict]] = {kind: [] for kind in arms}
    for i in range(args.repeats):
        for kind in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
            r = arms[kind](firehose, args.cold_tokenizer)
            runs[kind].append({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()})
            print(f"{kind}: cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, peak {r['peak_rss_mib']:.0f} MiB",
                  file=sys.stderr)
    best = {k: min(r["cpu_s"] for r in v) for k, v in runs.items()}
    # each pair ran within the same minutes: its ratio is the figure, and the target reads their median
    pairs = [round(j["cpu_s"] / c["cpu_s"], 3) for c, j in zip(runs["chain"], runs["job"], strict=True)]
    ledgers = {r["verdicts_sha256"] for v in runs.values() for r in v}
    report = {"traces": args.traces, "seed": args.seed, "later_share": args.later_share, "cpus": os.cpu_count(),
              "tokenizer": "built in every run" if args.cold_tokenizer else "built before the clocks",
              "loadavg_1m": round(os.getloadavg()[0], 2), "runs": runs,
              "min_cpu_s": best, "job_vs_chain_cpu": round(best["job"] / best["chain"], 3),
              "job_vs_chain_cpu_pairs": pairs, "job_vs_chain_cpu_median": statistics.median(pairs),
              "peak_rss_mib": {k: max(r["peak_rss_mib"] for r in v) for k, v in runs.items()},
              "verdicts_identical": len(ledgers) == 1}
    report["targets"] = {"job_within_1.2x_chain_cpu": report["job_vs_chain_cpu_median"] <= 1.2,
                         "peak_rss_le_1GiB": max(report["peak_rss_mib"].values()) <= 1024}
    emit(report, args.json)
    return 0 if report["verdicts_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
