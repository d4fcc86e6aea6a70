"""Compiled builds of the chain's pure-Python hot modules against the source, part by part (issue 33).

Issue 33 asked whether compiled code pays for the normaliser, the structural filter and the rule judge. This
builds a copy of a commit with those modules (``MODULES``) compiled in place, by Cython (the unchanged
``.py`` files, ``annotation_typing=False`` so that type hints change no behaviour) or by mypyc (which
needs ``compiled_parts_mypyc.patch``: the annotations mypy rejects fixed or silenced, one expression
mypyc cannot compile rewritten, the ``except ... as exc`` names made distinct, and ``RuleJudge`` opened to
interpreted subclasses), and measures in alternating fresh processes, each tree on ``PYTHONPATH``:

* ``normalize_us_per_record``: ``traces.normalize.normalize_record`` over the day's parsed records;
* ``structural_us_per_record``: ``curation.structural.structural_filter`` over the normalised rows;
* ``rule_judge_cold_us_per_trace``: ``RuleJudge.judge`` over the rows the gates would judge, its
  per-text caches cleared first (cold);

each the minimum over ``--reps`` passes in a process, then the minimum over ``--rounds`` processes, with
ratios against the first tree. The chain itself is measured by ``curation_chain.py`` with the same
``PYTHONPATH`` (its ``--ledger-check`` proves the verdicts unchanged). Tools: ``--tools`` is a folder
holding Cython and mypy (``pip install --target DIR cython mypy``); they are not project dependencies.

    python benchmarks/compiled_parts.py build cython /tmp/cp/cython --tools /tmp/cp/tools
    python benchmarks/compiled_parts.py build mypyc /tmp/cp/mypyc --tools /tmp/cp/tools
    python benchmarks/compiled_parts.py build source /tmp/cp/source
    python benchmarks/compiled_parts.py compare /tmp/cp/source /tmp/cp/cython /tmp/cp/mypyc:/tmp/cp/tools --json out.json
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODULES = ["oro_assets/traces/normalize.py", "oro_assets/traces/formats.py", "oro_assets/traces/calls.py",
           "oro_assets/judge/rule.py", "oro_assets/judge/evidence.py", "oro_assets/curation/structural.py"]
PARTS = ("normalize_us_per_record", "structural_us_per_record", "rule_judge_cold_us_per_trace")

_CYTHON_SETUP = """
import sys
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize(sys.argv[1:], quiet=True,
      compiler_directives={"language_level": 3, "annotation_typing": False, "binding": True}),
      script_args=["build_ext", "--inplace"])
"""


def build(kind: str, out: Path, commit: str, tools: str | None) -> None:
    """A copy of ``commit``'s tree in ``out`` with ``MODULES`` compiled by ``kind`` (``source``: none)."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as fh:
        subprocess.run(["git", "archive", commit], cwd=REPO, stdout=fh, check=True)
        fh.seek(0)
        with tarfile.open(fileobj=fh) as tar:
            tar.extractall(out, filter="data")
    # the native kernels built too, as in a checkout (without them every tree measures the Python references)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=out, check=True,
                   capture_output=True)
    env = {**os.environ, "PYTHONPATH": tools or ""}
    if kind == "cython":
        subprocess.run([sys.executable, "-c", _CYTHON_SETUP, *MODULES], cwd=out, env=env, check=True)
    elif kind == "mypyc":
        subprocess.run(["git", "apply", str(HERE / "compiled_parts_mypyc.patch")], cwd=out, check=True)
        subprocess.run([sys.executable, "-m", "mypyc", "--ignore-missing-imports", "--follow-imports=skip", *MODULES],
                       cwd=out, env={**env, "MYPYC_OPT_LEVEL": "3"}, check=True)


def parts(day: str, reps: int) -> dict:
    """The three parts' CPU in this process (whatever ``oro_assets`` is on the path)."""
    import gc

    from oro_assets.curation import gates, structural
    from oro_assets.curation.rows import steps_of
    from oro_assets.judge import rule
    from oro_assets.traces import normalize
    from oro_assets.traces.ingest import ingest_row_batches
    from oro_assets.traces.reader import RawLine, RecordReader

    files = sorted(glob.glob(f"{day}/plain/part-*.jsonl"))
    date = "2026-03-01"
    lines = [it for it in RecordReader(files, partition=date) if isinstance(it, RawLine)]
    rows = [r for batch, _, _ in ingest_row_batches(files, date) for r in batch]
    views = []
    for r in structural.structural_filter(rows).kept:
        reason, _, facts = gates.format_gate(r)
        if reason is None and gates.validator_score(r) is None:
            reason, _ = gates.grounding_gate(r, facts["recommended_ids"], facts["messages"], steps_of(r))
            if reason is None:
                views.append({**r, "messages": facts["messages"], "steps": steps_of(r)})

    def clear() -> None:
        for mod in (rule, structural):
            for name in dir(mod):
                if hasattr(getattr(mod, name), "cache_clear"):
                    getattr(mod, name).cache_clear()

    def normalise_all() -> None:
        for it in lines:
            try:  # noqa: SIM105 - a with-block per record would be timed too
                normalize.normalize_record(it.obj, provenance=it.provenance)
            except normalize.NormalizationError:
                pass

    judge = rule.RuleJudge()

    def judge_all() -> None:
        for v in views:
            judge.judge(v)

    def best(fn, n: int) -> float:
        low = float("inf")
        for _ in range(reps):
            clear()
            t0 = time.thread_time()
            fn()
            low = min(low, time.thread_time() - t0)
        return round(1e6 * low / n, 1)

    from oro_assets import native

    gc.disable()
    return {"module": normalize.__file__, "native": native.why, "records": len(lines), "judged": len(views),
            "normalize_us_per_record": best(normalise_all, len(lines)),
            "structural_us_per_record": best(lambda: structural.structural_filter(rows), len(rows)),
            "rule_judge_cold_us_per_trace": best(judge_all, len(views))}


def compare(trees: list[str], day: str, reps: int, rounds: int) -> dict:
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    for i in range(rounds):
        for tree in (trees if i % 2 == 0 else trees[::-1]):
            out = subprocess.run([sys.executable, __file__, "parts", "--day", day, "--reps", str(reps)],
                                 env={**os.environ, "PYTHONPATH": tree}, cwd="/", capture_output=True, text=True,
                                 check=True)
            runs[tree].append(json.loads(out.stdout))
    best = {t: {p: min(r[p] for r in rs) for p in PARTS} for t, rs in runs.items()}
    base = best[trees[0]]
    return {"day": day, "reps": reps, "rounds": rounds, "loadavg_1m": round(os.getloadavg()[0], 2),
            "modules": {t: rs[0]["module"] for t, rs in runs.items()}, "runs": runs, "min": best,
            "speedup_vs_first": {t: {p: round(base[p] / b[p], 2) for p in PARTS} for t, b in best.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="a copy of a commit with MODULES compiled (or not: source)")
    b.add_argument("kind", choices=("source", "cython", "mypyc"))
    b.add_argument("out")
    b.add_argument("--commit", default="HEAD")
    b.add_argument("--tools", help="a folder holding Cython / mypy (pip install --target)")
    p = sub.add_parser("parts", help="measure the parts in this process (oro_assets from PYTHONPATH)")
    c = sub.add_parser("compare", help="measure each tree (a PYTHONPATH) in alternating fresh processes")
    c.add_argument("trees", nargs="+")
    c.add_argument("--rounds", type=int, default=4)
    c.add_argument("--json")
    for s in (p, c):
        s.add_argument("--day", default="/tmp/chain-bench/s15_n3000",
                       help="a generated day (curation_chain.py --traces 3000 makes this one)")
        s.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        build(args.kind, Path(args.out), args.commit, args.tools)
    elif args.cmd == "parts":
        print(json.dumps(parts(args.day, args.reps)))
    else:
        report = compare(args.trees, args.day, args.reps, args.rounds)
        text = json.dumps(report, indent=2)
        print(text)
        if args.json:
            Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
