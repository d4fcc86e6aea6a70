"""Curation chain throughput and memory against two baselines measured in the same run (issue 5).

Chain, streaming in batches (``--batch`` rows, default 2,000), end to end per batch:
``traces.ingest.iter_normalized`` (read, sha256, orjson parse, detect, normalise) →
``curation.structural.structural_filter`` → ``curation.gates.gate_traces`` (rule judge behind the
project's SQLite ``CachedJudge``, kept beside the cached day: the first run of a day is ``cold``
(the rule judge computes every unscored trace), later runs ``warm``, as the report says; envelopes
mostly carry the validator's score) →
``curation.dedup.dedup_and_rank`` within the batch plus a cross-batch exact / near-duplicate index
keyed per problem (``curation.dedup.DedupIndex``). Nothing holds more than one batch of rows; the
index grows with kept traces only. Rows travel between stages as the Parquet assets hand them over
(JSON columns as strings): passing the already-parsed ``messages``/``steps`` (``iter_normalized``)
measured slower, because keeping a batch of parsed objects alive costs more (GC, allocation) than
the stages' re-parsing. ``--workers N`` runs part files in N forked processes (peak RSS of the
parent is then ``peak_rss_mib``, of the largest worker ``worker_peak_rss_mib``).

Baselines, over the same decompressed lines:
* ``orjson``: merely ``orjson.loads`` of every line;
* ``naive``: per-record ``json.loads`` plus a per-record datasketch MinHash of the query
  (both from ``benchmarks/ingest_throughput.py``).

Records come from ``oro_assets.arena.firehose.simulate_day`` (~21 KB each), generated once per
(``--traces``, ``--seed``) and cached under ``--cache`` (default ``/tmp/chain-bench``). Every
measured run happens in a forked child, so ``peak_rss_mib`` (``ru_maxrss``) is that run's own.
Wall and CPU time are both reported; on a shared machine the CPU figure is the steadier one.
``cpu_us_per_record`` splits the chain's CPU by stage (``ingest`` = read, sha256, parse, normalise).
``--rss-only`` skips the baselines (the 300k / 1M memory-slope runs; with ``--input gz`` the day is
never decompressed to disk). ``--by-size`` also regroups the same day's lines into record-size
buckets (``SIZE_EDGES``) and measures both baselines and the chain on each: the ratio against the
naive loop depends on record size, because its per-record MinHash is a fixed cost while parsing,
hashing and normalising grow with the bytes. Leak clustering of problems is benchmarked by
``benchmarks/clustering.py``.

    python benchmarks/curation_chain.py                      # 20,000 traces
    python benchmarks/curation_chain.py --traces 100000 --json /tmp/chain100k.json
    python benchmarks/curation_chain.py --traces 100000 --by-size --json /tmp/chain100k.json
    python benchmarks/curation_chain.py --traces 100000 --by-size --edges 5000,10000   # 7.4 KB class
    python benchmarks/curation_chain.py --traces 1000000 --rss-only --input gz
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_throughput import decompress, measure_in_child, naive_baseline, orjson_baseline  # noqa: E402
from report import emit  # noqa: E402

DATE = "2026-03-01"


def generate(cache: Path, n: int, seed: int, plain: bool = True) -> tuple[list[str], list[str]]:
    """(gzip parts, plain parts) of a simulated day, generated on first use and reused after
    (``plain=False``: the gzip parts only, e.g. for a 1M-trace memory run)."""
    root = cache / f"s{seed}_n{n}"
    done = root / "_generated"
    if not done.exists():
        from oro_assets.arena.firehose import simulate_day

        t0 = time.perf_counter()
        simulate_day(DATE, n, root, seed=seed, workers=max(1, min(2, os.cpu_count() or 1)))
        print(f"simulated {n} traces in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
        done.write_text("ok\n")
    gz = sorted(str(p) for p in (root / DATE).glob("part-*.jsonl.gz"))
    plain_dir = root / "plain"
    if not plain:
        return gz, []
    if not (plain_dir / "_complete").exists():
        decompress(gz, plain_dir)
        (plain_dir / "_complete").write_text("ok\n")
    return gz, sorted(str(p) for p in plain_dir.glob("part-*.jsonl"))


#: Record-size bucket edges in bytes. The issue's baselines were measured on 7.4 KB ORO records; the
#: simulated day is bimodal (short 4-20 KB and long 32-50 KB traces, 21.6 KB mean), and the naive
#: loop's per-record MinHash is a fixed cost, so the ratio against it depends on record size.
SIZE_EDGES = (8_000, 16_000, 32_000)


def _bucket_name(edges: tuple[int, ...], i: int) -> str:
    lo = edges[i - 1] // 1000 if i else 0
    return f"le{edges[i] // 1000}KB" if i < len(edges) else f"gt{lo}KB"


def split_by_size(plain: list[str], root: Path, edges: tuple[int, ...] = SIZE_EDGES) -> dict[str, str]:
    """The day's lines regrouped by byte size into one file per bucket (same lines, same order)."""
    out = root / ("by_size" if edges == SIZE_EDGES else "by_size_" + "_".join(map(str, edges)))
    names = [_bucket_name(edges, i) for i in range(len(edges) + 1)]
    paths = {name: out / f"{name}.jsonl" for name in names}
    if not (out / "_complete").exists():
        out.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            handles = [stack.enter_context(open(paths[name], "wb")) for name in names]
            for f in plain:
                with open(f, "rb") as fh:
                    for line in fh:
                        i = next((k for k, edge in enumerate(edges) if len(line) <= edge), len(edges))
                        handles[i].write(line)
        (out / "_complete").write_text("ok\n")
    return {name: str(path) for name, path in paths.items() if path.stat().st_size}


def _judge(work: Path):
    from oro_assets.judge.cache import CachedJudge, JudgeCache
    from oro_assets.judge.rule import RuleJudge

    work.mkdir(parents=True, exist_ok=True)
    class CountedRuleJudge(RuleJudge):  # counts the calls the cache could not answer
        misses = 0

        def judge(self, trace: dict):
            self.misses += 1
            return super().judge(trace)

    return CachedJudge(CountedRuleJudge(), JudgeCache(work / "judge_cache.sqlite"))


def _stream(files: list[str], judge, batch: int, counts: Counter, index, cpu: Counter):
    """Run every stage batch by batch; yields after each batch (``index`` carries dedup state)."""
    from oro_assets.curation.dedup import dedup_and_rank
    from oro_assets.curation.gates import gate_traces
    from oro_assets.curation.structural import structural_filter
    from oro_assets.traces.ingest import iter_normalized

    clock = time.process_time

    def flush(rows: list[dict]) -> int:
        t0 = clock()
        (kept, rej, _), _subtasks, _labels = structural_filter(rows)
        t1 = clock()
        gated = gate_traces(kept, judge=judge)
        t2 = clock()
        counts["judge_calls"] += gated.stats["judge_calls"]
        deduped = dedup_and_rank(gated.kept, index=index)
        t3 = clock()
        cpu["structural"] += t1 - t0
        cpu["gates"] += t2 - t1
        cpu["dedup"] += t3 - t2
        for r in rej + gated.rejected + deduped.rejected:
            counts[r["reason"]] += 1
        return len(deduped.kept)

    rows: list[dict] = []
    for item in iter_normalized(files, DATE):
        counts["records"] += 1
        if isinstance(item, tuple):
            rows.append(item[0])  # JSON columns as strings: what the Parquet assets hand over
        else:
            counts[item.reason.value] += 1
        if len(rows) >= batch:
            yield flush(rows)
            rows = []
    if rows:
        yield flush(rows)


def _part_worker(job: tuple[str, str, int]) -> tuple[Counter, Counter, list]:
    """One part file through the chain with its own dedup index; returns the kept traces' keys."""
    from oro_assets.curation.dedup import DedupIndex

    path, work, batch = job
    counts: Counter = Counter()
    judge = _judge(Path(work))
    index = DedupIndex(track_new=True)
    cpu: Counter = Counter()
    t0 = time.process_time()
    for _ in _stream([path], judge, batch, counts, index, cpu):
        pass
    judge.cache.close()
    counts["judge_misses"] += judge.inner.misses
    cpu["total"] += time.process_time() - t0
    return counts, cpu, index.drain_new()


def chain(files: list[str], work: Path, batch: int, workers: int = 1) -> dict:
    """The streaming chain; ``workers > 1`` runs part files in forked processes (the parent keeps
    the cross-batch index and applies it in part order, so the result does not depend on timing)."""
    from oro_assets.curation.dedup import DEFAULT_NEAR_THRESHOLD, DedupIndex

    index = DedupIndex()
    counts: Counter = Counter()
    kept = 0
    extra: dict = {}
    cpu: Counter = Counter()
    if workers <= 1:
        t0 = time.process_time()
        judge = _judge(work)
        for n_kept in _stream(files, judge, batch, counts, index, cpu):
            kept += n_kept
        judge.cache.close()
        counts["judge_misses"] += judge.inner.misses
        cpu["total"] += time.process_time() - t0
    else:
        import multiprocessing
        import resource

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for part_counts, part_cpu, keys in pool.imap(_part_worker, [(f, str(work), batch) for f in files]):
                counts.update(part_counts)
                cpu.update(part_cpu)
                for group, h, tid, sig in keys:  # across parts: the earlier part's copy wins
                    if index.exact_of(h) or index.near_of(group, sig, DEFAULT_NEAR_THRESHOLD):
                        counts["near_duplicate"] += 1
                    else:
                        index.add(group, h, tid, sig)
                        kept += 1
        extra["worker_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    n = counts.pop("records", 0)
    judge_calls = counts.pop("judge_calls", 0)
    extra["judge_computed"] = counts.pop("judge_misses", 0)  # calls the cache could not answer
    # CPU microseconds per input record, by stage ("ingest" = read, sha256, parse, normalise)
    cpu["ingest"] = cpu["total"] - cpu["structural"] - cpu["gates"] - cpu["dedup"]
    extra["cpu_us_per_record"] = {k: round(1e6 * cpu[k] / max(1, n), 1)
                                  for k in ("ingest", "structural", "gates", "dedup", "total")}
    return {"records": n, "kept": kept, "judge_calls": judge_calls, "reasons": dict(sorted(counts.items())),
            "dedup_index": index.stats(), **extra}


def _rates(r: dict, nbytes: int) -> dict:
    r = dict(r)
    r["records_per_s_wall"] = round(r["records"] / r["wall_s"])
    r["records_per_s_cpu"] = round(r["records"] / r["cpu_s"]) if r["cpu_s"] else None
    r["mb_per_s_wall"] = round(nbytes / r["wall_s"] / 1e6, 1)
    for k in ("wall_s", "cpu_s", "peak_rss_mib"):
        r[k] = round(r[k], 2)
    return r


def measure(plain: list[str], chain_files: list[str], work: Path, batch: int, workers: int,
            baselines: bool) -> dict:
    """The baselines (unless ``baselines`` is false) and the chain over the same lines, with ratios."""
    nbytes = sum(os.path.getsize(p) for p in plain or chain_files)
    runs: dict[str, dict] = {}
    if baselines:
        runs["orjson_loads"] = measure_in_child(lambda: orjson_baseline(plain))
        runs["naive_json_minhash"] = measure_in_child(lambda: naive_baseline(plain))
    runs["chain"] = measure_in_child(lambda: chain(chain_files, work, batch, workers))
    n = runs["chain"]["records"]
    computed = runs["chain"].get("judge_computed", 0)
    # warm: every judge call answered from the cache (a judge version change empties it in effect)
    judge_cache = "warm" if computed == 0 else f"cold: {computed} of {runs['chain']['judge_calls']} calls judged"
    report: dict = {"judge_cache": judge_cache, "records": n, "bytes": nbytes,
                    "bytes_per_record": round(nbytes / max(1, n)),
                    "runs": {k: _rates(v, nbytes) for k, v in runs.items()}}
    if baselines:
        c, o, nv = (report["runs"][k] for k in ("chain", "orjson_loads", "naive_json_minhash"))
        report["ratios"] = {
            "chain_vs_orjson_wall": round(c["records_per_s_wall"] / o["records_per_s_wall"], 3),
            "chain_vs_orjson_cpu": round(c["records_per_s_cpu"] / o["records_per_s_cpu"], 3),
            "chain_vs_naive_wall": round(c["records_per_s_wall"] / nv["records_per_s_wall"], 2),
            "chain_vs_naive_cpu": round(c["records_per_s_cpu"] / nv["records_per_s_cpu"], 2),
        }
        # per core: the chain's CPU throughput (all its processes) against the one-core baselines
        report["targets"] = {
            "vs_orjson_ge_0.25": report["ratios"]["chain_vs_orjson_cpu"] >= 0.25,
            "vs_naive_ge_4": report["ratios"]["chain_vs_naive_cpu"] >= 4,
        }
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=20000, help="simulated traces (default 20000)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--batch", type=int, default=2000, help="rows per end-to-end batch (default 2000)")
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept")
    ap.add_argument("--input", choices=("plain", "gz"), default="plain",
                    help="chain input: decompressed .jsonl (default; same bytes as the baselines) or .jsonl.gz")
    ap.add_argument("--workers", type=int, default=1, help="chain worker processes, one part file each (default 1)")
    ap.add_argument("--rss-only", action="store_true", help="run only the chain (memory-slope runs)")
    ap.add_argument("--by-size", action="store_true",
                    help="also measure baselines and chain per record-size bucket of the same day")
    ap.add_argument("--edges", default=",".join(map(str, SIZE_EDGES)),
                    help="--by-size bucket edges in bytes (default %(default)s; 5000,10000 isolates the "
                         "issue's 7.4 KB record class as le10KB)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    cache = Path(args.cache)
    t0 = time.perf_counter()
    need_plain = args.input == "plain" or not args.rss_only or args.by_size
    gz, plain = generate(cache, args.traces, args.seed, plain=need_plain)
    # imports and one-time tables paid before timing, in the parent (children are forked)
    from oro_assets.curation import dedup, gates, structural  # noqa: F401
    from oro_assets.judge import rule  # noqa: F401
    from oro_assets.traces.ingest import iter_normalized  # noqa: F401
    from oro_assets.traces.schema import default_tools_json

    default_tools_json()
    # Import-time objects are long-lived: keep them out of the collector's full passes, as a
    # long-running worker would (``gc.freeze``); every measured run is forked after this alike.
    gc.freeze()
    day_root = cache / f"s{args.seed}_n{args.traces}"
    edges = tuple(sorted(int(e) for e in args.edges.split(",") if e.strip()))
    buckets = split_by_size(plain, day_root, edges) if args.by_size else {}
    print(f"data: {len(gz)} parts ready in {time.perf_counter() - t0:.0f}s", file=sys.stderr)
    work = day_root / "work"
    chain_files = plain if args.input == "plain" else gz
    day = measure(plain, chain_files, work, args.batch, args.workers, baselines=not args.rss_only)
    report: dict = {"traces": args.traces, "seed": args.seed, "batch": args.batch, "input": args.input,
                    "workers": args.workers, "cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2),
                    **day}
    if buckets:
        # same lines regrouped by size; the judge cache is the day's (warm after the run above)
        report["by_size"] = {name: measure([path], [path], work, args.batch, 1, baselines=True)
                             for name, path in buckets.items()}
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
