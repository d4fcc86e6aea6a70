"""Session 27's kernels part by part, over the arguments the chain gives them, on and off in one process (issue 33).

Runs the chain once over the cached day to capture the rows the structural filter and the gates are given and the
traces the rule judge judges, then times, per chain record (CPU us, minimum over ``--reps`` passes of each side, the
sides alternating), each part with its kernel (the dispatcher) and with its Python reference bound in its place,
checking the results equal: the structural filter's pass over each record's steps (step evidence, claimed lengths,
tallies; ``label_structural`` of the parsed rows), the judge's trace steps (``parse_trace``), the judge's features
(``judge_evidence``, cold caches) with its title-trigram index and with its words and numbers of ASCII text, and the
gates' token estimate of the texts it counts.

    nice -n 19 .venv/bin/python benchmarks/chain_parts_ab.py --traces 3000
    nice -n 19 .venv/bin/python benchmarks/chain_parts_ab.py --traces 1500 --later-share 1
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit, require_kernels  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 6, argv, passes_flag="--reps")

    from oro_assets import native
    from oro_assets.curation import dedup, gates, structural
    from oro_assets.curation.rows import messages_of, steps_of
    from oro_assets.curation.steps.gates import GateStep
    from oro_assets.curation.steps.structural import StructuralStep
    from oro_assets.judge import evidence, rule

    require_kernels()
    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    structural_rows: list[dict] = []
    gate_rows: list[dict] = []
    judged: list[dict] = []
    originals = StructuralStep.process, GateStep.process, rule.RuleJudge.judge

    def capture_structural(self, rows, state):
        structural_rows.extend(rows)
        return originals[0](self, rows, state)

    def capture_gates(self, rows, run):
        gate_rows.extend(rows)
        return originals[1](self, rows, run)

    def capture_judged(self, trace):
        judged.append(trace)
        return originals[2](self, trace)

    StructuralStep.process, GateStep.process, rule.RuleJudge.judge = (capture_structural, capture_gates,
                                                                        capture_judged)
    try:
        with tempfile.TemporaryDirectory() as work:
            records = cc.chain(files, Path(work))["records"]
    finally:
        StructuralStep.process, GateStep.process, rule.RuleJudge.judge = originals

    parsed_rows = [{**r, "steps": steps_of(r)} for r in structural_rows]
    evidences = [evidence.parse_trace(t) for t in judged]
    texts = []
    for row in gate_rows:  # what the token estimate counts: the rows whose size bound is over the budget
        messages = messages_of(row)
        if gates._size_bound(row, messages) > gates.DEFAULT_TOKEN_BUDGET:
            texts.append(gates.render_for_budget(messages, row.get("tools")))
    titles = {name: getattr(rule, name) for name in ("own_titles", "absorb_titles", "trigram_names")}

    class WithoutTextKernel:  # the kernels, with the judge's words and numbers left to the reference
        def __getattr__(self, name: str):
            return (lambda text: None) if name == "ascii_words_numbers" else getattr(native.kernels, name)

    def text_on(on: bool) -> None:
        rule._kernels = native.kernels if on else WithoutTextKernel()

    def structural_on(on: bool) -> None:
        structural._kernels = native.kernels if on else None

    def evidence_on(on: bool) -> None:
        evidence._kernels = native.kernels if on else None

    def titles_on(on: bool) -> None:
        for name, fn in titles.items():
            setattr(rule, name, fn if on else getattr(rule, name + "_py"))

    def label_all() -> list:
        return [structural.label_structural(r) for r in parsed_rows]

    def parse_all() -> list:
        return [evidence.parse_trace(t) for t in judged]

    def judge_all() -> list:
        judge = rule.RuleJudge()
        return [judge.judge_evidence(e) for e in evidences]

    def estimate_all() -> list:
        return [gates.estimate_tokens(t) if estimate_native else gates.estimate_tokens_py(t) for t in texts]

    estimate_native = True

    def estimate_on(on: bool) -> None:
        nonlocal estimate_native
        estimate_native = on

    parts = {"structural_label_structural": (structural_on, label_all, len(parsed_rows)),
             "judge_parse_trace": (evidence_on, parse_all, len(judged)),
             "judge_features_title_index": (titles_on, judge_all, len(evidences)),
             "judge_features_words_numbers": (text_on, judge_all, len(evidences)),
             "gates_token_estimate": (estimate_on, estimate_all, len(texts))}
    out: dict = {"traces": args.traces, "later_share": args.later_share, "records": records, "why": native.why,
                 "reps": args.reps}
    gc.freeze()
    for name, (switch, run, calls) in parts.items():
        best = {False: float("inf"), True: float("inf")}
        results = {}
        for i in range(args.reps):
            for on in ((False, True) if i % 2 == 0 else (True, False)):
                switch(on)
                cc.clear_text_caches(rule, structural, dedup)
                gc.collect()
                t0 = time.thread_time()
                got = run()
                best[on] = min(best[on], time.thread_time() - t0)
                results[on] = repr(got)
                switch(True)
        out[name] = {"calls": calls, "identical": results[False] == results[True],
                     "reference_us_per_record": round(1e6 * best[False] / records, 2),
                     "kernel_us_per_record": round(1e6 * best[True] / records, 2),
                     "saved_us_per_record": round(1e6 * (best[False] - best[True]) / records, 2)}
    out["saved_us_per_record_total"] = round(sum(out[name]["saved_us_per_record"] for name in parts), 2)
    emit(out, args.json)
    return 0 if all(out[name]["identical"] for name in parts) else 1


if __name__ == "__main__":
    sys.exit(main())
