"""The curation chain under each of Arrow's allocators (``ORO_ARROW_MEMORY_POOL``; issue 33).

Each run is the cold chain (``curation_chain.chain``: every step, fused, cold judge cache, the per-text caches
cleared) over the cached day in a forked child that first sets ``ORO_ARROW_MEMORY_POOL`` and calls
``storage.use_memory_pool`` (the production path: what importing ``oro_assets.storage`` does with the variable set).
Pools alternate within each round (the order reversed every other round); ``orjson.loads`` of the same lines is timed
at the start of each round for a baseline from the same minutes. Reported per pool, the minimum over rounds: CPU us a
record, of it the kernel's (``ru_stime``: page faults, the 2 MB zeroing of huge pages among them), minor page faults
a record, peak RSS, the ratio to ``orjson.loads`` and the ledger digest (the same for every pool, or the run fails).

    .venv/bin/python benchmarks/arrow_pool.py --traces 20000 --rounds 2
    .venv/bin/python benchmarks/arrow_pool.py --traces 10000 --later-share 1 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from ingest_throughput import measure_in_child, orjson_baseline  # noqa: E402
from report import cpu_model, emit  # noqa: E402

POOLS = ("system", "mimalloc", "jemalloc")


def chain_with_pool(pool: str, files: list[str], work: Path) -> dict:
    """In the measured child: ``pool`` made Arrow's allocator the production way, then one cold chain."""
    from oro_assets import storage
    from oro_assets.curation import dedup, structural
    from oro_assets.judge import rule

    os.environ["ORO_ARROW_MEMORY_POOL"] = pool
    in_use = storage.use_memory_pool()
    if in_use != pool:
        raise RuntimeError(f"asked for Arrow's {pool} allocator, got {in_use}")
    cc.clear_text_caches(rule, structural, dedup)
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = cc.chain(files, work)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"pool": in_use, "records": result["records"], "ledger_sha256": result["ledger_sha256"],
            "sys_s": after.ru_stime - before.ru_stime, "minor_faults": after.ru_minflt - before.ru_minflt}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--later-share", type=float, default=0.0)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pools", nargs="+", choices=POOLS, default=list(POOLS))
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    _, plain = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)
    cc.warm_up()  # imports and one-time tables paid in the parent (the runs are forked)
    runs: dict[str, list[dict]] = {p: [] for p in args.pools}
    baselines = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            baselines.append(measure_in_child(lambda: orjson_baseline(plain)))
            order = args.pools if r % 2 == 0 else list(reversed(args.pools))
            for pool in order:
                work = Path(tmp) / f"{pool}-{r}"
                run = measure_in_child(lambda pool=pool, work=work: chain_with_pool(pool, plain, work))
                runs[pool].append(run)
                print(f"round {r} {pool:9s} cpu {run['cpu_s']:.2f} s, sys {run['sys_s']:.2f} s, "
                      f"{run['minor_faults'] / run['records']:.1f} faults a record, peak {run['peak_rss_mib']:.0f} MiB",
                      flush=True)
    digests = {run["ledger_sha256"] for rs in runs.values() for run in rs}
    if len(digests) != 1:
        raise SystemExit(f"the ledgers differ between allocators: {sorted(digests)}")
    orjson_us = min(1e6 * b["cpu_s"] / b["records"] for b in baselines)
    summary = {}
    for pool, rs in runs.items():
        n = rs[0]["records"]
        cpu_us = min(1e6 * x["cpu_s"] / n for x in rs)
        summary[pool] = {"cpu_us_a_record": round(cpu_us, 1),
                         "sys_us_a_record": round(min(1e6 * x["sys_s"] / n for x in rs), 1),
                         "minor_faults_a_record": round(min(x["minor_faults"] / n for x in rs), 2),
                         "peak_rss_mib": round(max(x["peak_rss_mib"] for x in rs), 1),
                         "vs_orjson_cpu": round(orjson_us / cpu_us, 3)}
    report = {"traces": args.traces, "later_share": args.later_share, "rounds": args.rounds, "cpu_model": cpu_model(),
              "loadavg_1m": os.getloadavg()[0], "orjson_us_a_record": round(orjson_us, 1),
              "ledger_sha256": digests.pop(), "pools": summary, "runs": runs}
    for pool, s in summary.items():
        print(f"{pool:9s} {s['cpu_us_a_record']:7.1f} us a record (kernel {s['sys_us_a_record']:.1f}, "
              f"{s['minor_faults_a_record']:.1f} faults), {s['vs_orjson_cpu']:.3f}x orjson.loads, "
              f"peak {s['peak_rss_mib']:.0f} MiB")
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
