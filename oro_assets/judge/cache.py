"""Judge result cache: (trajectory content hash, judge configuration hash) -> verdict, in SQLite.

Only available verdicts are stored, so a failed judging is retried on the next run. The
database runs in WAL mode with a busy timeout and writes are upserts, so several processes
(parallel partition runs) can share one file.

Verdicts are written in batches: one transaction per ``WRITE_BATCH`` verdicts or per
``WRITE_EVERY_S`` seconds, whichever comes first (a transaction per verdict cost ~0.1-0.2 ms, as much
as judging a trace with the rule judge). A judge slower than a verdict a second (an LLM) therefore
still writes every verdict at once; a process killed before its cache is closed loses at most the
last ``WRITE_BATCH`` verdicts of a fast judge, which are judged again. ``close`` (or the object's
end) writes what is pending.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
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
_UPSERT = (
    "INSERT INTO judge_cache (trace_hash, config_hash, score, gate, explanation, judge_id, judge_version, tokens) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (trace_hash, config_hash) DO UPDATE SET score = excluded.score, gate = excluded.gate, "
    "explanation = excluded.explanation, judge_id = excluded.judge_id, "
    "judge_version = excluded.judge_version, tokens = excluded.tokens"
)
WRITE_BATCH = 64
WRITE_EVERY_S = 1.0


class _Pending:
    """Verdicts not yet written, and the connection they go to (no reference to the cache object, so
    ``weakref.finalize`` can write them when the cache goes away)."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock
        self.rows: dict[tuple[str, str], tuple] = {}
        self.written_at = 0.0  # monotonic time of the last write (0: never, so the first put writes)
        self.closed = False

    def write(self) -> None:
        """Write the pending verdicts in one transaction (call with ``lock`` held)."""
        if self.rows:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany(_UPSERT, list(self.rows.values()))
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
            self.rows.clear()
        self.written_at = time.monotonic()

    def final(self) -> None:
        with self.lock:
            if not self.closed:
                self.write()
                self.conn.close()
                self.closed = True


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
        self._pending = _Pending(self._conn, self._lock)
        self._finalizer = weakref.finalize(self, self._pending.final)

    def get(self, trace_hash: str, config_hash: str) -> JudgeResult | None:
        with self._lock:
            if (trace_hash, config_hash) in self._pending.rows:
                self._pending.write()  # read it back as stored (SQLite's column types)
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
            pending = self._pending
            pending.rows[(trace_hash, config_hash)] = (
                trace_hash, config_hash, result.score, result.gate, result.explanation, result.judge_id,
                result.judge_version, result.tokens)
            if len(pending.rows) >= WRITE_BATCH or time.monotonic() - pending.written_at >= WRITE_EVERY_S:
                pending.write()

    def flush(self) -> None:
        """Write the pending verdicts now."""
        with self._lock:
            self._pending.write()

    def __len__(self) -> int:
        with self._lock:
            self._pending.write()
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def close(self) -> None:
        self._finalizer()


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
