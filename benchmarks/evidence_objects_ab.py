"""The judge's parse of a trace with the native ``trace_steps`` making its evidence objects itself or calling their
classes, in one process, passes alternating (issue 33, session 32).

Every row of the cached day that normalises is parsed back to its JSON columns' values once, then each pass runs
``judge.evidence.parse_trace`` over all of them with ``evidence._EVIDENCE_FIELDS`` either the classes' fields (the
kernel makes each object as the frozen dataclass ``__init__`` does, without calling it) or ``(None,) * 4`` (the
kernel calls the classes, the code before); passes alternate ABBA, thread CPU us a parsed row is reported (min and
median per side, each adjacent pair's difference), under the chain's paced collector
(``curation.step.paced_collector``); each side's evidence is checked equal (values, repr) to the other's first.

    nice -n 19 .venv/bin/python benchmarks/evidence_objects_ab.py --traces 3000 --passes 10
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from curation_chain import DATE, generate  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 10, argv)

    from oro_assets import jsonio, native
    from oro_assets.curation.step import paced_collector
    from oro_assets.judge import evidence
    from oro_assets.traces.ingest import iter_normalized

    require_kernels()
    files = generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    rows = [{**item[0], "messages": jsonio.loads(item[0]["messages"]), "steps": jsonio.loads(item[0]["steps"])}
            for item in iter_normalized(files, DATE) if isinstance(item, tuple)]
    fields = evidence._EVIDENCE_FIELDS
    gc.collect()
    gc.freeze()

    def parsed(on: bool) -> list:
        evidence._EVIDENCE_FIELDS = fields if on else (None,) * 4
        try:
            return [evidence.parse_trace(row) for row in rows]
        finally:
            evidence._EVIDENCE_FIELDS = fields

    def one_pass(on: bool) -> float:  # each object dropped when the next row is parsed, as in the chain
        evidence._EVIDENCE_FIELDS = fields if on else (None,) * 4
        try:
            t0 = time.thread_time()
            for row in rows:
                evidence.parse_trace(row)
            return time.thread_time() - t0
        finally:
            evidence._EVIDENCE_FIELDS = fields

    reference, made = parsed(False), parsed(True)
    identical = made == reference and [repr(p) for p in made] == [repr(p) for p in reference]
    del reference, made
    times: dict[str, list[float]] = {"calls": [], "made": []}
    with paced_collector():
        for i in range(args.passes):
            for on in ((False, True) if i % 2 == 0 else (True, False)):
                times["made" if on else "calls"].append(1e6 * one_pass(on) / len(rows))
    pairs = [round(p - q, 2) for p, q in zip(times["calls"], times["made"], strict=True)]
    report = {"traces": args.traces, "later_share": args.later_share, "rows": len(rows), "passes": args.passes,
              "identical": identical, "why": native.why,
              **{side: {"min_us_per_row": round(min(v), 2), "median_us_per_row": round(statistics.median(v), 2)}
                 for side, v in times.items()},
              "saved_us_per_row_by_pair": pairs, "saved_median": round(statistics.median(pairs), 2)}
    emit(report, args.json)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
