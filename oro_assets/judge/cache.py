"""Judge result cache: (trajectory content hash, judge configuration hash) -> verdict, in SQLite.

Only available verdicts are stored, so a failed judging is retried on the next run. The
database runs in WAL mode with a busy timeout and writes are upserts, so several processes
(parallel partition runs) can share one file.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from oro_assets.judge.base import Judge, JudgeResult
from oro_assets.judge.evidence import trace_content_hash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    trace_hash TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    score REAL NOT NULL,
    gate INTEGER NOT NULL,
    explanation TEXT NOT NULL,
    judge_id TEXT NOT NULL,
    judge_version TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (trace_hash, config_hash)
)
"""


class JudgeCache:
    """A SQLite table of verdicts. ``path`` is the database file (its folder is created)."""

    def __init__(self, path: str | Path, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # WAL + NORMAL: a killed process loses nothing committed; a power cut may lose the last few
        # verdicts, which are simply judged again. FULL would fsync every verdict (~0.2 ms each).
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._conn.execute(_SCHEMA)

    def get(self, trace_hash: str, config_hash: str) -> JudgeResult | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT score, gate, explanation, judge_id, judge_version, tokens FROM judge_cache "
                "WHERE trace_hash = ? AND config_hash = ?",
                (trace_hash, config_hash),
            ).fetchone()
        if row is None:
            return None
        score, gate, explanation, judge_id, judge_version, _tokens = row
        # a cache hit spent no tokens now
        return JudgeResult(score=score, gate=gate, explanation=explanation, judge_id=judge_id,
                           judge_version=judge_version, available=True, tokens=0, cached=True)

    def put(self, trace_hash: str, config_hash: str, result: JudgeResult) -> None:
        if not result.available:
            return
        with self._lock:
            self._conn.execute(
                "INSERT INTO judge_cache (trace_hash, config_hash, score, gate, explanation, judge_id, judge_version, tokens) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (trace_hash, config_hash) DO UPDATE SET score = excluded.score, gate = excluded.gate, "
                "explanation = excluded.explanation, judge_id = excluded.judge_id, "
                "judge_version = excluded.judge_version, tokens = excluded.tokens",
                (trace_hash, config_hash, result.score, result.gate, result.explanation, result.judge_id,
                 result.judge_version, result.tokens),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedJudge:
    """Wraps a judge: a trace already judged under the same configuration costs no call."""

    def __init__(self, inner: Judge, cache: JudgeCache) -> None:
        self.inner = inner
        self.cache = cache
        self.judge_id = inner.judge_id
        self.judge_version = inner.judge_version

    @property
    def config_hash(self) -> str:
        return self.inner.config_hash

    @property
    def requests_made(self) -> int:
        return int(getattr(self.inner, "requests_made", 0) or 0)

    def judge(self, trace: dict) -> JudgeResult:
        trace_hash = trace_content_hash(trace)
        config_hash = self.inner.config_hash
        hit = self.cache.get(trace_hash, config_hash)
        if hit is not None:
            return hit
        result = self.inner.judge(trace)
        self.cache.put(trace_hash, config_hash, result)
        return result
