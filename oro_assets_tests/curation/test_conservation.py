"""A partition mixing every format and every failure: each raw record gets exactly one ledger row,
every kept record lands in exactly one pool, and each reason code is produced by its record."""

from __future__ import annotations

import gzip
from collections import Counter

import curation_fixtures as F
import pytest

from oro_assets import jsonio
from oro_assets.curation.clusters import Registry, cluster_id_for, pool_for, problem_key
from oro_assets.curation.ledger import KEPT, check_conservation, funnel
from oro_assets.curation.pipeline import curate_partition
from oro_assets.reasons import ReasonCode
from oro_assets.traces.ingest import IngestStats, ingest_batches


def _key(prefix: str, pool: str) -> str:
    return next(f"{prefix}-{i}" for i in range(1000) if pool_for(cluster_id_for(f"{prefix}-{i}")) == pool)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("firehose") / F.PARTITION
    root.mkdir()
    ka, kb = _key("pa", "train"), _key("pb", "eval")
    pool_problems = [
        {
            "problem_id": ka,
            "query": "acme steel kettle under 900 pesos",
            "reward": {"product_id": "111", "title": ["k"]},
        },
        {
            "problem_id": kb,
            "query": "zenith bamboo lamp over 50 pesos",
            "reward": {"product_id": "222", "title": ["l"]},
        },
        {
            "problem_id": "bridge",
            "query": "kettle and lamp bundle",
            "reward": [{"product_id": "111", "title": ["k"]}, {"product_id": "222", "title": ["l"]}],
        },
    ]
    registry = Registry()
    registry.assign(pool_problems[:2], first_seen="2025-12-31")  # yesterday's clusters: train and eval

    good = F.good(1)
    conflict = F.good(30, problem_id="bridge")
    records = {
        "good": good,
        "good2": F.good(15),
        "dialogue_only": F.oro_dialogue(16),
        "sb_rollout": F.shoppingbench_rollout(17),
        "openai": F.openai_row(18),
        "no_inference": F.no_inference(),
        "subtask": F.subtask(),
        "no_tool_calls": F.no_tool_calls(),
        "unpaired": F.unpaired(),
        "recommend_missing": F.recommend_missing(),
        "recommend_unparseable": F.recommend_unparseable(),
        "over_budget": F.over_budget(),
        "think_then_stop": F.think_then_stop(),
        "ungrounded": F.ungrounded(),
        "low_reasoning": F.low_reasoning(),
        "unscored": F.unscored(),
        "exact_copy": F.exact_copy(good),
        "conflict": conflict,
        "empty": {**F.good(19), "dialogue": []},
        "unknown": {"hello": "world", "n": 1},
    }
    lines = [jsonio.dumps(r).encode() for r in records.values()]
    lines.insert(3, b'{"problem_id": "x", "dialogue": [')  # malformed JSON (truncated)
    lines.append(lines[0])  # byte-identical duplicate line
    with gzip.open(root / "part-00000.jsonl.gz", "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    stats = IngestStats(partition=F.PARTITION)
    normalized, quarantine = [], []
    for norm, quar in ingest_batches([str(root / "part-00000.jsonl.gz")], F.PARTITION, stats=stats):
        normalized += norm.to_pylist()
        quarantine += quar.to_pylist()
    out = curate_partition(
        normalized,
        quarantine,
        registry,
        judge=F.DownJudge(),
        pool_problems=pool_problems,
        partition=F.PARTITION,
    )
    return {
        "raw": stats.raw_records,
        "out": out,
        "normalized": normalized,
        "registry": registry,
        "n_lines": len(lines),
    }


def test_conservation_on_a_mixed_partition(mixed):
    out = mixed["out"]
    assert mixed["raw"] == mixed["n_lines"] == 22  # 20 records + a malformed line + a byte duplicate
    assert check_conservation(mixed["raw"], out.trace_ledger, out.curated_traces) == []
    kept = [r for r in out.trace_ledger if r["fate"] == KEPT]
    assert {r["trace_id"] for r in kept} == {r["trace_id"] for r in out.curated_traces}
    assert all(r["pool"] in ("train", "eval", "never_touch") for r in out.curated_traces)
    assert all(r["source_file"] and r["line_no"] >= 1 for r in out.trace_ledger)
    steps = funnel(out.trace_ledger)
    assert steps[0]["entering"] == 22 and steps[-1]["remaining"] == len(kept)


def test_every_reason_code_appears(mixed):
    reasons = Counter(r["reason"] for r in mixed["out"].trace_ledger if r["reason"])
    expected = {
        ReasonCode.MALFORMED_JSON,
        ReasonCode.UNKNOWN_FORMAT,
        ReasonCode.EMPTY_DIALOGUE,
        ReasonCode.DUPLICATE_RECORD,
        ReasonCode.NO_INFERENCE,
        ReasonCode.SUBTASK,
        ReasonCode.NO_TOOL_CALLS,
        ReasonCode.UNPAIRED_TOOL_CALL,
        ReasonCode.RECOMMEND_NOT_ONCE,
        ReasonCode.RECOMMEND_ARGS_UNPARSEABLE,
        ReasonCode.OVER_TOKEN_BUDGET,
        ReasonCode.THINK_THEN_STOP,
        ReasonCode.UNGROUNDED_RECOMMENDATION,
        ReasonCode.REASONING_BELOW_THRESHOLD,
        ReasonCode.JUDGE_UNAVAILABLE,
        ReasonCode.NEAR_DUPLICATE,
        ReasonCode.LEAK_CONFLICT,
    }
    assert expected <= set(reasons)


def test_leak_conflict_trace_is_quarantined_and_reported(mixed):
    out = mixed["out"]
    conflicts = out.stats["split"]["conflicts"]
    assert [c["problem_key"] for c in conflicts] == ["bridge"]
    (row,) = [r for r in out.trace_ledger if r["reason"] == ReasonCode.LEAK_CONFLICT]
    assert row["trace_id"] in conflicts[0]["traces"]
    assert mixed["registry"].members["bridge"]["status"] == "leak_conflict"


def test_subtask_traces_kept_aside(mixed):
    out = mixed["out"]
    sub_ids = {r["trace_id"] for r in out.subtask_traces}
    assert sub_ids == {r["trace_id"] for r in out.trace_ledger if r["reason"] == ReasonCode.SUBTASK}
    assert len(sub_ids) == 1


def test_unknown_problems_are_clustered_by_query(mixed):
    out = mixed["out"]
    assert out.curated_traces
    for r in out.curated_traces:
        assert r["problem_known"] is False
        assert mixed["registry"].lookup(r["problem_key"])["tokens"]


def test_conservation_check_can_fail(mixed):
    out = mixed["out"]
    assert check_conservation(mixed["raw"], out.trace_ledger[1:], out.curated_traces)
    assert check_conservation(mixed["raw"], out.trace_ledger, out.curated_traces + out.curated_traces[:1])
    broken = [dict(r, pool=None) if r["fate"] == KEPT else r for r in out.trace_ledger]
    assert any("without a pool" in p for p in check_conservation(mixed["raw"], broken))


def test_problem_key_for_query_only():
    assert problem_key({"query": "Red  Shirt"}) == problem_key({"query": "red shirt"})
    assert problem_key({"problem_id": "abc", "query": "x"}) == "abc"


def test_ledger_from_arrow_tables_equals_ledger_from_row_dicts(mixed):
    import pyarrow as pa

    from oro_assets.curation.ledger import ledger_arrow

    out = mixed["out"]
    quarantine = [r for r in out.trace_ledger if r["stage"] in ("ingest", "normalize")]
    as_table = ledger_arrow(
        pa.Table.from_pylist(mixed["normalized"]),
        pa.Table.from_pylist(quarantine),
        pa.Table.from_pylist(out.rejections).select(["trace_id", "partition", "stage", "reason", "detail"]),
        pa.Table.from_pylist(out.curated_traces).select(["trace_id", "cluster_id", "pool"]),  # no provenance
    )
    assert as_table.to_pylist() == out.trace_ledger
    keys = [(r["source_file"], r["line_no"], r["trace_id"]) for r in out.trace_ledger]
    assert keys == sorted(keys) and len(keys) == mixed["n_lines"]


def test_ledger_refuses_a_reason_outside_the_vocabulary(mixed):
    from oro_assets.curation.ledger import build_ledger

    out = mixed["out"]
    bad = [dict(out.rejections[0], reason="looked_wrong")] + out.rejections[1:]
    with pytest.raises(ValueError, match="looked_wrong"):
        build_ledger(mixed["normalized"], [], bad, out.curated_traces)
    with pytest.raises(ValueError, match="not a valid stage"):
        build_ledger(mixed["normalized"], [], [dict(out.rejections[0], stage="later")], out.curated_traces)


def test_declared_output_schemas_cover_every_stage_output(mixed):
    """The curation assets stream their outputs under declared schemas: every column the stages
    emit must be declared (an undeclared one raises), with its values intact."""
    from oro_assets.curation.schemas import (
        GATED_SCHEMA,
        LABELS_SCHEMA,
        REJECTIONS_SCHEMA,
        SPLIT_SCHEMA,
        SUBTASK_SCHEMA,
    )
    from oro_assets.curation.structural import LABELS, SUBTASKS, structural_filter
    from oro_assets.storage import conform

    out = mixed["out"]
    filtered = structural_filter(mixed["normalized"])
    subtasks, labels = filtered.outputs[SUBTASKS], filtered.outputs[LABELS]
    assert subtasks and out.gated_traces and out.curated_traces
    # the gates asset reads the kept traces from normalized_traces (without the structural label)
    def unlabelled(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "structural_label"} for r in rows]

    for rows, schema in ((unlabelled(out.gated_traces), GATED_SCHEMA), (unlabelled(out.curated_traces), SPLIT_SCHEMA),
                         (subtasks, SUBTASK_SCHEMA), ([dict(r, kept=True) for r in labels], LABELS_SCHEMA)):
        table = conform(rows, schema)
        assert table.num_rows == len(rows)
        assert table.to_pylist()[0] == {name: rows[0].get(name) for name in schema.names}
        assert set(rows[0]) <= set(schema.names)
    noted = [dict(r, note="extra") for r in out.rejections]
    with pytest.raises(ValueError, match=r"\['note'\] are not declared"):
        conform(noted, REJECTIONS_SCHEMA)
    assert conform(noted, REJECTIONS_SCHEMA, undeclared="drop").to_pylist() == conform(out.rejections, REJECTIONS_SCHEMA).to_pylist()
