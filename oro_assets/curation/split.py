"""Leak-cluster-guarded split (reference §5.5): each kept trace goes to its problem's cluster pool.

A trace's problem is resolved by ``problem_id`` in the pool, else by exact query text (then by
normalised query), else it is an unknown problem keyed by its own ``problem_id`` or
``q_<hash of normalised query>`` and clustered by query text alone. Problems not yet in the
registry are registered here (``stats["registry_new"]`` > 0 tells the caller to save it).
Traces of leak-conflict problems are rejected with LEAK_CONFLICT and reported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from oro_assets.curation.clusters import ASSIGNED, Registry, normalise_query, problem_key
from oro_assets.curation.rows import StageStats, as_rows, rejected_row
from oro_assets.curation.step import StepResult
from oro_assets.reasons import ReasonCode, Stage


class ProblemIndex:
    """Lookup of pool problems by id, exact query and normalised query."""

    def __init__(self, problems: Iterable[dict] = ()) -> None:
        self.by_id: dict[str, dict] = {}
        self.by_query: dict[str, dict] = {}
        self.by_norm: dict[str, dict] = {}
        for p in problems:
            if p.get("problem_id"):
                self.by_id.setdefault(str(p["problem_id"]), p)
            q = p.get("query") or ""
            self.by_query.setdefault(q.strip(), p)
            self.by_norm.setdefault(normalise_query(q), p)

    def resolve(self, row: dict) -> tuple[dict, bool]:
        """``(problem, known)`` for a trace: the pool problem, or a query-only problem."""
        pid = row.get("problem_id")
        if pid and str(pid) in self.by_id:
            return self.by_id[str(pid)], True
        q = row.get("query") or ""
        hit = self.by_query.get(q.strip()) or self.by_norm.get(normalise_query(q))
        if hit is not None and q.strip():
            return hit, True
        return {"problem_id": pid, "query": q}, False


def split_traces(
    rows: Iterable[dict],
    registry: Registry,
    pool_problems: Iterable[dict] = (),
    first_seen: str = "",
) -> StepResult:
    """Assign every row to exactly one pool. Kept rows gain ``problem_key``, ``problem_known``,
    ``cluster_id``, ``pool``; ``stats["pools"]`` counts rows per pool and ``stats["conflicts"]``
    lists the conflicted problems with the traces quarantined."""
    index = ProblemIndex(pool_problems)
    rows = list(as_rows(rows))
    resolved = [index.resolve(r) for r in rows]
    before = len(registry.members)
    registry.assign((p for p, _ in resolved), first_seen=first_seen)
    stats = StageStats(str(Stage.SPLIT))
    kept: list[dict] = []
    rejected: list[dict] = []
    pools: Counter = Counter()
    conflicts: dict[str, dict] = {}
    for row, (problem, known) in zip(rows, resolved, strict=True):
        stats.seen += 1
        key = problem_key(problem)
        member = registry.lookup(key)
        if member is None or member["status"] != ASSIGNED:
            bridged = member["conflict_clusters"] if member else "[]"
            stats.rejected[str(ReasonCode.LEAK_CONFLICT)] += 1
            rejected.append(
                rejected_row(
                    row,
                    Stage.SPLIT,
                    ReasonCode.LEAK_CONFLICT,
                    f"problem {key} bridges leak clusters {bridged} assigned to different pools",
                )
            )
            c = conflicts.setdefault(
                key, {"problem_key": key, "query": problem.get("query"), "clusters": bridged, "traces": []}
            )
            c["traces"].append(row.get("trace_id"))
            continue
        stats.kept += 1
        pools[member["pool"]] += 1
        kept.append(
            {
                **row,
                "problem_key": key,
                "problem_known": known,
                "cluster_id": member["cluster_id"],
                "pool": member["pool"],
            }
        )
    stats.extra.update(
        {
            "pools": dict(sorted(pools.items())),
            "registry_new": len(registry.members) - before,
            "conflicts": [conflicts[k] for k in sorted(conflicts)],
        }
    )
    return StepResult(kept, rejected, stats=stats.as_dict())
