import multiprocessing as mp
import sqlite3

import judge_fixtures as fx
import pytest

from oro_assets.judge.base import (
    JudgeFailureRatioExceeded,
    JudgeResult,
    JudgeStats,
    check_failure_ratio,
    judge_batch,
    unavailable,
)
from oro_assets.judge.cache import CachedJudge, JudgeCache
from oro_assets.judge.llm import LLMJudge, LLMJudgeConfig
from oro_assets.judge.rule import RuleJudge
from oro_assets.judge.testing import StubOpenAIServer, error_reply, verdict_reply


def _llm(server):
    return LLMJudge(LLMJudgeConfig(base_url=server.base_url, models=("m",), timeout_s=2.0, max_retries_per_model=0),
                    api_key="k", sleep=lambda s: None)


def test_rejudging_a_partition_costs_zero_calls(tmp_path):
    traces = [b()[0] for b in (fx.restate, fx.vague, fx.datum, fx.compare)]
    with StubOpenAIServer(default=verdict_reply(0.5, completion_tokens=10)) as server:
        judge = CachedJudge(_llm(server), JudgeCache(tmp_path / "state" / "judge_cache.sqlite"))
        first, stats1 = judge_batch(judge, traces)
        assert len(server.requests) == 4
        second, stats2 = judge_batch(judge, traces)
        assert len(server.requests) == 4  # nothing sent the second time
    assert (stats1.calls, stats1.cache_hits, stats1.requests, stats1.tokens) == (4, 0, 4, 4 * 130)
    assert (stats2.calls, stats2.cache_hits, stats2.requests, stats2.tokens) == (0, 4, 0, 0)
    assert [r.score for r in second] == [r.score for r in first] and all(r.cached for r in second)


def test_cache_key_is_content_and_config(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    judge = CachedJudge(RuleJudge(), cache)
    row, _ = fx.compare()
    same_content = dict(row, trace_id="tr_other", meta='{"score": 1}')
    assert not judge.judge(row).cached
    assert judge.judge(same_content).cached  # id and metadata are not content
    changed = dict(row, query=row["query"] + " Cheap please.")
    assert not judge.judge(changed).cached
    from oro_assets.judge.rule import RuleConfig

    other_config = CachedJudge(RuleJudge(RuleConfig(min_completion_tokens=31)), cache)
    assert not other_config.judge(row).cached
    assert len(cache) == 3


def test_failures_are_not_cached(tmp_path):
    with StubOpenAIServer([error_reply(500), verdict_reply(0.9)]) as server:
        judge = CachedJudge(_llm(server), JudgeCache(tmp_path / "c.sqlite"))
        assert not judge.judge(fx.compare()[0]).available
        assert judge.judge(fx.compare()[0]).score == 0.9  # retried, not served a cached failure
        assert judge.judge(fx.compare()[0]).cached


def _writer(path: str, start: int) -> None:
    cache = JudgeCache(path)
    result = JudgeResult(0.5, 3, "x", "rule", "1.0", True)
    for i in range(200):
        cache.put(f"h{(start + i) % 150}", "cfg", result)


def test_concurrent_processes_share_the_cache(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    JudgeCache(path).close()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, k * 50)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0] == 150  # upserts, no duplicates


def test_judge_batch_turns_exceptions_into_unavailable():
    results, stats = judge_batch(RuleJudge(), [fx.datum()[0], {"messages": "{broken", "steps": "[]"}])
    assert results[0].score == 0.7
    assert results[1].available is False and results[1].score is None and "TraceInputError" in results[1].explanation
    assert (stats.traces, stats.calls, stats.failures) == (2, 2, 1)
    assert stats.as_metadata()["judge_failure_ratio"] == 0.5


def test_failure_ratio_gate():
    stats = JudgeStats()
    ok = JudgeResult(0.9, 5, "x", "rule", "1.0", True)
    bad = unavailable("down", "llm", "1.0")
    for r in (ok, ok, bad, bad):
        stats.add(r)
    check_failure_ratio(stats)  # exactly half: allowed
    stats.add(bad)
    with pytest.raises(JudgeFailureRatioExceeded, match="3 of 5 judge calls failed"):
        check_failure_ratio(stats)
    check_failure_ratio(JudgeStats())  # an empty partition is not a failure


def test_result_validation():
    with pytest.raises(ValueError):
        JudgeResult(0.4, 3, "x", "rule", "1.0", True)
    with pytest.raises(ValueError):
        JudgeResult(0.5, 4, "x", "rule", "1.0", True)
    with pytest.raises(ValueError):
        JudgeResult(0.0, 0, "x", "rule", "1.0", False)  # an unavailable result never carries a score


def test_cache_key_is_the_evidence_content_hash():
    """The cache hashes a row without building its evidence; the key must stay parse_trace's."""
    from oro_assets import jsonio
    from oro_assets.judge.evidence import parse_trace, trace_content_hash

    rows = [b()[0] for b in (fx.no_inference, fx.restate, fx.datum, fx.compare)]
    for row in rows:
        parsed = dict(row, messages=jsonio.loads(row["messages"]), steps=jsonio.loads(row["steps"]))
        no_steps = {k: v for k, v in row.items() if k != "steps"}
        no_query = dict(row, query=None)
        for variant in (row, parsed, no_steps, no_query):
            assert trace_content_hash(variant) == parse_trace(variant).content_hash()


def test_rule_config_hash_follows_the_config():
    from oro_assets.judge.rule import RuleConfig

    judge = RuleJudge()
    default = judge.config_hash
    assert judge.config_hash == default == RuleJudge().config_hash
    judge.config = RuleConfig(min_completion_tokens=31)
    assert judge.config_hash != default == RuleJudge(RuleConfig()).config_hash
