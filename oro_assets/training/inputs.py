"""What the training stages are handed besides their datasets: the train-pool problems they roll out on and
the held-out problems everything they make up is decontaminated against, both chosen by the one held-out rule
(:meth:`oro_assets.curation.clusters.Registry.problems_in`) and written under ``<data>/checkpoints/_inputs``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oro_assets.curation.clusters import Registry, problem_key
from oro_assets.layout import DataLayout
from oro_assets.storage import write_jsonl

#: the fields of a train problem the stages read (rewards included: they score their rollouts)
TRAIN_PROBLEM_FIELDS = ("problem_id", "query", "category", "difficulty", "reward", "voucher", "title")
#: pools no training example may come from: the held-out dev and test sides, and never_touch
UNTRAINABLE_POOLS = ("heldout", "never_touch")


@dataclass(frozen=True)
class TrainingInputs:
    train_problems: Path
    heldout_problems: Path
    heldout_ids: list[str]  # held-out problem ids (dev and test): the manifest check's reference
    exclude_product_ids: list[str]  # ground-truth ids of every untrainable problem


def select(registry: Registry, problems: list[dict]) -> tuple[list[dict], list[dict]]:
    """(train problems, untrainable problems) among ``problems`` (the problem pool), each sorted by key; problems
    without a reward are left out (nothing can be scored on them)."""
    by_key = {problem_key(p): p for p in problems}

    def rows(pools: tuple[str, ...]) -> list[dict]:
        keys = sorted({k for pool in pools for k in registry.problems_in(pool)})
        return [by_key[k] for k in keys if k in by_key and by_key[k].get("reward") is not None]

    train = [{k: p.get(k) for k in TRAIN_PROBLEM_FIELDS} for p in rows(("train",))]
    return train, rows(UNTRAINABLE_POOLS)


def write_training_inputs(layout: DataLayout, registry: Registry, problems: list[dict]) -> TrainingInputs:
    """Write the train and untrainable problems for the out-of-process stages; return where, and the ids the
    checks and the synthetic-problem guard need."""
    train, untrainable = select(registry, problems)
    write_jsonl(train, layout.train_problems)
    write_jsonl(untrainable, layout.heldout_problems)
    ground_truth = sorted({str(i) for p in untrainable for i in (p.get("ground_truth_ids") or [])})
    return TrainingInputs(layout.train_problems, layout.heldout_problems, heldout_ids(registry), ground_truth)


def heldout_ids(registry: Registry) -> list[str]:
    """Every held-out problem's key and id (dev and test): what no checkpoint may have trained on."""
    out: set[str] = set()
    for key in registry.problems_in("heldout"):
        member = registry.members[key]
        out.update(str(i) for i in (key, member.get("problem_id")) if i)
    return sorted(out)
