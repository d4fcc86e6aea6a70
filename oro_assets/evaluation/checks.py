"""Evaluation integrity checks. Each returns a list of violations (empty = pass).

* every evaluated problem is in the eval pool;
* no evaluated problem shares a leak cluster or a ground-truth product id with any problem in the
  training manifest of the checkpoint (and its ancestors) - re-verified at eval time; synthetic
  teacher problems (``syn_*``) are regenerated from the catalogue and checked by target, search
  keywords and leak cluster, and one that cannot be regenerated fails the check;
* pass@k is monotone non-decreasing in k.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


class LeakError(RuntimeError):
    """Blocking: the checkpoint was trained on something the evaluation uses."""

    def __init__(self, violations: list[dict]) -> None:
        self.violations = violations
        first = violations[0] if violations else {}
        super().__init__(f"{len(violations)} train/eval leak violation(s); first: {first}")


def _gt_ids(problem: Mapping[str, Any]) -> list[str]:
    from oro_assets.arena.problems import problem_ground_truth_ids

    return problem_ground_truth_ids(dict(problem))


def check_eval_pool(eval_problems: Sequence[Mapping], eval_pool_ids: Iterable[str]) -> list[dict]:
    pool = set(map(str, eval_pool_ids))
    return [{"check": "eval_pool", "problem_id": p["problem_id"], "reason": "not in the eval pool"}
            for p in eval_problems if str(p["problem_id"]) not in pool]


def check_no_training_leak(eval_problems: Sequence[Mapping], manifest_problems: Sequence[Mapping | str],
                           cluster_map: Mapping[str, str], problems_by_id: Mapping[str, Mapping] | None = None,
                           catalogue: Iterable[Mapping] | None = None) -> list[dict]:
    """Violations where an eval problem shares a cluster or a ground-truth id with a training problem.

    ``manifest_problems``: problem dicts or problem ids the checkpoint was trained on (ids are
    resolved through ``problems_by_id`` for their ground-truth ids). ``cluster_map``: problem id
    -> leak cluster id; an eval problem's own ``cluster_id`` field takes precedence.

    Synthetic teacher problems (``syn_*``, in no problem pool) are regenerated from ``catalogue``
    (:func:`training.corpus.resolve_synthetic_problem`); one that cannot be (no catalogue, an older
    generator's id, another catalogue) fails the check with the reason. A resolved synthetic
    problem also fails it when its target is an eval ground truth, its search keywords coincide
    with an evaluated problem's (brand + noun) or the leak clustering links its query to one.
    """
    train_clusters: dict[str, str] = {}
    train_gt: dict[str, str] = {}
    train_ids: set[str] = set()
    unresolved = 0
    violations: list[dict] = []
    synthetic: list[dict] = []
    resolver = None
    for item in manifest_problems:
        if isinstance(item, str):
            pid, problem = item, (problems_by_id or {}).get(item)
        else:
            pid, problem = str(item.get("problem_id")), item
        if problem is None and _is_synthetic(pid):
            if resolver is None and catalogue is not None:
                from oro_assets.training.corpus import SyntheticResolver

                resolver = SyntheticResolver(catalogue)
            problem, reason = _resolve_synthetic(pid, resolver)
            if problem is None:
                violations.append({"check": "leak", "problem_id": None, "train_problem_id": pid, "reason": reason})
                continue
        if problem is not None and _is_synthetic(pid):
            synthetic.append(dict(problem))
        train_ids.add(pid)
        cluster = (problem or {}).get("cluster_id") or cluster_map.get(pid)
        if cluster:
            train_clusters.setdefault(str(cluster), pid)
        if problem is not None:
            for gid in _gt_ids(problem):
                train_gt.setdefault(gid, pid)
        else:
            unresolved += 1
    for p in eval_problems:
        pid = str(p["problem_id"])
        if pid in train_ids:
            violations.append({"check": "leak", "problem_id": pid, "reason": "problem id in training manifest",
                               "train_problem_id": pid})
        cluster = p.get("cluster_id") or cluster_map.get(pid)
        if cluster and str(cluster) in train_clusters:
            violations.append({"check": "leak", "problem_id": pid, "reason": f"cluster {cluster} in training manifest",
                               "train_problem_id": train_clusters[str(cluster)]})
        for gid in _gt_ids(p):
            if gid in train_gt:
                violations.append({"check": "leak", "problem_id": pid,
                                   "reason": f"ground-truth id {gid} in training manifest",
                                   "train_problem_id": train_gt[gid]})
    if synthetic and catalogue is not None:
        violations += _synthetic_contamination(eval_problems, synthetic, catalogue)
    if unresolved and violations == [] and problems_by_id is None:
        # Without problem dicts only ids and clusters could be compared; say so, do not pass silently.
        violations.append({"check": "leak", "problem_id": None,
                           "reason": f"{unresolved} manifest problem ids could not be resolved to ground-truth ids"})
    return violations


def _is_synthetic(problem_id: str) -> bool:
    from oro_assets.training.corpus import is_synthetic_id

    return is_synthetic_id(problem_id)


def _resolve_synthetic(pid: str, resolver: Any) -> tuple[dict | None, str]:
    """(the regenerated synthetic problem, "") or (None, why it cannot be resolved)."""
    if resolver is None:
        return None, (f"synthetic manifest problem {pid} could not be resolved: no catalogue given (synthetic "
                      "problems are regenerated from the catalogue they were drawn from)")
    try:
        return resolver(pid), ""
    except ValueError as exc:
        return None, f"synthetic manifest problem could not be resolved: {exc}"


def _synthetic_contamination(eval_problems: Sequence[Mapping], synthetic: Sequence[dict],
                             catalogue: Iterable[Mapping]) -> list[dict]:
    """Resolved synthetic training problems that name an evaluated problem's target, keywords or cluster."""
    from oro_assets.training.corpus import EvalKeywords

    guard = EvalKeywords(catalogue, (), eval_problems)
    out = []
    near = guard.near_duplicates(synthetic)
    for k, s in enumerate(synthetic):
        hit = guard.match(s)
        if hit is None and k in near:
            hit = ("leak_cluster", near[k])
        if hit is None or hit[0] == "target_product":  # a shared target is reported as a ground-truth id above
            continue
        what = {"query_keywords": "its search keywords coincide with this eval problem's (brand + noun)",
                "leak_cluster": "the leak clustering links its query to this eval problem's"}[hit[0]]
        out.append({"check": "leak", "problem_id": hit[1], "train_problem_id": s["problem_id"],
                    "reason": f"synthetic training problem {s['problem_id']} ({s.get('query')!r}): {what}"})
    return out


def check_pass_at_k_monotone(pass_k: Mapping[str | int, float], tol: float = 1e-9) -> list[dict]:
    items = sorted((int(k), float(v)) for k, v in pass_k.items())
    return [{"check": "pass_at_k_monotone", "k": k2, "reason": f"pass@{k2}={v2:.4f} < pass@{k1}={v1:.4f}"}
            for (k1, v1), (k2, v2) in zip(items, items[1:], strict=False) if v2 < v1 - tol]
