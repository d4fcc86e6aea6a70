"""Structural filter precision and recall for ``agentic``, per record shape, against the truth file.

Simulates one day with the realistic mix (the recorder writes every ORO record by ORO's rules),
reads it through the production ingest and normaliser, labels every trace with the production
structural filter, and compares with the simulator's truth (``_truth/<date>.jsonl``: the policy's
structural class). Cells: miner kind × answer shape (text array / Qwen3 object / structured) ×
recorder era (ORO's a6b1cf3 recorder, or its later one that keeps every body) × inference bodies
(all kept / some dropped by a6b1cf3's 2,000-character rule). ``--later-share`` sets the share of ORO
records the later recorder writes (default 0.5: both eras on one day; 0 gives the a6b1cf3-only day).

ORO's own ``agentic_richness`` (traces/calls.oro_agentic_richness) is compared with the label per
record shape (era × answer shape × bodies): ``agree`` is the share of records with a computable
richness where richness >= 0.5 exactly when the label is ``agentic``; ``vs_truth`` the same against
the simulator's truth; ``disagree_by`` counts the disagreements by what the richness could not see
(a dropped body, an answer bucketed onto another step, a dispatch the answer did not name) or, for
a record richness calls agentic and the label does not, ``richness_high`` (ORO reads names only and
walks its own step lists, so it can be right where stamps fail the label, or fooled by code that
names the tool).

    .venv/bin/python benchmarks/structural_shapes.py --traces 20000 [--miners 400] [--later-share 0.5] [--out benchmarks/results/structural_shapes.json]

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
from oro_assets.arena.recorder import ERA_A6B1CF3, ERA_LATER  # noqa: E402
from oro_assets.curation.structural import AGENTIC, RICHNESS_AGREES_AT, label_structural  # noqa: E402
from oro_assets.traces.ingest import iter_normalized  # noqa: E402
from oro_assets.traces.reader import Quarantined, iter_partition_files  # noqa: E402


def measure(n_traces: int, date: str, seed: int, workdir: Path, n_miners: int = 400, later_share: float = 0.5) -> dict:
    t0 = time.perf_counter()
    # many miners, so every kind meets every answer shape and provider (the default day has 40)
    shares = {ERA_A6B1CF3: 1.0 - later_share, ERA_LATER: later_share}
    simulate_day(date, n_traces, workdir, seed=seed, n_miners=n_miners, recorder_shares=shares)
    truth = {}
    for line in (workdir / "_truth" / f"{date}.jsonl").read_text().splitlines():
        t = json.loads(line)
        truth[t["line_key"]] = t
    files = iter_partition_files(str(workdir), date)
    cells: dict[tuple, Counter] = defaultdict(Counter)
    rules: Counter = Counter()
    misses: dict[tuple, list] = defaultdict(list)
    rich: dict[tuple, Counter] = defaultdict(Counter)
    rich_sum: dict[tuple, float] = defaultdict(float)
    rich_examples: dict[tuple, list] = defaultdict(list)
    eras: Counter = Counter()
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
        era = t.get("recorder_era", ERA_A6B1CF3)
        eras[(era, ev.get("recorder_era"))] += 1
        cell = (t["policy_kind"], t["answer_shape"], era, t["bodies"])
        shape_key = (era, t["answer_shape"], t["bodies"])
        if _richness(rich[shape_key], rich_sum, shape_key, label, ev, t["structural"] == AGENTIC):
            c = rich[shape_key]
            c[f"kind:{t['policy_kind']}"] += 1
            if c["examples"] < 3:
                c["examples"] += 1
                rich_examples[shape_key].append({"line": key, "kind": t["policy_kind"], "label": label,
                                                 "note": ev.get("richness_note")})
        truly = t["structural"] == AGENTIC
        said = label == AGENTIC
        cells[cell]["tp" if truly and said else "fn" if truly else "fp" if said else "tn"] += 1
        if truly != said and len(misses[cell]) < 3:
            misses[cell].append({"line": key, "label": label, "rule": ev["rule"], "reason": ev["reason"]})
    out_cells = []
    for (kind, shape, era, bodies), c in sorted(cells.items()):
        n = sum(c.values())
        tp, fp, fn = c["tp"], c["fp"], c["fn"]
        out_cells.append({
            "kind": kind, "answer_shape": shape, "recorder_era": era, "bodies": bodies, "n": n, **dict(c),
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None,
            "false_agentic_rate": round(fp / (fp + c["tn"]), 4) if fp + c["tn"] else None,
            "misses": misses.get((kind, shape, era, bodies), []),
        })
    total = Counter()
    for c in cells.values():
        total.update(c)
    by_shape: dict[tuple, Counter] = defaultdict(Counter)
    for (_kind, shape, era, bodies), c in cells.items():
        by_shape[(era, shape, bodies)].update(c)

    def pr(c: Counter) -> dict:
        tp, fp, fn = c["tp"], c["fp"], c["fn"]
        return {"n": sum(c.values()), "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / (tp + fn), 4) if tp + fn else None}

    return {
        "traces": n_traces, "miners": n_miners, "date": date, "seed": seed, "seconds": round(time.perf_counter() - t0, 1),
        "overall": pr(total),
        "by_shape": [{"recorder_era": e, "answer_shape": s, "bodies": b, **pr(c)} for (e, s, b), c in sorted(by_shape.items())],
        "later_share": later_share,
        "recorder_era_read": [{"written": w, "read": r, "n": n} for (w, r), n in sorted(eras.items(), key=str)],
        "richness_agrees_at": RICHNESS_AGREES_AT,
        "richness_by_shape": [{**_richness_row(k, rich[k], rich_sum), "examples": rich_examples.get(k, [])}
                              for k in sorted(rich)],
        "richness_overall": _richness_row(("all", "all", "all"), sum(rich.values(), Counter()),
                                          {("all", "all", "all", lab): sum(v for k, v in rich_sum.items() if k[3] == lab)
                                           for lab in ("agentic", "not_agentic")}),
        "rules": [{"label": lab, "rule": r, "n": n} for (lab, r), n in sorted(rules.items())],
        "cells": out_cells,
    }


def _richness(c: Counter, sums: dict, key: tuple, label: str, ev: dict, truly_agentic: bool) -> bool:
    """Count one record's ORO richness against its label and its truth; True when they disagree."""
    value = (ev.get("oro_richness") or {}).get("agentic_richness")
    c["n"] += 1
    if value is None:
        c["unmeasured"] += 1
        return False
    side = "agentic" if label == AGENTIC else "not_agentic"
    c["measured"] += 1
    c[f"n_{side}"] += 1
    sums[(*key, side)] += value
    high = value >= RICHNESS_AGREES_AT
    c["agree"] += high == (label == AGENTIC)
    c["agree_truth"] += high == truly_agentic
    c["label_agree_truth"] += (label == AGENTIC) == truly_agentic
    if high != (label == AGENTIC):
        if high:
            c["disagree:richness_high"] += 1
        for cause, n in (ev["oro_richness"].get("misses") or {}).items():
            if not high and n:
                c[f"disagree:{cause}"] += 1
    return high != (label == AGENTIC)


def _richness_row(key: tuple, c: Counter, sums: dict) -> dict:
    era, shape, bodies = key
    m = c["measured"]
    return {"recorder_era": era, "answer_shape": shape, "bodies": bodies, "n": c["n"], "measured": m,
            "agree": round(c["agree"] / m, 4) if m else None,
            "vs_truth": round(c["agree_truth"] / m, 4) if m else None,
            "label_vs_truth": round(c["label_agree_truth"] / m, 4) if m else None,
            "mean_richness_agentic": round(sums.get((*key, "agentic"), 0.0) / c["n_agentic"], 4) if c["n_agentic"] else None,
            "mean_richness_not_agentic": (round(sums.get((*key, "not_agentic"), 0.0) / c["n_not_agentic"], 4)
                                          if c["n_not_agentic"] else None),
            "disagree_by": {k.split(":", 1)[1]: v for k, v in sorted(c.items()) if k.startswith("disagree:")},
            "disagree_kinds": {k.split(":", 1)[1]: v for k, v in sorted(c.items()) if k.startswith("kind:")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=20000)
    ap.add_argument("--date", default="2026-03-01")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--miners", type=int, default=400)
    ap.add_argument("--later-share", type=float, default=0.5,
                    help="share of ORO records written by ORO's later recorder (default 0.5)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = measure(args.traces, args.date, args.seed, Path(tmp), args.miners, args.later_share)
    print(f"overall agentic precision {report['overall']['precision']} recall {report['overall']['recall']} "
          f"on {report['overall']['n']} traces ({report['seconds']} s)")
    print(f"{'kind':<28}{'shape':<14}{'era':<9}{'bodies':<9}{'n':>6}{'prec':>8}{'recall':>8}{'false+':>8}")
    for c in report["cells"]:
        def f(x):
            return "-" if x is None else f"{x:.3f}"
        flag = "" if c["n"] < 50 or ((c["recall"] is None or c["recall"] >= 0.97)
                                     and (c["false_agentic_rate"] is None or c["false_agentic_rate"] <= 0.03)) else "  <"
        print(f"{c['kind']:<28}{c['answer_shape']:<14}{c['recorder_era']:<9}{c['bodies']:<9}{c['n']:>6}{f(c['precision']):>8}"
              f"{f(c['recall']):>8}{f(c['false_agentic_rate']):>8}{flag}")
    for r in report["rules"]:
        print(f"  rule {r['label']:<13}{r['rule']:<26}{r['n']:>7}")
    print(f"ORO agentic_richness vs the label (agree: richness >= {RICHNESS_AGREES_AT} exactly when agentic)")
    print(f"{'era':<9}{'shape':<14}{'bodies':<9}{'n':>6}{'agree':>8}{'truth':>8}{'mean+':>8}{'mean-':>8}  disagreements")
    for r in [*report["richness_by_shape"], report["richness_overall"]]:
        def g(x):
            return "-" if x is None else f"{x:.3f}"
        print(f"{r['recorder_era']:<9}{r['answer_shape']:<14}{r['bodies']:<9}{r['measured']:>6}{g(r['agree']):>8}"
              f"{g(r['vs_truth']):>8}{g(r['mean_richness_agentic']):>8}{g(r['mean_richness_not_agentic']):>8}  "
              + ", ".join(f"{k} {v}" for k, v in r["disagree_by"].items()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
