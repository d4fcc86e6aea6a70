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
from collections.abc import Iterable

import numpy as np

from oro_assets import jsonio
from oro_assets.arena.scoring import split_ids
from oro_assets.curation.rows import (
    FIND,
    RECOMMEND,
    VIEW,
    StageStats,
    as_rows,
    messages_of,
    modal_share,
    rejected_row,
    tool_calls_of,
)
from oro_assets.curation.step import StepResult
from oro_assets.native import kernels as _kernels
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.toolcalls import arguments_dict

DEFAULT_NEAR_THRESHOLD = 0.85
NUM_PERM = 64
_WS = re.compile(r"\s+")
MAX_WORDS = 3000
_rng = np.random.default_rng(20260)
_A = _rng.integers(1, 1 << 63, size=NUM_PERM, dtype=np.uint64) | np.uint64(1)  # odd multipliers
_B = _rng.integers(0, 1 << 63, size=NUM_PERM, dtype=np.uint64)
# column vectors: permutations × shingles, so each permutation's minimum is a contiguous row
_A_COL = np.ascontiguousarray(_A[:, None])
_B_COL = np.ascontiguousarray(_B[:, None])
_MAX_CACHED_WORDS = 2_000_000


class _WordHashes(dict):
    """word → odd crc32, computed on first lookup (one dict lookup per word on the common path)."""

    def __missing__(self, word: str) -> int:
        if len(self) > _MAX_CACHED_WORDS:  # bound memory on long runs (product ids keep arriving)
            self.clear()
        value = self[word] = zlib.crc32(word.encode()) | 1
        return value


_word_hash = _WordHashes()

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
    return hashlib.sha256(collapse_whitespace(text).encode()).hexdigest()


def collapse_whitespace(text: str) -> str:
    """``" ".join(text.split())`` (``collapse_whitespace_py``, the reference): natively where the kernels are built."""
    if _kernels is not None and type(text) is str:
        return _kernels.collapse_whitespace(text)
    return collapse_whitespace_py(text)


def collapse_whitespace_py(text: str) -> str:
    return " ".join(text.split())


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
    """64-permutation (uint32) MinHash of the word 3-shingles of ``text`` (see ``minhash_signature_py``, the
    reference): the native kernel where it is built (``oro_assets.native``), else the reference itself."""
    if _kernels is not None and type(text) is str:
        out = np.empty(NUM_PERM, dtype=np.uint32)
        _kernels.minhash_into(text, _A, _B, MAX_WORDS, out)
        return out
    return minhash_signature_py(text)


def minhash_signature_py(text: str) -> np.ndarray:
    """64-permutation (uint32) MinHash of word 3-shingles (word hashes cached; shingles combined in numpy;
    permutations are multiply-add modulo 2^64; the first ``MAX_WORDS`` words are used)."""
    words = text.split()[:MAX_WORDS]
    if not words:
        return np.full(NUM_PERM, np.iinfo(np.uint32).max, dtype=np.uint32)
    hv = np.fromiter(map(_word_hash.__getitem__, words), dtype=np.uint64, count=len(words))
    if len(hv) >= 3:
        hv = hv[:-2] * np.uint64(0x9E3779B1) + hv[1:-1] * np.uint64(0x85EBCA77) + hv[2:]
    phv = _A_COL * hv  # wraps modulo 2^64
    phv += _B_COL
    return (phv.min(axis=1) >> np.uint64(32)).astype(np.uint32)  # 32 bits: half the index memory


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
    regularity = modal_share([shape for m in assistants
                              if (shape := tuple([c["function"]["name"] for c in m.get("tool_calls") or []]))])
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


class DedupIndex:
    """Kept traces seen so far: exact hashes and, per problem group, MinHash signatures.

    Pass one index to successive :func:`dedup_and_rank` calls (batches, partitions) to dedupe
    across them; an earlier kept copy then wins over a later one whatever its rank (within one
    call the highest-ranked copy wins). Memory grows with kept traces only (16-byte hash key +
    a 64×uint32 signature each). ``track_new=True`` records additions for :meth:`drain_new`
    (workers ship them to a parent index)."""

    def __init__(self, track_new: bool = False) -> None:
        self._exact: dict[bytes, str] = {}
        self._groups: dict[str, tuple[list[str], np.ndarray]] = {}
        self._track = track_new
        self._new: list[tuple[str, str, str, np.ndarray]] = []

    @staticmethod
    def _key(h: str) -> bytes:
        return bytes.fromhex(h[:32])

    def exact_of(self, h: str) -> str | None:
        """The kept trace whose exact hash is ``h``, if any."""
        return self._exact.get(self._key(h))

    def near_of(self, group: str, sig: np.ndarray, threshold: float) -> tuple[str, float] | None:
        """``(trace_id, estimated Jaccard)`` of the most similar kept trace of ``group`` at or
        above ``threshold``, else None."""
        entry = self._groups.get(group)
        if entry is None or not entry[0]:
            return None
        ids, sigs = entry
        sims = np.count_nonzero(sigs[: len(ids)] == sig, axis=1) / NUM_PERM
        best = int(np.argmax(sims))
        return (ids[best], float(sims[best])) if sims[best] >= threshold else None

    def add(self, group: str, h: str, trace_id: str, sig: np.ndarray) -> None:
        self._exact[self._key(h)] = trace_id
        ids, sigs = self._groups.get(group) or ([], np.empty((4, NUM_PERM), dtype=np.uint32))
        if len(ids) == len(sigs):  # amortised doubling
            grown = np.empty((2 * len(sigs), NUM_PERM), dtype=np.uint32)
            grown[: len(ids)] = sigs[: len(ids)]
            sigs = grown
        sigs[len(ids)] = sig
        ids.append(trace_id)
        self._groups[group] = (ids, sigs)
        if self._track:
            self._new.append((group, h, trace_id, sig))

    def drain_new(self) -> list[tuple[str, str, str, np.ndarray]]:
        """``(group, exact_hash, trace_id, signature)`` added since the last drain."""
        out, self._new = self._new, []
        return out

    def stats(self) -> dict[str, int]:
        n = sum(len(ids) for ids, _ in self._groups.values())
        sig_bytes = sum(sigs.nbytes for _, sigs in self._groups.values())
        return {
            "groups": len(self._groups),
            "traces": n,
            "exact_hashes": len(self._exact),
            "signature_bytes": sig_bytes,
        }


def dedup_and_rank(
    rows: Iterable[dict], near_threshold: float = DEFAULT_NEAR_THRESHOLD, index: DedupIndex | None = None
) -> StepResult:
    """Drop exact and near duplicates (NEAR_DUPLICATE), add ``rank_score`` and ``dedup_group``.

    Kept rows come out ordered by (problem group, rank desc, trace_id); each rejection's detail
    names the kept trace it duplicates. ``index`` carries kept traces across calls (batches,
    partitions); without one, only this call's rows are compared."""
    index = index if index is not None else DedupIndex()
    stats = StageStats(str(Stage.DEDUP))
    # (row, its dedup text): the parsed messages are dropped as soon as the text and rank are known,
    # so a batch of thousands of traces never holds thousands of parsed dialogues
    groups: dict[str, list[tuple[dict, str]]] = {}
    for row in as_rows(rows):
        stats.seen += 1
        messages = messages_of(row)
        groups.setdefault(_problem_group(row), []).append(
            ({**row, "rank_score": rank_score(row, messages)}, dedup_text(messages))
        )
    kept: list[dict] = []
    rejected: list[dict] = []
    n_exact = n_near = 0
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda rm: (-rm[0]["rank_score"], str(rm[0].get("trace_id"))))
        for row, text in members:
            tid = str(row.get("trace_id"))
            h = exact_hash(row)
            twin = index.exact_of(h)
            if twin is not None:
                n_exact += 1
                stats.rejected[str(ReasonCode.NEAR_DUPLICATE)] += 1
                rejected.append(
                    rejected_row(row, Stage.DEDUP, ReasonCode.NEAR_DUPLICATE, f"exact duplicate of {twin}")
                )
                continue
            sig = minhash_signature(text)
            near = index.near_of(group, sig, near_threshold)
            if near is not None:
                n_near += 1
                stats.rejected[str(ReasonCode.NEAR_DUPLICATE)] += 1
                rejected.append(
                    rejected_row(
                        row,
                        Stage.DEDUP,
                        ReasonCode.NEAR_DUPLICATE,
                        f"near duplicate of {near[0]} (MinHash Jaccard ≈ {near[1]:.2f})",
                    )
                )
                continue
            index.add(group, h, tid, sig)
            stats.kept += 1
            kept.append({**row, "dedup_group": group})
    stats.extra.update(
        {"exact_duplicates": n_exact, "near_duplicates": n_near, "near_threshold": near_threshold}
    )
    return StepResult(kept, rejected, stats=stats.as_dict())
