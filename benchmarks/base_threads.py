"""The tiny base's copy pre-training on 1 and on 2 torch threads: wall time of each and whether the weights match.

Builds the base of a main run's data dir (its catalogue and train problems, read only) into a temporary dir once
per thread count, alternating ``--repeats`` times, each in a fresh process. Run it alone: a second process on the
cores slows the 2-thread build most.

    .venv/bin/python benchmarks/base_threads.py --data /tmp/m38/data [--repeats 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import print_result, run_fresh  # noqa: E402


def _build(data: str, out: str, threads: int) -> None:
    sys.path.insert(0, str(ROOT))
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.training.data import load_rows
    from oro_assets.training.profiles import get_profile
    from oro_assets.training.tiny_model import build_base_checkpoint

    profile = dataclasses.replace(get_profile("tiny"), train_threads=threads)
    problems = load_rows(Path(data) / "checkpoints" / "_inputs" / "train_problems.jsonl")
    t0 = time.perf_counter()
    path = build_base_checkpoint(profile, out, Catalogue.from_jsonl(Path(data) / "arena" / "catalogue.jsonl"), problems)
    wall = time.perf_counter() - t0
    digest = hashlib.sha256((path / "model" / "model.safetensors").read_bytes()).hexdigest()
    print_result({"threads": threads, "wall_s": round(wall, 1), "weights_sha256": digest})


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["_build"]:
        _build(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="a main run's data dir (read only)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="base_threads.") as tmp:
        for rep in range(args.repeats):
            for threads in ((1, 2) if rep % 2 == 0 else (2, 1)):
                out = Path(tmp) / f"t{threads}r{rep}"
                runs.append(run_fresh([__file__, "_build", str(args.data.resolve()), str(out), str(threads)],
                                      f"build on {threads} threads", cwd=tmp))
                print(runs[-1], flush=True)
    by = {t: [r["wall_s"] for r in runs if r["threads"] == t] for t in (1, 2)}
    report = {"runs": runs, "median_wall_s": {t: sorted(v)[len(v) // 2] for t, v in by.items()},
              "same_weights": len({r["weights_sha256"] for r in runs}) == 1}
    report["speedup_2_over_1"] = round(report["median_wall_s"][1] / report["median_wall_s"][2], 2)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
