"""Structural filter precision and recall for ``agentic``, per record shape, against the truth file.

Simulates one day with the realistic mix (the recorder writes every ORO record by ORO's rules),
reads it through the production ingest and normaliser, labels every trace with the production
structural filter, and compares with the simulator's truth (``_truth/<date>.jsonl``: the policy's
structural class). Cells: miner kind × answer shape (text array / Qwen3 object / structured) ×
inference bodies (all kept / some dropped by ORO's 2,000-character rule).

    .venv/bin/python benchmarks/structural_shapes.py --traces 20000 [--miners 400] [--out benchmarks/results/structural_shapes.json]

Target: precision and recall of ``agentic`` >= 0.97 in every cell with >= 50 traces. In a cell whose
truth is all one class only one of the two is defined: recall for agentic cells, and for sub-task
cells the share wrongly kept as agentic (1 - specificity) is what lowers the precision of the whole.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oro_assets.arena.firehose import simulate_day  # noqa: E402
from oro_assets.curation.structural import AGENTIC, label_structural  # noqa: E402
from oro_assets.traces.ingest import iter_normalized  # noqa: E402
from oro_assets.traces.reader import Quarantined, iter_partition_files  # noqa: E402


def measure(n_traces: int, date: str, seed: int, workdir: Path, n_miners: int = 400) -> dict:
    t0 = time.perf_counter()
    # many miners, so every kind meets every answer shape and provider (the default day has 40)
    simulate_day(date, n_traces, workdir, seed=seed, n_miners=n_miners)
    truth = {}
    for line in (workdir / "_truth" / f"{date}.jsonl").read_text().splitlines():
        t = json.loads(line)
        truth[t["line_key"]] = t
    files = iter_partition_files(str(workdir), date)
    cells: dict[tuple, Counter] = defaultdict(Counter)
    rules: Counter = Counter()
    misses: dict[tuple, list] = defaultdict(list)
    for item in iter_normalized(files, date):
        if isinstance(item, Quarantined):
            continue
        row, _parsed = item
        key = f"{Path(row['source_file']).name}:{row['line_no']}"
        t = truth.get(key)
        if t is None or t.get("duplicate_of") or t["format"] not in ("oro_envelope", "dialogue_only"):
            continue
        label, ev = label_structural(row)
        rules[(label, ev["rule"])] += 1
        cell = (t["policy_kind"], t["answer_shape"], t["bodies"])
        truly = t["structural"] == AGENTIC
        said = label == AGENTIC
        cells[cell]["tp" if truly and said else "fn" if truly else "fp" if said else "tn"] += 1
        if truly != said and len(misses[cell]) < 3:
            misses[cell].append({"line": key, "label": label, "rule": ev["rule"], "reason": ev["reason"]})
    out_cells = []
    for (kind, shape, bodies), c in sorted(cells.items()):
        n = sum(c.values())
        tp, fp, fn = c["tp"], c["fp"], c["fn"]
        out_cells.append({
            "kind": kind, "answer_shape": shape, "bodies": bodies, "n": n, **dict(c),
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None,
            "false_agentic_rate": round(fp / (fp + c["tn"]), 4) if fp + c["tn"] else None,
            "misses": misses.get((kind, shape, bodies), []),
        })
    total = Counter()
    for c in cells.values():
        total.update(c)
    by_shape: dict[tuple, Counter] = defaultdict(Counter)
    for (_kind, shape, bodies), c in cells.items():
        by_shape[(shape, bodies)].update(c)

    def pr(c: Counter) -> dict:
        tp, fp, fn = c["tp"], c["fp"], c["fn"]
        return {"n": sum(c.values()), "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / (tp + fn), 4) if tp + fn else None}

    return {
        "traces": n_traces, "miners": n_miners, "date": date, "seed": seed, "seconds": round(time.perf_counter() - t0, 1),
        "overall": pr(total),
        "by_shape": [{"answer_shape": s, "bodies": b, **pr(c)} for (s, b), c in sorted(by_shape.items())],
        "rules": [{"label": lab, "rule": r, "n": n} for (lab, r), n in sorted(rules.items())],
        "cells": out_cells,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=20000)
    ap.add_argument("--date", default="2026-03-01")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--miners", type=int, default=400)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = measure(args.traces, args.date, args.seed, Path(tmp), args.miners)
    print(f"overall agentic precision {report['overall']['precision']} recall {report['overall']['recall']} "
          f"on {report['overall']['n']} traces ({report['seconds']} s)")
    print(f"{'kind':<28}{'shape':<14}{'bodies':<9}{'n':>6}{'prec':>8}{'recall':>8}{'false+':>8}")
    for c in report["cells"]:
        def f(x):
            return "-" if x is None else f"{x:.3f}"
        flag = "" if c["n"] < 50 or ((c["recall"] is None or c["recall"] >= 0.97)
                                     and (c["false_agentic_rate"] is None or c["false_agentic_rate"] <= 0.03)) else "  <"
        print(f"{c['kind']:<28}{c['answer_shape']:<14}{c['bodies']:<9}{c['n']:>6}{f(c['precision']):>8}"
              f"{f(c['recall']):>8}{f(c['false_agentic_rate']):>8}{flag}")
    for r in report["rules"]:
        print(f"  rule {r['label']:<13}{r['rule']:<26}{r['n']:>7}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
