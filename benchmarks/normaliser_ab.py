"""The normaliser's read of a day with this session's kernels on and off, in one process, passes alternating (issue 33).

On a shared machine whole-chain runs in separate processes spread by tens of us a record; a change of a few us is
measured better paired: here each pass reads, parses and normalises every line of the cached day
(``traces.ingest.iter_normalized``, as ingest does), with the normaliser's product-id walk, proxy-call evidence and
pass over a dialogue's steps either the native kernels (the dispatchers ``formats.product_ids`` /
``formats.proxy_evidence`` / ``normalize.walk_steps``) or their Python references (``product_ids_py`` /
``proxy_evidence_py`` / ``walk_steps_py``, the code before the kernels) bound in their place; passes
alternate ABBA, and each process's thread CPU per record is reported (min and median per side, and each adjacent
pair's difference). Every pass's rows are checked equal to the first reference pass's.

    nice -n 19 .venv/bin/python benchmarks/normaliser_ab.py --traces 3000 --passes 8
    nice -n 19 .venv/bin/python benchmarks/normaliser_ab.py --traces 1500 --later-share 1 --passes 8
    nice -n 19 .venv/bin/python benchmarks/normaliser_ab.py --traces 3000 --passes 8 --only walk_steps
    nice -n 19 .venv/bin/python benchmarks/normaliser_ab.py --traces 3000 --passes 8 --only from_steps

``--only walk_steps`` switches the pass over the steps alone, ``--only session26`` the product-id walk and evidence
(with walk_steps' kernel on, a tool result's ids are walked inside it: that A/B then covers search responses only).
``--only from_steps`` switches session 32's fused kernel alone (``normalize.from_steps``: the walk, the evidence, the era
and both columns' text in one call; off, its reference ``from_steps_py`` runs the dispatchers above, kernels and all).
The fused kernel calls the walk and evidence kernels itself, so the other groups decline it on both sides: they measure
their dispatchers as before it.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from curation_chain import DATE, generate  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402

#: (group, module, name bound there, the reference bound in its place when the kernels are off, the reference's module)
SWITCHED = (("session26", "formats", "product_ids", "product_ids_py", "formats"),
            ("session26", "normalize", "product_ids", "product_ids_py", "formats"),
            ("session26", "formats", "proxy_evidence", "proxy_evidence_py", "formats"),
            ("session26", "normalize", "proxy_evidence", "proxy_evidence_py", "formats"),
            ("walk_steps", "normalize", "walk_steps", "walk_steps_py", "normalize"))


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 8, argv, only=("session26", "walk_steps", "from_steps"))
    switched = [s for s in SWITCHED if args.only in (None, s[0])]

    from oro_assets import native
    from oro_assets.traces import formats, normalize
    from oro_assets.traces.ingest import iter_normalized

    require_kernels()
    files = generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    modules = {"formats": formats, "normalize": normalize}
    bound = {(m, n): getattr(modules[m], n) for _, m, n, _, _ in switched}
    fused_off = types.SimpleNamespace(**{**vars(native.kernels), "from_steps": lambda *args: None})

    def switch(on: bool) -> None:
        for _, m, n, ref, ref_module in switched:
            setattr(modules[m], n, bound[(m, n)] if on else getattr(modules[ref_module], ref))
        if args.only == "from_steps":
            normalize._kernels = native.kernels if on else fused_off
        else:  # the dispatchers above are reached only through from_steps' reference
            normalize._kernels = fused_off

    def one_pass(on: bool) -> tuple[float, list]:
        switch(on)
        gc.collect()
        rows = []
        t0 = time.thread_time()
        for item in iter_normalized(files, DATE):
            rows.append(item[0] if isinstance(item, tuple) else item.to_row())
        spent = time.thread_time() - t0
        switch(True)
        return spent, rows

    one_pass(True)  # warm the imports and caches alike
    times: dict[str, list[float]] = {"python": [], "native": []}
    reference = None
    identical = True
    n = 0
    for i in range(args.passes):
        for on in ((False, True) if i % 2 == 0 else (True, False)):
            spent, rows = one_pass(on)
            reference = reference if reference is not None else rows
            identical = identical and rows == reference
            n = len(rows)
            times["native" if on else "python"].append(1e6 * spent / n)
    pairs = [round(p - q, 1) for p, q in zip(times["python"], times["native"], strict=True)]
    report = {"traces": args.traces, "later_share": args.later_share, "records": n, "passes": args.passes,
              "identical_rows": identical, "why": native.why,
              "switched": [f"{m}.{n}" for _, m, n, _, _ in switched] + (
                  ["normalize.from_steps"] if args.only == "from_steps" else []),
              **{side: {"min_us_per_record": round(min(v), 1), "median_us_per_record": round(statistics.median(v), 1),
                        "all": [round(x, 1) for x in v]} for side, v in times.items()},
              "saved_us_per_record_by_pair": pairs, "saved_median": round(statistics.median(pairs), 1)}
    emit(report, args.json)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
