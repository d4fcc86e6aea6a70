"""The judge cache writes verdicts in batches: nothing is lost or changed by that (issue 33)."""

from __future__ import annotations

import gc
import sqlite3

import pytest

from oro_assets.judge import cache as cache_mod
from oro_assets.judge.base import JudgeResult
from oro_assets.judge.cache import JudgeCache


def _stored(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0]
    finally:
        conn.close()


def test_pending_verdicts_are_read_back_as_stored_and_written_on_close(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = JudgeCache(path)
    cache.put("h0", "cfg", JudgeResult(0.9, 5, "first", "rule", "1.2", True))  # the first put writes at once
    cache.put("h1", "cfg", JudgeResult(0.7, 4, "pending", "rule", "1.2", True))
    assert _stored(path) == 1  # h1 is pending (fewer than WRITE_BATCH, within WRITE_EVERY_S)
    hit = cache.get("h1", "cfg")
    # read back through SQLite like any stored verdict
    assert hit is not None and (hit.score, hit.explanation, hit.cached) == (0.7, "pending", True)
    assert _stored(path) == 2
    cache.put("h2", "cfg", JudgeResult(0.5, 3, "x", "rule", "1.2", True))
    cache.close()
    assert _stored(path) == 3
    with pytest.raises(sqlite3.ProgrammingError):
        cache.put("h3", "cfg", JudgeResult(0.5, 3, "x", "rule", "1.2", True))
        cache.flush()


def test_a_full_batch_is_written_and_a_dropped_cache_writes_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_mod, "WRITE_BATCH", 4)
    path = tmp_path / "c.sqlite"
    cache = JudgeCache(path)
    for i in range(6):
        cache.put(f"h{i}", "cfg", JudgeResult(0.7, 4, "x", "rule", "1.2", True))
    assert _stored(path) == 5  # the first at once, then one batch of 4; the sixth is pending
    del cache
    gc.collect()
    assert _stored(path) == 6  # written when the object went away, without close()
    assert len(JudgeCache(path)) == 6
