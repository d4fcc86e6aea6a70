"""What keeping ingest's parsed columns for the next steps would cost, against what it would save (issue 33).

The in-memory chain's structural filter, gates and dedup each decode the ``steps`` / ``messages`` JSON texts ingest
just encoded (~26 us a 20 KB a6b1cf3-era record). Handing them ingest's own Python values instead ("parse once") was
tried in sessions 12, 18, 27, 30 and 39 and lost every time. This measures why, in one process over the cached day's
first ``--records`` records (already read and parsed, so only the normaliser runs), CPU us a record, minimum of
``--passes``:

* ``normalise, values dropped``: ``normalize_record`` of each record, its ``messages`` and ``steps`` values freed at
  once (what ingest does);
* ``normalise, values held``: the same, each record's values kept until ``--batch`` records are done, then freed
  (what a registry of parsed columns feeding the next steps must do); ``free held values``: that freeing, timed alone;
* ``re-parse the texts``: ``orjson.loads`` of each record's two column texts (what the next steps pay now, once each).

Holding pays if ``held + free - dropped`` is below the re-parse.

    .venv/bin/python benchmarks/parsed_values_held.py --records 5000 --batch 1000
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import emit  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=20000, help="the cached day (curation_chain's)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument("--records", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=1000, help="records whose values are held together")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    from oro_assets import jsonio
    from oro_assets.traces.normalize import NormalizationError, normalize_record
    from oro_assets.traces.reader import RawLine, RecordReader

    files = cc.generate(Path(args.cache), args.traces, args.seed)[1]
    items = []
    for item in RecordReader(files, partition=cc.DATE):
        if isinstance(item, RawLine):
            items.append(item)
            if len(items) >= args.records:
                break
    texts = []
    for item in items:
        try:
            row = normalize_record(item.obj, provenance=item.provenance)
        except NormalizationError:
            continue
        texts.append((row["messages"], row["steps"]))
    gc.freeze()

    def normalise(hold: bool) -> tuple[float, float]:
        held: list[dict] = []
        freeing = 0.0
        t0 = time.process_time()
        for item in items:
            parsed: dict = {}
            try:
                normalize_record(item.obj, provenance=item.provenance, parsed_out=parsed)
            except NormalizationError:
                continue
            if hold:
                held.append(parsed)
                if len(held) >= args.batch:
                    t1 = time.process_time()
                    held.clear()
                    freeing += time.process_time() - t1
        t1 = time.process_time()
        held.clear()
        freeing += time.process_time() - t1
        return time.process_time() - t0 - freeing, freeing

    def reparse() -> float:
        t0 = time.process_time()
        for messages, steps in texts:
            jsonio.loads(messages)
            jsonio.loads(steps)
        return time.process_time() - t0

    n = len(items)
    best = {"dropped": float("inf"), "held": float("inf"), "free": float("inf"), "reparse": float("inf")}
    for _ in range(args.passes):
        best["dropped"] = min(best["dropped"], normalise(False)[0])
        held, free = normalise(True)
        best["held"], best["free"] = min(best["held"], held), min(best["free"], free)
        best["reparse"] = min(best["reparse"], reparse())
    us = {k: round(1e6 * v / n, 1) for k, v in best.items()}
    report = {"records": n, "batch": args.batch, "passes": args.passes, "us_a_record": us,
              "holding_costs": round(us["held"] + us["free"] - us["dropped"], 1), "reparse_saves": us["reparse"]}
    print(f"{n} records, values held {args.batch} at a time; CPU us a record (min of {args.passes}):")
    print(f"  normalise, values dropped  {us['dropped']:7.1f}")
    print(f"  normalise, values held     {us['held']:7.1f}  + free held values {us['free']:.1f}")
    print(f"  re-parse the texts         {us['reparse']:7.1f}")
    print(f"holding costs {report['holding_costs']:+.1f} us a record; it would save {us['reparse']:.1f}")
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
