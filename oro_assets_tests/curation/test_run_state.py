"""Run state lives on the run, not on the declared steps: two runs of ``STEPS`` in one process share
nothing (a run started while another is under way, and the reports of two runs read afterwards)."""

from __future__ import annotations

import curation_fixtures as F

from oro_assets.curation.clusters import Registry
from oro_assets.curation.pipeline import STEPS, curate_partition, curation_params
from oro_assets.curation.step import run_steps
from oro_assets.curation.steps.ingest import raw_index
from oro_assets.curation.store import MemoryStore
from oro_assets.judge.rule import RuleJudge
from oro_assets.storage import conform
from oro_assets.traces.schema import NORMALIZED_SCHEMA, QUARANTINE_SCHEMA


def _rows(*envelopes: dict) -> list[dict]:
    return [F.normalized(env, line_no=i + 1) for i, env in enumerate(envelopes)]


def _problems(rows: list[dict]) -> set[str]:
    return {str(r["problem_id"]) for r in rows}


class NestingJudge:
    """Judges by rule, and on its first call runs a whole second curation in the same process."""

    judge_id = "rule"

    def __init__(self, inner_rows: list[dict], inner_registry: Registry):
        self.inner_rows, self.inner_registry = inner_rows, inner_registry
        self.inner_out = None
        self.calls = 0

    def judge(self, row: dict):
        self.calls += 1
        if self.inner_out is None:
            self.inner_out = curate_partition(self.inner_rows, [], self.inner_registry, partition=F.PARTITION,
                                              threshold=0.0)
        return RuleJudge().judge(row)


def test_a_run_started_inside_another_does_not_take_over_its_registry_or_judge():
    outer_rows = _rows(F.unscored(13), F.unscored(14))  # no validator score: the outer judge is called
    inner_rows = _rows(F.good(31), F.good(32))
    assert not _problems(outer_rows) & _problems(inner_rows)
    outer_registry, inner_registry = Registry(), Registry()
    judge = NestingJudge(inner_rows, inner_registry)
    outer = curate_partition(outer_rows, [], outer_registry, partition=F.PARTITION, judge=judge, threshold=0.0)
    assert judge.inner_out is not None and judge.inner_out.curated_traces
    # each run registers its own problems in its own registry
    assert set(inner_registry.members) == _problems(inner_rows)
    assert set(outer_registry.members) == _problems(outer_rows)
    assert len(outer.curated_traces) == len(outer_rows)
    # every outer trace went through the outer judge (the inner run brings none of its own)
    assert outer.stats["gates"]["judge_calls"] == judge.calls == len(outer_rows)


def _run(rows: list[dict], registry: Registry, **params):
    store = MemoryStore()
    norm = conform(rows, NORMALIZED_SCHEMA)
    store.put("normalized_traces", F.PARTITION, norm)
    store.put("raw_traces", F.PARTITION, raw_index(norm, conform([], QUARANTINE_SCHEMA)))
    reports = run_steps(list(STEPS[1:]), store, [F.PARTITION], curation_params(registry=registry, **params))
    return store, reports


def _leaking_registry() -> Registry:
    """One cluster on two pools (the registry tampered with, as no assignment would leave it)."""
    reg = Registry()
    reg.assign([{"problem_id": "a", "query": "one", "reward": {"product_id": "1", "title": ["x"]}}])
    reg.members["b"] = dict(reg.members["a"], problem_key="b",
                            pool="eval" if reg.members["a"]["pool"] != "eval" else "train")
    return reg


def test_the_reports_of_two_runs_describe_their_own_run():
    gates, split = STEPS[2], STEPS[4]
    first_store, first = _run(_rows(F.good(1)), Registry(), threshold=0.25, token_budget=50_000)
    second_store, second = _run(_rows(F.good(2)), _leaking_registry(), threshold=0.75, token_budget=60_000)
    # the first run's metadata is read after the second run finished
    meta = gates.metadata(first_store, first["gates"], "gated_traces")
    assert (meta["reasoning_threshold"], meta["token_budget"]) == (0.25, 50_000)
    meta = gates.metadata(second_store, second["gates"], "gated_traces")
    assert (meta["reasoning_threshold"], meta["token_budget"]) == (0.75, 60_000)
    (first_leak,) = split.outcomes(first_store, first["split"])
    (second_leak,) = split.outcomes(second_store, second["split"])
    assert first_leak.passed and first_leak.metadata["violations"] == 0
    assert not second_leak.passed and second_leak.metadata["violations"] > 0
