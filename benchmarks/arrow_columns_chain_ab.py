"""The chain's conversions between rows and Arrow timed where the chain makes them, session 29's kernels on and off (issue 33).

``arrow_columns_ab.py`` replays the recorded calls over rows held across passes; here each pass runs the whole chain
(``curation_chain.chain``, cold, per-text caches cleared) with a timer around every ingest batch (``ingest._batch``),
every ``storage.conform`` and every read-back of a step's kept table (``step.table_rows``), the kernels on
(``storage.column_array``, ``table_from_rows``, ``table_rows``) or their references bound in their place (``pa.array``,
``pa.Table.from_pylist``, ``table.to_pylist()``); passes alternate ABBA. Reported in thread-CPU us per record: each
site, their sum and the chain, median per side and each pair's difference; every pass's ledger digest must be the
first's.

    nice -n 19 .venv/bin/python benchmarks/arrow_columns_chain_ab.py --traces 3000 --passes 8
    nice -n 19 .venv/bin/python benchmarks/arrow_columns_chain_ab.py --traces 1500 --later-share 1 --passes 8
"""

from __future__ import annotations

import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402

SITES = ("_batch", "conform", "read-back")


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 8, argv)

    import pyarrow as pa

    from oro_assets import native, storage
    from oro_assets.curation import dedup, ledger, pipeline, step, store, structural
    from oro_assets.judge import rule
    from oro_assets.traces import ingest

    require_kernels()
    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    clock = time.thread_time_ns
    spent: collections.Counter[str] = collections.Counter()
    conform, batch, column_array = storage.conform, ingest._batch, ingest.column_array
    table_from_rows, table_rows = storage.table_from_rows, storage.table_rows
    state = {"on": True}

    def timed_conform(rows, schema, undeclared="error"):
        t0 = clock()
        try:
            return conform(rows, schema, undeclared)
        finally:
            spent["conform"] += clock() - t0

    def timed_batch(rows, schema):
        t0 = clock()
        try:
            return batch(rows, schema)
        finally:
            spent["_batch"] += clock() - t0

    def timed_read_back(rows, table):
        t0 = clock()
        try:
            return (table_rows if state["on"] else storage.table_rows_py)(rows, table)
        finally:
            spent["read-back"] += clock() - t0

    def pyarrow_column(values, dtype):
        return pa.array(values, type=dtype)

    modules = (store, step, ledger, pipeline)
    for m in modules:
        m.conform = timed_conform
    ingest._batch, step.table_rows = timed_batch, timed_read_back
    sides = {side: collections.defaultdict(list) for side in ("references", "kernels")}
    digests = set()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            k = 0
            for i in range(args.passes):
                for on in ((False, True) if i % 2 == 0 else (True, False)):
                    state["on"] = on
                    ingest.column_array = column_array if on else pyarrow_column
                    storage.table_from_rows = table_from_rows if on else storage.table_from_rows_py
                    cc.clear_text_caches(rule, structural, dedup)
                    dedup._word_hash.clear()
                    spent.clear()
                    r = cc.chain(files, Path(tmp) / f"p{k}")
                    k += 1
                    digests.add(r["ledger_sha256"])
                    side = sides["kernels" if on else "references"]
                    for s in SITES:
                        side[s].append(spent[s] / 1e3 / r["records"])
                    side["sites"].append(sum(spent.values()) / 1e3 / r["records"])
                    side["chain"].append(r["cpu_us_per_record"]["total"])
    finally:
        for m in modules:
            m.conform = conform
        ingest._batch, ingest.column_array, step.table_rows = batch, column_array, table_rows
        storage.table_from_rows = table_from_rows
    ref, new = sides["references"], sides["kernels"]
    saved = {part: [round(a - b, 1) for a, b in zip(ref[part], new[part], strict=True)] for part in ref}
    report = {"traces": args.traces, "later_share": args.later_share, "passes": args.passes, "why": native.why,
              "ledger_sha256": sorted(digests), "identical_ledgers": len(digests) == 1,
              **{name: {part: {"min": round(min(v), 1), "median": round(statistics.median(v), 1),
                               "all": [round(x, 1) for x in v]} for part, v in side.items()}
                 for name, side in sides.items()},
              "saved_us_per_record_by_pair": saved,
              "saved_median": {part: round(statistics.median(v), 1) for part, v in saved.items()},
              "pairs_saving": {part: sum(x > 0 for x in v) for part, v in saved.items()}}
    emit(report, args.json)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
