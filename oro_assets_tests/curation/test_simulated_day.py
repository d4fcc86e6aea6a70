"""End to end on a simulated firehose day: the leak guard against the simulator's truth file,
structural labels against the designed policy, and conservation."""

from __future__ import annotations

import glob
from collections import defaultdict

import pytest

from oro_assets import jsonio
from oro_assets.arena.problems import load_problems
from oro_assets.curation.clusters import Registry, leak_violations, near_duplicate_leaks, problem_key
from oro_assets.curation.ledger import check_conservation
from oro_assets.curation.pipeline import curate_partition
from oro_assets.judge.rule import RuleJudge
from oro_assets.traces.ingest import IngestStats, ingest_batches

DAY = "2026-01-01"


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    from oro_assets.arena import firehose
    root = tmp_path_factory.mktemp("firehose")
    firehose.simulate_day(DAY, 120, root, seed=15, workers=1)
    problems = load_problems(root / "problems.jsonl")
    truth_groups = {
        r["problem_id"]: r["variant_group"]
        for r in map(jsonio.loads, (root / "_truth" / "problems.jsonl").read_text().splitlines())
    }
    registry = Registry()
    registry.assign(problems, first_seen="pool")
    stats = IngestStats(partition=DAY)
    normalized, quarantine = [], []
    for norm, quar in ingest_batches(sorted(glob.glob(str(root / DAY / "*.jsonl.gz"))), DAY, stats=stats):
        normalized += norm.to_pylist()
        quarantine += quar.to_pylist()
    out = curate_partition(
        normalized, quarantine, registry, judge=RuleJudge(), pool_problems=problems, partition=DAY
    )
    truth = {
        r["line_key"]: r
        for r in map(jsonio.loads, (root / "_truth" / f"{DAY}.jsonl").read_text().splitlines())
    }
    return {
        "root": root,
        "problems": problems,
        "groups": truth_groups,
        "registry": registry,
        "out": out,
        "raw": stats.raw_records,
        "truth": truth,
        "normalized": normalized,
    }


def test_truth_variant_groups_never_split_across_clusters(day):
    clusters_of_group: dict[str, set[str]] = defaultdict(set)
    for p in day["problems"]:
        clusters_of_group[day["groups"][p["problem_id"]]].add(
            day["registry"].members[problem_key(p)]["cluster_id"]
        )
    assert sum(len(c) > 1 for c in clusters_of_group.values()) == 0
    assert any(
        sum(g == grp for g in day["groups"].values()) > 1 for grp in clusters_of_group
    )  # variants exist


def test_text_only_clustering_meets_recall_on_truth(day):
    reg = Registry()
    reg.assign([{"problem_id": p["problem_id"], "query": p["query"]} for p in day["problems"]])
    pairs = hit = 0
    by_group: dict[str, list[str]] = defaultdict(list)
    for p in day["problems"]:
        by_group[day["groups"][p["problem_id"]]].append(reg.members[p["problem_id"]]["cluster_id"])
    for labs in by_group.values():
        for i in range(len(labs)):
            for j in range(i + 1, len(labs)):
                pairs += 1
                hit += labs[i] == labs[j]
    assert pairs > 50 and hit / pairs >= 0.99


def test_no_leak_between_train_and_eval(day):
    reg = day["registry"]
    assert leak_violations(reg) == []
    assert near_duplicate_leaks(reg) == []
    pools = {r["pool"] for r in day["out"].curated_traces}
    assert pools <= {"train", "eval", "never_touch"} and "train" in pools


def test_structural_labels_match_the_designed_policies(day):
    prov = {r["trace_id"]: f"{r['source_file'].rsplit('/', 1)[-1]}:{r['line_no']}" for r in day["normalized"]}
    agree = total = 0
    for lab in day["out"].structural_labels:
        t = day["truth"].get(prov[lab["trace_id"]])
        if t is not None:
            total += 1
            agree += t["structural"] == lab["label"]
    assert total >= 100 and agree / total >= 0.97


def test_conservation_on_the_simulated_day(day):
    out = day["out"]
    assert check_conservation(day["raw"], out.trace_ledger, out.curated_traces) == []
