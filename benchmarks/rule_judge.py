"""The rule judge on a simulated day: each distinct tool-result text read once, against reading every one.

The structurally kept traces of a simulated day (``curation_chain.generate``, the same cached day)
are judged twice by ``oro_assets.judge.rule.RuleJudge`` in forked children:

* ``every_result_read``: the baseline, measured in the same run: every tool result is parsed and
  walked afresh (``_result_facts`` replaced by its uncached function);
* ``distinct_results_read_once``: the judge as shipped (an LRU of the facts of 4,096 result texts).

The report gives CPU microseconds per judged trace, the speed-up, the share of tool results that
repeat an earlier text, and whether both runs gave the same score and explanation for every trace.

    python benchmarks/rule_judge.py                 # 20,000-trace day (about 10k judged traces)
    python benchmarks/rule_judge.py --traces 100000 --json /tmp/rule_judge.json
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from curation_chain import DATE, generate  # noqa: E402
from ingest_throughput import measure_in_child  # noqa: E402
from report import emit  # noqa: E402


def kept_rows(files: list[str]) -> list[dict]:
    from oro_assets.curation.structural import structural_filter
    from oro_assets.traces.ingest import iter_normalized

    rows = [item[0] for item in iter_normalized(files, DATE) if isinstance(item, tuple)]
    filtered = structural_filter(rows)
    kept = filtered.kept
    return kept


def judge_all(rows: list[dict], cached: bool) -> dict:
    from oro_assets.judge import rule

    if not cached:
        rule._result_facts = rule._result_facts.__wrapped__
    judge = rule.RuleJudge()
    t0 = time.process_time()
    verdicts = [judge.judge(r) for r in rows]
    cpu = time.process_time() - t0
    digest = hashlib.sha256()
    for v in verdicts:
        digest.update(f"{v.score}\x00{v.explanation}\x01".encode())
    return {"judged": len(rows), "judge_cpu_s": round(cpu, 2),
            "us_per_trace": round(1e6 * cpu / max(1, len(rows)), 1), "verdicts_sha256": digest.hexdigest()}


def repeat_share(rows: list[dict]) -> float:
    from oro_assets.judge.evidence import parse_trace

    seen: set[str] = set()
    total = repeats = 0
    for row in rows:
        for step in parse_trace(row).steps:
            for call in step.calls:
                if call.result:
                    total += 1
                    repeats += call.result in seen
                    seen.add(call.result)
    return round(repeats / max(1, total), 4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)

    _, plain = generate(Path(args.cache), args.traces, args.seed)
    rows = kept_rows(plain)
    base = measure_in_child(lambda: judge_all(rows, cached=False))
    shipped = measure_in_child(lambda: judge_all(rows, cached=True))
    emit({"traces": args.traces, "judged": len(rows), "result_repeat_share": repeat_share(rows),
          "every_result_read": base, "distinct_results_read_once": shipped,
          "speedup": round(base["us_per_trace"] / shipped["us_per_trace"], 2),
          "same_verdicts": base["verdicts_sha256"] == shipped["verdicts_sha256"]}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
