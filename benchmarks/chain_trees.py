"""The whole curation chain of two source trees, before and after a change, in alternating fresh processes (issue 33).

Each round runs ``curation_chain.py`` (this folder's, the same script for both) once per tree, the package imported
from that tree (``PYTHONPATH``; build each tree's native extension first), the order flipped every round (AB BA
...). Every process measures ``orjson.loads`` of the same lines beside its chain, so each chain figure has its own
baseline from the same moment; the report gives, per tree and per day (the a6b1cf3-era day and, with
``--later-traces``, the later-era day), the chain's CPU us a record cold (and warm, unless ``--no-warm``), the
ingest read's, ``orjson``'s us a line and the chain / ``orjson`` ratio per core, as minimum and median over the
rounds, and each round's paired difference. With ``--ledger-check`` every process compares its ledgers with the
saved ones (``curation_chain.py --ledger-dir``) and the report says whether all were identical.

    git clone /work/main /tmp/before && (cd /tmp/before && git checkout <commit> && python setup.py build_ext --inplace)
    nice -n 19 .venv/bin/python benchmarks/chain_trees.py /tmp/before . --traces 3000 --later-traces 1500 \\
        --rounds 4 --ledger-check /tmp/ref --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import emit  # noqa: E402

PROBE = "import oro_assets, oro_assets.native as n; print(oro_assets.__file__); print(n.why)"


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def probe(tree: Path) -> dict[str, str]:
    """Where the package is imported from under ``tree`` and whether its kernels are in use."""
    out = subprocess.run([sys.executable, "-c", PROBE], env=_env(tree), cwd=tree, check=True, capture_output=True,
                         text=True).stdout.splitlines()
    return {"package": out[0], "native": out[1]}


def run(tree: Path, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, str(HERE / "curation_chain.py"), "--traces", str(args.traces), "--seed", str(args.seed),
               "--cache", args.cache, "--json", str(out)]
        if args.later_traces:
            cmd += ["--later-traces", str(args.later_traces)]
        if args.no_warm:
            cmd.append("--no-warm")
        if args.ledger_check:
            cmd += ["--ledger-check", args.ledger_check]
        t0 = time.time()
        done = subprocess.run(cmd, env=_env(tree), cwd=tree, capture_output=True, text=True)
        if not out.exists():
            raise SystemExit(f"curation_chain.py under {tree} failed:\n{done.stderr[-2000:]}")
        report = json.loads(out.read_text())
        report["_wall_s"] = round(time.time() - t0, 1)
        report["_rc"] = done.returncode
        return report


def figures(day: dict) -> dict:
    """What one process measured on one day."""
    runs = day["runs"]  # records_per_s_cpu: from the unrounded CPU seconds, as the ratios are
    out = {"chain_cpu_us": round(1e6 / runs["chain"]["records_per_s_cpu"], 1),
           "ingest_read_cpu_us": runs["chain"]["process_cpu_us_per_record"]["ingest_read"],
           "orjson_cpu_us": round(1e6 / runs["orjson_loads"]["records_per_s_cpu"], 2),
           "vs_orjson_cpu": day["ratios"]["chain_vs_orjson_cpu"],
           "vs_naive_cpu": day["ratios"]["chain_vs_naive_cpu"],
           "ledger_sha256": runs["chain"]["ledger_sha256"]}
    if "chain_warm" in runs:
        out["warm_cpu_us"] = round(1e6 / runs["chain_warm"]["records_per_s_cpu"], 1)
        out["warm_vs_orjson_cpu"] = day["ratios"]["chain_warm_vs_orjson_cpu"]
    return out


def summary(per_round: list[dict]) -> dict:
    keys = [k for k in per_round[0] if k != "ledger_sha256"]
    out: dict = {}
    for k in keys:
        values = [r[k] for r in per_round]
        best = max(values) if k.startswith(("vs_", "warm_vs")) else min(values)
        out[k] = {"best": best, "median": round(statistics.median(values), 3), "all": values}
    out["ledger_sha256"] = sorted({r["ledger_sha256"] for r in per_round})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path, help="the source tree before the change (its extension built)")
    ap.add_argument("after", type=Path, help="the source tree after it")
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--later-traces", type=int, default=1500, help="later-era day beside it (0: none)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--cache", default="/tmp/chain-bench")
    ap.add_argument("--rounds", type=int, default=4, help="processes of each tree")
    ap.add_argument("--no-warm", action="store_true")
    ap.add_argument("--ledger-check", help="saved ledgers every process must match (curation_chain.py --ledger-dir)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    report: dict = {"traces": args.traces, "later_traces": args.later_traces, "rounds": args.rounds,
                    "cpus": os.cpu_count(), "trees": {k: {"path": str(v), **probe(v)} for k, v in trees.items()}}
    results: dict[str, list[dict]] = {k: [] for k in trees}
    loads: list[float] = []
    for i in range(args.rounds):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            r = run(trees[name], args)
            results[name].append(r)
            loads.append(r["loadavg_1m"])
            print(f"round {i + 1} {name}: {figures(r)['chain_cpu_us']} us a record (a6b1cf3), "
                  f"{r['_wall_s']} s, load {r['loadavg_1m']}", file=sys.stderr)
    days = {"a6b1cf3": lambda r: r}
    if args.later_traces:
        days["later"] = lambda r: r["later_era"]
    report["loadavg_1m"] = {"min": min(loads), "max": max(loads)}
    report["ledgers_identical"] = all(r.get("ledger_identical") and all(r["ledger_identical"].values())
                                      for rs in results.values() for r in rs) if args.ledger_check else None
    for day, pick in days.items():
        per = {name: [figures(pick(r)) for r in rs] for name, rs in results.items()}
        report[day] = {name: summary(v) for name, v in per.items()}
        report[day]["paired_after_minus_before_cpu_us"] = [
            round(a["chain_cpu_us"] - b["chain_cpu_us"], 1) for a, b in zip(per["after"], per["before"], strict=True)]
        report[day]["speedup_best"] = round(report[day]["before"]["chain_cpu_us"]["best"]
                                            / report[day]["after"]["chain_cpu_us"]["best"], 3)
    emit(report, args.json)
    return 0 if report["ledgers_identical"] in (True, None) else 1


if __name__ == "__main__":
    sys.exit(main())
