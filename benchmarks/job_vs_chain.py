"""The Dagster ``curation_job`` against the same day through the chain in memory: CPU, peak RSS, ledger (issue 33).

Issue 33's target: the job stays within 1.2x the chain's CPU on the same day. ``asset_memory.py --with-chain``
measures both once, on days of the a6b1cf3 recorder only, with the chain's imports (transformers among them)
counted in the chain and not in the job. Here, on one day of either recorder era (``--later-share``):

* ``chain``: ``curation_chain.chain`` over the day's gz parts (the pipeline's steps fused in memory, the one
  runner, same batches), cold judge cache, the tiny tokenizer built from scratch as the job's gates build it;
* ``job``: ``curation_job`` executed in process (``execute_in_process`` on the project's instance, as
  ``oro-assets materialize`` does) on that partition of a fresh data root where ``arena_job`` has built
  the problem pool and the leak-cluster registry (not timed); cold judge cache; every asset written to
  Parquet and read back by the next, the asset checks and the metadata.

Both import the same modules before their clock starts (the project's curation, judge, ingest and
token-count modules, pyarrow, transformers), so neither pays imports the other does not. CPU seconds are
each measured process's and its reaped children's (``resource.getrusage``: the tokenizer build). Runs
alternate (chain, job, job, chain, ...) ``--repeats`` times each; the report gives every run, the minimum
CPU of each and ``job_vs_chain_cpu`` (min over min), and checks that the job's ``trace_ledger`` is the
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


def run_chain(firehose: Path) -> dict:
    """The day through the chain in memory, cold (fresh judge cache and tokenizer), in a forked child."""
    from curation_chain import chain, profile_counter

    work = firehose / "jvc-chain-work"
    shutil.rmtree(work, ignore_errors=True)
    files = sorted(str(p) for p in (firehose / DATE).glob("part-*.jsonl.gz"))
    out = firehose / "jvc-chain-ledger.jsonl"
    run = measure_in_child(lambda: chain(files, work, count_tokens=lambda: profile_counter(firehose, work / "tok"),
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


def run_job(firehose: Path) -> dict:
    data_dir = firehose / "jvc-job-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "oro_assets.cli", "materialize", "--job", "arena_job"],
                   env=_env(data_dir, firehose), cwd=REPO, capture_output=True, text=True, check=True)
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_job_child, args=(str(data_dir), str(firehose), send))
    child.start()
    send.close()
    try:
        run = receive_result(recv, child, None)
    finally:
        child.join()
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
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    generate(Path(args.cache), args.traces, args.seed, plain=False, later_share=args.later_share)
    firehose = day_root(Path(args.cache), args.traces, args.seed, args.later_share)
    preimport()  # the chain's children are forked after this
    runs: dict[str, list[dict]] = {"chain": [], "job": []}
    for i in range(args.repeats):
        for kind in (("chain", "job") if i % 2 == 0 else ("job", "chain")):
            r = run_chain(firehose) if kind == "chain" else run_job(firehose)
            runs[kind].append({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()})
            print(f"{kind}: cpu {r['cpu_s']:.1f} s, wall {r['wall_s']:.1f} s, peak {r['peak_rss_mib']:.0f} MiB",
                  file=sys.stderr)
    best = {k: min(r["cpu_s"] for r in v) for k, v in runs.items()}
    ledgers = {r["verdicts_sha256"] for v in runs.values() for r in v}
    report = {"traces": args.traces, "seed": args.seed, "later_share": args.later_share, "cpus": os.cpu_count(),
              "loadavg_1m": round(os.getloadavg()[0], 2), "runs": runs,
              "min_cpu_s": best, "job_vs_chain_cpu": round(best["job"] / best["chain"], 3),
              "job_vs_chain_cpu_pairs": [round(j["cpu_s"] / c["cpu_s"], 3) for c, j in zip(runs["chain"], runs["job"],
                                                                                          strict=True)],
              "peak_rss_mib": {k: max(r["peak_rss_mib"] for r in v) for k, v in runs.items()},
              "verdicts_identical": len(ledgers) == 1}
    report["targets"] = {"job_within_1.2x_chain_cpu": report["job_vs_chain_cpu"] <= 1.2,
                         "peak_rss_le_1GiB": max(report["peak_rss_mib"].values()) <= 1024}
    emit(report, args.json)
    return 0 if report["verdicts_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
