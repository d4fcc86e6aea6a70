"""Ingest's read (read, parse, normalise, Arrow batches) CPU per record over a day, in windows of records: does its
cost climb as the day goes on (a structure growing with the records seen), or is it flat?

    .venv/bin/python benchmarks/ingest_windows.py /tmp/chain-bench/s15_n100000/plain [--limit 60000] [--window 5000]

The days are ``curation_chain.py``'s generated ones (``--cache``). The first window carries the imports' and
caches' first use.
"""

from __future__ import annotations

import argparse
import gc
import glob
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oro_assets.traces.ingest import ingest_row_batches  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("day", help="a folder of a day's .jsonl parts")
    ap.add_argument("--limit", type=int, default=None, help="stop after this many records")
    ap.add_argument("--window", type=int, default=5000)
    args = ap.parse_args(argv)
    files = sorted(f for f in glob.glob(str(Path(args.day) / "*")) if not Path(f).name.startswith("_"))
    gc.freeze()  # as curation_chain.py: the imports' objects are not the day's
    n = last_n = 0
    t_last = time.process_time()
    for _rows, norm, quar in ingest_row_batches(files, "2026-03-01", batch_size=1000):
        n += norm.num_rows + quar.num_rows
        if n - last_n >= args.window:
            t = time.process_time()
            print(f"{n:8d} records  {1e6 * (t - t_last) / (n - last_n):7.1f} us a record", flush=True)
            last_n, t_last = n, t
        if args.limit and n >= args.limit:
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
