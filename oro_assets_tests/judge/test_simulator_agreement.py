"""The rule judge reaches the gate each simulator policy was designed to reach (truth labels)."""

from collections import Counter, defaultdict

from oro_assets.judge.base import judge_batch
from oro_assets.judge.rule import RuleJudge


def test_rule_judge_agrees_with_designed_gates(simulated_day):
    rows = [row for row, _ in simulated_day]
    results, stats = judge_batch(RuleJudge(), rows)
    assert stats.failures == 0 and len(rows) >= 250
    agree = Counter()
    per_kind: dict[str, Counter] = defaultdict(Counter)
    for result, (_, truth) in zip(results, simulated_day, strict=True):
        ok = result.score == truth["designed_gate"]
        agree[ok] += 1
        per_kind[truth["policy_kind"]][ok] += 1
    overall = agree[True] / len(rows)
    assert overall >= 0.95, (overall, {k: dict(v) for k, v in per_kind.items()})
    # every intact (non-broken) policy kind individually
    for kind, counts in per_kind.items():
        if not kind.startswith("broken_"):
            assert counts[True] / sum(counts.values()) >= 0.95, (kind, dict(counts))
    # the sample covers every designed gate
    assert {truth["designed_gate"] for _, truth in simulated_day} == {0.1, 0.3, 0.5, 0.7, 0.9}
