"""Exact and near-duplicate removal, and the structural ranking score (reference §5.4).

* ``rank_score(row)`` in [0, 1]: a weighted sum of think depth, tool depth, query
  reformulations, a verification step (the recommended product viewed before recommending),
  and low step-shape regularity (scripted loops repeat one shape). Stored as ``rank_score``.
* Exact duplicates: equal sha256 of the canonical messages with whitespace collapsed.
* Near duplicates: MinHash Jaccard ≥ ``near_threshold`` over word 3-shingles of the assistant
  (thinking, content, calls) and tool content, compared only between traces of the same problem.
  Within a problem, traces are visited best-first (rank_score desc, trace_id asc) and a trace
  is dropped when it duplicates an already kept one, so the highest-ranked copy survives.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections import Counter
from collections.abc import Iterable

import numpy as np

from oro_assets import jsonio
from oro_assets.curation._rows import (
    FIND,
    RECOMMEND,
    VIEW,
    StageResult,
    StageStats,
    arguments_dict,
    as_rows,
    messages_of,
    rejected_row,
    split_ids,
    tool_calls_of,
)
from oro_assets.curation.reasons import ReasonCode, Stage

DEFAULT_NEAR_THRESHOLD = 0.85
NUM_PERM = 64
_WS = re.compile(r"\s+")
MAX_WORDS = 3000
_rng = np.random.default_rng(20260)
_A = _rng.integers(1, 1 << 63, size=NUM_PERM, dtype=np.uint64) | np.uint64(1)  # odd multipliers
_B = _rng.integers(0, 1 << 63, size=NUM_PERM, dtype=np.uint64)
_word_hash: dict[str, int] = {}

RANK_WEIGHTS = {
    "think": 0.25,
    "tools": 0.2,
    "reformulations": 0.15,
    "verification": 0.25,
    "irregularity": 0.15,
}


def exact_hash(row: dict) -> str:
    """sha256 of the messages JSON with whitespace runs collapsed. Stored messages come from one
    normaliser with a fixed key order; parsed input is encoded canonically first."""
    raw = row.get("messages")
    text = raw if isinstance(raw, str) else jsonio.canonical_dumps(messages_of(row))
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def dedup_text(messages: list[dict]) -> str:
    parts = []
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            parts.append(str(m.get("reasoning_content") or ""))
            parts.append(str(m.get("content") or ""))
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                parts.append(f"{fn.get('name')} {fn.get('arguments')}")
        elif role == "tool":
            parts.append(str(m.get("content") or ""))
    return " ".join(parts).lower()


def minhash_signature(text: str) -> np.ndarray:
    """64-permutation MinHash of word 3-shingles (word hashes cached; shingles combined in numpy;
    permutations are multiply-add modulo 2^64; the first ``MAX_WORDS`` words are used)."""
    words = text.split()[:MAX_WORDS]
    if not words:
        return np.full(NUM_PERM, np.iinfo(np.uint64).max, dtype=np.uint64)
    cache = _word_hash
    try:
        hv = np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))
    except KeyError:
        if len(cache) > 2_000_000:  # bound memory on long runs (product ids keep arriving)
            cache.clear()
        for w in words:
            if w not in cache:
                cache[w] = zlib.crc32(w.encode()) | 1
        hv = np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))
    if len(hv) >= 3:
        hv = hv[:-2] * np.uint64(0x9E3779B1) + hv[1:-1] * np.uint64(0x85EBCA77) + hv[2:]
    phv = hv[:, None] * _A + _B  # wraps modulo 2^64
    return phv.min(axis=0)


def rank_features(row: dict, messages: list[dict] | None = None) -> dict:
    messages = messages if messages is not None else messages_of(row)
    calls = tool_calls_of(messages)
    assistants = [m for m in messages if m.get("role") == "assistant"]
    think_chars = [len(str(m.get("reasoning_content") or "")) for m in assistants]
    queries = []
    viewed: set[str] = set()
    verified = False
    for c in calls:
        args = arguments_dict(c["arguments"]) or {}
        if c["name"] == FIND:
            q = _WS.sub(" ", str(args.get("q", ""))).strip().lower()
            if q and q not in queries:
                queries.append(q)
        elif c["name"] == VIEW:
            viewed.update(split_ids(args.get("product_ids")))
        elif c["name"] == RECOMMEND:
            ids = split_ids(args.get("product_ids"))
            verified = bool(ids) and all(i in viewed for i in ids)
    shapes = [tuple(c["function"]["name"] for c in m.get("tool_calls") or []) for m in assistants]
    shapes = [s for s in shapes if s]
    regularity = Counter(shapes).most_common(1)[0][1] / len(shapes) if len(shapes) >= 3 else 0.0
    return {
        "mean_think_chars": sum(think_chars) / len(think_chars) if think_chars else 0.0,
        "n_tool_calls": len(calls),
        "reformulations": max(0, len(queries) - 1),
        "verification": verified,
        "step_shape_regularity": regularity,
    }


def rank_score(row: dict, messages: list[dict] | None = None) -> float:
    """Structural ranking in [0, 1] (weights in ``RANK_WEIGHTS``; each feature saturates)."""
    f = rank_features(row, messages)
    score = (
        RANK_WEIGHTS["think"] * min(f["mean_think_chars"] / 400.0, 1.0)
        + RANK_WEIGHTS["tools"] * min(f["n_tool_calls"] / 8.0, 1.0)
        + RANK_WEIGHTS["reformulations"] * min(f["reformulations"] / 2.0, 1.0)
        + RANK_WEIGHTS["verification"] * (1.0 if f["verification"] else 0.0)
        + RANK_WEIGHTS["irregularity"] * (1.0 - f["step_shape_regularity"])
    )
    return round(score, 6)


def _problem_group(row: dict) -> str:
    pid = row.get("problem_id")
    if pid:
        return f"id:{pid}"
    return "q:" + _WS.sub(" ", str(row.get("query") or "")).strip().lower()


def dedup_and_rank(rows: Iterable[dict], near_threshold: float = DEFAULT_NEAR_THRESHOLD) -> StageResult:
    """Drop exact and near duplicates (NEAR_DUPLICATE), add ``rank_score`` and ``dedup_group``.

    Kept rows come out ordered by (problem group, rank desc, trace_id); each rejection's detail
    names the kept trace it duplicates."""
    stats = StageStats(str(Stage.DEDUP))
    groups: dict[str, list[dict]] = {}
    for row in as_rows(rows):
        stats.seen += 1
        messages = messages_of(row)
        groups.setdefault(_problem_group(row), []).append(
            ({**row, "rank_score": rank_score(row, messages)}, messages)
        )
    kept: list[dict] = []
    rejected: list[dict] = []
    exact_seen: dict[str, str] = {}
    n_exact = n_near = 0
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda rm: (-rm[0]["rank_score"], str(rm[0].get("trace_id"))))
        kept_ids: list[str] = []
        kept_sigs = np.empty((len(members), NUM_PERM), dtype=np.uint64)
        for row, messages in members:
            h = exact_hash(row)
            if h in exact_seen:
                n_exact += 1
                stats.rejected[str(ReasonCode.NEAR_DUPLICATE)] += 1
                rejected.append(
                    rejected_row(
                        row, Stage.DEDUP, ReasonCode.NEAR_DUPLICATE, f"exact duplicate of {exact_seen[h]}"
                    )
                )
                continue
            exact_seen[h] = str(row.get("trace_id"))
            if len(members) > 1:
                sig = minhash_signature(dedup_text(messages))
                if kept_ids:
                    sims = np.count_nonzero(kept_sigs[: len(kept_ids)] == sig, axis=1) / NUM_PERM
                    best = int(np.argmax(sims))
                    if sims[best] >= near_threshold:
                        n_near += 1
                        stats.rejected[str(ReasonCode.NEAR_DUPLICATE)] += 1
                        rejected.append(
                            rejected_row(
                                row,
                                Stage.DEDUP,
                                ReasonCode.NEAR_DUPLICATE,
                                f"near duplicate of {kept_ids[best]} (MinHash Jaccard ≈ {sims[best]:.2f})",
                            )
                        )
                        continue
                kept_sigs[len(kept_ids)] = sig
                kept_ids.append(str(row.get("trace_id")))
            stats.kept += 1
            kept.append({**row, "dedup_group": group})
    stats.extra.update(
        {"exact_duplicates": n_exact, "near_duplicates": n_near, "near_threshold": near_threshold}
    )
    return StageResult(kept, rejected, stats.as_dict())
