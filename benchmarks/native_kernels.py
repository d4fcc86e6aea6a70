"""The native kernels against their Python references, alone and in the whole chain (issue 33).

``ORO_NATIVE=0`` and ``=1`` in alternating fresh processes (``--rounds`` of each, the order flipped every
round), minimum over them:

* the kernels alone: ``dedup.minhash_signature`` and ``dedup.collapse_whitespace`` (``KERNELS``) over exactly
  the texts the chain gives them on the day, and the normaliser's ``calls.era_and_richness`` (``era_counts``) over
  exactly the proxy calls of each record it normalised, its ``formats.product_ids`` (``collect_ids``) over every
  step's tool results and ``formats.proxy_evidence`` over every step's proxy calls, and the rule judge's ``rule.step_words`` over the
  arguments of every step it judged (the words sets copied as they were at that step) (captured by running the chain once in the process, then timed
  ``--reps`` times in the thread's CPU, minimum), per call and per chain record; the process also checks the
  results equal the Python references' on every captured text; the rule judge's result walk alone
  (``ResultData._read`` of every distinct tool result of the traces the chain judged, uncached) and the rule judge
  cold over those traces (its per-text caches cleared before each pass);
* the whole chain: ``curation_chain.py --traces N --no-warm`` (cold judge cache; its ``orjson`` baseline in
  the same process tree), its CPU us a record, the ingest read's (the normaliser's), the dedup step's, and the
  ratio to ``orjson.loads``.

    nice -n 19 .venv/bin/python benchmarks/native_kernels.py --traces 3000 --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from curation_chain import clear_text_caches  # noqa: E402
from report import emit  # noqa: E402

#: the kernels' dispatchers in ``dedup`` and their Python references
KERNELS = {"minhash_signature": "minhash_signature_py", "collapse_whitespace": "collapse_whitespace_py"}
#: what each kernel process times: the two dedup kernels, the judge's result walk, the rule judge cold, the
#: normaliser's recorder era and agentic_richness, the judge's per-step words, the normaliser's product ids of a tool
#: result and its evidence of a step's proxy calls
PARTS = (*KERNELS, "result_walk", "rule_judge_cold", "era_and_richness", "step_words", "product_ids",
         "proxy_evidence")
#: the parts whose every result is checked equal to the Python reference's
CHECKED = (*KERNELS, "era_and_richness", "step_words", "product_ids", "proxy_evidence")


def kernel(traces: int, seed: int, cache: str, reps: int) -> dict:
    """This process's kernel timings (whatever ``ORO_NATIVE`` says)."""
    import curation_chain as cc
    import numpy as np

    from oro_assets import native
    from oro_assets.curation import dedup
    from oro_assets.judge import rule
    from oro_assets.traces import formats, normalize

    files = cc.generate(Path(cache), traces, seed)[1]
    texts: dict[str, list[str]] = {name: [] for name in KERNELS}
    fns = {name: getattr(dedup, name) for name in KERNELS}

    def capturing(name: str):
        def capture(text: str):
            texts[name].append(text)
            return fns[name](text)
        return capture

    judged: list[dict] = []
    judge_fn = rule.RuleJudge.judge

    def capture_judged(self, trace: dict):
        judged.append(trace)
        return judge_fn(self, trace)

    listed_seen: list[list[list[dict]]] = []
    era_fn = normalize.era_and_richness
    steps_seen: list[tuple] = []
    words_fn = rule.step_words

    def capture_words(think_words, result_words, query_words, own_words):
        steps_seen.append((think_words, set(result_words), query_words, set(own_words)))
        return words_fn(think_words, result_words, query_words, own_words)

    def capture_listed(listed: list[list[dict]]):
        listed_seen.append(listed)
        return era_fn(listed)

    results_seen: list = []
    windows_seen: list[list[dict]] = []
    ids_fn, evidence_fn = normalize.product_ids, normalize.proxy_evidence

    def capture_result(value):
        results_seen.append(value)
        return ids_fn(value)

    def capture_window(window: list[dict]):
        windows_seen.append(window)
        return evidence_fn(window)

    for name in KERNELS:
        setattr(dedup, name, capturing(name))
    rule.RuleJudge.judge = capture_judged
    normalize.era_and_richness = capture_listed
    rule.step_words = capture_words
    normalize.product_ids, normalize.proxy_evidence = capture_result, capture_window
    with tempfile.TemporaryDirectory() as work:
        cc.chain(files, Path(work))
    rule.RuleJudge.judge = judge_fn
    normalize.era_and_richness = era_fn
    rule.step_words = words_fn
    normalize.product_ids, normalize.proxy_evidence = ids_fn, evidence_fn
    for name, fn in fns.items():
        setattr(dedup, name, fn)
    out: dict = {"native": native.enabled(), "why": native.why, "records": traces,
                 **judge_parts(judged, traces, reps)}
    for name, fn in fns.items():
        reference = getattr(dedup, KERNELS[name])
        identical = all(np.array_equal(fn(t), reference(t)) for t in texts[name])
        best = float("inf")
        for _ in range(reps):
            dedup._word_hash.clear()  # the reference's word-hash cache starts empty in a chain run
            t0 = time.thread_time()
            for t in texts[name]:
                fn(t)
            best = min(best, time.thread_time() - t0)
        n = len(texts[name])
        out[name] = {"calls": n, "chars_per_call": round(sum(map(len, texts[name])) / max(1, n)),
                     "identical_to_reference": identical,
                     "us_per_call": round(1e6 * best / max(1, n), 2), "us_per_record": round(1e6 * best / traces, 2)}
    out["era_and_richness"] = era_part(listed_seen, traces, reps)
    out["step_words"] = words_part(steps_seen, traces, reps)
    # the normaliser's id walk over every tool result of a step (its search responses are read inside
    # proxy_evidence), and its evidence of every step's proxy calls
    out["product_ids"] = captured_part(results_seen, formats.product_ids, formats.product_ids_py, traces, reps)
    out["proxy_evidence"] = captured_part(windows_seen, formats.proxy_evidence, formats.proxy_evidence_py, traces,
                                          reps)
    return out


def captured_part(seen: list, fn, reference, traces: int, reps: int, *, unpack: bool = False, reset=None) -> dict:
    """``fn`` (the dispatcher: the native kernel where it runs) over every captured argument (``unpack``: a tuple
    of arguments), checked equal to ``reference`` on each (values, types and key order: compared as orjson text),
    timed ``reps`` times in the thread's CPU (``reset`` called before each pass), minimum."""
    import orjson

    def call(f, x):
        return f(*x) if unpack else f(x)

    identical = all(orjson.dumps(call(fn, x)) == orjson.dumps(call(reference, x)) and call(fn, x) == call(reference, x)
                    for x in seen)
    best = float("inf")
    for _ in range(reps):
        if reset is not None:
            reset()
        t0 = time.thread_time()
        for x in seen:
            call(fn, x)
        best = min(best, time.thread_time() - t0)
    n = len(seen)
    return {"calls": n, "identical_to_reference": identical,
            "us_per_call": round(1e6 * best / max(1, n), 2), "us_per_record": round(1e6 * best / traces, 2)}


def words_part(steps_seen: list[tuple], traces: int, reps: int) -> dict:
    """``rule.step_words`` (the native kernel where it runs) over every judged step's arguments, checked equal to
    the reference (``step_words_py``) on each."""
    from oro_assets.judge import rule

    n = len(steps_seen)
    return {**captured_part(steps_seen, rule.step_words, rule.step_words_py, traces, reps, unpack=True),
            "words_per_call": round(sum(len(a[0]) for a in steps_seen) / max(1, n), 1)}


def era_part(listed_seen: list[list[list[dict]]], traces: int, reps: int) -> dict:
    """``calls.era_and_richness`` (the native ``era_counts`` where it runs) over each normalised record's proxy
    calls, checked equal to the reference (``era_and_richness_py``) on every one; the route cache emptied before
    each pass, as in a fresh process."""
    from oro_assets.traces import calls

    n = len(listed_seen)
    return {**captured_part(listed_seen, calls.era_and_richness, calls.era_and_richness_py, traces, reps,
                            reset=calls._str_route.cache_clear),
            "proxy_calls_per_call": round(sum(len(c) for x in listed_seen for c in x) / max(1, n), 1)}


def judge_parts(judged: list[dict], traces: int, reps: int) -> dict:
    """The judge's result walk alone (``ResultData._read`` of every distinct tool result the judged traces hold:
    a parse and the walk, uncached) and the rule judge cold (its per-text caches cleared before each pass)."""
    from oro_assets.judge import rule
    from oro_assets.judge.evidence import parse_trace

    results = sorted({c.result for t in judged for s in parse_trace(t).steps for c in s.calls if c.result})

    def read_all() -> None:
        for text in results:
            rule.ResultData()._read(text)

    judge = rule.RuleJudge()

    def judge_all() -> None:
        for trace in judged:
            judge.judge(trace)

    def best(fn) -> float:
        low = float("inf")
        for _ in range(reps):
            clear_text_caches(rule)
            t0 = time.thread_time()
            fn()
            low = min(low, time.thread_time() - t0)
        return low

    walk, cold = best(read_all), best(judge_all)
    return {"result_walk": {"calls": len(results), "us_per_call": round(1e6 * walk / max(1, len(results)), 2),
                            "us_per_record": round(1e6 * walk / traces, 2)},
            "rule_judge_cold": {"calls": len(judged), "us_per_call": round(1e6 * cold / max(1, len(judged)), 2),
                                "us_per_record": round(1e6 * cold / traces, 2)}}


def run(args: list[str], native: bool) -> dict:
    env = {**os.environ, "ORO_NATIVE": "1" if native else "0"}
    out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def compare(traces: int, seed: int, cache: str, rounds: int, reps: int) -> dict:
    runs: dict[str, dict[str, list[dict]]] = {"python": {"kernel": [], "chain": []},
                                              "native": {"kernel": [], "chain": []}}
    tmp = Path(tempfile.mkdtemp(prefix="native_kernels_"))
    try:
        for i in range(rounds):
            for native in ((False, True) if i % 2 == 0 else (True, False)):
                name = "native" if native else "python"
                runs[name]["kernel"].append(run([__file__, "kernel", "--traces", str(traces), "--seed", str(seed),
                                                 "--cache", cache, "--reps", str(reps)], native))
                out = tmp / f"chain_{name}_{i}.json"
                run([str(HERE / "curation_chain.py"), "--traces", str(traces), "--seed", str(seed), "--cache", cache,
                     "--no-warm", "--json", str(out)], native)
                runs[name]["chain"].append(json.loads(out.read_text()))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def chain_figures(r: dict) -> dict:
        c, o = r["runs"]["chain"], r["runs"]["orjson_loads"]
        return {"cpu_us_per_record": c["cpu_us_per_record"]["total"],
                "ingest_read_cpu_us_per_record": c["process_cpu_us_per_record"]["ingest_read"],
                "dedup_cpu_us_per_record": c["process_cpu_us_per_record"]["dedup"],
                "rule_judge_us_per_record": c["cpu_us_per_record"]["rule_judge"],
                "orjson_us_per_line": round(1e6 * o["cpu_s"] / r["records"], 1),
                "chain_vs_orjson_cpu": r["ratios"]["chain_vs_orjson_cpu"],
                "ledger_sha256": c["ledger_sha256"], "loadavg_1m": r["loadavg_1m"]}

    summary: dict = {}
    for name, parts in runs.items():
        ks = parts["kernel"]
        cs = [chain_figures(r) for r in parts["chain"]]
        parts["chain"] = cs
        summary[name] = {
            **{f"{k}_us_per_call_min": min(x[k]["us_per_call"] for x in ks) for k in PARTS},
            **{f"{k}_us_per_record_min": min(x[k]["us_per_record"] for x in ks) for k in PARTS},
            "rule_judge_in_chain_us_per_record_min": min(c["rule_judge_us_per_record"] for c in cs),
            "chain_cpu_us_per_record_min": min(c["cpu_us_per_record"] for c in cs),
            "chain_cpu_us_per_record_median": sorted(c["cpu_us_per_record"] for c in cs)[len(cs) // 2],
            "ingest_read_cpu_us_per_record_min": min(c["ingest_read_cpu_us_per_record"] for c in cs),
            "dedup_cpu_us_per_record_min": min(c["dedup_cpu_us_per_record"] for c in cs),
            "orjson_us_per_line_min": min(c["orjson_us_per_line"] for c in cs),
            "chain_vs_orjson_cpu_max": max(c["chain_vs_orjson_cpu"] for c in cs),
            "native": sorted({x["native"] for x in ks}),
            "identical_to_reference": all(x[k]["identical_to_reference"] for x in ks for k in CHECKED),
            "ledger_sha256": sorted({c["ledger_sha256"] for c in cs}),
        }
    p, n = summary["python"], summary["native"]
    summary["speedup"] = {
        **{k: round(p[f"{k}_us_per_call_min"] / n[f"{k}_us_per_call_min"], 2) for k in PARTS},
        "ingest_read": round(p["ingest_read_cpu_us_per_record_min"] / n["ingest_read_cpu_us_per_record_min"], 3),
        "dedup_step": round(p["dedup_cpu_us_per_record_min"] / n["dedup_cpu_us_per_record_min"], 2),
        "chain": round(p["chain_cpu_us_per_record_min"] / n["chain_cpu_us_per_record_min"], 3)}
    first = runs["python"]["kernel"][0]
    return {"traces": traces, "seed": seed, "rounds": rounds, "reps": reps, "cpus": os.cpu_count(),
            "calls": {k: first[k]["calls"] for k in PARTS},
            "chars_per_call": {k: first[k]["chars_per_call"] for k in KERNELS},
            "summary": summary, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", nargs="?", choices=("compare", "kernel"), default="compare",
                    help="compare (default): alternate fresh processes; kernel: one process's kernel timing")
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench", help="where generated days are kept (curation_chain's)")
    ap.add_argument("--rounds", type=int, default=3, help="processes of each kind")
    ap.add_argument("--reps", type=int, default=5, help="passes over the texts in a kernel process (minimum)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if args.cmd == "kernel":
        print(json.dumps(kernel(args.traces, args.seed, args.cache, args.reps)))
        return 0
    report = compare(args.traces, args.seed, args.cache, args.rounds, args.reps)
    emit(report, args.json)
    return 0 if all(s["identical_to_reference"] for k, s in report["summary"].items() if k != "speedup") else 1


if __name__ == "__main__":
    sys.exit(main())
