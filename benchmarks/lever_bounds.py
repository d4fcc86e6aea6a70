"""What the two structural levers left for issue 33 could save at most, measured before building either (session 31).

The rule judge and ingest's normaliser are the two blocks of the chain that no single kernel reaches any more. This
times, in one process over a simulated day (CPU us per chain record, thread time, the minimum of ``--passes``, the
collector frozen as ``curation_chain.py`` leaves it), the pieces that bound them:

* ingest: ``orjson.loads`` and ``sha256`` of every line alone (and ``sha256`` of one 20 KB line in cache, us a
  call), the reader (read, hash, parse), the reader with ``normalize_record`` of each record, and
  ``ingest_row_batches`` (the rows and their Arrow batches): what a native reader writing the columns as it reads
  the line could remove is at most the last minus the reader;
* the rule judge over the rows the chain judges (captured from one chain pass): its cache key
  (``trace_content_hash``), ``parse_trace``, the judge cold (every per-text cache cleared) and warm (a second pass over
  the same rows: the per-text work done, only the per-trace Python left), the result facts and the thinking views
  alone cold, the ``absorb`` loop cold and warm, and each per-text cache's misses on a cold pass; what moving more of
  the judge's Python into C could take is bounded by the warm figure, less the C it already calls;
* the minor page faults of a second chain pass (what an allocator setting could save).

    nice -n 19 .venv/bin/python benchmarks/lever_bounds.py --traces 3000 --json benchmarks/results/curation_chain_issue33_session31_bounds_a6b1cf3.json
    nice -n 19 .venv/bin/python benchmarks/lever_bounds.py --traces 1500 --later-share 1 --json benchmarks/results/curation_chain_issue33_session31_bounds_later.json
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import curation_chain as cc  # noqa: E402
from report import day_ab_args, emit  # noqa: E402


def _loop(fn: Callable[[], object], n: int) -> float:
    """CPU seconds of one call of ``fn``, over ``n`` calls."""
    t0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - t0) / n


def main(argv: list[str] | None = None) -> int:
    args = day_ab_args(__doc__.splitlines()[0], 7, argv)

    import orjson

    from oro_assets import native
    from oro_assets.curation import dedup, structural
    from oro_assets.judge import evidence, rule
    from oro_assets.traces.ingest import ingest_row_batches
    from oro_assets.traces.normalize import NormalizationError, normalize_record
    from oro_assets.traces.reader import RawLine, RecordReader

    files = cc.generate(Path(args.cache), args.traces, args.seed, later_share=args.later_share)[1]
    judged: list[dict] = []
    original = rule.RuleJudge.judge

    def capture(self, trace: dict):
        judged.append(trace)
        return original(self, trace)

    rule.RuleJudge.judge = capture
    try:
        with tempfile.TemporaryDirectory() as work:
            records = cc.chain(files, Path(work))["records"]
    finally:
        rule.RuleJudge.judge = original
    # a second chain pass, the process warm: its minor page faults (what the allocator could save)
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    with tempfile.TemporaryDirectory() as work:
        cc.chain(files, Path(work))
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before) / records
    lines = [line for f in files for line in Path(f).read_bytes().splitlines()]
    evidences = [evidence.parse_trace(t) for t in judged]
    judge = rule.RuleJudge()

    def clear() -> None:
        cc.clear_text_caches(rule, structural, dedup)

    def best(fn: Callable[[], object], cold: bool = True) -> float:
        low = float("inf")
        for _ in range(args.passes):
            if cold:
                clear()
            gc.collect()
            t0 = time.thread_time()
            fn()
            low = min(low, time.thread_time() - t0)
        return round(1e6 * low / records, 2)

    def parse_lines() -> None:
        for line in lines:
            with contextlib.suppress(orjson.JSONDecodeError):
                orjson.loads(line)

    def hash_lines() -> None:
        for line in lines:
            hashlib.sha256(line).digest().hex()

    def read() -> None:
        for _ in RecordReader(files, partition=cc.DATE):
            pass

    def read_normalise() -> None:
        for item in RecordReader(files, partition=cc.DATE):
            if isinstance(item, RawLine):
                with contextlib.suppress(NormalizationError):
                    normalize_record(item.obj, provenance=item.provenance)

    def ingest() -> None:
        for _ in ingest_row_batches(files, cc.DATE):
            pass

    def result_facts() -> None:
        for e in evidences:
            for step in e.steps:
                for call in step.calls:
                    if call.result:
                        rule._result_facts(call.result)

    def think_views() -> None:
        for e in evidences:
            for step in e.steps:
                view = rule._think_view(step.think)
                if view:
                    rule._text_features(view)

    def absorb_loop() -> None:
        for e in evidences:
            data = rule.ResultData()
            for step in e.steps:
                for call in step.calls:
                    data.absorb(call.result, call.result_product_ids)
                for search in step.search:
                    data.absorb("", search.result_product_ids)

    gc.freeze()
    out: dict = {"traces": args.traces, "later_share": args.later_share, "records": records, "judged": len(judged),
                 "native": native.why, "passes": args.passes, "us_per_record": {}}
    us = out["us_per_record"]
    us["ingest_orjson_loads"] = best(parse_lines, cold=False)
    us["ingest_sha256"] = best(hash_lines, cold=False)
    us["ingest_reader"] = best(read, cold=False)
    us["ingest_reader_normalise"] = best(read_normalise, cold=False)
    us["ingest_row_batches"] = best(ingest, cold=False)
    one = max(lines, key=len)[:20_000]  # a record's size, hashed in a tight loop (in cache): the hash's own speed
    us["sha256_one_line_in_cache_us"] = round(min(_loop(lambda: hashlib.sha256(one).digest(), 20_000)
                                                  for _ in range(args.passes)) * 1e6, 2)
    us["judge_content_hash"] = best(lambda: [evidence.trace_content_hash(t) for t in judged], cold=False)
    us["judge_parse_trace"] = best(lambda: [evidence.parse_trace(t) for t in judged], cold=False)
    us["judge_cold"] = best(lambda: [judge.judge(t) for t in judged])
    us["judge_evidence_cold"] = best(lambda: [judge.judge_evidence(e) for e in evidences])
    us["judge_evidence_warm"] = best(lambda: [judge.judge_evidence(e) for e in evidences], cold=False)
    us["judge_result_facts_cold"] = best(result_facts)
    us["judge_think_views_cold"] = best(think_views)
    us["judge_absorb_cold"] = best(absorb_loop)
    us["judge_absorb_warm"] = best(absorb_loop, cold=False)
    clear()
    for e in evidences:
        judge.judge_evidence(e)
    out["judge_cache_misses_cold"] = {name: getattr(rule, name).cache_info().misses for name in sorted(dir(rule))
                                      if hasattr(getattr(rule, name), "cache_info")}
    us["bound_native_reader"] = round(us["ingest_row_batches"] - us["ingest_reader"], 2)
    us["bound_judge_per_text"] = round(us["judge_evidence_cold"] - us["judge_evidence_warm"], 2)
    out["chain_minor_faults_per_record"] = round(faults, 2)
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
