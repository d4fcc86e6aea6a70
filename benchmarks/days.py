"""The stage table over several days, each day from its own fresh data dir (issue 18: a result counts
only if it holds on other days).

    .venv/bin/python benchmarks/days.py --run --dates 2026-11-27 2026-11-28 2026-11-29 --root /tmp/oro-days
    .venv/bin/python benchmarks/days.py --dates 2026-11-27 2026-11-28 2026-11-29 --root /tmp/oro-days  # table only

With ``--run`` each day runs the README's main command (``oro-assets main --date D``) with
``ORO_DATA_DIR=<root>/<D>/data`` (removed first: a fresh state); its wall time is recorded. Then the
per-stage table (mean and range over days, pooled Wilson interval, paired change over the previous
stage) is printed and written to ``--out`` (JSON) and beside it as Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oro_assets.evaluation.days import load_day, markdown, stage_table  # noqa: E402


def run_day(day: str, root: Path, extra: list[str]) -> float:
    data = root / day / "data"
    shutil.rmtree(data.parent, ignore_errors=True)
    data.mkdir(parents=True)
    env = {**os.environ, "ORO_DATA_DIR": str(data), "TQDM_DISABLE": "1", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    started = time.monotonic()
    with open(data.parent / "main.log", "w") as log:
        proc = subprocess.run([str(ROOT / ".venv" / "bin" / "oro-assets"), "main", "--date", day, *extra],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"main --date {day} failed (exit {proc.returncode}); see {data.parent / 'main.log'}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dates", nargs="+", required=True)
    ap.add_argument("--root", type=Path, default=Path("/tmp/oro-days"))
    ap.add_argument("--run", action="store_true", help="run the main command for each day first (fresh data dirs)")
    ap.add_argument("--category", default="Product")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "days.json")
    ap.add_argument("main_args", nargs="*", help="extra arguments for oro-assets main (after --)")
    args = ap.parse_args()
    walls = {}
    if args.run:
        for day in args.dates:
            walls[day] = round(run_day(day, args.root, args.main_args), 1)
            print(f"{day}: main finished in {walls[day]:.0f}s", flush=True)
    days = {day: load_day(args.root / day / "data" / "reports", day, args.category) for day in args.dates}
    table = stage_table(days)
    overall = stage_table({day: load_day(args.root / day / "data" / "reports", day, None) for day in args.dates})
    md = markdown(table, args.category) + "\n\nAll categories:\n\n" + markdown(overall, "all")
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"dates": args.dates, "category": args.category, "main_wall_s": walls,
                                    "table": table, "all_categories": overall}, indent=2, sort_keys=True))
    args.out.with_suffix(".md").write_text(md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
