"""Gating unscored traces with the LLM judge over HTTP, one request at a time against N in flight.

A local OpenAI-compatible stub (``oro_assets.judge.testing``) answers every request after
``--latency`` seconds, standing in for a remote judge model. The same traces go through
``curation.gates.gate_traces`` with ``judge_concurrency`` 1 (the baseline, measured in the same
run) and each value of ``--concurrency``; the report gives wall time, the speed-up over the
baseline, the most requests the stub saw at once, and whether kept/rejected rows equal the
baseline's.

    python benchmarks/judge_concurrency.py                      # 160 traces, 50 ms, concurrency 4 8 16
    python benchmarks/judge_concurrency.py --traces 400 --latency 0.2 --concurrency 8 32
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import emit  # noqa: E402


def unscored_rows(n: int, seed: int = 15) -> list[dict]:
    """``n`` distinct normalised ORO envelopes without a validator score (each goes to the judge)."""
    import hashlib

    from oro_assets import jsonio
    from oro_assets.traces.normalize import normalize_record
    from oro_assets.traces.samples import oro_envelope
    from oro_assets.traces.schema import Provenance

    rows = []
    for i in range(n):
        env = oro_envelope(seed + i)
        env.pop("reasoning", None)
        env["query"] = f"{env.get('query', '')} #{i}"
        line = jsonio.dumps(env).encode()
        rows.append(normalize_record(env, provenance=Provenance("bench.jsonl", i + 1, "2026-03-01",
                                                                  hashlib.sha256(line).hexdigest())))
    return rows


def run(rows: list[dict], latency: float, concurrency: int) -> dict:
    from oro_assets.curation.gates import gate_traces
    from oro_assets.judge.llm import LLMJudge, LLMJudgeConfig
    from oro_assets.judge.testing import StubOpenAIServer, slow_reply, verdict_reply

    with StubOpenAIServer(default=slow_reply(latency, verdict_reply(0.9))) as server:
        judge = LLMJudge(LLMJudgeConfig(base_url=server.base_url, models=("judge",), timeout_s=30.0), api_key="k")
        t0 = time.perf_counter()
        out = gate_traces(rows, judge=judge, judge_concurrency=concurrency)
        wall = time.perf_counter() - t0
        return {"concurrency": concurrency, "wall_s": round(wall, 2), "requests": len(server.requests),
                "max_in_flight": server.max_in_flight, "kept": len(out.kept), "_out": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=160)
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the stub takes per request")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    rows = unscored_rows(args.traces)
    base = run(rows, args.latency, 1)
    base_out = base.pop("_out")
    base["speedup"] = 1.0
    runs = [base]
    for concurrency in args.concurrency:
        r = run(rows, args.latency, concurrency)
        out = r.pop("_out")
        r["speedup"] = round(base["wall_s"] / r["wall_s"], 2)
        r["same_rows_as_baseline"] = out.kept == base_out.kept and out.rejected == base_out.rejected
        runs.append(r)
    report = {"traces": args.traces, "latency_s": args.latency, "runs": runs}
    emit(report, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
