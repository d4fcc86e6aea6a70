"""Large fuzz run: hostile firehose records through ingest and curation, with peak memory.

Builds a hostile day from real simulator records with the reliability suite's generator
(``oro_assets_tests/reliability/rel_hostile.py``: truncated lines, invalid UTF-8, wrong types,
deep/huge JSON, NaN/Infinity, duplicate keys, missing timestamps, absurd tool arguments, steps out
of order, multi-megabyte thinking, oversized lines, corrupt and early-ending gzip parts, empty files,
a ``.gz`` that is plain text and a gzip bomb), then

1. ingests it (``normalize_partition`` with the default limits) in a spawned child process and records
   its own peak RSS (``VmHWM``; ``getrusage`` would report the parent's peak, which survives exec), and
2. curates it (``curate_partition`` with the rule judge and the simulator's problem pool) and checks
   conservation: ledger rows == raw records read, every rejected row has one reason code.

    python benchmarks/fuzz_ingest.py --n 100000 --bomb-gib 3 --json fuzz.json
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import emit  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "oro_assets_tests" / "reliability"))


def _ingest_child(args: tuple[str, str, str], queue) -> None:
    from rel_hostile import peak_rss_mb

    from oro_assets.traces.ingest import normalize_partition
    from oro_assets.traces.reader import iter_partition_files

    root, date, out = args
    base = peak_rss_mb()  # VmHWM: ru_maxrss would carry the generating parent's peak across exec
    t0 = time.perf_counter()
    stats = normalize_partition(iter_partition_files(root, date), date, f"{out}/n.parquet", f"{out}/q.parquet")
    queue.put({"seconds": round(time.perf_counter() - t0, 2), "base_rss_mb": round(base, 1),
               "peak_rss_mb": round(peak_rss_mb(), 1), **stats.to_dict()})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="hostile records")
    parser.add_argument("--base", type=int, default=300, help="simulator records to mutate")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--per-file", type=int, default=5000)
    parser.add_argument("--multi-mb", type=int, default=20, help="records with 2 MiB of thinking")
    parser.add_argument("--bomb-gib", type=float, default=3.0, help="decompressed size of the gzip bomb (0 = none)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--workdir", help="keep files here instead of a temporary folder")
    args = parser.parse_args(argv)

    import pyarrow.parquet as pq
    from rel_hostile import base_lines, build_hostile_day, expected_rows

    from oro_assets.arena.problems import load_problems
    from oro_assets.curation.clusters import Registry
    from oro_assets.curation.ledger import check_conservation
    from oro_assets.curation.pipeline import curate_partition
    from oro_assets.judge.rule import RuleJudge

    work = Path(args.workdir or tempfile.mkdtemp(prefix="fuzz-ingest-"))
    work.mkdir(parents=True, exist_ok=True)
    figures: dict = {"n": args.n, "seed": args.seed}
    t0 = time.perf_counter()
    base, world = base_lines(work / "base", n=args.base)
    manifest = build_hostile_day(work / "firehose", base, args.n, seed=args.seed, per_file=args.per_file,
                                 n_multi_mb=args.multi_mb, bomb_bytes=int(args.bomb_gib * (1 << 30)))
    figures["generate_s"] = round(time.perf_counter() - t0, 1)
    figures["kinds"] = dict(sorted(manifest.kinds.items()))
    figures["files"] = {f.name: f.fault for f in manifest.files}
    figures["lines_written"] = manifest.n_records
    print(f"generated {args.n} hostile records in {figures['generate_s']}s under {work}", flush=True)

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_ingest_child, args=((str(work / "firehose"), manifest.date, str(work)), queue))
    child.start()
    ingest = queue.get()
    child.join()
    figures["ingest"] = ingest
    figures["ingest_crashed"] = child.exitcode != 0
    print(f"ingest: {ingest['raw_records']} records in {ingest['seconds']}s, peak RSS {ingest['peak_rss_mb']} MiB",
          flush=True)

    t0 = time.perf_counter()
    normalized = pq.read_table(work / "n.parquet").to_pylist()
    quarantine = pq.read_table(work / "q.parquet").to_pylist()
    out = curate_partition(normalized, quarantine, Registry(), judge=RuleJudge(),
                           pool_problems=load_problems([world / "problems.jsonl"]), partition=manifest.date)
    ledger = out.trace_ledger
    figures["curate_s"] = round(time.perf_counter() - t0, 1)
    figures["ledger_rows"] = len(ledger)
    figures["conservation_problems"] = check_conservation(ingest["raw_records"], ledger, out.curated_traces)
    expected, rest, n_rest = expected_rows(manifest, ledger)
    intact = {(Path(r["source_file"]).name, r["line_no"]): r["raw_sha256"] for r in ledger
              if r["raw_sha256"] is not None and Path(r["source_file"]).name not in rest}
    figures["intact_lines_expected"] = len(expected)
    figures["intact_lines_in_ledger_with_same_sha"] = sum(1 for k, (sha, _) in expected.items() if intact.get(k) == sha)
    figures["rest_rows"] = {name: line for name, line in sorted(rest.items())}
    figures["rows_without_reason_code"] = sum(1 for r in ledger if r["fate"] == "rejected" and not r["reason"])
    figures["by_reason"] = dict(sorted(Counter(r["reason"] or "kept" for r in ledger).items()))
    ok = (not figures["conservation_problems"] and not figures["ingest_crashed"]
          and figures["intact_lines_in_ledger_with_same_sha"] == len(expected) and not figures["rows_without_reason_code"])
    figures["ok"] = ok
    emit(figures, args.json)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
