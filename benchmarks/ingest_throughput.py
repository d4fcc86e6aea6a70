"""Ingest → normalise throughput against two baselines measured in the same run.

Baselines (issue 5):
* ``orjson``: merely ``orjson.loads`` of every line of the same (decompressed) parts;
* ``naive``: per-record ``json.loads`` plus a per-record datasketch MinHash of the query.

Measured path: ``oro_assets.traces.ingest.normalize_partition`` (read, sha256, parse, detect, normalise,
Arrow batches, zstd Parquet) over the same plain ``.jsonl`` parts, and over the original ``.jsonl.gz``
parts. Records come from the arena's firehose simulator when available, else from
``oro_assets.traces.samples``. Wall time and process CPU time are both reported: on a shared machine
CPU time (including worker processes) is the steadier figure. Each measured run happens in a forked
child so its peak RSS is its own. ``--workers 2`` spreads part files over two processes: compare wall
time on an otherwise idle machine.

    python benchmarks/ingest_throughput.py --n 20000
    python benchmarks/ingest_throughput.py --n 100000 --json out.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from report import emit  # noqa: E402

DATE = "2026-03-01"


def generate(root: Path, n: int, seed: int, source: str) -> str:
    """Write one day of raw records under ``root``; returns the source actually used."""
    if source in ("auto", "sim"):
        try:
            from oro_assets.arena.firehose import simulate_day
        except ImportError:
            if source == "sim":
                raise
        else:
            simulate_day(DATE, n, root, seed=seed,
                         format_shares={"oro_envelope": 0.8, "dialogue_only": 0.1, "shoppingbench_rollout": 0.1})
            return "arena.firehose.simulate_day"
    from oro_assets.traces import samples

    day = root / DATE
    day.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    builders = [samples.oro_envelope] * 8 + [samples.oro_dialogue, samples.shoppingbench_rollout]
    part_size = 5000
    for p, lo in enumerate(range(0, n, part_size)):
        lines = [orjson.dumps(rng.choice(builders)(seed * 1_000_003 + i)) for i in range(lo, min(n, lo + part_size))]
        (day / f"part-{p:05d}.jsonl.gz").write_bytes(gzip.compress(b"\n".join(lines) + b"\n", compresslevel=3))
    return "traces.samples"


def decompress(gz_files: list[str], out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    plain = []
    for f in gz_files:
        target = out_dir / Path(f).name.removesuffix(".gz")
        with gzip.open(f, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        plain.append(str(target))
    return plain


def measure_in_child(fn: Callable[[], dict], timeout: float | None = None) -> dict:
    """Run ``fn`` in a forked child; returns its result plus wall/CPU seconds and peak RSS (MiB).
    A child that dies before sending (a crash, the OOM killer) raises ``RuntimeError`` with its exit
    code instead of waiting on the pipe for ever; ``timeout`` (seconds) bounds the wait."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def cpu_now() -> float:  # this process and its reaped children (ingest worker processes)
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    def child() -> None:
        t0, c0 = time.perf_counter(), cpu_now()
        extra = fn()
        wall, cpu = time.perf_counter() - t0, cpu_now() - c0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        send.send({"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, **extra})
        send.close()

    proc = ctx.Process(target=child)
    proc.start()
    send.close()  # the child holds the only write end: its exit, however it ends, closes the pipe
    try:
        return receive_result(recv, proc, timeout)
    finally:
        recv.close()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()


def receive_result(recv, proc, timeout: float | None):
    """The child's result; raises with its exit code if it died first, or after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not recv.poll(1.0):
        if not proc.is_alive():
            proc.join()
            if recv.poll(0):  # sent just before exiting
                break
            raise RuntimeError(f"measured child process exited with code {proc.exitcode} without a result")
        if deadline is not None and time.monotonic() > deadline:
            proc.kill()
            proc.join()
            raise TimeoutError(f"measured child process gave no result within {timeout:.0f} s (killed)")
    try:
        return recv.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"measured child process exited with code {proc.exitcode} without a result") from None


def decode_baseline(files: list[str], decode, error: type[Exception]) -> dict:
    """``decode`` of every line of ``files``: the parse limit a chain is measured against."""
    n = bad = 0
    for f in files:
        with open(f, "rb") as fh:
            for line in fh:
                n += 1
                try:
                    decode(line)
                except error:
                    bad += 1
    return {"records": n, "unparseable": bad}


def orjson_baseline(files: list[str]) -> dict:
    return decode_baseline(files, orjson.loads, orjson.JSONDecodeError)


def naive_baseline(files: list[str]) -> dict:
    from datasketch import MinHash

    n = 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                n += 1
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    continue
                query = ""
                if isinstance(obj, dict):
                    query = obj.get("query") or ""
                elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
                    query = (obj[0].get("extra_info") or {}).get("query") or ""
                words = str(query).lower().split()
                m = MinHash(num_perm=128)
                for i in range(max(1, len(words) - 2)):
                    m.update(" ".join(words[i:i + 3]).encode())
    return {"records": n}


def ingest(files: list[str], out: Path, **kw) -> dict:
    from oro_assets.traces.ingest import normalize_partition

    stats = normalize_partition(files, DATE, out / "normalized.parquet", out / "quarantine.parquet", **kw)
    return {"records": stats.raw_records, "stats": stats.to_dict()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="records to generate (default 20000)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--source", choices=("auto", "sim", "samples"), default="auto")
    ap.add_argument("--workers", type=int, default=1, help="ingest worker processes (default 1)")
    ap.add_argument("--workdir", help="keep generated data here (default: a temporary folder, removed)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="ingest-bench-"))
    try:
        t0 = time.perf_counter()
        gz_root = work / "firehose"
        day = gz_root / DATE
        if not (day.is_dir() and any(day.glob("*.jsonl.gz"))):
            source = generate(gz_root, args.n, args.seed, args.source)
        else:
            source = "existing"
        from oro_assets.traces.ingest import normalize_partition  # noqa: F401  (imports paid before timing)
        from oro_assets.traces.reader import iter_partition_files
        from oro_assets.traces.schema import default_tools_json

        default_tools_json()

        gz_files = iter_partition_files(str(gz_root), DATE)
        plain = decompress(gz_files, work / "plain")
        nbytes = sum(os.path.getsize(p) for p in plain)
        print(f"data: {source}, {len(gz_files)} parts, {nbytes / 1e6:.1f} MB decompressed, "
              f"prepared in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

        runs = {
            "orjson_loads": measure_in_child(lambda: orjson_baseline(plain)),
            "naive_json_minhash": measure_in_child(lambda: naive_baseline(plain)),
            "ingest_plain": measure_in_child(lambda: ingest(plain, work / "out_plain", workers=args.workers)),
            "ingest_gzip": measure_in_child(lambda: ingest(gz_files, work / "out_gz", workers=args.workers)),
        }
        n = runs["orjson_loads"]["records"]
        report: dict = {"source": source, "records": n, "bytes": nbytes, "bytes_per_record": round(nbytes / max(1, n)),
                        "workers": args.workers, "runs": {}}
        for name, r in runs.items():
            r = dict(r)
            r.pop("stats", None)
            r["records_per_s_wall"] = round(r["records"] / r["wall_s"])
            r["records_per_s_cpu"] = round(r["records"] / r["cpu_s"]) if r["cpu_s"] else None
            r["mb_per_s_wall"] = round(nbytes / r["wall_s"] / 1e6, 1)
            report["runs"][name] = r
        base, naive = report["runs"]["orjson_loads"], report["runs"]["naive_json_minhash"]
        report["ratios"] = {}
        for name in ("ingest_plain", "ingest_gzip"):
            r = report["runs"][name]
            report["ratios"][name] = {
                "vs_orjson_wall": round(r["records_per_s_wall"] / base["records_per_s_wall"], 3),
                "vs_orjson_cpu": round(r["records_per_s_cpu"] / base["records_per_s_cpu"], 3),
                "vs_naive_wall": round(r["records_per_s_wall"] / naive["records_per_s_wall"], 2),
                "vs_naive_cpu": round(r["records_per_s_cpu"] / naive["records_per_s_cpu"], 2),
            }
        report["ingest_stats"] = runs["ingest_plain"].get("stats")
        emit(report, args.json)
        return 0
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
