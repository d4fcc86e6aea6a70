"""Peak memory of the Dagster curation job on one simulated day, at two day sizes (issue 5).

``curation_chain.py`` measures the domain chain; this measures what users run: the real
``oro-assets materialize --job curation_job --partition <day>`` (ingest → normalise → structural
→ gates → dedup → split → ledger, with the asset checks and the metadata every asset attaches)
in a fresh data root, after ``arena_job`` built the problem pool and the leak-cluster registry.
Each job runs in its own process under a small wrapper that reports the job's peak RSS
(``ru_maxrss`` of its reaped children), so each figure is that run's own.

The figure that matters is the ratio of peak RSS between the larger and the smaller day (each
asset streams its partition in batches; a stage that loads a day of rows, or reads a whole
Parquet partition to describe it, shows up as a ratio near the ratio of day sizes). Wall time and
records/s are reported too, with the ratio of the larger day's throughput to the smaller's.

    python benchmarks/asset_memory.py                       # 20,000 and 100,000 traces
    python benchmarks/asset_memory.py --traces 100000 1000000 --json /tmp/asset_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from curation_chain import DATE, generate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
_WRAPPER = (
    "import resource, subprocess, sys, json;"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024;"
    "print(json.dumps({'rc': p.returncode, 'peak_rss_mib': rss, 'tail': (p.stdout + p.stderr)[-2000:]}))"
)


def _env(data_dir: Path, firehose: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORO_", "DAGSTER_", "MLFLOW_"))}
    env.update({"ORO_DATA_DIR": str(data_dir), "ORO_FIREHOSE_DIR": str(firehose), "ORO_PARTITIONS_START": "2026-01-01",
                "DAGSTER_DISABLE_TELEMETRY": "1"})
    return env


def run_job(data_dir: Path, firehose: Path, job: str, partition: str | None = None) -> dict:
    """One ``oro-assets materialize`` in its own process: exit code, wall seconds, peak RSS (MiB)."""
    cli = [sys.executable, "-m", "oro_assets.cli", "materialize", "--job", job]
    cli += ["--partition", partition] if partition else []
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _WRAPPER, *cli], env=_env(data_dir, firehose), cwd=REPO,
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    if result["rc"] != 0:
        raise SystemExit(f"{job} failed (exit {result['rc']}):\n{result['tail']}")
    return result


def measure(cache: Path, n: int, seed: int) -> dict:
    generate(cache, n, seed, plain=False)
    firehose = cache / f"s{seed}_n{n}"
    data_dir = firehose / "asset-memory-data"
    shutil.rmtree(data_dir, ignore_errors=True)
    arena = run_job(data_dir, firehose, "arena_job")
    curation = run_job(data_dir, firehose, "curation_job", DATE)
    ledger = json.loads(subprocess.run(
        [sys.executable, "-c", "import pyarrow.parquet as pq, sys, json;"
         "t = pq.read_table(sys.argv[1], columns=['fate']);"
         "print(json.dumps({'ledger_rows': t.num_rows, 'kept': t.column('fate').to_pylist().count('kept')}))",
         str(data_dir / "warehouse" / "trace_ledger" / f"{DATE}.parquet")],
        capture_output=True, text=True, check=True).stdout)
    shutil.rmtree(data_dir, ignore_errors=True)
    return {"traces": n, "arena_job": {k: arena[k] for k in ("wall_s", "peak_rss_mib")},
            "curation_job": {"wall_s": curation["wall_s"], "peak_rss_mib": round(curation["peak_rss_mib"], 1),
                             "records_per_s_wall": round(n / curation["wall_s"])}, **ledger}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, nargs=2, default=[20000, 100000], metavar=("SMALL", "LARGE"))
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    small, large = (measure(Path(args.cache), n, args.seed) for n in args.traces)
    s, big = small["curation_job"], large["curation_job"]
    report = {
        "cpus": os.cpu_count(), "runs": [small, large],
        "ratios": {
            "day_size": round(large["traces"] / small["traces"], 1),
            "peak_rss": round(big["peak_rss_mib"] / s["peak_rss_mib"], 2),
            "throughput": round(big["records_per_s_wall"] / s["records_per_s_wall"], 2),
        },
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
