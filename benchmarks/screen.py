"""Screen an SFT recipe on a world's dev pool, and compare two evaluations problem by problem.

    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/screen.py sft --name every_shape \
        --set row_shapes=null --set multi_item_drills=0.25 [--profile-set length_grouped=true] --out /tmp/screens
    .venv/bin/python benchmarks/screen.py compare /tmp/screens/eval_product_only /tmp/screens/eval_every_shape

``sft`` trains the profile's sft stage (warm-up included) from the data dir's ``base`` checkpoint on its curated
``sft_dataset``, with ``--set`` overrides of the stage config (JSON values), then evaluates it with ``oro-assets
eval --pool dev`` (every dev problem: greedy plus 8 samples at T 0.7). A screen reads the ``dev`` pool only: what
it chooses is confirmed on unseen worlds (``benchmarks/days.py``). ``compare`` pairs two evaluations of the same
problems: greedy success and pass@1 per category, the paired change with a 95% bootstrap interval over problems
(one world: the interval counts problems only, not training seeds).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CATEGORIES = ("all", "Product", "Shop", "Voucher")


def _overrides(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        parsed = json.loads(value)
        out[key] = tuple(parsed) if isinstance(parsed, list) else parsed
    return out


def screen_sft(name: str, overrides: dict, out: Path, seed: int, profile_overrides: dict | None = None) -> Path:
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.settings import load_settings
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages.sft import run_sft

    settings = load_settings()
    layout = settings.layout
    profile = with_overrides(get_profile(settings.model_profile, settings), "sft", **overrides)
    profile = dataclasses.replace(profile, **(profile_overrides or {}))
    started = time.monotonic()
    result = run_sft(profile, layout.dataset("sft_dataset", ".jsonl"), current_checkpoint(layout.checkpoints, "base"),
                     out / f"ck_{name}", catalogue=Catalogue.from_jsonl(layout.world_catalogue), seed=seed)
    print(f"sft {name}: {time.monotonic() - started:.0f} s -> {result.path}", flush=True)
    eval_dir = out / f"eval_{name}"
    subprocess.run([str(Path(sys.executable).with_name("oro-assets")), "eval", "--checkpoint", str(result.path),
                    "--problems", str(layout.dataset("eval_problems", ".jsonl")), "--pool", "dev",
                    "--out", str(eval_dir)], check=True)
    return eval_dir


def _outcomes(eval_dir: Path) -> tuple[dict[str, float], dict[str, float], dict[str, str], str]:
    from oro_assets.evaluation.report import EvalResult

    result = EvalResult.load(eval_dir / "eval_result.json")
    greedy = {str(r["problem_id"]): float(bool(r.get("greedy_success"))) for r in result.rows}
    pass1 = {str(r["problem_id"]): int(r["c"]) / int(r["n"]) for r in result.rows if r.get("n")}
    category = {str(r["problem_id"]): str(r.get("category")) for r in result.rows}
    return greedy, pass1, category, str(result.config.get("pool"))


def compare(before: Path, after: Path) -> list[dict]:
    from oro_assets.evaluation.worlds import clustered_interval

    g0, p0, cat, pool0 = _outcomes(before)
    g1, p1, _, pool1 = _outcomes(after)
    if pool0 != pool1:
        raise SystemExit(f"the two evaluations read different pools ({pool0}, {pool1}): not comparable")
    rows = []
    for name in CATEGORIES:
        for metric, a, b in (("greedy", g0, g1), ("pass@1", p0, p1)):
            ids = sorted(p for p in set(a) & set(b) if name == "all" or cat[p] == name)
            if not ids:
                continue
            delta, low, high = clustered_interval([[b[p] - a[p] for p in ids]])
            rows.append({"category": name, "metric": metric, "n": len(ids),
                         "before": 100 * sum(a[p] for p in ids) / len(ids),
                         "after": 100 * sum(b[p] for p in ids) / len(ids),
                         "delta": 100 * delta, "low": 100 * low, "high": 100 * high})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sft", help="train the sft stage with overrides from the data dir's base, then the dev eval")
    s.add_argument("--name", required=True)
    s.add_argument("--set", action="append", default=[], metavar="FIELD=JSON", help="sft config override")
    s.add_argument("--profile-set", action="append", default=[], metavar="FIELD=JSON",
                   help="model profile override (e.g. length_grouped=true)")
    s.add_argument("--out", type=Path, default=Path("/tmp/oro-screens"))
    s.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("compare", help="paired change of two evaluations of the same problems")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "sft":
        print(screen_sft(args.name, _overrides(args.set), args.out, args.seed, _overrides(args.profile_set)))
        return 0
    for r in compare(args.before, args.after):
        print(f"{r['category']:8s} {r['metric']:7s} n={r['n']:4d}  {r['before']:5.1f} -> {r['after']:5.1f}  "
              f"{r['delta']:+5.1f} ({r['low']:+.1f} to {r['high']:+.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
