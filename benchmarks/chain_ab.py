"""The whole curation chain with the native kernels on and off, in one process, passes alternating (issue 33).

Whole-chain runs in separate processes spread by tens of us a record on a shared machine; a change of a few us is
measured better paired: each pass here runs the chain (``curation_chain.chain``: every step, cold judge cache, the
per-text caches cleared first) over the cached day, with these kernels either on (the dispatchers) or their
Python references bound in their place (the code before them; every other kernel stays on): session 27's (``--only
session27``: the structural filter's pass over a record's steps (step evidence, the claimed length of a dropped body,
the tallies), the judge's trace steps, its title-trigram index and its words and numbers of ASCII text, and the gates'
token estimate) and the normaliser's pass over a dialogue's steps (``--only walk_steps``: ``normalize.walk_steps``,
``walk_steps_py`` in its place) and the judge's scan for lines that address the grader (``--only meta_search``: the
kernel's ``meta_search`` declining every text, so ``rule.meta_search_py``'s regex reads it; session 28) and the Arrow
string columns built from rows (``--only utf8_column``: ingest's batches by ``pa.array`` and ``storage.conform``'s
tables by ``pa.Table.from_pylist``, the code before the kernel, in place of ``storage.column_array`` /
``table_from_rows``; session 29) and the step runner's read-back of a step's kept table for the next step (``--only
table_rows``: ``table.to_pylist()``, ``storage.table_rows_py``, in place of ``table_rows``; session 29) and the
normaliser's two reads of an answer's ``<tool_call>`` text (``--only tool_call_text``: ``calls.answer_calls_py`` and
``calls._named_tools_py`` in place of the kernels' ``answer_calls`` and ``named_tools``; session 30) and the
normaliser's fused dialogue kernel (``--only from_steps``: the kernel declining every dialogue, so ``from_steps_py``
runs the walk, evidence and era dispatchers, kernels and all, as before it; session 32; ``--only walk_steps`` declines
it on both sides, as the walk's dispatcher is reached only through its reference); every group without ``--only``. Passes alternate ABBA; each reports the chain's CPU
us a record (and ingest's read, the structural and gates steps'); every pass's ledger digest must be the first's. ``orjson.loads``
of the same lines (``curation_chain``'s baseline) is timed before each pair, so the ratios have a baseline from the
same minutes.

    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 6
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 1500 --later-share 1 --passes 6
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 6 --only walk_steps
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only meta_search
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only utf8_column
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only table_rows
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only arrow_rows
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only tool_call_text
    nice -n 19 .venv/bin/python benchmarks/chain_ab.py --traces 3000 --passes 8 --only from_steps
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 6, argv,
                       only=("session27", "walk_steps", "meta_search", "utf8_column", "table_rows", "arrow_rows",
                             "tool_call_text", "from_steps"))
    groups = (args.only,) if args.only else ("session27", "walk_steps", "meta_search", "utf8_column", "table_rows",
                                             "tool_call_text", "from_steps")
    if "arrow_rows" in groups:  # session 29's two kernels together
        groups = ("utf8_column", "table_rows")

    import pyarrow as pa
    from ingest_throughput import orjson_baseline

    from oro_assets import native, storage
    from oro_assets.curation import dedup, gates, step, structural
    from oro_assets.curation.steps import gates as gate_step
    from oro_assets.judge import evidence, rule
    from oro_assets.traces import calls, formats, ingest, normalize
    from oro_assets.traces.schema import default_tools_json

    require_kernels()
    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    default_tools_json()  # one-time imports and tables paid before timing, as curation_chain does
    pa.Table.from_pylist([{"a": 1}], schema=pa.schema([("a", pa.int64())]))
    dispatchers = {name: getattr(rule, name) for name in ("own_titles", "absorb_titles", "trigram_names")}
    walk_steps = normalize.walk_steps
    column_array, table_from_rows = ingest.column_array, storage.table_from_rows

    def pyarrow_column(values: list, dtype: pa.DataType) -> pa.Array:  # ingest's batches before the kernel
        return pa.array(values, type=dtype)

    def without(*names: str):
        """The kernels, with those named declining every text (the references read them); plain attributes, as the
        module's, so the side without them pays no ``__getattr__`` call per kernel the judge looks up."""
        return types.SimpleNamespace(**{**vars(native.kernels), **{name: (lambda text: None) for name in names}})

    # the judge's kernels as the side without them reads them: the words and numbers of ASCII text are session 27's
    # group, the grader-line scan session 28's
    judge_without = without(*(name for group, name in (("session27", "ascii_words_numbers"),
                                                        ("meta_search", "meta_search")) if group in groups))

    answer_calls, named_tools = formats.answer_calls, calls._named_tools
    # the normaliser's kernels without session 32's fused one (it declines: its reference runs the dispatchers)
    fused_off = types.SimpleNamespace(**{**vars(native.kernels), "from_steps": lambda *args: None})

    def switch(on: bool) -> None:
        if "tool_call_text" in groups:  # proxy_evidence reads formats.answer_calls, era_and_richness calls._named_tools
            formats.answer_calls = answer_calls if on else calls.answer_calls_py
            calls._named_tools = named_tools if on else calls._named_tools_py
        if "table_rows" in groups:
            step.table_rows = storage.table_rows if on else storage.table_rows_py
        if "utf8_column" in groups:
            ingest.column_array = column_array if on else pyarrow_column
            storage.table_from_rows = table_from_rows if on else storage.table_from_rows_py
        if "walk_steps" in groups:
            normalize.walk_steps = walk_steps if on else normalize.walk_steps_py
        if "from_steps" in groups:
            normalize._kernels = native.kernels if on else fused_off
        elif "walk_steps" in groups:  # the walk's dispatcher is reached only through from_steps' reference
            normalize._kernels = fused_off
        if "session27" in groups or "meta_search" in groups:
            rule._kernels = native.kernels if on else judge_without
        if "session27" not in groups:
            return
        # only _label_steps and _step_evidence read it; their references count claimed lengths in Python
        structural._kernels = native.kernels if on else None
        evidence._kernels = native.kernels if on else None  # only parse_trace's trace_steps reads it
        for name, fn in dispatchers.items():
            setattr(rule, name, fn if on else getattr(rule, name + "_py"))
        gate_step.estimate_tokens = gates.estimate_tokens if on else gates.estimate_tokens_py  # the step's default

    def one_pass(on: bool, work: Path) -> dict:
        switch(on)
        cc.clear_text_caches(rule, structural, dedup)
        dedup._word_hash.clear()
        try:
            return cc.chain(files, work)
        finally:
            switch(True)

    def orjson_us() -> float:  # curation_chain's baseline (every line read and parsed), best of 3, us a line
        best, n = float("inf"), 1
        for _ in range(3):
            t0 = time.thread_time()
            n = orjson_baseline(files)["records"]
            best = min(best, time.thread_time() - t0)
        return 1e6 * best / n

    sides: dict[str, dict[str, list[float]]] = {s: {"chain": [], "ingest_read": [], "structural": [], "gates": []}
                                                for s in ("references", "kernels")}
    digests, parse = set(), []
    with tempfile.TemporaryDirectory() as tmp:
        one_pass(True, Path(tmp) / "warmup")
        k = 0
        for i in range(args.passes):
            parse.append(orjson_us())
            for on in ((False, True) if i % 2 == 0 else (True, False)):
                r = one_pass(on, Path(tmp) / f"p{k}")
                k += 1
                digests.add(r["ledger_sha256"])
                side = sides["kernels" if on else "references"]
                side["chain"].append(r["cpu_us_per_record"]["total"])
                side["ingest_read"].append(r["process_cpu_us_per_record"]["ingest_read"])
                side["structural"].append(r["process_cpu_us_per_record"]["structural"])
                side["gates"].append(r["process_cpu_us_per_record"]["gates"])
    ref, new = sides["references"], sides["kernels"]

    def summary(values: list[float]) -> dict:
        return {"min": round(min(values), 1), "median": round(statistics.median(values), 1),
                "all": [round(v, 1) for v in values]}

    saved = {part: [round(a - b, 1) for a, b in zip(ref[part], new[part], strict=True)] for part in ref}
    report = {"traces": args.traces, "later_share": args.later_share, "passes": args.passes, "why": native.why,
              "switched": list(groups),
              "ledger_sha256": sorted(digests), "identical_ledgers": len(digests) == 1,
              "orjson_us_per_line": summary(parse),
              **{name: {part: summary(v) for part, v in side.items()} for name, side in sides.items()},
              "saved_us_per_record_by_pair": saved,
              "saved_median": {part: round(statistics.median(v), 1) for part, v in saved.items()},
              "x_orjson_median": {name: round(statistics.median(parse) / statistics.median(side["chain"]), 4)
                                  for name, side in sides.items()},
              "x_orjson_best": {name: round(min(parse) / min(side["chain"]), 4) for name, side in sides.items()}}
    emit(report, args.json)
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
