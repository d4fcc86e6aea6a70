"""The chain's conversions between rows and Arrow with session 29's kernels and without, over the day's own rows (issue 33).

One chain pass (``curation_chain.chain``, cold) records every list of rows ingest turns into a batch
(``traces.ingest._batch``), every list of rows ``storage.conform`` turns into a table (the steps' kept rows, their
outputs and rejections, the ledger), with the schema, and every kept table the step runner reads back for the next
step; then the recorded calls are replayed, passes alternating ABBA: the references (``pa.array`` per column,
``pa.Table.from_pylist``, ``table.to_pylist()``: the code before the kernels) against the dispatchers
(``storage.column_array``, ``table_from_rows``, ``table_rows``), every result checked equal. Reported in thread-CPU us
per record of the day (min, median, each pair's difference), by call site. The rows replayed are held across passes,
so their strings are colder in cache than in the chain, where each batch is converted as it is made.

    nice -n 19 .venv/bin/python benchmarks/arrow_columns_ab.py --traces 3000 --passes 8
    nice -n 19 .venv/bin/python benchmarks/arrow_columns_ab.py --traces 1500 --later-share 1 --passes 8
"""

from __future__ import annotations

import collections
import gc
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 8, argv)

    import pyarrow as pa

    from oro_assets import native, storage
    from oro_assets.curation import dedup, structural
    from oro_assets.judge import rule
    from oro_assets.traces import ingest

    require_kernels()
    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    calls: list[tuple[str, list, pa.Schema | pa.Table]] = []
    conform, batch = storage.conform, ingest._batch

    def recording_conform(rows, schema, undeclared="error"):
        table = conform(rows, schema, undeclared)
        if not isinstance(rows, pa.Table):
            where = traceback.extract_stack(limit=2)[0]
            calls.append((f"conform {Path(where.filename).parent.name}/{Path(where.filename).name}:{where.lineno}",
                          list(rows), schema))
        if Path(traceback.extract_stack(limit=2)[0].filename).name == "step.py":  # the kept table, read back next
            calls.append(("step read-back", list(rows), table))
        return table

    def recording_batch(rows, schema):
        calls.append(("ingest _batch", list(rows), schema))
        return batch(rows, schema)

    from oro_assets.curation import ledger, pipeline, step, store

    modules = (store, step, ledger, pipeline)
    for m in modules:
        m.conform = recording_conform
    ingest._batch = recording_batch
    try:
        cc.clear_text_caches(rule, structural, dedup)
        with tempfile.TemporaryDirectory() as tmp:
            n_records = cc.chain(files, Path(tmp) / "w")["records"]
    finally:
        for m in modules:
            m.conform = conform
        ingest._batch = batch

    def reference(site: str, rows: list, schema):
        if site == "step read-back":
            return schema.to_pylist()  # the table
        if site == "ingest _batch":
            return pa.record_batch([pa.array([r[f.name] for r in rows], type=f.type) for f in schema], schema=schema)
        return pa.Table.from_pylist(rows, schema=schema)

    def kernel(site: str, rows: list, schema):
        if site == "step read-back":
            return storage.table_rows(rows, schema)
        if site == "ingest _batch":
            return batch(rows, schema)
        return storage.table_from_rows(rows, schema)

    sites = sorted({site for site, _, _ in calls})
    times: dict[str, dict[str, list[float]]] = {side: {s: [] for s in [*sites, "all"]}
                                                for side in ("references", "kernels")}
    gc.collect()
    gc.freeze()
    identical = True
    for i in range(args.passes):
        for on in ((False, True) if i % 2 == 0 else (True, False)):
            fn, side = (kernel, "kernels") if on else (reference, "references")
            spent = collections.Counter()
            for site, rows, schema in calls:
                t0 = time.thread_time_ns()
                out = fn(site, rows, schema)
                spent[site] += time.thread_time_ns() - t0
                if i == 0:
                    want = reference(site, rows, schema)
                    identical = identical and (out == want if isinstance(out, list) else out.equals(want))
                del out
            for s in sites:
                times[side][s].append(spent[s] / 1e3 / n_records)
            times[side]["all"].append(sum(spent.values()) / 1e3 / n_records)

    def summary(values: list[float]) -> dict:
        return {"min": round(min(values), 2), "median": round(statistics.median(values), 2),
                "all": [round(v, 2) for v in values]}

    saved = {s: [round(a - b, 2) for a, b in zip(times["references"][s], times["kernels"][s], strict=True)]
             for s in [*sites, "all"]}
    report = {"traces": args.traces, "later_share": args.later_share, "records": n_records, "passes": args.passes,
              "why": native.why, "identical_results": identical,
              "calls": dict(collections.Counter(site for site, _, _ in calls)),
              "rows": {s: sum(len(r) for site, r, _ in calls if site == s) for s in sites},
              **{side: {s: summary(v) for s, v in by_site.items()} for side, by_site in times.items()},
              "saved_us_per_record_by_pair": saved,
              "saved_median": {s: round(statistics.median(v), 2) for s, v in saved.items()}}
    emit(report, args.json)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
