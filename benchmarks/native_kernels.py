"""The native kernels against their Python references, alone and in the whole chain (issue 33).

``ORO_NATIVE=0`` and ``=1`` in alternating fresh processes (``--rounds`` of each, the order flipped every
round), minimum over them:

* the kernel alone: ``dedup.minhash_signature`` over exactly the texts the chain hashes on the day (captured
  by running the chain once in the process, then timed ``--reps`` times in the thread's CPU, minimum), per call
  and per chain record; the process also checks the native signatures equal the Python reference's on every
  captured text;
* the whole chain: ``curation_chain.py --traces N --no-warm`` (cold judge cache; its ``orjson`` baseline in
  the same process tree), its CPU us a record, the dedup step's, and the ratio to ``orjson.loads``.

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

from report import emit  # noqa: E402


def kernel(traces: int, seed: int, cache: str, reps: int) -> dict:
    """This process's kernel timing (whatever ``ORO_NATIVE`` says)."""
    import curation_chain as cc
    import numpy as np

    from oro_assets import native
    from oro_assets.curation import dedup

    files = cc.generate(Path(cache), traces, seed)[1]
    texts: list[str] = []
    signature = dedup.minhash_signature

    def capture(text: str) -> np.ndarray:
        texts.append(text)
        return signature(text)

    dedup.minhash_signature = capture
    with tempfile.TemporaryDirectory() as work:
        cc.chain(files, Path(work))
    dedup.minhash_signature = signature
    identical = all(np.array_equal(signature(t), dedup.minhash_signature_py(t)) for t in texts)
    best = float("inf")
    for _ in range(reps):
        dedup._word_hash.clear()  # the reference's word-hash cache starts empty in a chain run
        t0 = time.thread_time()
        for t in texts:
            signature(t)
        best = min(best, time.thread_time() - t0)
    return {"native": native.enabled(), "why": native.why, "calls": len(texts), "records": traces,
            "words_per_call": round(sum(min(len(t.split()), dedup.MAX_WORDS) for t in texts) / max(1, len(texts)), 1),
            "identical_to_reference": identical,
            "us_per_call": round(1e6 * best / max(1, len(texts)), 2),
            "us_per_record": round(1e6 * best / traces, 2)}


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
                "dedup_cpu_us_per_record": c["process_cpu_us_per_record"]["dedup"],
                "orjson_us_per_line": round(1e6 * o["cpu_s"] / r["records"], 1),
                "chain_vs_orjson_cpu": r["ratios"]["chain_vs_orjson_cpu"],
                "ledger_sha256": c["ledger_sha256"], "loadavg_1m": r["loadavg_1m"]}

    summary: dict = {}
    for name, parts in runs.items():
        ks = parts["kernel"]
        cs = [chain_figures(r) for r in parts["chain"]]
        parts["chain"] = cs
        summary[name] = {
            "kernel_us_per_call_min": min(k["us_per_call"] for k in ks),
            "kernel_us_per_record_min": min(k["us_per_record"] for k in ks),
            "chain_cpu_us_per_record_min": min(c["cpu_us_per_record"] for c in cs),
            "dedup_cpu_us_per_record_min": min(c["dedup_cpu_us_per_record"] for c in cs),
            "orjson_us_per_line_min": min(c["orjson_us_per_line"] for c in cs),
            "chain_vs_orjson_cpu_max": max(c["chain_vs_orjson_cpu"] for c in cs),
            "native": sorted({k["native"] for k in ks}),
            "identical_to_reference": all(k["identical_to_reference"] for k in ks),
            "ledger_sha256": sorted({c["ledger_sha256"] for c in cs}),
        }
    p, n = summary["python"], summary["native"]
    summary["speedup"] = {"kernel": round(p["kernel_us_per_call_min"] / n["kernel_us_per_call_min"], 2),
                          "chain": round(p["chain_cpu_us_per_record_min"] / n["chain_cpu_us_per_record_min"], 3)}
    return {"traces": traces, "seed": seed, "rounds": rounds, "reps": reps, "cpus": os.cpu_count(),
            "calls": runs["python"]["kernel"][0]["calls"],
            "words_per_call": runs["python"]["kernel"][0]["words_per_call"], "summary": summary, "runs": runs}


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
