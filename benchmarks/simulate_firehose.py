"""Benchmark of the firehose simulator (not a test).

Reports simulated traces/s (wall and CPU), and the ratio to a baseline measured in the same run:
orjson-dumping and gzip-writing pre-built records of the same size, which is the floor any
simulator writing these bytes has to pay. CPU time (self + children) makes the figure robust to
other processes sharing the machine; ``projected_100k_s_on_2_cores`` = CPU s per trace x 100k / 2.

    .venv/bin/python benchmarks/simulate_firehose.py --traces 100000 --workers 2
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import tempfile
import time
from pathlib import Path

import orjson

from oro_assets.arena.firehose import GZIP_LEVEL, default_world, simulate_day


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def baseline(records: list, n: int, path: Path) -> tuple[float, float]:
    """Dump + gzip ``n`` pre-built records (cycled) in one process; returns (wall s, cpu s)."""
    w0, c0 = time.perf_counter(), _cpu()
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                              compresslevel=GZIP_LEVEL) as gz:
        for i in range(n):
            gz.write(orjson.dumps(records[i % len(records)]) + b"\n")
    return time.perf_counter() - w0, _cpu() - c0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--date", default="2026-01-15")
    ap.add_argument("--baseline-traces", type=int, default=20_000)
    args = ap.parse_args()

    t0 = time.perf_counter()
    world = default_world(args.seed)
    world_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        w0, c0 = time.perf_counter(), _cpu()
        summary = simulate_day(args.date, args.traces, out / "sim", seed=args.seed, world=world, workers=args.workers)
        sim_wall, sim_cpu = time.perf_counter() - w0, _cpu() - c0

        # pre-built records: the day's own lines, parsed back (valid ones only)
        records = []
        with gzip.open(out / "sim" / args.date / summary.parts[0], "rb") as fh:
            for line in fh:
                try:
                    records.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
                if len(records) >= 2000:
                    break
        n_base = min(args.baseline_traces, args.traces)
        base_wall, base_cpu = baseline(records, n_base, out / "baseline.jsonl.gz")

    sim_cpu_per = sim_cpu / max(1, args.traces)
    base_cpu_per = base_cpu / max(1, n_base)
    report = {
        "traces": args.traces,
        "workers": args.workers,
        "world_build_s": round(world_s, 2),
        "sim_wall_s": round(sim_wall, 2),
        "sim_traces_per_s_wall": round(args.traces / sim_wall, 1),
        "sim_cpu_s": round(sim_cpu, 2),
        "sim_traces_per_cpu_s": round(1 / sim_cpu_per, 1) if sim_cpu_per else None,
        "baseline_traces_per_cpu_s": round(1 / base_cpu_per, 1) if base_cpu_per else None,
        "baseline_wall_s": round(base_wall, 2),
        "ratio_sim_cpu_to_baseline_cpu": round(sim_cpu_per / base_cpu_per, 2) if base_cpu_per else None,
        "projected_100k_s_on_2_cores": round(sim_cpu_per * 100_000 / 2, 1),
        "success_rate": summary.success_rate,
        "structural": summary.structural,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
