"""The normaliser's two reads of an answer's ``<tool_call>`` text with session 30's kernels and without, over the day's own answers (issue 33).

One chain pass (``curation_chain.chain``, cold) records every message ``proxy_evidence`` hands to ``answer_calls`` and
every call ``era_and_richness`` hands to ``_named_tools``; then the recorded arguments are replayed, passes alternating
ABBA: the references (``calls.answer_calls_py``, ``calls._named_tools_py``: the code before the kernels) against the
dispatchers (``calls.answer_calls``, ``calls._named_tools``: the kernels), every result checked equal. Reported in
thread-CPU us per record of the day (min, median, each pair's difference), by function, with how many of the
arguments each kernel read itself.

    nice -n 19 .venv/bin/python benchmarks/tool_call_text_ab.py --traces 3000 --passes 8
    nice -n 19 .venv/bin/python benchmarks/tool_call_text_ab.py --traces 1500 --later-share 1 --passes 8
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 8, argv)

    from oro_assets import jsonio, native
    from oro_assets.curation import dedup, structural
    from oro_assets.judge import rule
    from oro_assets.traces import calls, formats

    require_kernels()
    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    recorded: dict[str, list] = {"answer_calls": [], "named_tools": []}
    answer_calls, named_tools = formats.answer_calls, calls._named_tools
    formats.answer_calls = lambda message: recorded["answer_calls"].append(message) or answer_calls(message)
    calls._named_tools = lambda call: recorded["named_tools"].append(call) or named_tools(call)
    try:
        cc.clear_text_caches(rule, structural, dedup)
        with tempfile.TemporaryDirectory() as tmp:
            n_records = cc.chain(files, Path(tmp) / "w")["records"]
    finally:
        formats.answer_calls, calls._named_tools = answer_calls, named_tools

    sides = {"answer_calls": (calls.answer_calls_py, calls.answer_calls),
             "named_tools": (calls._named_tools_py, calls._named_tools)}
    for name, (reference, kernel) in sides.items():  # every result equal before anything is timed
        for value in recorded[name]:
            if kernel(value) != reference(value):
                raise SystemExit(f"{name} differs from its reference on {value!r:.300}")

    def one_pass(fn, values: list) -> float:  # thread-CPU us a record of the day
        gc.collect()
        t0 = time.thread_time()
        for value in values:
            fn(value)
        return 1e6 * (time.thread_time() - t0) / n_records

    times = {name: {"references": [], "kernels": []} for name in sides}
    for i in range(args.passes):
        for kernels_on in ((False, True) if i % 2 == 0 else (True, False)):
            for name, pair in sides.items():
                times[name]["kernels" if kernels_on else "references"].append(one_pass(pair[kernels_on],
                                                                                       recorded[name]))
    declined = "declined"
    read_here = {"answer_calls": sum(native.kernels.answer_calls(lambda _m: declined, jsonio.decode, m) != declined
                                     for m in recorded["answer_calls"]),
                 "named_tools": sum(native.kernels.named_tools(lambda _c: declined, jsonio.decode, c) != declined
                                    for c in recorded["named_tools"])}

    def summary(values: list[float]) -> dict:
        return {"min": round(min(values), 2), "median": round(statistics.median(values), 2),
                "all": [round(v, 2) for v in values]}

    report = {"traces": args.traces, "later_share": args.later_share, "passes": args.passes, "records": n_records,
              "why": native.why, "arguments": {name: len(v) for name, v in recorded.items()}, "read_here": read_here}
    both = {side: [sum(times[name][side][k] for name in sides) for k in range(args.passes)]
            for side in ("references", "kernels")}
    for name, side in (*((name, times[name]) for name in sides), ("both", both)):
        saved = [a - b for a, b in zip(side["references"], side["kernels"], strict=True)]
        report[name] = {"references": summary(side["references"]), "kernels": summary(side["kernels"]),
                        "saved_by_pair": summary(saved), "pairs_saving": sum(s > 0 for s in saved)}
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
