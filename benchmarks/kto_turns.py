"""Which turns KTO's on-policy labelling gives each label: its parent's rollouts on the train problems, labelled under
every ``kto.turn_credit``, counted by problem category, label and what the turn calls (a recommendation by how many
products it names).

    ORO_DATA_DIR=<main data dir> .venv/bin/python benchmarks/kto_turns.py [--parent <checkpoint dir>] [--seed 0]

The default parent is the data dir's teacher-SFT checkpoint (KTO's declared parent); the rollouts are the stage's own
(same problems, k, sampling and seed), so the counts describe what the stage trained on.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _what(calls: tuple) -> str:
    from oro_assets import jsonio

    if not calls:
        return "none"
    name, arguments = calls[0]
    if name != "recommend_product":
        return name
    try:
        ids = str(jsonio.loads(arguments).get("product_ids", ""))
    except (ValueError, AttributeError):
        return "recommend (unreadable)"
    return f"recommend {len([i for i in ids.split(',') if i.strip()])}"


def main(argv: list[str] | None = None) -> int:
    from oro_assets.arena.catalogue import Catalogue
    from oro_assets.arena.env import InProcessEnv
    from oro_assets.settings import load_settings
    from oro_assets.training.checkpoints import current_checkpoint
    from oro_assets.training.data import load_rows
    from oro_assets.training.profiles import get_profile, with_overrides
    from oro_assets.training.stages.common import default_tools
    from oro_assets.training.stages.kto import TURN_CREDITS, on_policy_examples
    from oro_assets.training.stages.rollouts import default_scorer, turn_calls

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parent", type=Path, default=None, help="checkpoint dir (default: the data dir's teacher_sft)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    settings = load_settings()
    layout = settings.layout
    catalogue = Catalogue.from_jsonl(layout.world_catalogue)
    problems = load_rows(layout.train_problems)
    category = {str(q["problem_id"]): q.get("category") or "Product" for q in problems}
    parent = args.parent or current_checkpoint(layout.checkpoints, "teacher_sft")
    for credit in TURN_CREDITS:
        profile = with_overrides(get_profile(settings.model_profile, settings), "kto", turn_credit=credit)
        examples, ids, stats = on_policy_examples(profile, problems, InProcessEnv(catalogue), parent,
                                                  default_scorer(catalogue), default_tools(), seed=args.seed)
        counts: collections.Counter = collections.Counter()
        for e in examples:
            pid = e["id"].split("kto_on_policy_", 1)[1].rsplit("_", 2)[0]
            label = "desirable" if e["label"] else "undesirable"
            counts[(category.get(pid, "?"), label, _what(turn_calls(e["completion"][0])))] += 1
        mixed = dict(collections.Counter(category.get(i, "?") for i in ids))
        print(f"turn_credit {credit}: {stats['on_policy_examples']} turns; problems with both outcomes {mixed}")
        for (cat, label, what), n in sorted(counts.items()):
            print(f"  {cat:8s} {label:11s} {what:26s} {n:4d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
